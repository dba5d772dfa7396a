"""Round 14k, Spark's side of tests/adversarial/test_record_parquet_indexes.py: an appended data file (Delta: a
delta-rs append whose file was rewritten in place; Iceberg: a file committed through Iceberg Java's ``AppendFiles`` with
Java's own metrics of it) whose Parquet page index or bloom filter misstates its rows, and Spark's filtered reads.

Measured (Spark 4.1, delta-spark 4.4, Iceberg 1.12; ``MEASURED`` below): a forged column index (the last page's maximum
below its greatest value) made Spark's Delta read of ``v = 999`` return no row, as did a cleared bloom filter, while
the full read returned every row; Iceberg Java skipped the row group by the cleared bloom filter (vectorized and row
readers) but prunes by no column index. ``attest record`` attested each before; now ``table_inconsistent``.
Spark-written files with bloom filters and column indexes still record and verify.
"""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write as delta_record
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import java_table, merge_on_read_table
from tests.adversarial.test_rewrite_parquet_indexes import _forge_page_index, _zero_bloom
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

N = 1000  # rows of the appended file, in pages of 64 (a page index of several pages)
PAGES: dict[str, Any] = {"write_page_index": True, "data_page_size": 256, "write_batch_size": 64,
                         "use_dictionary": False}


def _delta_forged(tmp_path: Path, name: str, forge: str) -> Path:
    path = tmp_path / name
    rows = pa.table({"v": pa.array(range(N), pa.int64())})
    write_deltalake(str(path), pa.table({"v": pa.array([-1, -2], pa.int64())}))
    write_deltalake(str(path), rows, mode="append")
    commit = path / commit_name(1)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    (add,) = [a["add"] for a in actions if "add" in a]
    added = path / add["path"]
    if forge == "page_index":
        pq.write_table(rows, added, **PAGES)
        _forge_page_index(added, struct.pack("<q", N - 1), struct.pack("<q", N - 9))
    else:
        pq.write_table(rows, added, bloom_filter_options={"v": {"ndv": N}})
        _zero_bloom(added, 0)
    add["size"] = added.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path


def _iceberg_forged(spark: SparkSession, forge: str) -> tuple[str, str]:
    name, _, ref = merge_on_read_table(spark, f"k14{forge[:4]}")
    holder = str(spark.sql(f"SELECT _file FROM {name} LIMIT 1").collect()[0][0])
    path = local(holder).parent / f"forged-{uuid.uuid4().hex[:8]}.parquet"
    field = pa.field("id", pa.int64(), nullable=True, metadata={b"PARQUET:field_id": b"1"})
    rows = pa.table({"id": pa.array(range(1000000, 1000000 + N), pa.int64())}, schema=pa.schema([field]))
    if forge == "page_index":
        pq.write_table(rows, path, **PAGES)
    else:
        pq.write_table(rows, path, bloom_filter_options={"id": {"ndv": N}})
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    honest = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
        table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())
    if forge == "page_index":
        _forge_page_index(path, struct.pack("<q", 1000000 + N - 1), struct.pack("<q", 1000000 + N - 9))
    else:
        _zero_bloom(path, 0)
    appended = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withMetrics(honest).build()
    table.newAppend().appendFile(appended).commit()
    spark.sql(f"REFRESH TABLE {name}")
    return name, ref


# What each forgery made Spark 4.1 (delta-spark 4.4, Iceberg 1.12) read for the last id of the appended file, measured:
# (full read, filtered read, the row reader's filtered read). Iceberg Java prunes by no column index (its own page
# skipping is not there): the page-index forgery changed no Iceberg answer, yet it is refused as in Delta (a page index
# no writer writes; parquet-mr outside Iceberg and delta-rs skip pages by it). Bloom filters it does prune by.
MEASURED: dict[str, tuple[int, int, int | None]] = {
    "delta page_index": (1002, 0, None), "delta bloom": (1002, 0, None),
    "iceberg page_index": (1010, 1, 1), "iceberg bloom": (1010, 0, 0),
}


def test_spark_filtered_reads_of_appended_files_with_forged_page_indexes_and_bloom_filters(
        spark: SparkSession, spark_warehouse: Path, tmp_path: Path) -> None:
    seen: dict[str, tuple[int, int, int | None]] = {}
    for forge in ("page_index", "bloom"):
        path = _delta_forged(tmp_path, f"d-{forge}", forge)
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        df = spark.read.format("delta").load(str(path))
        seen[f"delta {forge}"] = (df.count(), df.where(f"v = {N - 1}").count(), None)
        with pytest.raises(AttestError) as refused:
            delta_record(str(path), model="orders", program_hash=PROGRAM)
        assert refused.value.code.value == "table_inconsistent", refused.value.message
        name, ref = _iceberg_forged(spark, forge)
        query = f"SELECT id FROM {name} WHERE id = {1000000 + N - 1}"
        full, filtered = spark.sql(f"SELECT COUNT(*) FROM {name}").collect()[0][0], len(spark.sql(query).collect())
        with session_conf(spark, "spark.sql.iceberg.vectorization.enabled", "false"):
            seen[f"iceberg {forge}"] = (full, filtered, len(spark.sql(query).collect()))
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        assert rc != 0 and codes(doc) == ["table_inconsistent"], doc
        assert "page index or bloom filters" in doc["errors"][0]["message"], doc
    assert seen == MEASURED


def test_spark_written_page_indexes_and_bloom_filters_record(spark: SparkSession, spark_warehouse: Path,
                                                            tmp_path: Path) -> None:
    """Spark's own files with bloom filters (``parquet.bloom.filter.enabled#col``; Iceberg's
    ``write.parquet.bloom-filter-enabled.column.col``) and parquet-mr's column indexes record and verify."""
    path = tmp_path / "spark-delta"
    conf = spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    for column in ("v", "w"):
        conf.set(f"parquet.bloom.filter.enabled#{column}", "true")
    try:
        spark.range(0, 20000).selectExpr("id AS v", "CAST(id AS STRING) AS w").repartition(1).write.format("delta") \
            .save(str(path))
    finally:
        for column in ("v", "w"):
            conf.unset(f"parquet.bloom.filter.enabled#{column}")
    (written,) = path.glob("*.parquet")
    meta = pq.ParquetFile(written).metadata.row_group(0)
    assert all(meta.column(i).bloom_filter_offset and meta.column(i).has_column_index for i in range(2))
    delta_record(str(path), model="orders", program_hash=PROGRAM)
    ns = f"k14h{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE iceberg.{ns}.t (id BIGINT, w STRING) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.parquet.bloom-filter-enabled.column.id'='true', "
              "'write.parquet.bloom-filter-enabled.column.w'='true')")
    spark.sql(f"INSERT INTO iceberg.{ns}.t SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(0, 20000)")
    holder = str(spark.sql(f"SELECT _file FROM iceberg.{ns}.t LIMIT 1").collect()[0][0])
    meta = pq.ParquetFile(local(holder)).metadata.row_group(0)
    assert all(meta.column(i).bloom_filter_offset and meta.column(i).has_column_index for i in range(2))
    rc, doc = _cli(spark_warehouse, "record", f"iceberg://iceberg/{ns}.t", "--model", "orders",
                   "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", f"iceberg://iceberg/{ns}.t")
    assert rc == 0 and doc["passed"], doc
