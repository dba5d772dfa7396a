"""The attacker's toolbox: what someone with write access to a table's storage (and nothing else) can do.

Every attack in this suite is made the way such an actor would make it: hand-written Delta commits and checkpoints,
property edits through the engines' own APIs, hand-written Iceberg metadata and manifests, file swaps, log cleanup.
Each then runs ``attest verify`` (the command a user runs, in-process for speed, ``--json``) and asserts a non-zero
exit and the expected code. docs/security.md says what VERIFIED guarantees and against whom.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name, replay
from carriers.storage.delta import DeltaStorage

PROGRAM = "a" * 64


def verify(*args: str) -> tuple[int, dict[str, Any]]:
    """``attest verify ARGS --json``: (exit code, the JSON object it printed)."""
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["verify", *args, "--json"])
    return rc, json.loads(out.getvalue())


def warehouse_cli(warehouse: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``attest ARGS --json`` on the Spark warehouse's Iceberg SQL catalog: (exit code, the JSON object it printed)."""
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json", "--uri", f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                   "--warehouse", (warehouse / "iceberg").as_uri()])
    return rc, json.loads(out.getvalue())


def codes(doc: dict[str, Any]) -> list[str]:
    return [e["code"] for e in doc.get("errors", [])]


def assert_refused(target: Path | str, code: str, *args: str) -> dict[str, Any]:
    """Verification of ``target`` must not pass, and must name ``code``."""
    rc, doc = verify(str(target), *args)
    assert rc != 0, doc
    assert code in codes(doc), (code, doc)
    return doc


# ---- Delta ---------------------------------------------------------------------------------------------------------
def rows() -> pa.Table:
    return pa.table({"p": ["a", "b", "a"], "v": [1, 2, 3], "w": ["x", "y", "z"]})


@pytest.fixture
def delta(tmp_path: Path) -> Path:
    """A partitioned delta-rs table, attested (data version 0, attestation commit 1), verifying at bytes level."""
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["p"])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
    return path


def latest(path: Path) -> int:
    return int(DeltaTable(str(path)).version())


def write_commit(path: Path, actions: list[dict[str, Any]], version: int | None = None) -> int:
    """A hand-written commit file, as any writer with storage access can put one."""
    n = latest(path) + 1 if version is None else version
    body = "\n".join(json.dumps(a) for a in [{"commitInfo": {"operation": "WRITE"}}, *actions]) + "\n"
    (path / commit_name(n)).write_text(body)
    return n


def log_state(path: Path) -> Any:
    state, _ = replay(DeltaStorage(str(path)), latest(path))
    return state


def append_actions(commit: Path, actions: list[dict[str, Any]]) -> None:
    """Actions added to a commit file in place (delta-rs ends a commit without a newline)."""
    body = commit.read_text()
    commit.write_text(body + ("" if body.endswith("\n") else "\n") + "".join(json.dumps(a) + "\n" for a in actions))


def metadata_commit(path: Path, edit: Any) -> int:
    """A metadata-only commit: the current metaData action, edited."""
    meta = json.loads(json.dumps(log_state(path).metadata))
    edit(meta)
    return write_commit(path, [{"metaData": meta}])


def set_properties(path: Path, updates: dict[str, str]) -> None:
    """Through the engine's own API (delta-rs), as a user with write access would."""
    DeltaTable(str(path)).alter.set_table_properties(updates, raise_if_not_exists=False)


def remove_properties(path: Path, keys: list[str]) -> int:
    return metadata_commit(path, lambda m: [m["configuration"].pop(k, None) for k in keys])


def a_data_file(path: Path) -> str:
    return sorted(log_state(path).adds)[0]


def copy_table(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
