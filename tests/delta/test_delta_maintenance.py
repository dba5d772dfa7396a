"""delta-rs table maintenance on attested tables, measured (docs/maintenance.md): vacuum at any retention,
checkpoints and log cleanup, optimize.compact and z_order."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.delta.conftest import PROGRAM


def _attested(path: Path, writes: int = 3, configuration: dict[str, str] | None = None) -> None:
    for i in range(writes):
        write_deltalake(str(path), pa.table({"x": [i, i + 10], "y": [str(i), "z"]}), mode="append",
                        configuration=configuration if i == 0 else None)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc


SHORT_LOG = {"delta.logRetentionDuration": "interval 0 seconds"}


def _cleanup_log(path: Path, set_retention: bool = True) -> list[str]:
    """delta.logRetentionDuration 0 (a commit, unless the table was created with it), a checkpoint, every commit file
    made old, cleanup_metadata: the log left."""
    dt = DeltaTable(str(path))
    if set_retention:
        dt.alter.set_table_properties(SHORT_LOG)
    dt = DeltaTable(str(path))
    dt.create_checkpoint()
    old = time.time() - 40 * 86400
    for commit in (path / "_delta_log").glob("*.json"):
        os.utime(commit, (old, old))
    DeltaTable(str(path)).cleanup_metadata()
    return sorted(p.name for p in (path / "_delta_log").iterdir())


@pytest.mark.parametrize("hours", [0, 168])
def test_vacuum_keeps_the_attestation(tmp_path: Path, hours: int) -> None:
    path = tmp_path / "t"
    _attested(path)
    write_deltalake(str(path), pa.table({"x": [99], "y": ["o"]}), mode="overwrite")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    kept = sorted((path / "_recipe_attest").iterdir())  # sidecars and content-digest companion files
    deleted = DeltaTable(str(path)).vacuum(retention_hours=hours, enforce_retention_duration=False, dry_run=False)
    assert sorted((path / "_recipe_attest").iterdir()) == kept
    assert len([p for p in kept if p.suffix == ".json"]) == 2 and len([p for p in kept if p.suffix == ".digests"]) == 2
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    rc, doc = verify(str(path), "--level", "bytes", "--version", "3")  # the first attested version
    if hours == 0:  # its files are gone: the verdict says VACUUM removed them
        assert len(deleted) == 3
        assert rc != 0 and set(codes(doc)) == {"file_missing"}, doc
        assert all("removed by the VACUUM the log records at version" in e["message"] and "retention 0 h"
                   in e["message"] for e in doc["errors"]), doc
    else:
        assert deleted == [] and rc == 0 and doc["level"] == "bytes", doc


def test_log_cleanup_keeps_the_current_version_verifying(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _attested(path)
    left = _cleanup_log(path)
    assert "00000000000000000000.json" not in left and any(n.endswith(".checkpoint.parquet") for n in left)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    # The attested version's own commits are gone: explained (it said "no Delta table at ...", table_not_found).
    rc, doc = verify(str(path), "--level", "bytes", "--version", "2")
    assert rc == 2 and codes(doc) == ["version_not_found"] and "log cleanup" in _messages(doc), doc


def _messages(doc: dict[str, Any]) -> str:
    return " ".join(e["message"] for e in doc.get("errors", []))


def test_optimize_then_log_cleanup_says_what_cleanup_removed(tmp_path: Path) -> None:
    """Measured: before cleanup, verified by content (it was compacted); after it the OPTIMIZE commit is gone, so the
    log cannot tell a rewrite from a data change: stale, saying the commits were removed by log cleanup."""
    path = tmp_path / "t"
    _attested(path)
    DeltaTable(str(path)).optimize.compact()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 4: 3 files → 1, same rows;")
    assert doc["content"]["rewrites"][0]["operation"] == "OPTIMIZE", doc
    _cleanup_log(path)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["stale"], doc
    assert "log cleanup removed the commits since version" in _messages(doc), doc


def test_z_order_is_carried_over_by_content(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _attested(path)
    DeltaTable(str(path)).optimize.z_order(["x"])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 4: 3 files → 1, same rows;")
    assert doc["content"]["rows"] == 6 and doc["content_digest_bound"] is True, doc


def _record(path: Path, program: str) -> tuple[int, dict[str, Any]]:
    import io
    import json
    from contextlib import redirect_stdout

    from attest.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["record", str(path), "--model", "m", "--program-hash", program, "--json"])
    return rc, json.loads(out.getvalue())


def test_record_after_log_cleanup_removed_the_attested_data_version(tmp_path: Path) -> None:
    """Found by the sequence walk (tests/test_maintenance_sequences.py): attested, then a checkpoint and log cleanup
    removed the data version's commits, only the attestation commit (metadata-only) left on top. ``attest record``
    failed with version_not_found (it compared the reader view of the data version, which can no longer be read);
    it now attests the first version still readable, which holds the same files."""
    path = tmp_path / "t"
    _attested(path, configuration=SHORT_LOG)  # versions 0-2, the attestation commit 3
    assert _cleanup_log(path, set_retention=False)[0] == "00000000000000000003.checkpoint.parquet"
    rc, doc = _record(path, "b" * 64)
    assert rc == 0 and doc["recorded"] is True and doc["attested_version"] == "3", doc
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes" and doc["attested_version"] == "3", doc
    assert DeltaCarrier(str(path)).read().document["program_hash"] == "b" * 64  # type: ignore[union-attr]


def test_record_after_log_cleanup_removed_the_version_a_data_commit_built_on(tmp_path: Path) -> None:
    """Found by the sequence walk: an UPDATE after the attestation (it reads the version before it, an input of the
    new attestation), then log cleanup removed that version's commits. ``attest record`` failed with
    version_not_found; it now records the version it built on as a heuristic input (its version alone)."""
    path = tmp_path / "t"
    _attested(path, configuration=SHORT_LOG)
    DeltaTable(str(path)).update(updates={"y": "'u'"}, predicate="x = 1")  # version 4, built on 3
    assert _cleanup_log(path, set_retention=False)[0] == "00000000000000000004.checkpoint.parquet"
    rc, doc = _record(path, "c" * 64)
    assert rc == 0 and doc["recorded"] is True and doc["attested_version"] == "4", doc
    assert doc["manifest"]["inputs_proof_class"] == "heuristic", doc
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    (observed,) = DeltaCarrier(str(path)).read().inputs or ()  # type: ignore[union-attr]
    assert observed.version == "3" and observed.content is None and observed.proof_class == "heuristic", observed
