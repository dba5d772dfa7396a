"""Round 20, Iceberg Java's side (Spark 4.1 / Iceberg 1.12): how Spark numbers the rows of a data file whose row
groups share a starting offset (tests/adversarial/test_iceberg_round20.py).

Iceberg Java's ``ReadConf`` maps each row group's starting offset to the rows before it and looks each row group up by
its offset, so a footer listing one row group twice numbers both copies' rows 5-9 (``_pos``), where pyiceberg numbers
them 0-4 and 5-9. A position delete of position 0 (committed through Iceberg Java's ``RowDelta``) then deleted no row
for Spark and one for pyiceberg; Spark's own ``DELETE`` of ``id = 0`` in a v3 table wrote a deletion vector of
position 5, which deleted both copies of id 0 for Spark and one for pyiceberg. Each was attested before (VERIFIED);
now ``record`` refuses it (``table_inconsistent``). An honest file of two row groups reads alike and is attested.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.parquet_footer import ROW_GROUPS, edit_footer, field, set_field
from tests.adversarial.spark_iceberg import (
    append_data_file,
    java_table,
    position_delete,
    pyiceberg_ids,
    spark_ids,
)
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _table(spark: SparkSession, version: int, *, doubled: bool) -> tuple[str, str, str, Path]:
    """A new table ``(id BIGINT)`` of format ``version`` (merge-on-read deletes) holding one data file appended
    through Iceberg Java's ``AppendFiles`` (its own metrics): ids 0-4 in one row group listed twice by the footer
    (``doubled``), or ids 0-4 twice in two row groups of their own."""
    ns = f"r20{uuid.uuid4().hex[:8]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read')"
    )
    table = java_table(spark, name)
    folder = local(str(table.location())) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "doubled.parquet"
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    ids = [0, 1, 2, 3, 4] * (1 if doubled else 2)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}, schema=schema), path, row_group_size=5)
    if doubled:

        def twice(meta: list[list[Any]]) -> None:
            groups = field(meta, ROW_GROUPS)[1]
            groups.append(copy.deepcopy(groups[0]))
            set_field(meta, 3, 6, 10)  # FileMetaData.num_rows (i64)

        edit_footer(path, twice)
    append_data_file(spark, table, path)
    return name, ident, f"iceberg://iceberg/{ident}", path


def _position_delete(spark: SparkSession, name: str, data: Path, position: int) -> None:
    """Commit (Iceberg Java's ``RowDelta``, its own metrics) a position delete file of ``position`` of ``data``."""
    position_delete(spark, name, data.parent / f"pos-{position}.parquet", f"file://{data}", [position])


def _positions(spark: SparkSession, name: str) -> list[int]:
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT _pos FROM {name}").collect())


def test_spark_numbers_both_copies_of_a_row_group_from_its_last_start(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    name, ident, ref, data = _table(spark, 2, doubled=True)
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == sorted([0, 1, 2, 3, 4] * 2)
    assert _positions(spark, name) == sorted([5, 6, 7, 8, 9] * 2)  # pyiceberg's positions are 0-9
    _position_delete(spark, name, data, 0)
    assert spark_ids(spark, name) == sorted([0, 1, 2, 3, 4] * 2)  # Java: no row at position 0
    with session_conf(spark, "spark.sql.iceberg.vectorization.enabled", "false"):
        assert spark_ids(spark, name) == sorted([0, 1, 2, 3, 4] * 2)  # the row reader alike
    assert pyiceberg_ids(spark_warehouse, ident) == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert "starts at byte" in str(doc), doc


def test_sparks_own_deletion_vector_over_such_a_file(spark: SparkSession, spark_warehouse: Path) -> None:
    """v3: Spark's ``DELETE`` writes a deletion vector of the positions it read (5: both copies of id 0), which
    pyiceberg applies to the second copy only."""
    name, ident, ref, _ = _table(spark, 3, doubled=True)
    spark.sql(f"DELETE FROM {name} WHERE id = 0")
    assert spark.sql(f"SELECT count(*) FROM {name}.delete_files WHERE file_format = 'PUFFIN'").collect()[0][0] == 1
    assert spark_ids(spark, name) == [1, 1, 2, 2, 3, 3, 4, 4]
    assert pyiceberg_ids(spark_warehouse, ident) == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


def test_an_honest_file_of_two_row_groups_reads_alike_and_is_attested(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    name, ident, ref, data = _table(spark, 2, doubled=False)
    assert pq.ParquetFile(data).metadata.num_row_groups == 2
    assert _positions(spark, name) == list(range(10))
    _position_delete(spark, name, data, 5)
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref, "--level", "bytes")
    assert rc == 0 and doc["passed"] and doc["content_digest_bound"], doc


def _appended_with_splits(spark: SparkSession, how: str) -> tuple[str, str, str]:
    """A table holding id 100 (Spark's insert) and a file of ids 0-9 in two row groups appended through Iceberg Java's
    ``AppendFiles`` with split offsets ``how``: past every row group's midpoint (``[size - 10]``), at each row group's
    start, or the second one byte into its row group (its midpoint after it)."""
    ns = f"r20s{uuid.uuid4().hex[:8]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO {name} VALUES (100)")
    table = java_table(spark, name)
    path = local(str(table.location())) / "data" / "split.parquet"
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}, schema=schema), path, row_group_size=5)
    meta = pq.ParquetFile(path).metadata
    starts = [
        meta.row_group(i).column(0).dictionary_page_offset or meta.row_group(i).column(0).data_page_offset
        for i in range(2)
    ]
    size = path.stat().st_size
    offsets = {"past": [size - 10], "each_row_group": starts, "inside": [starts[0], starts[1] + 1]}[how]
    jvm = spark._jvm  # type: ignore[attr-defined]
    array = spark.sparkContext._gateway.new_array(jvm.long, len(offsets))  # type: ignore[union-attr]
    for i, offset in enumerate(offsets):
        array[i] = offset
    metrics = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
        table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault()
    )
    data = (
        jvm.org.apache.iceberg.DataFiles.builder(table.spec())
        .withPath(f"file://{path}")
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
        .withFileSizeInBytes(size)
        .withMetrics(metrics)
        .withSplitOffsets(jvm.org.apache.iceberg.util.ArrayUtil.toLongList(array))
        .build()
    )
    table.newAppend().appendFile(data).commit()
    return name, ident, f"iceberg://iceberg/{ident}"


def test_spark_reads_no_row_group_before_the_first_split_offset(spark: SparkSession, spark_warehouse: Path) -> None:
    name, ident, ref = _appended_with_splits(spark, "past")
    assert spark_ids(spark, name) == [100]  # none of the file's ten rows
    assert pyiceberg_ids(spark_warehouse, ident) == [*range(10), 100]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert "no split reads its rows" in str(doc), doc


@pytest.mark.parametrize("how", ["each_row_group", "inside"])
def test_split_offsets_every_row_group_midpoint_follows_are_read_alike(
    spark: SparkSession, spark_warehouse: Path, how: str
) -> None:
    name, ident, ref = _appended_with_splits(spark, how)
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == [*range(10), 100]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref, "--level", "bytes")
    assert rc == 0 and doc["passed"], doc
