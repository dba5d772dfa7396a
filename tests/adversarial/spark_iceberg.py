"""What each Iceberg reader returns, for attacks that compare Java's rows (Spark) with pyiceberg's (ours), and the
merge-on-read table those attacks start from."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

PATH_ID, POS_ID = 2147483546, 2147483545  # the field ids of a position delete file's file_path and pos


def spark_ids(spark: SparkSession, name: str) -> list[int]:
    """The ``id`` column as Spark reads it now (refreshed: another writer may have committed since)."""
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())


def pyiceberg_ids(warehouse: Path, ident: str) -> list[int]:
    """The ``id`` column as pyiceberg reads it, through the Spark session's sqlite catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                         warehouse=(warehouse / "iceberg").as_uri())
    return sorted(catalog.load_table(ident).scan().to_arrow().column("id").to_pylist())


def verify_iceberg(warehouse: Path, ident: str) -> Any:
    """``attest.api.verify`` of an Iceberg table of the Spark session's sqlite catalog, as pyiceberg loads it."""
    from pyiceberg.catalog.sql import SqlCatalog

    from attest.api import verify
    from carriers.spark.session import pyiceberg_catalog_properties

    return verify(SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse)).load_table(ident))


def merge_on_read_table(spark: SparkSession, prefix: str, *, double: bool = False) -> tuple[str, str, str]:
    """A fresh v2 table ``(id BIGINT)`` whose deletes write delete files, ids 0–4 and 5–9 in one data file each:
    its Spark name, its catalog identifier and its ``iceberg://`` reference. ``double``: a second column
    ``x DOUBLE`` (field id 2) holding each id as a double."""
    ns = f"{prefix}{uuid.uuid4().hex[:8]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    columns, values = ("id BIGINT, x DOUBLE", "id, CAST(id AS DOUBLE)") if double else ("id BIGINT", "id")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} ({columns}) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ {values} FROM range(0, 5)")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ {values} FROM range(5, 10)")
    return name, ident, f"iceberg://iceberg/{ident}"


def unattested_iceberg_table(spark: SparkSession, prefix: str) -> tuple[str, int]:
    """A fresh table ``(id BIGINT)`` of one 666 row, written before any hook (no attestation covers its snapshot):
    its Spark name and that snapshot's id — where a rollback or a branch set by DDL points readers in the hook's
    rounds 26 and 27."""
    ns = f"{prefix}{uuid.uuid4().hex[:8]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (666)")
    old = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at").collect()[0][0]
    return name, int(old)


def java_table(spark: SparkSession, name: str) -> Any:
    """The Iceberg Java table behind Spark name ``name`` (to commit files through ``AppendFiles`` / ``RowDelta``)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)


def java_metrics(spark: SparkSession, table: Any, path: Path) -> Any:
    """Iceberg Java's own metrics of the Parquet file at ``path`` (``ParquetUtil.fileMetrics``, default config)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    return jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
        table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())


def commit_java_deletes(spark: SparkSession, table: Any, path: Path, metrics: Any = None, *,
                        equality_ids: list[int] | None = None, file_format: str = "PARQUET",
                        referenced: str | None = None) -> None:
    """Commit the delete file at ``path`` to Java table ``table`` (``RowDelta``): position deletes, or equality
    deletes by the fields ``equality_ids``; with ``metrics`` (an ``org.apache.iceberg.Metrics``) or Java's own metrics
    of the (Parquet) file; ``referenced``: the one data file its rows name (``withReferencedDataFile``)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    if metrics is None:
        metrics = java_metrics(spark, table, path)
    builder = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec())
    if equality_ids is None:
        builder = builder.ofPositionDeletes()
    else:
        ids = spark.sparkContext._gateway.new_array(jvm.int, len(equality_ids))  # type: ignore[union-attr]
        for i, field_id in enumerate(equality_ids):
            ids[i] = field_id
        builder = builder.ofEqualityDeletes(ids)
    builder = builder.withPath(f"file://{path}").withFormat(getattr(jvm.org.apache.iceberg.FileFormat, file_format)) \
        .withFileSizeInBytes(path.stat().st_size).withMetrics(metrics)
    if referenced is not None:
        builder = builder.withReferencedDataFile(referenced)
    table.newRowDelta().addDeletes(builder.build()).commit()


def position_delete(spark: SparkSession, name: str, path: Path, file_path: str, positions: list[int]) -> None:
    """Write ``positions`` of the data file ``file_path`` to ``path`` as a position delete file and commit it to the
    table Spark names ``name`` (Java's ``RowDelta``, Java's own metrics of the file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = [
        pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(PATH_ID).encode()}),
        pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(POS_ID).encode()}),
    ]
    rows = {"file_path": [file_path] * len(positions), "pos": pa.array(positions, pa.int64())}
    pq.write_table(pa.table(rows, schema=pa.schema(fields)), path)
    commit_java_deletes(spark, java_table(spark, name), path)


def append_data_file(spark: SparkSession, table: Any, path: Path, metrics: Any = None) -> None:
    """Commit the Parquet file at ``path`` to Java table ``table`` (``AppendFiles``) with ``metrics`` (an
    ``org.apache.iceberg.Metrics``), or Java's own metrics of the file."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    if metrics is None:
        metrics = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
            table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())
    data = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withMetrics(metrics).build()
    table.newAppend().appendFile(data).commit()


def equality_delete(spark: SparkSession, name: str, path: Path, field_id: int, rows: pa.Table,
                    bounds: tuple[bytes, bytes] | None = None) -> None:
    """Commit (Iceberg Java's RowDelta) ``rows`` (one column, of field id ``field_id``) written to ``path`` as an
    equality delete file by that field, with Java's own metrics of the file, or (``bounds``) a record count and these
    lower and upper bounds of the field only."""
    import pyarrow.parquet as pq

    pq.write_table(rows, path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    if bounds is None:
        metrics = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
            table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())
    else:
        lowers, uppers = jvm.java.util.HashMap(), jvm.java.util.HashMap()
        lowers.put(field_id, jvm.java.nio.ByteBuffer.wrap(bytearray(bounds[0])))
        uppers.put(field_id, jvm.java.nio.ByteBuffer.wrap(bytearray(bounds[1])))
        metrics = jvm.org.apache.iceberg.Metrics(rows.num_rows, None, None, None, None, lowers, uppers)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)  # type: ignore[union-attr]
    ids[0] = field_id
    delete = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec()).ofEqualityDeletes(ids) \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size).withMetrics(metrics).build()
    table.newRowDelta().addDeletes(delete).commit()
