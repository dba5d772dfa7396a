"""The Delta carrier on a real S3 server (SeaweedFS, loopback): attest, verify (bytes), tamper, staleness, CLI.

Every object is read back through the carrier's own path (delta-rs's object store with ``storage_options``);
tampering goes around it, straight to the bucket with pyarrow's S3 client, as an attacker with bucket access would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import blake3
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import CarrierError
from attest.verify.table import verify_table
from carriers.delta.carrier import SIDECAR_DIR, DeltaCarrier, attest_after_write
from carriers.delta.write import write_content_addressed
from tests.delta.conftest import PROGRAM, SPECIAL, special_table
from tests.objectstore.conftest import S3

TABLE = "t"


def codes(report: Any) -> list[str]:
    return [p.code.value for p in report.errors]


def write_and_attest(s3: S3) -> Any:
    uri = s3.uri(TABLE)
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=s3.storage_options)
    return attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)


def data_keys(s3: S3) -> dict[str, int]:
    """{object key: size} of the table's Parquet objects (what the bucket holds, not what the log says)."""
    return {k: n for k, n in s3.keys(f"{TABLE}/").items() if k.endswith(".parquet")}


def rel(key: str) -> str:
    return key.removeprefix(f"{TABLE}/")


def cli(s3: S3, *args: str) -> subprocess.CompletedProcess[str]:
    options = [arg for key, value in s3.storage_options.items() for arg in ("--storage-option", f"{key}={value}")]
    return subprocess.run([sys.executable, "-m", "attest.cli", *args, *options], capture_output=True, text=True,
                          timeout=300)


def test_attest_then_verify_bytes_on_s3(s3: S3) -> None:
    result = write_and_attest(s3)
    assert result.attested_version == "0"
    carrier = DeltaCarrier(s3.uri(TABLE), storage_options=s3.storage_options)
    objects = data_keys(s3)
    assert len(objects) == len(SPECIAL)
    # The log's paths, URL-decoded, are the keys under the table prefix exactly (Hive escapes such as %20 kept).
    assert {f.path for f in carrier.list_files()} == {rel(k) for k in objects}
    report = verify_table(carrier, level="bytes")
    assert report.passed and report.level == "bytes", report.human()
    assert report.files_checked == len(objects) and report.bytes_checked == sum(objects.values())
    # The hashes in the attestation are those of the objects' bytes as pyarrow's S3 client reads them.
    attestation = carrier.read()
    assert attestation is not None and attestation.files is not None
    by_path = {f.path: f.hash for f in attestation.files}
    for key in objects:
        assert by_path[rel(key)] == blake3.blake3(s3.get(key)).hexdigest()


def test_sidecar_is_a_content_addressed_object_under_recipe_attest(s3: S3) -> None:
    result = write_and_attest(s3)
    assert result.sidecar is not None and result.sidecar.startswith(f"{s3.uri(TABLE)}/{SIDECAR_DIR}/")
    objects = list(s3.keys(f"{TABLE}/{SIDECAR_DIR}/"))
    sidecars = [k for k in objects if k.endswith(".json")]
    assert [s3.uri(k) for k in sidecars] == [result.sidecar]
    # Beside it, only the content digests it binds (docs/content-digest.md), content-addressed the same way.
    for key in set(objects) - set(sidecars):
        assert key.endswith(f"/{blake3.blake3(s3.get(key)).hexdigest()}.digests"), key
    body = s3.get(sidecars[0])
    assert sidecars[0].endswith(f"/{blake3.blake3(body).hexdigest()}.json")
    # The reader really takes it from the bucket: without it the attestation cannot be checked.
    s3.delete(sidecars[0])
    report = verify_table(DeltaCarrier(s3.uri(TABLE), storage_options=s3.storage_options))
    assert codes(report) == ["sidecar_missing"], report.human()


def test_each_flipped_object_is_an_artifact_hash_mismatch(s3: S3) -> None:
    write_and_attest(s3)
    carrier = DeltaCarrier(s3.uri(TABLE), storage_options=s3.storage_options)
    # One object at a time, including the %-encoded partition keys ("a b", "50%", "x/y", "k=v", "ünï"):
    # the mismatch must name exactly the file whose object changed.
    for key in sorted(data_keys(s3)):
        original = s3.get(key)
        s3.flip_byte(key)
        assert verify_table(carrier, level="files").passed  # same size: only the bytes level can tell
        report = verify_table(carrier, level="bytes")
        assert codes(report) == ["artifact_hash_mismatch"], report.human()
        assert report.errors[0].path == rel(key)
        s3.put(key, original)
    assert verify_table(carrier, level="bytes").passed


def test_deleted_object_is_missing(s3: S3) -> None:
    write_and_attest(s3)
    key = sorted(data_keys(s3))[0]
    s3.delete(key)
    report = verify_table(DeltaCarrier(s3.uri(TABLE), storage_options=s3.storage_options), level="bytes")
    assert codes(report) == ["file_missing"], report.human()


def test_unattested_append_is_stale_and_time_travel_still_verifies(s3: S3) -> None:
    write_and_attest(s3)  # data 0, attestation 1
    uri = s3.uri(TABLE)
    write_deltalake(uri, special_table(), partition_by=["p"], mode="append", storage_options=s3.storage_options)
    carrier = DeltaCarrier(uri, storage_options=s3.storage_options)
    report = verify_table(carrier)
    assert codes(report) == ["stale"] and "WRITE" in report.errors[0].message, report.human()
    for version in (0, 1):
        old = verify_table(carrier, version=version)
        assert old.passed and old.level == "bytes", old.human()
    # Re-attesting covers the append; only the new objects are read (the sidecar's triples are reused).
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    assert verify_table(carrier).passed


def test_detached_attestation_on_s3(s3: S3) -> None:
    uri = s3.uri(TABLE)
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=s3.storage_options)
    carrier = DeltaCarrier(uri, storage_options=s3.storage_options, detached=True)
    result = carrier.record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "0"
    assert DeltaTable(uri, storage_options=s3.storage_options).version() == 0  # no commit to the log
    pointer = f"{TABLE}/{SIDECAR_DIR}/versions/0.json"
    assert pointer in s3.keys(f"{TABLE}/{SIDECAR_DIR}/")
    assert json.loads(s3.get(pointer))["table_version"] == "0"
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="bytes")
    assert report.passed, report.human()


def test_content_addressed_write_on_s3(s3: S3) -> None:
    uri = s3.uri("ca")
    result = write_content_addressed(uri, special_table(), partition_by=["p"], model="orders", program_hash=PROGRAM,
                                     storage_options=s3.storage_options)
    assert result.attested_version == "0"
    objects = {k: n for k, n in s3.keys("ca/").items() if k.endswith(".parquet")}
    assert len(objects) == len(SPECIAL)
    for key in objects:  # each object is named after the BLAKE3 of its bytes
        assert key.rsplit("/", 1)[-1] == f"{blake3.blake3(s3.get(key)).hexdigest()}.parquet"
    carrier = DeltaCarrier(uri, storage_options=s3.storage_options)
    assert verify_table(carrier, level="bytes").passed
    # The same bytes appended again would name live files twice and lose rows: refused, nothing written.
    with pytest.raises(CarrierError, match="nothing was written"):
        write_content_addressed(uri, special_table(), partition_by=["p"], model="orders", program_hash=PROGRAM,
                                storage_options=s3.storage_options)
    assert {k: n for k, n in s3.keys("ca/").items() if k.endswith(".parquet")} == objects
    assert carrier.latest_version() == 1
    report = verify_table(carrier, level="bytes")
    assert report.passed, report.human()


def test_cli_record_and_verify_with_storage_options(s3: S3) -> None:
    uri = s3.uri(TABLE)
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=s3.storage_options)
    unattested = cli(s3, "verify", uri)
    assert unattested.returncode == 1 and "UNATTESTED" in unattested.stdout + unattested.stderr
    recorded = cli(s3, "record", uri, "--model", "orders", "--program-hash", PROGRAM)
    assert recorded.returncode == 0, recorded.stderr
    verified = cli(s3, "verify", uri, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["level"] == "bytes"
    shown = cli(s3, "show", uri)
    assert shown.returncode == 0 and json.loads(shown.stdout)["subject"]["model"] == "orders", shown.stderr
    assert cli(s3, "audit", uri).returncode == 0
    s3.flip_byte(sorted(data_keys(s3))[0])
    tampered = cli(s3, "verify", uri, "--json")
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr
    assert [e["code"] for e in json.loads(tampered.stdout)["errors"]] == ["artifact_hash_mismatch"]
    assert cli(s3, "audit", uri).returncode == 1
