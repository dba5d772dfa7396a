"""What Spark (delta-spark 4.4) reads from a Delta checkpoint's statistics, for ``test_delta_round14.py`` (redteam14d).

- with the JSON column (``stats``) in the checkpoint, Spark reads it, whatever ``stats_parsed`` says: null there, it
  skips no file (every row for ``v >= 1``, the true MIN / MAX), while delta-rs skips the file by the typed bounds;
- without the JSON column (``delta.checkpoint.writeStatsAsJson`` false), Spark reads the typed statistics: it skips
  the file by forged ones and answers MIN / MAX from them, as delta-rs does — so they are held to the commits;
- held: statistics keyed in another case than their column (``V`` for ``v``, ``MaxValues``, ``NumRecords``) are read
  by no engine: Spark returned every row and the true aggregates (``test_delta_held_round14.py`` pins attest's side).

Control: a table Spark writes with typed-only checkpoint statistics (every type Spark keeps bounds of) records and
verifies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_delta_round14 import below_the_rows, two_appends, typed_checkpoint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _spark(spark: SparkSession, path: Path, query: str = "filtered") -> Any:
    """Spark's count for ``v >= 1`` (``filtered``) or its (COUNT, MIN, MAX) of v, the log cache cleared."""
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
    df = spark.read.format("delta").load(str(path))
    if query == "filtered":
        return df.where("v >= 1").count()
    return tuple(df.selectExpr("count(*)", "min(v)", "max(v)").collect()[0])


def test_spark_reads_the_json_column_when_there_and_the_typed_statistics_when_not(spark: SparkSession,
                                                                                 tmp_path: Path) -> None:
    read = {}
    for layout in ("null", "absent"):
        path = two_appends(tmp_path / layout)
        typed_checkpoint(path, layout, below_the_rows, cleanup=True)
        assert DeltaTable(str(path)).to_pyarrow_dataset().to_table(filter=ds.field("v") >= 1).num_rows == 0
        read[layout] = (_spark(spark, path), _spark(spark, path, "aggregates"))
    assert read["null"] == (6, (6, 1, 3))  # the JSON column, null: no statistics — delta-rs skipped the file
    assert read["absent"] == (0, (6, -5, -1))  # the typed statistics, as delta-rs


def test_statistics_keyed_in_another_case_are_read_by_no_engine(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2, 3], pa.int64())}))
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["stats"] = json.dumps({"numRecords": 3, "NumRecords": 1, "minValues": {"v": 1, "V": 100},
                                                 "maxValues": {"v": 3, "V": 0}, "MaxValues": {"v": 0},
                                                 "nullCount": {"v": 0}})
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert _spark(spark, path) == 3  # as without them (Spark's COUNT / MIN / MAX too: 3, 1, 3, measured)
    assert DeltaTable(str(path)).to_pyarrow_dataset().to_table(filter=ds.field("v") >= 1).num_rows == 3


def test_spark_s_typed_only_checkpoint_statistics_verify(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (p STRING, i INT, v BIGINT, d DOUBLE, f FLOAT, m DECIMAL(10,2), "
              "day DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, s STRING, st STRUCT<a: INT, b: STRING>, b BOOLEAN) "
              "USING delta PARTITIONED BY (p) TBLPROPERTIES ('delta.checkpoint.writeStatsAsJson' = 'false', "
              "'delta.checkpoint.writeStatsAsStruct' = 'true', 'delta.checkpointInterval' = '1')")
    values = ", ".join(
        f"('a', {i}, {i * 10}, {i}.25, 19.0 / 3, {i}.05, DATE'2024-01-0{i + 1}', "
        f"TIMESTAMP'2024-01-05 10:00:0{i}.123456Z', TIMESTAMP_NTZ'2024-01-05 10:00:0{i}', 'x{'y' * 40}{i}', "
        f"named_struct('a', {i}, 'b', 'q{i}'), {str(i % 2 == 0).lower()})" for i in range(3))
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {values}, "
              "('b', null, null, null, null, null, null, null, null, null, null, null)")
    assert list((path / "_delta_log").glob("*.checkpoint.parquet"))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
