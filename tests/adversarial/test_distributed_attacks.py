"""Attacks on the paths that hash elsewhere or earlier: Spark executors (``--spark``) and the manifest verifier's early
hashing. Neither may read what local verification would not read, hang where it would not, or judge differently.

- a table whose data file is a symlink out of the table, a FIFO, or a folder: decided on the driver (or refused by
  the executor's own regular-file check), never a hang, the same code as local verification;
- a manifest whose artifacts are symlinks out of the directory, FIFOs, or hostile JSON: early hashing starts
  nothing it should not, and the verdict is the ordinary one.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import blake3
import pytest

from attest.verify.artifacts import EarlyHashes
from attest.verify.manifest import verify_manifest_bytes
from tests.adversarial.conftest import a_data_file, codes, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


# ---- on the executors ----------------------------------------------------------------------------------------------
def _on_executors(spark: SparkSession, table: Path) -> dict[str, Any]:
    """attest.spark.verify in a thread with a deadline: a hang is a failure, not a stuck suite."""
    import attest.spark

    out: dict[str, Any] = {}

    def run() -> None:
        out["report"] = attest.spark.verify(spark, str(table), level="bytes").to_json()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(300)
    assert not worker.is_alive(), "verification on the executors hung"
    report: dict[str, Any] = out["report"]
    return report


@pytest.mark.spark
@pytest.mark.parametrize("swap", ["symlink_out", "fifo", "folder"])
def test_executors_never_read_what_local_verification_refuses(spark: SparkSession, delta: Path, tmp_path: Path,
                                                              swap: str) -> None:
    victim = delta / unquote(a_data_file(delta))
    victim.unlink()
    if swap == "symlink_out":
        outside = tmp_path / "secret.bin"
        outside.write_bytes(b"another tenant's data")
        victim.symlink_to(outside)
    elif swap == "fifo":
        os.mkfifo(victim)
    else:
        victim.mkdir()
    rc, local = verify(str(delta), "--level", "bytes")
    distributed = _on_executors(spark, delta)
    assert rc == 1 and not distributed["passed"]
    assert codes(distributed) == codes(local) and distributed["verdict"] == local["verdict"]
    expected = "file_outside_table" if swap == "symlink_out" else "file_missing"
    assert expected in codes(local)


# ---- early hashing of a manifest's artifacts -------------------------------------------------------------------------
def _manifest(valid_doc: dict[str, Any], entries: list[dict[str, str]]) -> bytes:
    return json.dumps({**valid_doc, "output_hashes": entries}).encode()


def test_early_hashing_never_follows_a_symlink_out_or_opens_a_fifo(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"secret")
    (artifacts / "out.bin").symlink_to(secret)
    os.mkfifo(artifacts / "pipe.bin")  # opening it for reading would block forever
    (artifacts / "ok.bin").write_bytes(b"ok")
    entries = [{"hash": blake3.blake3(b"secret").hexdigest(), "path": "out.bin"},
               {"hash": "f" * 64, "path": "pipe.bin"},
               {"hash": blake3.blake3(b"ok").hexdigest(), "path": "ok.bin"}]
    data = _manifest(valid_doc, entries)
    early = EarlyHashes.start(data, artifacts)
    assert early is not None
    # Only the confined regular file was hashed (take waits for the head start's thread).
    assert early.take({str(artifacts / "ok.bin"): 2}) == {str(artifacts / "ok.bin"): blake3.blake3(b"ok").hexdigest()}
    report = verify_manifest_bytes(data, subject="m", artifacts_dir=artifacts, early=early)
    assert [e.code.value for e in report.errors] == ["artifact_outside_root", "artifact_missing"]


@pytest.mark.parametrize("data", [b"not json", b"[" * 100_000 + b"]" * 100_000, b'{"output_hashes": 7}',
                                  b'{"output_hashes": [{"hash": 1}]}', b'{"output_hashes": [[]]}',
                                  b'{"a": 1' + b"9" * 5000 + b"}"])
def test_early_hashing_starts_nothing_on_hostile_documents(tmp_path: Path, data: bytes) -> None:
    assert EarlyHashes.start(data, tmp_path) is None


def test_early_hashes_are_used_only_for_the_files_verification_resolves(tmp_path: Path,
                                                                         valid_doc: dict[str, Any]) -> None:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    (artifacts / "a.bin").write_bytes(b"first")
    entries = [{"hash": blake3.blake3(b"second!").hexdigest(), "path": "a.bin"}]
    data = _manifest(valid_doc, entries)
    early = EarlyHashes.start(data, artifacts)
    assert early is not None
    # The file changes (and its size with it) after the early start: the early hash is not of this file any more.
    (artifacts / "a.bin").write_bytes(b"second!")
    report = verify_manifest_bytes(data, subject="m", artifacts_dir=artifacts, early=early)
    assert report.passed, report.human()
    # A schema-invalid manifest: early hashing may have read confined files, but nothing is judged beyond the schema.
    bad = _manifest({**valid_doc, "program_hash": "nope"}, entries)
    report = verify_manifest_bytes(bad, subject="m", artifacts_dir=artifacts, early=EarlyHashes.start(bad, artifacts))
    assert report.level == "schema" and [e.code.value for e in report.errors] == ["manifest_invalid_field"]
