"""Round 18, Iceberg Java's side (Spark 4.1 / Iceberg 1.12): which rows of a delete file Java reads.

- **Parquet footer statistics of a position delete file**: Iceberg Java reads a position delete file for one data
  file through a filter ``file_path = <the data file>`` (``BaseDeleteLoader.readPosDeletes``), and its Parquet reader
  skips every row group whose footer statistics of ``file_path`` say no row can match
  (``ParquetMetricsRowGroupFilter``: the location outside the row group's min..max, or a null count equal to its value
  count). pyiceberg reads every row of the file. A delete file whose footer statistics exclude the location of the
  data file its rows name (the rows, the manifest entry and its metrics all honest) made Spark return the deleted row
  and pyiceberg not; the digest is pyiceberg's rows: VERIFIED before.
- **A position Java's bitmap cannot hold**: a position delete file holding ``pos`` -1 (or one above
  9223372030412324864, the greatest position of Java's ``RoaringPositionBitmap``) beside an honest one: Spark's read
  failed ("Bitmap supports positions that are >= 0 and <= …"), pyiceberg ignored it and read the other rows, and the
  table was attested: VERIFIED before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import (
    PATH_ID,
    POS_ID,
    commit_java_deletes,
    java_metrics,
    java_table,
    merge_on_read_table,
    pyiceberg_ids,
    spark_ids,
)
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _forge_footer(path: Path, real: str, forged: str) -> None:
    """Rewrite the Parquet footer of ``path`` in place: every occurrence of ``real`` (its statistics of ``file_path``)
    replaced by ``forged`` (as long), the data pages untouched (uncompressed, plain: the rows still name ``real``)."""
    raw = bytearray(path.read_bytes())
    size = int.from_bytes(raw[-8:-4], "little")
    start = len(raw) - 8 - size
    footer = bytes(raw[start:-8])
    assert real.encode() in footer and len(real) == len(forged)
    raw[start:-8] = footer.replace(real.encode(), forged.encode())
    path.write_bytes(bytes(raw))


def position_delete(
    spark: SparkSession,
    name: str,
    low: int,
    *,
    forged: Callable[[str], str] | None,
    referenced: bool = False,
    positions: tuple[int, ...] = (0,),
) -> str:
    """Commit (Iceberg Java's RowDelta) a position delete file hiding position 0 of the data file holding id ``low``,
    with Java's own metrics of the file; ``forged``: its footer statistics of ``file_path`` made to say
    ``forged(location)`` instead of the location. Returns the data file's location."""
    located = {str(r[0]): int(r[1]) for r in spark.sql(f"SELECT _file, min(id) FROM {name} GROUP BY _file").collect()}
    holder = next(f for f, m in located.items() if m == low)

    def fid(n: str, t: pa.DataType, i: int) -> pa.Field:
        return pa.field(n, t, nullable=False, metadata={b"PARQUET:field_id": str(i).encode()})

    schema = pa.schema([fid("file_path", pa.string(), PATH_ID), fid("pos", pa.int64(), POS_ID)])
    path = local(holder).parent / f"pos-footer-{low}.parquet"
    pq.write_table(
        pa.table({"file_path": [holder] * len(positions), "pos": pa.array(positions, pa.int64())}, schema=schema),
        path,
        compression="NONE",
        use_dictionary=False,
    )

    table = java_table(spark, name)
    metrics = java_metrics(spark, table, path)  # of the honest file: the entry is honest
    if forged is not None:
        _forge_footer(path, holder, forged(holder))
    commit_java_deletes(spark, table, path, metrics, referenced=holder if referenced else None)
    return holder


def _above(location: str) -> str:
    return "z" + location[1:]  # file:/… → zile:/…: above every location


def _below(location: str) -> str:
    return "a" + location[1:]  # file:/… → aile:/…: below every location


@pytest.mark.parametrize(("referenced", "forge"), [(False, _above), (True, _above), (False, _below)])
def test_a_position_delete_whose_footer_statistics_exclude_its_rows_is_not_attested(
    spark: SparkSession, spark_warehouse: Path, referenced: bool, forge: Callable[[str], str]
) -> None:
    name, ident, ref = merge_on_read_table(spark, "pft")
    position_delete(spark, name, 5, forged=forge, referenced=referenced)
    assert pyiceberg_ids(spark_warehouse, ident) == [0, 1, 2, 3, 4, 6, 7, 8, 9]  # pyiceberg reads every row
    with session_conf(spark, "spark.sql.iceberg.executor-cache.enabled", "false"):
        assert spark_ids(spark, name) == list(range(10))  # Java's row-group filter skips the rows: id 5 read
    assert spark_ids(spark, name) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc


@pytest.mark.parametrize("outside", [-1, 9223372030412324864 + 1])
def test_a_position_java_cannot_hold_is_not_attested(spark: SparkSession, spark_warehouse: Path, outside: int) -> None:
    from py4j.protocol import Py4JJavaError

    name, ident, ref = merge_on_read_table(spark, "pos")
    position_delete(spark, name, 5, forged=None, positions=(outside, 0))
    assert pyiceberg_ids(spark_warehouse, ident) == [0, 1, 2, 3, 4, 6, 7, 8, 9]  # pyiceberg ignores the position
    with pytest.raises(Py4JJavaError, match="Bitmap supports positions"):  # Java's bitmap refuses it: no read
        spark_ids(spark, name)
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
