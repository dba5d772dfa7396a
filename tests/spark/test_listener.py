"""Pins the facts the post-write hook will rely on (docs/dev-notes-spark-listener.md).

A Python class implementing org.apache.spark.sql.util.QueryExecutionListener through py4j's callback server
receives Delta and Iceberg writes, on Spark's listener thread, and can read the command's plan from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _cls(obj: Any) -> str:
    return str(obj.getClass().getSimpleName())


class _Recorder:
    def __init__(self, jvm: Any) -> None:
        self.jvm = jvm
        self.events: list[dict[str, Any]] = []

    def onSuccess(self, func_name: str, qe: Any, duration_ns: int) -> None:
        plan = qe.analyzed()
        event: dict[str, Any] = {"func": func_name, "node": _cls(plan)}
        event["thread"] = self.jvm.java.lang.Thread.currentThread().getName()
        if event["node"] in ("AppendData", "OverwriteByExpression"):
            table = plan.table().table()  # DataSourceV2Relation -> DeltaTableV2 / SparkTable
            event["table"] = _cls(table)
            # The version each write read is pinned in the analyzed plan; live objects (deltaLog snapshot,
            # table.currentSnapshot()) are not: by the time this asynchronous callback runs, later writes
            # may have moved them on.
            if event["table"] == "DeltaTableV2":
                event["read_version"] = table.initialSnapshot().version()
            elif event["table"] == "SparkTable":
                event["read_version"] = table.snapshotId()  # None for a table without snapshots
        self.events.append(event)

    def onFailure(self, func_name: str, qe: Any, exception: Any) -> None:
        self.events.append({"func": func_name, "node": _cls(qe.analyzed()), "failed": True})

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.sql.util.QueryExecutionListener"]


def test_python_query_execution_listener_sees_delta_and_iceberg_writes(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    from pyspark.java_gateway import ensure_callback_server_started

    sc = spark.sparkContext
    ensure_callback_server_started(sc._gateway)  # type: ignore[no-untyped-call]
    recorder = _Recorder(sc._jvm)
    manager = spark._jsparkSession.listenerManager()
    bus = spark._jsparkSession.sparkContext().listenerBus()
    manager.register(recorder)
    try:
        spark.sql("CREATE TABLE listener_delta (id INT) USING delta")
        spark.sql("INSERT INTO listener_delta VALUES (1)")
        spark.sql("INSERT INTO listener_delta VALUES (2)")
        spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.listener")
        spark.sql("CREATE TABLE iceberg.listener.t (id INT) USING iceberg")
        spark.sql("INSERT INTO iceberg.listener.t VALUES (1)")
        spark.sql("INSERT INTO iceberg.listener.t VALUES (2)")
        bus.waitUntilEmpty()  # callbacks are asynchronous: they run on the listener bus
    finally:
        manager.unregister(recorder)

    writes = [e for e in recorder.events if e["node"] == "AppendData"]
    assert [(e["func"], e["table"]) for e in writes] == [
        ("append", "DeltaTableV2"),
        ("append", "DeltaTableV2"),
        ("append", "SparkTable"),
        ("append", "SparkTable"),
    ]
    assert all(e["thread"] == "spark-listener-group-shared" for e in writes)
    assert [e["read_version"] for e in writes[:2]] == [0, 1]
    # Each Delta commit records the version it read; that finds the commit a callback belongs to.
    history = spark.sql("DESCRIBE HISTORY listener_delta").collect()
    assert {r["version"]: r["readVersion"] for r in history if r["operation"] == "WRITE"} == {1: 0, 2: 1}
    # Each Iceberg snapshot records its parent: the snapshot an append read.
    snapshots = spark.sql("SELECT snapshot_id, parent_id FROM iceberg.listener.t.snapshots").collect()
    assert [e["read_version"] for e in writes[2:]] == [None, snapshots[0]["snapshot_id"]]
    assert [r["parent_id"] for r in snapshots] == [None, snapshots[0]["snapshot_id"]]
    assert not any(e.get("failed") for e in recorder.events)
