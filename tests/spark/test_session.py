"""The real local Spark stack: Delta via delta-rs, Iceberg via pyiceberg on the same sqlite catalog."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pytest

from carriers.spark.jars import ensure_jars, expected_jar_names
from carriers.spark.session import pyiceberg_catalog_properties

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _catalog(warehouse: Path) -> Catalog:
    """pyiceberg's view of the session's Iceberg catalog (same sqlite file, same catalog name)."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("iceberg", **pyiceberg_catalog_properties(warehouse))


def test_ensure_jars_is_idempotent_and_matches_the_session(spark: SparkSession) -> None:
    first = ensure_jars()
    mtimes = [p.stat().st_mtime_ns for p in first]
    started = time.perf_counter()
    second = ensure_jars()
    assert time.perf_counter() - started < 1.0
    assert second == first
    assert [p.stat().st_mtime_ns for p in second] == mtimes
    assert [p.name for p in first] == expected_jar_names()
    assert spark.conf.get("spark.jars") == ",".join(map(str, first))


def test_delta_table_written_by_spark_is_read_by_delta_rs(spark: SparkSession, spark_warehouse: Path) -> None:
    from deltalake import DeltaTable

    path = spark_warehouse / "delta" / "people"
    df = spark.createDataFrame([(1, "ada"), (2, "grace")], "id BIGINT, name STRING")
    df.write.format("delta").save(str(path))
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'edsger')")

    dt = DeltaTable(str(path))
    assert dt.version() == 1
    rows = dt.to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "name": "ada"}, {"id": 2, "name": "grace"}, {"id": 3, "name": "edsger"}]
    assert dt.history()[0]["operation"] == "WRITE"


def test_managed_delta_table_lands_under_the_warehouse(spark: SparkSession, spark_warehouse: Path) -> None:
    from deltalake import DeltaTable

    spark.sql("CREATE TABLE managed_delta (id INT) USING delta")
    spark.sql("INSERT INTO managed_delta VALUES (7)")
    location = spark.sql("DESCRIBE DETAIL managed_delta").collect()[0]["location"]
    assert Path(urlparse(location).path) == (spark_warehouse / "spark-warehouse" / "managed_delta").resolve()
    assert DeltaTable(location).to_pyarrow_table().to_pylist() == [{"id": 7}]


def test_iceberg_table_written_by_spark_sql_is_loaded_by_pyiceberg(spark: SparkSession, spark_warehouse: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.db")
    spark.sql("CREATE TABLE iceberg.db.orders (id BIGINT, amount DOUBLE) USING iceberg")
    spark.sql("INSERT INTO iceberg.db.orders VALUES (1, 9.5), (2, 20.0)")
    spark_snapshot = spark.sql(
        "SELECT snapshot_id FROM iceberg.db.orders.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0][0]

    table = _catalog(spark_warehouse).load_table("db.orders")
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.snapshot_id == spark_snapshot
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "amount": 9.5},
        {"id": 2, "amount": 20.0},
    ]


def test_iceberg_table_created_by_pyiceberg_is_read_and_written_by_spark(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    import pyarrow as pa

    catalog = _catalog(spark_warehouse)
    catalog.create_namespace_if_not_exists("py")
    table = catalog.create_table("py.events", schema=pa.schema([pa.field("n", pa.int64())]))
    table.append(pa.table({"n": pa.array([1, 2, 3], pa.int64())}))

    assert spark.sql("SELECT sum(n) FROM iceberg.py.events").collect()[0][0] == 6
    spark.sql("INSERT INTO iceberg.py.events VALUES (4)")
    reloaded = catalog.load_table("py.events")
    assert len(reloaded.history()) == 2
    assert sorted(r["n"] for r in reloaded.scan().to_arrow().to_pylist()) == [1, 2, 3, 4]
