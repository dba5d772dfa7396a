"""``policy="required"`` and skipped writes (carriers/spark/hook.py ``_skip``, docs/spark.md "Policies, counters,
flush"). Before, ``hook.skipped`` never raised at ``flush()``: a write dropped on a full queue was silently
unattested under "required". Now a lost attestation (queue full, waited longer than ``timeout_s``, ambiguous commit)
is refused at flush; a write superseded by a later commit of its table only while this hook has not attested that
table since (the attestation in force is then a later one of the same job). Driven without Spark: the worker side
needs only the table, which delta-rs writes here."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake

from attest.errors import PolicyError
from carriers.spark.hook import Hook, WriteEvent
from carriers.spark.stamp import STAMP_PREFIX


def _spark() -> Any:
    """What flush() touches of a session: the listener bus, empty."""
    bus = SimpleNamespace(waitUntilEmpty=lambda: None)
    context = SimpleNamespace(listenerBus=lambda: bus)
    return SimpleNamespace(_jsparkSession=SimpleNamespace(sparkContext=lambda: context))


def _append(path: str, stamp: str) -> None:
    write_deltalake(path, pa.table({"x": [1, 2]}), mode="append",
                    commit_properties=CommitProperties(custom_metadata={"userMetadata": stamp}))


def _event(path: str, stamp: str, read: int | None, hint: int) -> WriteEvent:
    return WriteEvent(command="AppendData", format="delta", table_name="spark_catalog.default.t", location=path,
                      read_version=read, hint_version=hint, stamp=stamp, program_hash="ab" * 32)


def test_a_write_superseded_by_a_later_commit_raises_until_the_later_write_is_attested(tmp_path: Path) -> None:
    """Alter mode attests a table's latest data version: the write of version 1 is skipped when version 2 landed
    first. Under "required", flush() refuses while nothing of this hook attests the table after it, and passes once
    the later write (version 2) is attested by the same hook."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [0]}))  # version 0
    _append(path, STAMP_PREFIX + "first")  # version 1: the job's write
    _append(path, STAMP_PREFIX + "second")  # version 2: a later write, before the first one's attestation ran
    hook = Hook(_spark(), policy="required", delta_mode="alter")
    hook._attest(_event(path, STAMP_PREFIX + "first", 0, 2))
    assert (hook.attested, hook.skipped, hook.failed, hook.not_found) == (0, 1, 0, 0), hook.errors
    with pytest.raises(PolicyError, match=re.escape(
            "1 Spark write(s) were skipped and are not attested: version 1 of spark_catalog.default.t was superseded")):
        hook.flush()
    hook.delta_mode = "detached"  # the later write's attestation, without Spark's metadata commit
    hook._attest(_event(path, STAMP_PREFIX + "second", 1, 2))
    assert (hook.attested, hook.skipped) == (1, 1), hook.errors
    hook.flush()  # made good: the attestation in force is the job's later one


def test_a_write_dropped_on_a_full_queue_is_lost_and_raises(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [0]}))
    hook = Hook(_spark(), policy="required", delta_mode="detached", max_pending=1)
    hook._enqueue(_event(path, STAMP_PREFIX + "a", 0, 1))
    hook._enqueue(_event(path, STAMP_PREFIX + "b", 1, 2))  # the queue is full: dropped
    assert hook.skipped == 1 and hook.lost
    hook._queue.get_nowait()
    hook._queue.task_done()  # no worker here: the queued one is taken off by hand
    with pytest.raises(PolicyError, match=re.escape("pending; skipping the write to spark_catalog.default.t")):
        hook.flush()
    _append(path, STAMP_PREFIX + "c")  # a later write of the same table, attested: the lost one stays lost
    hook._attest(_event(path, STAMP_PREFIX + "c", 0, 1))
    assert hook.attested == 1, hook.errors
    with pytest.raises(PolicyError, match="not attested"):
        hook.flush()


def test_a_write_that_waited_too_long_is_lost_and_raises(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [0]}))
    hook = Hook(_spark(), policy="required", delta_mode="detached", timeout_s=0.01)
    event = _event(path, STAMP_PREFIX + "a", None, 0)
    event.queued_at = time.monotonic() - 1
    hook._attest(event)
    assert hook.skipped == 1 and hook.attested == 0
    with pytest.raises(PolicyError, match=re.escape("waited more than 0.01s")):
        hook.flush()


def test_optional_policy_counts_skips_and_never_raises(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [0]}))
    hook = Hook(_spark(), policy="optional", delta_mode="detached", max_pending=1)
    hook._enqueue(_event(path, STAMP_PREFIX + "a", 0, 1))
    hook._enqueue(_event(path, STAMP_PREFIX + "b", 1, 2))
    hook._queue.get_nowait()
    hook._queue.task_done()
    assert hook.flush() is hook and hook.skipped == 1 and len(hook.lost) == 1


def test_an_iceberg_skip_is_keyed_by_table_and_branch() -> None:
    """Round 28: what makes a skipped write good is an attestation of the same table *and branch*. A branch named in
    the table (``t.branch_audit``) and one Spark picks (``spark.wap.branch``: the event names ``t``) are one key; main
    named or not is one key; another branch, or a namespace whose name holds a dot, is another."""
    from carriers.spark.hook import _table_key

    def key(name: str, identifier: tuple[str, ...], branch: str | None) -> str:
        return _table_key(WriteEvent(command="AppendData", format="iceberg", table_name=name, location=None,
                                     catalog="iceberg", identifier=identifier, branch=branch))

    assert key("iceberg.ns.t.branch_audit", ("ns", "t"), "audit") == key("iceberg.ns.t", ("ns", "t"), "audit")
    assert key("iceberg.ns.t", ("ns", "t"), None) == key("iceberg.ns.t.branch_main", ("ns", "t"), "main")
    assert key("iceberg.ns.t", ("ns", "t"), "audit") != key("iceberg.ns.t", ("ns", "t"), None)
    assert key("iceberg.a.b.t", ("a.b", "t"), None) != key("iceberg.a.b.t", ("a", "b", "t"), None)
    # A streaming batch into the table is keyed by its sink's parts, as the writes of main are: the one's attestation
    # makes the other's skip good, as before the key held the parts.
    from carriers.spark.streaming import QueryState, SinkInfo, StreamBatch

    sink = SinkInfo("iceberg", "file:///w/ns/t", table_name="iceberg.ns.t", catalog="iceberg", identifier=("ns", "t"))
    batch = StreamBatch(QueryState("q", "r", None, None, sink, []), 0)
    assert _table_key(batch) == key("iceberg.ns.t", ("ns", "t"), None)
