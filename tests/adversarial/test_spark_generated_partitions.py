"""A Delta generated partition column whose value in a file is not its rows' expression.

Spark (delta-spark 4.4) derives partition filters from a generated partition column's expression
(``GeneratedColumn.getOptimizablePartitionExpressions``): on ``d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))``,
``WHERE ts = …`` also prunes files by ``d``. delta-rs does not. A file committed by hand under ``d=2024-01-06`` holding
a row at ``ts = 2024-01-05 10:00`` is returned by full reads in both engines and by delta-rs's filtered read, and
pruned from Spark's (measured below). ``record`` attested it before and ``verify`` said VERIFIED; now every file's
value is held to its rows (carriers/delta/generated.py): ``table_inconsistent``. Honest Spark-written tables with the
forms Spark optimises on still record and verify. A table written in a non-UTC session is measured here too: Spark
itself prunes its honest rows when a UTC session reads it, so ``record`` refuses it (the check is held in UTC).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

FILTER = "ts = timestamp'2024-01-05 10:00:00'"  # the session is UTC (carriers/spark/session.py)


def _fresh(spark: SparkSession) -> None:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]


def _ids(spark: SparkSession, path: Path, where: str = "true") -> list[int]:
    return sorted(r.id for r in spark.sql(f"SELECT id FROM delta.`{path}` WHERE {where}").collect())


def _delta_rs(path: Path, where: str) -> list[int]:
    q = QueryBuilder().register("t", DeltaTable(str(path)))
    return sorted(q.execute(f"SELECT id FROM t WHERE {where}").read_all().column("id").to_pylist())


def test_a_file_under_a_generated_value_its_rows_do_not_map_to_is_not_attested(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, ts TIMESTAMP, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))) "
              "USING delta PARTITIONED BY (d)")
    spark.sql(f"INSERT INTO delta.`{path}` (id, ts) VALUES (1, timestamp'2024-01-05 10:00:00')")
    rel = f"d=2024-01-06/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    (path / "d=2024-01-06").mkdir()
    pq.write_table(pa.table({"id": pa.array([2], pa.int64()),
                             "ts": pa.array([1704448800000000], pa.timestamp("us", "UTC"))}), path / rel)
    add = {"path": rel, "partitionValues": {"d": "2024-01-06"}, "size": (path / rel).stat().st_size,
           "modificationTime": 2, "dataChange": True, "stats": json.dumps({"numRecords": 1})}
    n = DeltaTable(str(path)).version() + 1
    (path / commit_name(n)).write_text(json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n"
                                       + json.dumps({"add": add}) + "\n")
    _fresh(spark)
    assert _ids(spark, path) == [1, 2]  # a full read: both rows, in Spark
    assert _ids(spark, path, FILTER) == [1]  # Spark prunes the file by d = CAST(ts AS DATE)
    assert _ids(spark, path, "ts >= timestamp'2024-01-05 00:00:00' AND ts < timestamp'2024-01-05 23:00:00'") == [1]
    assert _delta_rs(path, "ts = '2024-01-05T10:00:00Z'") == [1, 2]  # delta-rs returns both
    with pytest.raises(AttestError) as info:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "table_inconsistent"
    assert "'d'" in str(info.value) and rel in str(info.value)
    rc, doc = verify(str(path))
    assert rc != 0 and not doc["passed"], doc  # nothing was recorded


def test_honest_generated_partitions_spark_writes_are_attested(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "h"
    spark.sql(f"""CREATE TABLE delta.`{path}` (id BIGINT, ts TIMESTAMP, day DATE, s STRING,
        d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)),
        y INT GENERATED ALWAYS AS (YEAR(day)),
        hr INT GENERATED ALWAYS AS (HOUR(ts)),
        f STRING GENERATED ALWAYS AS (DATE_FORMAT(ts, 'yyyy-MM')),
        t TIMESTAMP GENERATED ALWAYS AS (DATE_TRUNC('HOUR', ts)),
        m DATE GENERATED ALWAYS AS (TRUNC(day, 'MM')),
        sub STRING GENERATED ALWAYS AS (SUBSTRING(s, 2, 2)),
        k BIGINT GENERATED ALWAYS AS (id % 3))
        USING delta PARTITIONED BY (d, y, hr, f, t, m, sub, k)""")
    spark.sql(f"""INSERT INTO delta.`{path}` (id, ts, day, s) VALUES
        (1, timestamp'2024-01-05 10:30:00', date'2024-01-05', 'abcdef'),
        (2, timestamp'1969-12-31 23:59:59', date'1969-12-31', 'a'),
        (3, NULL, NULL, NULL),
        (4, timestamp'2024-02-29 00:00:00', date'2024-02-29', 'é€xyz')""")
    _fresh(spark)
    assert _ids(spark, path, "ts = timestamp'1969-12-31 23:59:59'") == [2]
    assert _ids(spark, path, "s = 'a'") == [2]  # SUBSTRING('a', 2, 2) is '': written as a null partition value
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


def test_a_table_written_in_another_session_zone_is_not_attested(spark: SparkSession, tmp_path: Path) -> None:
    """Measured: the expression is evaluated in the writer's session zone and the partition filter in the reader's,
    so Spark itself prunes an honest Tokyo-written row from a UTC session's filtered read. The check holds the
    timestamp forms in UTC: such a table is refused."""
    path = tmp_path / "z"
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, ts TIMESTAMP, "
                  "d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))) USING delta PARTITIONED BY (d)")
        # 2024-01-05 20:00 UTC: 2024-01-06 05:00 in Tokyo
        spark.sql(f"INSERT INTO delta.`{path}` (id, ts) VALUES (1, timestamp'2024-01-06 05:00:00')")
        _fresh(spark)
        assert _ids(spark, path, "ts = timestamp'2024-01-06 05:00:00'") == [1]  # consistent in its own zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    _fresh(spark)
    assert _ids(spark, path) == [1]
    assert _ids(spark, path, "ts = timestamp'2024-01-05 20:00:00'") == []  # the same instant, read in UTC: pruned
    assert _delta_rs(path, "ts = '2024-01-05T20:00:00Z'") == [1]
    with pytest.raises(AttestError) as info:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "table_inconsistent" and "UTC" in str(info.value)
