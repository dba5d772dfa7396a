"""Iceberg delete files whose metrics (manifest entry) misstate their rows: each reader skips delete files by other
metrics, so the readers read other rows than the digest.

Position deletes.
pyiceberg 0.12 indexes a position delete file without equal ``file_path`` bounds by its partition and, for each data
file of the partition, evaluates the delete file's own metrics against ``file_path = <the data file>``
(``delete_file_index._applies_to_data_file``: the bounds, the record count, the column's value and null counts) and
skips it when they say no row can match. Iceberg Java 1.12 does not: ``DeleteFileIndex.findPosPartitionDeletes``
takes every delete file of the partition by sequence number alone, and the reader then keeps the rows whose
``file_path`` is the data file. Measured (Spark 4.1 / Iceberg 1.12, pyiceberg 0.12), a delete file committed through
Iceberg Java's ``RowDelta`` hiding position 0 of the file of ids 5-9, its ``file_path`` bounds both above every data
file's location (``s3://zz/a``, ``s3://zz/b``), or honest bounds with a record count of 0: Spark returned no id 5,
pyiceberg returned it. ``attest record`` attested Java's rows (its plan of both readers leaves statistics out) and
``verify`` said VERIFIED for a snapshot the two readers read differently. Now the digest reads each delete file as
pyiceberg plans it, metrics included, and the positions each reader deletes must agree
(carriers/iceberg/content.py ``_same_positions``): ``table_inconsistent``, nothing recorded.

Equality deletes. Iceberg Java 1.12 skips an equality delete file for a data file when their metrics of the equality
fields say no row can match (``DeleteFileIndex.canContainEqDeletesForFile``: bounds that do not overlap, one file of
nulls only and the other of none); pyiceberg 0.12 refuses to read a table with equality deletes. Measured: an
equality delete of ``id = 5`` committed through ``RowDelta`` with bounds 1000..2000, or with null counts saying its
``id`` is all nulls — Spark returned id 5; the digest applied the file (as Java applies it with honest metrics), so
``record`` attested rows without id 5 and ``verify`` said VERIFIED. Now the equality fields' metrics of both files are
held to their rows wherever an equality delete applies (``_hold_equality_metrics``): ``table_inconsistent``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import merge_on_read_table, pyiceberg_ids, spark_ids
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PATH_ID = 2147483546


def _delete_with_metrics(spark: SparkSession, name: str, lower: str, upper: str, count: int) -> None:
    """Commit (Iceberg Java's RowDelta) a position delete file hiding position 0 of the data file holding id 5, with
    no ``referenced_data_file`` and these ``file_path`` bounds and record count."""
    located = {str(r[0]): int(r[1]) for r in spark.sql(f"SELECT _file, min(id) FROM {name} GROUP BY _file").collect()}
    holder = next(f for f, low in located.items() if low == 5)

    def fid(n: str, t: pa.DataType, i: int) -> pa.Field:
        return pa.field(n, t, nullable=False, metadata={b"PARQUET:field_id": str(i).encode()})

    schema = pa.schema([fid("file_path", pa.string(), PATH_ID), fid("pos", pa.int64(), 2147483545)])
    path = local(holder).parent / "bounded-elsewhere.parquet"  # the table's data folder
    pq.write_table(pa.table({"file_path": [holder], "pos": pa.array([0], pa.int64())}, schema=schema), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    lowers, uppers = jvm.java.util.HashMap(), jvm.java.util.HashMap()
    lowers.put(PATH_ID, jvm.java.nio.ByteBuffer.wrap(bytearray(lower.encode())))
    uppers.put(PATH_ID, jvm.java.nio.ByteBuffer.wrap(bytearray(upper.encode())))
    metrics = jvm.org.apache.iceberg.Metrics(count, None, None, None, None, lowers, uppers)
    delete = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec()).ofPositionDeletes() \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size).withMetrics(metrics).build()
    table.newRowDelta().addDeletes(delete).commit()


@pytest.mark.parametrize("how", ["bounds_above", "no_records"])
def test_a_delete_file_pyiceberg_prunes_by_its_metrics_is_not_attested(spark: SparkSession, spark_warehouse: Path,
                                                                        how: str) -> None:
    name, ident, ref = merge_on_read_table(spark, "bnd")
    if how == "bounds_above":  # both bounds above every location (file:/...): no file_path can match
        _delete_with_metrics(spark, name, "s3://zz/a", "s3://zz/b", 1)
    else:  # honest bounds around every location, but no record
        _delete_with_metrics(spark, name, "file:", "file:~", 0)
    assert spark_ids(spark, name) == [0, 1, 2, 3, 4, 6, 7, 8, 9]  # Java applies the file: id 5 gone
    assert pyiceberg_ids(spark_warehouse, ident) == list(range(10))  # pyiceberg skips it by its metrics
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc  # nothing recorded: unattested


def test_honest_partition_scoped_position_deletes_are_attested(spark: SparkSession, spark_warehouse: Path) -> None:
    """Spark's own partition-scoped delete file (one for both data files: bounds from one location to the other, which
    pyiceberg evaluates) reads alike in both readers and is attested."""
    name, ident, ref = merge_on_read_table(spark, "bnh")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.delete.granularity'='partition')")
    spark.sql(f"DELETE FROM {name} WHERE id IN (2, 7)")
    honest = [0, 1, 3, 4, 5, 6, 8, 9]
    assert spark_ids(spark, name) == honest
    assert pyiceberg_ids(spark_warehouse, ident) == honest
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc


def _equality_delete(spark: SparkSession, name: str, how: str) -> None:
    """Commit (Iceberg Java's RowDelta) an equality delete file of ``id = 5`` whose metrics misstate it: bounds
    1000..2000 (``bounds``), or null counts equal to its value counts (``all_null``); ``honest``: Java's own metrics
    of the file."""
    located = {str(r[0]): int(r[1]) for r in spark.sql(f"SELECT _file, min(id) FROM {name} GROUP BY _file").collect()}
    holder = next(f for f, low in located.items() if low == 5)
    field = pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})
    path = local(holder).parent / "equality-misstated.parquet"
    pq.write_table(pa.table({"id": pa.array([5], pa.int64())}, schema=pa.schema([field])), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    if how == "bounds":
        lowers, uppers = jvm.java.util.HashMap(), jvm.java.util.HashMap()
        lowers.put(1, jvm.java.nio.ByteBuffer.wrap(bytearray((1000).to_bytes(8, "little"))))
        uppers.put(1, jvm.java.nio.ByteBuffer.wrap(bytearray((2000).to_bytes(8, "little"))))
        metrics = jvm.org.apache.iceberg.Metrics(1, None, None, None, None, lowers, uppers)
    else:  # Java's own honest metrics of the file (for all_null, its null counts then copied from its value counts)
        honest = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
            table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())
        metrics = honest if how == "honest" else jvm.org.apache.iceberg.Metrics(
            1, None, honest.valueCounts(), jvm.java.util.HashMap(honest.valueCounts()), None, None, None)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)  # type: ignore[union-attr]
    ids[0] = 1
    delete = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec()).ofEqualityDeletes(ids) \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size).withMetrics(metrics).build()
    table.newRowDelta().addDeletes(delete).commit()


@pytest.mark.parametrize("how", ["bounds", "all_null"])
def test_an_equality_delete_java_skips_by_its_metrics_is_not_attested(spark: SparkSession, spark_warehouse: Path,
                                                                      how: str) -> None:
    name, ident, ref = merge_on_read_table(spark, "eqm")
    _equality_delete(spark, name, how)
    assert spark_ids(spark, name) == list(range(10))  # Java skips the delete file by its metrics: id 5 read
    with pytest.raises(ValueError, match="equality deletes"):  # pyiceberg reads no table with equality deletes
        pyiceberg_ids(spark_warehouse, ident)
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc  # nothing recorded: unattested


def test_an_equality_delete_with_honest_metrics_is_attested(spark: SparkSession, spark_warehouse: Path) -> None:
    name, _ident, ref = merge_on_read_table(spark, "eqh")
    _equality_delete(spark, name, "honest")
    assert spark_ids(spark, name) == [0, 1, 2, 3, 4, 6, 7, 8, 9]  # Java applies it: id 5 gone
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
