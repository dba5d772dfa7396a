"""Round 18b pins measured with Spark 4.1 / Iceberg 1.12 (then an ORC data file, and a data file's string maximum
Java decodes below its value): equality deletes by a string field whose stored bytes are not UTF-8 — held.

Iceberg Java applies an equality delete by comparing Java ``String`` values: Spark's rows are wrapped as strings
(``UTF8String.toString()``) and the delete file's values read as ``String``, both decoding malformed bytes to U+FFFD.
Two different byte strings — ``FF`` and ``EF BF BD`` (U+FFFD), ``FE`` and ``FF``, ``C3`` and ``EF BF BD`` — are then
equal for Java, and Spark deleted the row (measured below), where a comparison of stored bytes keeps it. Held: an
equality delete applied to a data file holds both files' metrics of the equality fields to their rows
(``_hold_equality_metrics``), which refuses the table when a string key on either side is not valid UTF-8
(``table_inconsistent``, naming that cause), whatever the files' metrics (bounds, counts only, none): ``record``
attests no rows here.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import append_data_file, commit_java_deletes, java_table
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def raw_strings(values: list[bytes]) -> pa.Array:
    """A ``string`` array holding ``values`` as stored bytes, UTF-8 or not (Arrow does not check them)."""
    offsets, at = [0], 0
    for v in values:
        at += len(v)
        offsets.append(at)
    return pa.Array.from_buffers(
        pa.string(),
        len(values),
        [None, pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)), pa.py_buffer(b"".join(values))],
    )


def string_table(spark: SparkSession, prefix: str, rows: str, metrics: str = "truncate(16)") -> tuple[str, str, str]:
    import uuid

    ns = f"{prefix}{uuid.uuid4().hex[:8]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', "
        f"'write.metadata.metrics.default'='{metrics}')"
    )
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES {rows} AS v(id, s)")
    return name, ident, f"iceberg://iceberg/{ident}"


def string_equality_delete(spark: SparkSession, name: str, path: Path, values: list[bytes]) -> None:
    """Commit (Java's RowDelta) an equality delete file by field 2 (``s``) holding ``values`` as stored bytes, with a
    record count and no bounds (Java then applies it to every older data file)."""
    import pyarrow.parquet as pq

    column = raw_strings(values)
    pq.write_table(
        pa.table([column], schema=pa.schema([pa.field("s", pa.string(), metadata={b"PARQUET:field_id": b"2"})])), path
    )
    jvm = spark._jvm  # type: ignore[attr-defined]
    metrics = jvm.org.apache.iceberg.Metrics(len(values), None, None, None, None)
    commit_java_deletes(spark, java_table(spark, name), path, metrics, equality_ids=[2])


def ids(spark: SparkSession, name: str) -> list[int]:
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())


def _data_dir(warehouse: Path, ident: str) -> Path:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}", warehouse=(warehouse / "iceberg").as_uri()
    )
    return local(catalog.load_table(ident).location()) / "data"


@pytest.mark.parametrize("metrics", ["truncate(16)", "none", "counts"])
@pytest.mark.parametrize(
    ("rows", "deleted", "gone"),
    [
        # a valid U+FFFD row, a delete of the malformed byte FF
        ("(1L, 'a'), (2L, '\\uFFFD'), (3L, 'b')", [b"\xff"], 2),
        # a malformed row (FE, cast from binary), a delete of another malformed byte (FF)
        ("(1L, 'a'), (2L, CAST(X'FE' AS STRING)), (3L, 'b')", [b"\xff"], 2),
        # a malformed row, a delete of the valid U+FFFD
        ("(1L, 'a'), (2L, CAST(X'C3' AS STRING)), (3L, 'b')", ["\ufffd".encode()], 2),
    ],
)
def test_an_equality_delete_by_malformed_strings_is_not_attested_by_bytes(
    spark: SparkSession, spark_warehouse: Path, rows: str, deleted: list[bytes], gone: int, metrics: str
) -> None:
    name, ident, ref = string_table(spark, "equ", rows, metrics)
    string_equality_delete(spark, name, _data_dir(spark_warehouse, ident) / "eq.parquet", deleted)
    assert gone not in ids(spark, name)  # measured: Java decodes both sides to U+FFFD and deletes the row
    assert len(ids(spark, name)) == 2
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert "not valid UTF-8" in str(doc) and "decoded strings" in str(doc), doc  # the cause named


def test_an_orc_data_file_is_not_read_here(spark: SparkSession, spark_warehouse: Path) -> None:
    """Held: a data file in ORC (Spark's ``write.format.default=orc``) is not read by the content digest, whose
    reader opens Parquet: ``record`` refuses the table (``table_unreadable``), so no ORC statistics (which Iceberg
    Java skips stripes by) stand behind a verdict."""
    import uuid

    ns = f"orcd{uuid.uuid4().hex[:8]}"
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', "
        "'write.format.default'='orc')"
    )
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(1, 10)")
    assert ids(spark, name) == list(range(1, 10))
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_unreadable" in codes(doc), doc


@pytest.mark.parametrize(
    ("upper", "spark_reads"),
    [(b"\xff", None), ("\ufffd".encode(), [])],
)
def test_a_string_maximum_java_decodes_below_the_file_s_value(
    spark: SparkSession, spark_warehouse: Path, upper: bytes, spark_reads: list[int] | None
) -> None:
    """Held: a data file of ``s = U+FFFF`` committed (Java's ``AppendFiles``) with the manifest maximum of ``s`` given
    as ``FF`` — above the value bytewise, and U+FFFD, below it, once Java decodes it — made Spark's ``s = U+FFFF``
    fail (``None`` here), and given as U+FFFD skipped the file (no row): ``record`` refuses both
    (``table_inconsistent``: bounds that are not values of the column, a maximum below the greatest value)."""
    import uuid

    import pyarrow.parquet as pq

    ns = f"ub{uuid.uuid4().hex[:8]}"
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO {name} VALUES (1L, 'a')")
    first = str(spark.sql(f"SELECT file_path FROM {name}.files").collect()[0][0])
    path = Path(first.removeprefix("file:")).parent / "forged.parquet"
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("s", pa.string(), metadata={b"PARQUET:field_id": b"2"}),
        ]
    )
    rows = pa.table({"id": pa.array([2], pa.int64()), "s": pa.array(["\uffff"])}, schema=schema)
    pq.write_table(rows, path, write_statistics=False)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    lowers, uppers = jvm.java.util.HashMap(), jvm.java.util.HashMap()
    lowers.put(2, jvm.java.nio.ByteBuffer.wrap(bytearray("\uffff".encode())))
    uppers.put(2, jvm.java.nio.ByteBuffer.wrap(bytearray(upper)))
    metrics = jvm.org.apache.iceberg.Metrics(1, None, None, None, None, lowers, uppers)
    append_data_file(spark, table, path, metrics)
    assert ids(spark, name) == [1, 2]
    query = f"SELECT id FROM {name} WHERE s = '\\uFFFF'"
    if spark_reads is None:
        from py4j.protocol import Py4JJavaError

        with pytest.raises(Py4JJavaError):  # the query fails (measured), the bound not read as a string
            spark.sql(query).collect()
    else:
        assert [r[0] for r in spark.sql(query).collect()] == spark_reads
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
