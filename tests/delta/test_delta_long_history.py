"""Long histories of metadata-only commits (issue 29.6): every walk over the log is linear and never cut short.

Past 1,000 metadata-only commits `attest record` bound a metadata-only version (the walk back to the data version
stopped after 1,000 commits) and exited `superseded` (the walk forward to its attestation commit stopped too), while
`attest verify` said VERIFIED. The commits here are written as files, as any writer with storage access puts them
(1,100 delta-rs property commits would take minutes)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from carriers.delta.log import commit_name
from tests.delta.conftest import PROGRAM
from tests.delta.test_other_layouts import ROCKY

LONG = 1_100  # past the old limit of 1,000


def run(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json"])
    return rc, json.loads(out.getvalue())


def metadata_commits(path: Path, count: int, extra: dict[str, str] | None = None) -> int:
    """``count`` SET TBLPROPERTIES commits after the latest version, each changing one unrelated property (and keeping
    ``extra``); returns the new latest version."""
    dt = DeltaTable(str(path))
    first = int(dt.version()) + 1
    meta: dict[str, Any] = {}
    for line in (path / commit_name(0)).read_text().splitlines():
        meta = json.loads(line).get("metaData") or meta
    assert meta
    for v in range(first, first + count):
        configuration = {**dict(dt.metadata().configuration), **(extra or {}), "owner.note": str(v)}
        body = [{"commitInfo": {"operation": "SET TBLPROPERTIES", "timestamp": 1_700_000_000_000 + v}},
                {"metaData": {**meta, "configuration": configuration}}]
        (path / commit_name(v)).write_text("".join(json.dumps(a) + "\n" for a in body))
    return first + count - 1


def test_record_after_many_metadata_commits_binds_the_data_version(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    latest = metadata_commits(path, LONG)
    rc, doc = run("record", str(path), "--model", "m", "--program-hash", PROGRAM)
    assert rc == 0, doc
    assert doc["attested_version"] == "0"  # the data version, not the metadata-only version 100
    rc, doc = run("verify", str(path))
    assert rc == 0 and doc["attested_version"] == "0" and doc["version"] == str(latest + 1), doc
    # The data version itself finds its attestation 1,101 commits later.
    rc, doc = run("verify", str(path), "--version", "0")
    assert rc == 0 and doc["attested_version"] == "0", doc
    # A data commit after all of it: stale, and the attested version keeps verifying by time travel.
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")
    rc, doc = run("verify", str(path))
    assert rc == 1 and [e["code"] for e in doc["errors"]] == ["stale"], doc
    rc, doc = run("verify", str(path), "--version", "0")
    assert rc == 0, doc


def test_detached_attestation_far_below_the_latest_version_is_found(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    metadata_commits(path, LONG)
    rc, doc = run("record", str(path), "--model", "m", "--program-hash", PROGRAM, "--detached")
    assert rc == 0 and doc["attested_version"] == "0", doc
    rc, doc = run("verify", str(path))
    assert rc == 0 and doc["attested_version"] == "0", doc


def test_foreign_properties_are_bound_to_their_data_version_past_two_thousand_commits(tmp_path: Path) -> None:
    """Another producer's keys, set at version 2 after data version 1 and kept by 2,100 later property commits, are
    bound by the log to version 1 (a cut-off walk bound them to a metadata-only version far above it)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")  # version 1
    DeltaTable(str(path)).alter.set_table_properties(ROCKY, raise_if_not_exists=False)  # version 2
    metadata_commits(path, 2_100, extra=ROCKY)
    rc, doc = run("verify", str(path))
    assert rc == 0 and doc["origin"] == "foreign" and doc["attested_version"] == "1", doc


def test_record_after_a_read_changing_commit_and_many_more_binds_the_current_view_in_one_pass(tmp_path: Path) -> None:
    """A read-changing property set at version 1, then 1,100 property commits keeping it: record binds version 1 (the
    first version readers get the current view from), found in one pass over the log (not a load per version)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    metadata_commits(path, 1, extra={"delta.enableChangeDataFeed": "true"})
    metadata_commits(path, LONG)
    rc, doc = run("record", str(path), "--model", "m", "--program-hash", PROGRAM)
    assert rc == 0 and doc["attested_version"] == "1", doc
    rc, doc = run("verify", str(path))
    assert rc == 0 and doc["attested_version"] == "1", doc
