"""Round 18 pins (Spark 4.1 / Iceberg 1.12): delete applicability variants that hold.

- Spark's own position delete files (file- and partition-scoped), read by Spark with its executor cache off (each
  delete file read through ``file_path = <data file>`` and its Parquet row-group filter), delete the rows pyiceberg
  deletes: attested, and verified.
- An equality delete by a double column whose bounds are ``-0.0`` over a data file whose bounds are ``0.0``: Iceberg
  Java (``Double.compare``: ``-0.0 < 0.0``) skips the delete file for the data file and Spark returns the row of
  ``x = 0.0`` — as it does with the delete file applied, since Java's equality of doubles (``Double.equals``) takes
  ``-0.0`` and ``0.0`` apart; pyiceberg reads no table with equality deletes. No reader's rows differ: the files are
  attested and verified (a content digest refuses equality deletes by a floating column, ``_equality_keep``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import equality_delete, merge_on_read_table, pyiceberg_ids, spark_ids
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

CACHE = "spark.sql.iceberg.executor-cache.enabled"


@pytest.mark.parametrize("granularity", ["file", "partition"])
def test_spark_position_deletes_read_alike_without_the_executor_cache(
    spark: SparkSession, spark_warehouse: Path, granularity: str
) -> None:
    name, ident, ref = merge_on_read_table(spark, "pfh")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.delete.granularity'='{granularity}')")
    spark.sql(f"DELETE FROM {name} WHERE id IN (2, 7)")
    honest = [0, 1, 3, 4, 5, 6, 8, 9]
    with session_conf(spark, CACHE, "false"):
        assert spark_ids(spark, name) == honest
    assert spark_ids(spark, name) == honest
    assert pyiceberg_ids(spark_warehouse, ident) == honest
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc


def test_an_equality_delete_by_a_double_of_the_other_zero_deletes_nothing_for_java(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    name, _ident, ref = merge_on_read_table(spark, "eqz", double=True)
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ 10L, CAST(0.0 AS DOUBLE)")
    located = {str(r[0]): int(r[1]) for r in spark.sql(f"SELECT _file, min(id) FROM {name} GROUP BY _file").collect()}
    holder = next(f for f, m in located.items() if m == 10)
    field = pa.field("x", pa.float64(), nullable=True, metadata={b"PARQUET:field_id": b"2"})
    negative = (-0.0).hex()  # bounds [-0.0, -0.0]: below the data file's [0.0, 0.0] in Java's order
    equality_delete(
        spark,
        name,
        local(holder).parent / "eq-negative-zero.parquet",
        2,
        pa.table({"x": pa.array([float.fromhex(negative)], pa.float64())}, schema=pa.schema([field])),
    )
    assert spark_ids(spark, name) == list(range(11))  # Spark reads the row of x = 0.0 (0.0 and -0.0 apart in Java)
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc  # files attested: no reader's rows differ (the delete removes no row in either order)
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
