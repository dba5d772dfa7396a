"""A Delta table on S3 whose folder also holds Iceberg metadata (UniForm, or metadata put there): ``verify`` says so
as it does of a local folder (round 20b: the note was made on local storage only). An Iceberg reader of the path
reads the files that metadata lists, which the Delta attestation does not cover; the verdict must not read as
covering them. The look is one listing request of ``metadata/`` (its first page)."""

from __future__ import annotations

from typing import Any

import pytest
from deltalake import write_deltalake

import carriers.delta.carrier as delta_carrier
from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.conftest import S3

TABLE = "t"
NOTE = "also holds Iceberg metadata"


def attested(s3: S3) -> str:
    uri = s3.uri(TABLE)
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=s3.storage_options)
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    return uri


def notes(report: Any) -> list[str]:
    return [str(n) for n in report.notes]


@pytest.mark.parametrize("name", ["00001-7c1e.metadata.json", "v3.metadata.json", "v1.metadata.json.gz"])
def test_iceberg_metadata_in_a_delta_folder_on_s3_is_noted(s3: S3, name: str) -> None:
    uri = attested(s3)
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert report.passed and not any(NOTE in n for n in notes(report)), notes(report)  # none yet
    s3.put(f"{TABLE}/metadata/{name}", b"{}")
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert report.passed, report  # the Delta side is what it attests: a note, not a refusal
    assert any(NOTE in n for n in notes(report)), notes(report)


def test_a_metadata_folder_of_other_objects_is_not_noted(s3: S3) -> None:
    uri = attested(s3)
    s3.put(f"{TABLE}/metadata/readme.txt", b"x")
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert report.passed and not any("metadata" in n for n in notes(report)), notes(report)


def test_a_full_first_page_without_metadata_json_is_noted_as_not_looked_at(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delta_carrier, "ICEBERG_PAGE", 2)
    uri = attested(s3)
    for name in ("0a-m0.avro", "0b-m0.avro", "snap-1.avro"):  # manifests sort before a metadata file
        s3.put(f"{TABLE}/metadata/{name}", b"x")
    s3.put(f"{TABLE}/metadata/v1.metadata.json", b"{}")
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert report.passed, report
    assert any("not all looked at" in n for n in notes(report)), notes(report)
