"""Round 14, Spark's side: an Iceberg data file appended through Iceberg Java's ``AppendFiles`` with metrics in its
manifest entry that misstate its rows, in the attested snapshot itself (tests/adversarial/test_iceberg_round14.py has
the pyiceberg-made forgeries and their filtered reads).

Measured (Spark 4.1 / Iceberg 1.12, pyiceberg 0.12), on a table of ids 0-9 and a file of ids 100, 101 appended:

- an upper bound of ``id`` of 50: ``WHERE id = 101`` returned no row in Spark nor pyiceberg, Spark's ``MAX(id)`` 50;
- a lower bound of -1000 (sound: no row below it): Spark's ``MIN(id)`` -1000 (answered from the metrics);
- a file of 100 and a null with a null count of 0: ``WHERE id IS NULL`` no row in either, Spark's ``COUNT(id)`` 12;
- a record count of 3 for two rows: Spark's ``COUNT(*)`` 13.

A full read returned every row in both, and ``attest record`` attested them: ``verify`` said VERIFIED (the metrics are
in the reader view, so only a change after the record was caught). Now every digested file's metrics are held to its
rows at record time too (carriers/iceberg/content.py ``_check_recorded_statistics``): ``table_inconsistent``, nothing
recorded. The same append with Java's own metrics of the file is attested, and so is a Spark-written table of every
type, NaN and nulls included, with merge-on-read deletes (v2 and v3), and its ``rewrite_data_files`` verifies.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import java_table, merge_on_read_table
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _long(v: int) -> bytes:
    return int(v).to_bytes(8, "little", signed=True)


def _append(spark: SparkSession, name: str, values: list[int | None], forged: dict[str, Any]) -> None:
    """Append (Iceberg Java's AppendFiles) a file of ``values`` as ``id``, with Java's own metrics of it but for
    ``forged``: a bound as bytes, a count map as the values of a file whose Java metrics give it, a record count."""
    holder = str(spark.sql(f"SELECT _file FROM {name} LIMIT 1").collect()[0][0])
    folder = local(holder).parent
    field = pa.field("id", pa.int64(), nullable=True, metadata={b"PARQUET:field_id": b"1"})
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)

    def metrics_of(rows: list[int | None]) -> tuple[Path, Any]:
        path = folder / f"appended-{uuid.uuid4().hex[:8]}.parquet"
        pq.write_table(pa.table({"id": pa.array(rows, pa.int64())}, schema=pa.schema([field])), path)
        return path, jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
            table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())

    path, honest = metrics_of(values)

    def pick(key: str, current: Any) -> Any:
        if key not in forged:
            return current
        if isinstance(forged[key], list):  # py4j passes small ints as Integer: Java's own Long map of other rows
            return metrics_of(forged[key])[1].nullValueCounts()
        bound = jvm.java.util.HashMap()
        bound.put(1, jvm.java.nio.ByteBuffer.wrap(bytearray(forged[key])))
        return bound

    metrics = jvm.org.apache.iceberg.Metrics(
        forged.get("record_count", honest.recordCount()), honest.columnSizes(), honest.valueCounts(),
        pick("null_value_counts", honest.nullValueCounts()), honest.nanValueCounts(),
        pick("lower_bounds", honest.lowerBounds()), pick("upper_bounds", honest.upperBounds()))
    data = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withMetrics(metrics).build()
    table.newAppend().appendFile(data).commit()


def _pyiceberg_ids(warehouse: Path, ident: str, row_filter: str = "True") -> list[int | None]:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                         warehouse=(warehouse / "iceberg").as_uri())
    return list(catalog.load_table(ident).scan(row_filter=row_filter).to_arrow().column("id").to_pylist())


# forgery: (the appended file's ids, its forged metrics, a query, what Spark answers it with, its true answer)
CASES: dict[str, tuple[list[int | None], dict[str, Any], str, list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {
    "upper_bound": ([100, 101], {"upper_bounds": _long(50)}, "SELECT id, MAX(id) OVER () FROM {t} WHERE id = 101",
                    [], [(101, 101)]),
    "loose_lower_bound": ([100, 101], {"lower_bounds": _long(-1000)}, "SELECT MIN(id) FROM {t}", [(-1000,)], [(0,)]),
    "null_count": ([100, None], {"null_value_counts": [1, 2]}, "SELECT COUNT(*) FROM {t} WHERE id IS NULL",
                   [(0,)], [(1,)]),
    "record_count": ([100, 101], {"record_count": 3}, "SELECT COUNT(*) FROM {t}", [(13,)], [(12,)]),
    "honest": ([100, None], {}, "SELECT COUNT(*), COUNT(id), MIN(id), MAX(id) FROM {t}", [(12, 11, 0, 100)],
               [(12, 11, 0, 100)]),
}

PYICEBERG: dict[str, tuple[str, list[int | None]]] = {
    "upper_bound": ("id = 101", []), "null_count": ("id IS NULL", []), "honest": ("id IS NULL", [None])}


@pytest.mark.parametrize("case", list(CASES))
def test_an_appended_file_whose_metrics_misstate_its_rows(spark: SparkSession, spark_warehouse: Path,
                                                          case: str) -> None:
    values, forged, query, answered, true = CASES[case]
    name, ident, ref = merge_on_read_table(spark, "m14")
    _append(spark, name, values, forged)
    spark.sql(f"REFRESH TABLE {name}")
    every = [*range(10), *(v for v in values if v is not None)]
    assert sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect() if r[0] is not None) == every
    assert sorted(v for v in _pyiceberg_ids(spark_warehouse, ident) if v is not None) == every
    assert [tuple(r) for r in spark.sql(query.format(t=name)).collect()] == answered, query
    if case in PYICEBERG:  # pyiceberg's filtered read prunes by the same metrics
        row_filter, rows = PYICEBERG[case]
        assert _pyiceberg_ids(spark_warehouse, ident, row_filter) == rows, row_filter
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    if answered == true:
        assert rc == 0, doc
        rc, doc = _cli(spark_warehouse, "verify", ref)
        assert rc == 0 and doc["passed"], doc
        return
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc  # nothing recorded: unattested


@pytest.mark.parametrize("version", [2, 3])
def test_spark_tables_of_every_type_with_deletes_are_attested(spark: SparkSession, spark_warehouse: Path,
                                                              version: int) -> None:
    """Spark's own metrics — nulls, strings and binaries past the 16-character prefix Iceberg keeps, decimals,
    timestamps, dates, booleans, a struct; in v2 NaN beside numbers and a column of NaN only too — over merge-on-read
    deletes: attested. In v3 (no NaN: a rewrite moving NaN rows between files is ``content_changed`` by design,
    docs/content-digest.md) ``rewrite_data_files`` after it verifies by content."""
    ns = f"e14{uuid.uuid4().hex[:8]}"
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, f FLOAT, d DOUBLE, s STRING, b BINARY, dec DECIMAL(20, 3), "
              "ts TIMESTAMP, day DATE, ok BOOLEAN, st STRUCT<x: INT, y: STRING>) USING iceberg "
              f"TBLPROPERTIES ('format-version'='{version}', 'write.delete.mode'='merge-on-read')")
    text = "é" * 20 + "\U0001d11e" * 20
    nan = version == 2
    for lo in (0, 4):
        spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, "
                  f"CASE WHEN id % 3 = 0 AND {nan} THEN float('NaN') ELSE CAST(id AS FLOAT) END, "
                  f"CASE WHEN {nan} THEN double('NaN') ELSE -0.0 END, "
                  f"CASE WHEN id = 1 THEN NULL ELSE concat('{text}', id) END, "
                  "CAST(repeat('\\xff', 40) AS BINARY), CAST(id AS DECIMAL(20, 3)) - 2, "
                  "TIMESTAMP '1960-05-05 10:00:00' + make_interval(0, 0, 0, CAST(id AS INT)), "
                  "DATE '1900-01-01' + CAST(id AS INT), id % 2 = 0, named_struct('x', CAST(id AS INT), 'y', 'v') "
                  f"FROM range({lo}, {lo + 4})")
    spark.sql(f"DELETE FROM {name} WHERE id IN (2, 5)")
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
    if nan:
        return
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{ns}.t', options => map('rewrite-all', 'true'))")
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"] and "content" in doc["verdict"], doc



def test_an_appended_file_whose_parquet_footer_misstates_its_rows(spark: SparkSession, spark_warehouse: Path) -> None:
    """The file's own Parquet footer forged (its maximum of ``id`` 1000007 written as 1000004), its manifest metrics
    Java's of the honest file: Spark (vectorized or not) and pyiceberg skip its row group for ``id = 1000007`` and
    ``id > 1000005`` while a full read returns the row — attested and VERIFIED before; ``table_inconsistent`` now."""
    name, ident, ref = merge_on_read_table(spark, "f14")
    holder = str(spark.sql(f"SELECT _file FROM {name} LIMIT 1").collect()[0][0])
    path = local(holder).parent / "footer-forged.parquet"
    field = pa.field("id", pa.int64(), nullable=True, metadata={b"PARQUET:field_id": b"1"})
    pq.write_table(pa.table({"id": pa.array([1000003, 1000007], pa.int64())}, schema=pa.schema([field])), path,
                   use_dictionary=False, write_page_index=False)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    honest = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
        table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())
    data = bytearray(path.read_bytes())
    length = struct.unpack("<i", bytes(data[-8:-4]))[0]
    start, end = len(data) - 8 - length, len(data) - 8
    footer = bytes(data[start:end])
    assert footer.count(struct.pack("<q", 1000007)) == 2  # the chunk's max_value and (deprecated) max
    data[start:end] = footer.replace(struct.pack("<q", 1000007), struct.pack("<q", 1000004))
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).statistics.max == 1000004
    appended = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withMetrics(honest).build()
    table.newAppend().appendFile(appended).commit()
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect()) == [*range(10), 1000003, 1000007]
    for query in ("id = 1000007", "id > 1000005"):
        assert spark.sql(f"SELECT id FROM {name} WHERE {query}").collect() == [], query
        assert _pyiceberg_ids(spark_warehouse, ident, query) == [], query
    with session_conf(spark, "spark.sql.iceberg.vectorization.enabled", "false"):
        assert spark.sql(f"SELECT id FROM {name} WHERE id = 1000007").collect() == []  # the row reader too
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc
