"""Round 34: INT96 timestamps past what an int64 of nanoseconds holds.

An INT96 timestamp is a Julian day and the nanoseconds within it. pyarrow (the content digest's reader) and delta-rs
convert it to an int64 of nanoseconds without a check, so an instant outside 1677–2262 wraps round to another —
2000-01-01 plus 2^64 ns reads as 2000-01-01 — where Spark converts it to microseconds and reads it as stored
(2584-07-20). Measured (delta-rs 1.6, Spark 4.1 / delta-spark 4.4): a Delta rewrite (``dataChange: false``) whose
file stored the attested timestamps so was ``VERIFIED (content; …, same rows)``, exit 0, while Spark read 2584.
Now a file whose INT96 values lie outside that range (read again in microseconds, as Spark reads them) has no one
content: ``content_changed`` in a rewrite, ``table_inconsistent`` at ``attest record`` (nothing written). An Iceberg
table's file so made (a migrated table's: Iceberg's writers write no INT96) was digested by ``attest record`` as
pyiceberg read it, the wrapped instants (a rewrite of one was refused already: not Iceberg's representation); now
``table_inconsistent`` too, Iceberg Java reading them as stored.
"""

from __future__ import annotations

import datetime
import io
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.cli import main
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_file_size_round33 import rewritten_as, written_as

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

ROWS = pa.table({"id": pa.array([1, 2], pa.int64()),
                 "ts": pa.array([datetime.datetime(2000, 1, 1), datetime.datetime(2001, 1, 1)],
                                pa.timestamp("us", "UTC"))})
_EPOCH_JULIAN_DAY, _DAY_NS = 2440588, 86400 * 10**9


def _int96(ns: int) -> bytes:
    days, within = divmod(ns, _DAY_NS)
    return struct.pack("<qi", within, days + _EPOCH_JULIAN_DAY)


def int96_file(rows: pa.Table, shift_ns: int) -> bytes:
    """``rows`` written with ``ts`` as INT96 (plain, uncompressed, no statistics), each value moved ``shift_ns``."""
    out = io.BytesIO()
    pq.write_table(rows, out, use_deprecated_int96_timestamps=True, compression="NONE", use_dictionary=False,
                   write_statistics=False, store_schema=False)
    data = out.getvalue()
    for micros in rows.column("ts").cast(pa.int64()).to_pylist():
        assert data.count(_int96(micros * 1000)) == 1
        data = data.replace(_int96(micros * 1000), _int96(micros * 1000 + shift_ns))
    return data


def test_pyarrow_wraps_an_int96_past_2262() -> None:
    """The premise: pyarrow's nanoseconds wrap round to the attested instants; read in microseconds, 2584."""
    data = int96_file(ROWS, 2**64)
    assert pq.read_table(pa.BufferReader(data)).column("ts").cast(pa.timestamp("us")).to_pylist() == \
        [datetime.datetime(2000, 1, 1), datetime.datetime(2001, 1, 1)]
    coerced = pq.read_table(pa.BufferReader(data), coerce_int96_timestamp_unit="us").column("ts").to_pylist()
    assert [t.year for t in coerced] == [2584, 2585]


def test_a_delta_rewrite_storing_wrapped_int96_timestamps(tmp_path: Path) -> None:
    from tests.adversarial.test_content_rewrite_delta import _engine_rows

    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: int96_file(ROWS, 2**64))
    assert sorted(r[1].year for r in _engine_rows(path)) == [2000, 2001]  # delta-rs wraps too
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "INT96 timestamps outside the years 1677–2262" in doc["errors"][0]["message"], doc


def test_an_honest_int96_rewrite_still_verifies(tmp_path: Path) -> None:
    """Spark writes INT96 when asked (``spark.sql.parquet.outputTimestampType``): in range, read alike."""
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: int96_file(ROWS, 0))
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), doc


def test_record_refuses_wrapped_int96_timestamps(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "t"
    written_as(path, ROWS, int96_file(ROWS, 2**64))
    rc = main(["record", str(path), "--model", "orders", "--sql", "select 1", "--json"])
    out = capsys.readouterr().out
    assert rc == 2 and '"table_inconsistent"' in out and "outside the years 1677–2262" in out, out
    assert not list((path / "_delta_log").glob("*01.json"))  # no ALTER: nothing recorded


def iceberg_int96_file(table: Any, shift_ns: int) -> Any:
    """A DataFile of ``table`` (id: field 1, ts: field 2) holding ``ROWS`` with ``ts`` stored as INT96."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from tests.iceberg.rewrites import local, with_ids

    path = local(table.location()) / "data" / f"int96-{shift_ns}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(int96_file(with_ids(ROWS, [1, 2]), shift_ns))
    return DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}", file_format=FileFormat.PARQUET,
                              partition=Record(), record_count=ROWS.num_rows, file_size_in_bytes=path.stat().st_size,
                              spec_id=0)


@pytest.mark.parametrize("shift_ns", [2**64, 0])
def test_record_of_an_iceberg_file_of_int96_timestamps(catalog: SqlCatalog, capsys: Any, shift_ns: int) -> None:
    """Wrapped: refused (pyiceberg reads 2000, Java 2584); in range: recorded with its digest."""
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import replace

    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table = replace(catalog, table, remove=[], data_files=[iceberg_int96_file(table, shift_ns)], operation="append")
    assert sorted(t.year for t in table.scan().to_arrow().column("ts").to_pylist()) == [2000, 2001]
    rc = main(["record", f"iceberg://{CATALOG}/ns.t", "--model", "orders", "--sql", "select 1", "--json"])
    out = capsys.readouterr().out
    if shift_ns:
        assert rc == 2 and '"table_inconsistent"' in out and "outside the years 1677–2262" in out, out
    else:
        assert rc == 0 and '"content_digest_rows": 2' in out, out


@pytest.mark.spark
def test_spark_reads_int96_as_stored(spark: SparkSession, spark_warehouse: Path, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_spark_rewrite_readers import spark_rows
    from tests.iceberg.rewrites import live_data_files, replace

    path = tmp_path / "t"
    written_as(path, ROWS, int96_file(ROWS, 2**64))
    assert sorted(r["ts"].year for r in spark_rows(spark, path)) == [2584, 2585]

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.r34i")
    spark.sql("CREATE TABLE iceberg.r34i.t (id BIGINT, ts TIMESTAMP) USING iceberg")
    spark.sql("INSERT INTO iceberg.r34i.t VALUES (0, TIMESTAMP '2000-01-01 00:00:00')")
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    table = catalog.load_table("r34i.t")
    replace(catalog, table, remove=live_data_files(table), data_files=[iceberg_int96_file(table, 2**64)],
            operation="append")
    spark.sql("REFRESH TABLE iceberg.r34i.t")
    years = sorted(r[0].year for r in spark.sql("SELECT ts FROM iceberg.r34i.t").collect())
    assert years == [2584, 2585]  # Iceberg Java: as stored (pyiceberg: 2000, 2001)


def test_int96_problem_reads_a_dotted_name_and_nested_leaves() -> None:
    """A top-level name holding "." (its Parquet path's first part is not the column): every column is read; an
    INT96 inside a struct is found too; a file that cannot be read so gives a reason, not an exception."""
    from carriers.content_store import int96_problem

    dotted = ROWS.rename_columns(["id", "t.s"])
    data = int96_file(ROWS, 2**64)
    out = io.BytesIO()
    pq.write_table(dotted, out, use_deprecated_int96_timestamps=True)
    assert int96_problem(pa.BufferReader(out.getvalue()), {"t"}) is None  # in range, read whole
    assert "outside the years 1677–2262" in (int96_problem(pa.BufferReader(data), {"ts"}) or "")
    nested = pa.table({"st": pa.StructArray.from_arrays([ROWS.column("ts").combine_chunks()], ["ts"])})
    out = io.BytesIO()
    pq.write_table(nested, out, use_deprecated_int96_timestamps=True, compression="NONE", use_dictionary=False,
                   write_statistics=False, store_schema=False)
    raw = out.getvalue()
    for micros in ROWS.column("ts").cast(pa.int64()).to_pylist():
        raw = raw.replace(_int96(micros * 1000), _int96(micros * 1000 + 2**64))
    assert "'st'" in (int96_problem(pa.BufferReader(raw), {"st"}) or "")
    assert "cannot be read as Spark reads them" in (int96_problem(pa.BufferReader(raw[:-20] + raw[-8:]), {"st"}) or "")
