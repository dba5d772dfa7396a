"""verify --level bytes holds attested data files to the record's stored-type rule on an object store too (SeaweedFS,
loopback): the footer read through the table's storage (tests/adversarial/test_stored_types_verify_round19.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.adversarial.test_delta_round19 import KEPT, LOSSY, stored_as
from tests.adversarial.test_stored_types_verify_round19 import before_the_rule
from tests.delta.conftest import PROGRAM
from tests.objectstore.conftest import S3


def upload(s3: S3, tmp_path: Path, kind: str, column: pa.Array) -> str:
    """The one-file Delta table of ``stored_as``, its objects put under ``t/`` in the bucket."""
    local = stored_as(tmp_path / "t", kind, column)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        s3.put(f"t/{path.relative_to(local).as_posix()}", path.read_bytes())
    return s3.uri("t")


def test_an_old_record_over_a_column_read_with_a_loss_is_not_verified_on_s3(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = upload(s3, tmp_path, *LOSSY["an int32 past 16 bits in a short column"])
    with before_the_rule(monkeypatch):
        attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="bytes")
    assert not report.passed and [p.code.value for p in report.errors] == ["table_inconsistent"], report.human()
    assert report.errors[0].path == "part-00000.parquet" and "with a loss" in report.errors[0].message


def test_an_honest_table_verifies_on_s3_its_footers_read(s3: S3, tmp_path: Path) -> None:
    uri = upload(s3, tmp_path, *KEPT["an int32 that fits in a short column"])
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="bytes")
    assert report.passed and report.level == "bytes", report.human()
    assert not any("could not be read as Parquet" in n for n in report.notes), report.notes
