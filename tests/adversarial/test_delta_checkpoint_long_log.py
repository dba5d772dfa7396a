"""A checkpoint that is not the replay of a long log before it (more than 2,000 commits).

The cross-check of a checkpoint against the commits before it (carriers/delta/log.py, ``_cross_check``) used to stop
at 2,000 commits (``CROSS_CHECK_LIMIT``): past that, a checkpoint disagreeing with its log was taken as it was — the
version attested and VERIFIED, while readers replaying the log (Spark time travel from an older checkpoint, a reader
that ignores this one) read other rows. It now runs however long the log, at the cost of an engine loading the
version before the checkpoint (both checkpoints read in columns, the commits between once).
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, assert_refused

COMMITS = 2_100  # past the bound the cross-check had


def record(path: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["record", str(path), "--model", "m", "--program-hash", PROGRAM, "--json"])
    return rc, json.loads(out.getvalue())


def long_table(tmp_path: Path) -> Path:
    """A table of COMMITS + 1 appends (each a copy of one small file, with its statistics), checkpointed at the last."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    first = json.loads(next(line for line in (path / commit_name(0)).read_text().splitlines() if '"add"' in line))
    source = path / first["add"]["path"]
    for v in range(1, COMMITS + 1):
        name = f"copy-{v:05d}.parquet"
        shutil.copyfile(source, path / name)
        add = {**first["add"], "path": name}
        (path / commit_name(v)).write_text(json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n"
                                           + json.dumps({"add": add}) + "\n")
    DeltaTable(str(path)).create_checkpoint()
    return path


def forge_checkpoint(path: Path, edit: Any) -> None:
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    assert int(cp.name[:20]) == COMMITS
    table = pq.read_table(cp)
    rows = table.to_pylist()
    edit(next(r["add"] for r in rows if r.get("add") and r["add"]["path"] == "copy-00007.parquet"))
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), cp)


def _statistics(add: dict[str, Any]) -> None:
    stats = json.loads(add["stats"])
    stats["minValues"]["v"], stats["maxValues"]["v"] = 1000, 2000  # a filtered query for v = 2 skips the file
    add["stats"] = json.dumps(stats)


def _modification_time(add: dict[str, Any]) -> None:
    add["modificationTime"] = 0


def _size(add: dict[str, Any]) -> None:
    add["size"] += 1


@pytest.mark.slow
@pytest.mark.parametrize("edit", [_statistics, _modification_time, _size], ids=lambda f: f.__name__.strip("_"))
def test_a_checkpoint_forged_over_a_long_log_is_refused_by_record_and_verify(tmp_path: Path, edit: Any) -> None:
    """Forged before the attestation: delta-rs reads the checkpoint and sees nothing wrong, so the attestation binds
    the forged view unless the log is compared with it. Before, record attested it and verify said VERIFIED."""
    path = long_table(tmp_path)
    forge_checkpoint(path, edit)
    assert len(DeltaTable(str(path)).file_uris()) == COMMITS + 1  # the engine reads the forged checkpoint as is
    rc, doc = record(path)
    assert rc != 0, doc
    assert "table_inconsistent" in json.dumps(doc), doc
    assert_refused(path, "table_inconsistent", "--level", "schema")


@pytest.mark.slow
def test_an_honest_checkpoint_over_a_long_log_verifies(tmp_path: Path) -> None:
    path = long_table(tmp_path)
    rc, doc = record(path)
    assert rc == 0, doc
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["verify", str(path), "--level", "files", "--json"]) == 0, out.getvalue()
