"""The Spark hook's worker when a write's commit cannot be found (carriers/spark/hook.py ``_no_commit``): a missed
attestation is counted (``hook.not_found``) and logged at WARNING with the table and the reason; a DML that
committed nothing (the table is still at the version it read) is neither. Driven without Spark: the worker side needs
only the table, which delta-rs and pyiceberg write here."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from carriers.spark.hook import Hook, WriteEvent
from carriers.spark.stamp import STAMP_PREFIX

STAMP = STAMP_PREFIX + "lost"


def _hook(**kw: Any) -> Hook:
    return Hook(SimpleNamespace(), delta_mode="detached", **kw)  # the worker side touches no Spark here


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "attest.spark" and r.levelno >= logging.WARNING]


def _delta(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [1, 2]}), mode="append")  # version 0
    return path


@pytest.mark.parametrize("stamp", [STAMP, None])
def test_a_delta_write_whose_commit_cannot_be_found_is_counted_and_warned(tmp_path: Path, stamp: str | None,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """The INSERT read version 0, the table moved to version 1, and no commit carries its id (nor, unstamped, fits an
    INSERT: version 1 is a DELETE): before, a debug line only and no counter — a silent missed attestation."""
    path = _delta(tmp_path)
    DeltaTable(path).delete("x = 1")  # version 1: a commit that is not the write's
    hook = _hook()
    event = WriteEvent(command="AppendData", format="delta", table_name="spark_catalog.default.t", location=path,
                       read_version=0, hint_version=1, stamp=stamp)
    with caplog.at_level(logging.DEBUG, logger="attest.spark"):
        hook._attest(event)
    assert (hook.not_found, hook.attested, hook.skipped, hook.failed) == (1, 0, 0, 0)
    [line] = _warnings(caplog)
    assert "AppendData on spark_catalog.default.t was not attested: its commit cannot be found" in line
    assert (f"no commit carries its write id {STAMP}" if stamp else "no commit without a write id fits it") in line
    assert "it read 0, the table is now at 1" in line


def test_a_delta_dml_that_committed_nothing_is_not_a_missed_attestation(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """A DELETE that matched no row: Delta commits nothing, the table is still at the version it read."""
    path = _delta(tmp_path)
    hook = _hook()
    event = WriteEvent(command="DeleteCommand", format="delta", table_name=None, location=path, read_version=0,
                       hint_version=0, stamp=STAMP)
    hook._attest(event)
    assert (hook.not_found, hook.attested, hook.skipped, hook.failed) == (0, 0, 0, 0) and not _warnings(caplog)


def test_a_delta_ctas_whose_commit_cannot_be_found_is_counted(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A CTAS reads no version of its table: no commit carrying its id is always a missed attestation."""
    path = _delta(tmp_path)
    hook = _hook()
    event = WriteEvent(command="CreateTableAsSelect", format="delta", table_name="t", location=path,
                       hint_version=0, stamp=STAMP)
    hook._attest(event)
    assert hook.not_found == 1 and "it read nothing, the table is now at 0" in _warnings(caplog)[0]


@pytest.mark.parametrize("command", ["SaveIntoDataSourceCommand", "AppendData"])
def test_a_stamped_blind_append_no_commit_carries_committed_nothing(tmp_path: Path, command: str,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """An append of no rows: Delta records no empty commit (round 23: the required hook failed every such job). A
    stamped blind append that no commit carries, and that no unstamped commit fits, committed nothing; an unstamped
    one cannot be told from a lost commit and is still counted."""
    path = _delta(tmp_path)
    hook = _hook()
    hook._done.add((f"delta:{path}", "0", ""))  # version 0 is an earlier write this hook attested: not a candidate
    event = WriteEvent(command=command, format="delta", table_name=None, location=path, hint_version=0, stamp=STAMP)
    hook._attest(event)
    assert (hook.not_found, hook.attested, hook.skipped, hook.failed) == (0, 0, 0, 0) and not _warnings(caplog)
    DeltaTable(path).delete("x = 1")  # version 1: a DELETE, so no unstamped commit fits a WRITE either
    hook._attest(WriteEvent(command=command, format="delta", table_name=None, location=path, hint_version=1))
    assert hook.not_found == 1, _warnings(caplog)


@pytest.fixture
def iceberg(tmp_path: Path) -> tuple[Hook, Any]:
    (tmp_path / "wh").mkdir()
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path / 'cat.db'}", "warehouse": f"file://{tmp_path / 'wh'}"}
    catalog = SqlCatalog("cat", **{k: v for k, v in props.items() if k != "type"})
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("x", pa.int64())]))
    table.append(pa.table({"x": pa.array([1], pa.int64())}))
    return _hook(iceberg_catalogs={"cat": props}), table


def test_an_iceberg_write_whose_snapshot_cannot_be_found_is_counted_and_warned(
        iceberg: tuple[Hook, Any], caplog: pytest.LogCaptureFixture) -> None:
    hook, table = iceberg
    read = table.current_snapshot().snapshot_id
    table.append(pa.table({"x": pa.array([2], pa.int64())}))  # a snapshot without the write's id, nor Spark's app id
    head = table.current_snapshot().snapshot_id
    event = WriteEvent(command="AppendData", format="iceberg", table_name="cat.ns.t", location=table.location(),
                       catalog="cat", identifier=("ns", "t"), read_version=read, stamp=STAMP)
    hook._attest(event)
    assert (hook.not_found, hook.attested, hook.skipped, hook.failed) == (1, 0, 0, 0), hook.errors
    [line] = _warnings(caplog)
    assert f"AppendData on cat.ns.t was not attested: its commit cannot be found (no commit carries its write id " \
           f"{STAMP}; it read {read}, the table is now at {head})" in line


def test_an_iceberg_write_that_committed_nothing_is_not_counted(iceberg: tuple[Hook, Any],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    hook, table = iceberg
    event = WriteEvent(command="WriteDelta", format="iceberg", table_name="cat.ns.t", location=table.location(),
                       catalog="cat", identifier=("ns", "t"), read_version=table.current_snapshot().snapshot_id,
                       stamp=STAMP)
    hook._attest(event)
    assert (hook.not_found, hook.attested, hook.skipped, hook.failed) == (0, 0, 0, 0) and not _warnings(caplog)


def _bus() -> SimpleNamespace:
    """As much of a SparkSession as ``flush`` touches: the listener bus it waits on (empty here)."""
    bus = SimpleNamespace(waitUntilEmpty=lambda: None)
    context = SimpleNamespace(listenerBus=lambda: bus)
    return SimpleNamespace(_jsparkSession=SimpleNamespace(sparkContext=lambda: context))


@pytest.mark.parametrize("policy", ["required", "optional"])
def test_a_write_whose_commit_cannot_be_found_fails_a_required_flush(tmp_path: Path, policy: str) -> None:
    """Under policy "required" a missed attestation is as unattested as a failed one: ``flush`` raises PolicyError
    naming the count; under "optional" it is counted and the job goes on."""
    from attest.errors import PolicyError

    path = _delta(tmp_path)
    DeltaTable(path).delete("x = 1")
    hook = Hook(_bus(), delta_mode="detached", policy=policy)  # type: ignore[arg-type]
    hook._attest(WriteEvent(command="AppendData", format="delta", table_name="t", location=path,
                            read_version=0, hint_version=1, stamp=STAMP))
    assert hook.not_found == 1 and hook.failed == 0
    if policy == "optional":
        assert hook.flush() is hook
    else:
        with pytest.raises(PolicyError, match="1 Spark write"):
            hook.flush()
