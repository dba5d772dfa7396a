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
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name, replay
from carriers.storage.delta import DeltaStorage
from tests.iceberg.conftest import iceberg_env, ns_catalog  # noqa: F401 (a fixture, used by ``catalog``)

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

PROGRAM = "a" * 64


@pytest.fixture
def catalog(tmp_path: Path, iceberg_env: str) -> SqlCatalog:  # noqa: F811
    """A sqlite catalog under the test's folder holding namespace ``ns``, the one pyiceberg's environment names
    (``iceberg_env``): what an attack on an Iceberg table starts from (a module may define its own)."""
    return ns_catalog(tmp_path)


@pytest.fixture
def hook(spark: SparkSession) -> Iterator[Hook]:
    """A hook installed on the shared Spark session with ``policy="required"``, uninstalled after the test."""
    from attest.spark import install

    h = install(spark, policy="required")
    yield h
    h.uninstall()


@pytest.fixture
def slow_listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The listener bus is asynchronous: its callback may run after the job's next statements. This holds the hook's
    reading of the plan until the test says (bounded), to make that ordering certain rather than likely."""
    import threading

    import carriers.spark.hook as hook_module

    go = threading.Event()
    go.set()  # armed (cleared) by the test for the one write it holds
    extract = hook_module.extract

    def late(*args: Any, **kwargs: Any) -> Any:
        go.wait(timeout=20)
        return extract(*args, **kwargs)

    monkeypatch.setattr(hook_module, "extract", late)
    yield go
    go.set()


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


def edit_adds(commit: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Every ``add`` action of a commit file edited in place by ``edit`` (the add's dict), the rest as it was."""
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            edit(action["add"])
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


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


def delta_stats(rows: pa.Table) -> str:
    """Statistics of a Parquet file holding ``rows``, as delta-rs writes them: ``numRecords``, every column's
    ``nullCount`` and the ``minValues`` / ``maxValues`` of each column holding a value (struct fields nested; floats
    with NaN above every number; timestamps to the millisecond, down). A hand-made rewrite must keep them: one that
    leaves them out makes delta-rs's filtered reads skip the file (test_delta_missing_bounds.py)."""
    import datetime as dt
    import math

    def bound(values: list[Any], hi: bool) -> Any:
        if any(isinstance(x, float) and math.isnan(x) for x in values) and hi:
            return "NaN"
        kept = [x for x in values if not (isinstance(x, float) and math.isnan(x))]
        if not kept:
            return None
        x = max(kept) if hi else min(kept)
        if isinstance(x, dt.datetime):
            text = x.replace(microsecond=x.microsecond // 1000 * 1000, tzinfo=None).isoformat(timespec="milliseconds")
            return text + ("Z" if x.tzinfo is not None else "")
        if isinstance(x, dt.date):
            return x.isoformat()
        if isinstance(x, float) and math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return float(x) if type(x).__name__ == "Decimal" else x

    def walk(columns: dict[str, pa.Array]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        nulls: dict[str, Any] = {}
        lo: dict[str, Any] = {}
        hi: dict[str, Any] = {}
        for name, column in columns.items():
            if pa.types.is_struct(column.type):
                children = column.flatten()
                n, a, b = walk({column.type.field(i).name: children[i] for i in range(column.type.num_fields)})
                nulls[name], lo[name], hi[name] = n, a, b
                continue
            nulls[name] = column.null_count
            if pa.types.is_nested(column.type) or pa.types.is_binary(column.type):
                continue
            values = [x for x in column.to_pylist() if x is not None]
            if values:
                lo[name], hi[name] = bound(values, False), bound(values, True)
        return nulls, lo, hi

    nulls, lo, hi = walk({name: rows.column(name).combine_chunks() for name in rows.column_names})
    return json.dumps({"numRecords": rows.num_rows, "minValues": lo, "maxValues": hi, "nullCount": nulls})
