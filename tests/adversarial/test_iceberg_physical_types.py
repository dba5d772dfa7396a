"""A rewrite's added Parquet file that stores the attested values in another physical representation than Iceberg's
writers use for the column's type — measured with pyiceberg 0.12 and Spark 4.1 (Iceberg 1.12).

pyiceberg reads a file through pyarrow, which decodes each column by its Parquet logical type and then casts it to the
schema's type: a ``timestamp`` stored in milliseconds or nanoseconds, a ``decimal(10, 2)`` stored as
``DECIMAL(10, 3)``, a ``long`` stored as ``UINT_32``, a ``string`` stored as unannotated ``BYTE_ARRAY`` all read as the
attested values, so the content digest was the attested one: ``VERIFIED (content; …, same rows)``. Iceberg Java
(Spark) decodes by the schema: it read the millisecond timestamps as microseconds (1970-01-21), the nanoseconds as a
year past 9999, the decimal at the schema's scale (12.340 as 123.40, vectorized reader) and refused the other two.
Such a file is now ``table_inconsistent``, and so is one storing timestamps as ``INT96`` (Spark read these values
alike; no Iceberg writer stores it). Representations both read alike still verify: an ``int`` file under a column
promoted to ``long``, a decimal of lower precision, either ``isAdjustedToUTC`` flag, and Spark's own
``rewrite_data_files`` of every type it writes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog_properties, local  # noqa: F401
from tests.iceberg.rewrites import replace, with_ids

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
IDS = [1, 2, 3, 4, 5, 6]


def _rows() -> pa.Table:
    return pa.table({"id": pa.array([1, 2], pa.int64()),
                     "big": pa.array([4294967295, 3000000000], pa.int64()),
                     "d": pa.array([Decimal("12.34"), Decimal("1.00")], pa.decimal128(10, 2)),
                     "ts": pa.array([T0, T0], pa.timestamp("us", tz="UTC")),
                     "nt": pa.array([T0.replace(tzinfo=None)] * 2, pa.timestamp("us")),
                     "s": pa.array(["a", "b"])})


def _column(name: str, values: Any, t: pa.DataType | None = None) -> Callable[[pa.Table], pa.Table]:
    def edit(table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(name)
        arr = table.column(name).cast(t) if t is not None and values is None else pa.array(values, t)
        return table.set_column(i, name, arr)
    return edit


# Each stores the attested values (pyiceberg reads them back as they were) in a representation Spark reads otherwise.
ATTACKS: dict[str, tuple[Callable[[pa.Table], pa.Table], dict[str, Any]]] = {
    "a timestamp in milliseconds": (_column("ts", None, pa.timestamp("ms", tz="UTC")), {}),
    "a timestamp in nanoseconds": (_column("ts", None, pa.timestamp("ns", tz="UTC")), {}),
    "a timestamp as INT96": (lambda t: t, {"use_deprecated_int96_timestamps": True}),
    "a decimal of another scale": (_column("d", [Decimal("12.340"), Decimal("1.000")], pa.decimal128(10, 3)), {}),
    "a long as UINT_32": (_column("big", [4294967295, 3000000000], pa.uint32()), {}),
    "a string as unannotated binary": (_column("s", None, pa.binary()), {}),
}
# Representations both readers decode to the attested values (measured with Spark below): still VERIFIED.
CONTROLS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "as Iceberg writes it": lambda t: t,
    "an int under a column promoted to long": _column("id", None, pa.int32()),
    "a decimal of lower precision": _column("d", [Decimal("12.34"), Decimal("1.00")], pa.decimal128(5, 2)),
    "timestamptz stored without isAdjustedToUTC": _column("ts", None, pa.timestamp("us")),
    "timestamp stored with isAdjustedToUTC": _column("nt", None, pa.timestamp("us", tz="UTC")),
}


def _attested(catalog: SqlCatalog, name: str) -> Table:
    table = catalog.create_table(name, schema=_rows().schema)
    table.append(_rows().slice(0, 1))
    table.append(_rows().slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog.load_table(name)


def _rewrite(catalog: SqlCatalog, table: Table, data: pa.Table, **write: Any) -> Table:
    """A ``replace`` snapshot of every live file by one file of ``data`` (field ids as pyiceberg assigns them),
    written by pyarrow with ``write``'s options."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    if not write:
        return replace(catalog, table, [with_ids(data, IDS)])
    folder = local(table.location()) / "data"
    path = folder / f"rewritten-{uuid.uuid4().hex}.parquet"
    pq.write_table(with_ids(data, IDS), path, **write)
    added = DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}",
                               file_format=FileFormat.PARQUET, partition=Record(), record_count=data.num_rows,
                               file_size_in_bytes=path.stat().st_size, spec_id=0)
    return replace(catalog, table, data_files=[added])


def _read(table: Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.scan().to_arrow().sort_by("id").to_pylist()
    return rows



@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_rewrite_storing_a_column_otherwise_is_refused(attack: str, catalog: SqlCatalog) -> None:
    from tests.adversarial.conftest import verify

    table = _attested(catalog, "ns.t")
    before = _read(table)
    edit, write = ATTACKS[attack]
    table = _rewrite(catalog, table, edit(_rows()), **write)
    assert _read(table) == before  # pyiceberg reads the attested values: the digest alone cannot tell
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and not doc["passed"] and codes(doc) == ["table_inconsistent"], json.dumps(doc, indent=1)
    assert "not as Iceberg's writers store" in json.dumps(doc), doc


@pytest.mark.parametrize("control", list(CONTROLS))
def test_a_rewrite_both_readers_read_alike_verifies(control: str, catalog: SqlCatalog) -> None:
    from tests.adversarial.conftest import verify

    table = _attested(catalog, "ns.t")
    before = _read(table)
    table = _rewrite(catalog, table, CONTROLS[control](_rows()))
    assert _read(table) == before
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), json.dumps(doc)


# ---- what Spark reads (Iceberg 1.12) -------------------------------------------------------------------------------
SPARK_READS = {  # attack -> what Spark's default (vectorized) read returns for the rows' (ts, d): None = refused
    "a timestamp in milliseconds": "1970-01-21",
    "a timestamp in nanoseconds": None,  # a year past 9999: Python cannot even hold it
    "a decimal of another scale": "123.40",
    "a long as UINT_32": None,
    # Spark read these (current-era) values as pyiceberg did; refused all the same: no Iceberg writer stores INT96, and
    # below the microsecond readers need not round its nanoseconds alike (not measured)
    "a timestamp as INT96": "same",
}


@pytest.mark.spark
def test_spark_reads_these_files_otherwise(spark: SparkSession, spark_warehouse: Path) -> None:
    """The measurement behind the refusals: the same files read by Spark. Controls read the attested rows."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_spark_attacks import _verify

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    cases: list[tuple[str, Callable[[pa.Table], pa.Table], dict[str, Any], Any]] = [
        *[(a, *ATTACKS[a], SPARK_READS[a]) for a in SPARK_READS],
        *[(c, CONTROLS[c], {}, "same") for c in ("an int under a column promoted to long",
                                                 "a decimal of lower precision",
                                                 "timestamptz stored without isAdjustedToUTC")]]
    for i, (case, edit, write, expected) in enumerate(cases):
        name = f"phys{i}.t"
        catalog.create_namespace(f"phys{i}")
        table = _attested(catalog, name)
        spark.sql(f"REFRESH TABLE iceberg.{name}")
        attested = [tuple(map(str, r)) for r in spark.sql(f"SELECT * FROM iceberg.{name} ORDER BY id").collect()]
        _rewrite(catalog, table, edit(_rows()), **write)
        spark.sql(f"REFRESH TABLE iceberg.{name}")
        try:
            got: Any = [tuple(map(str, r)) for r in spark.sql(f"SELECT * FROM iceberg.{name} ORDER BY id").collect()]
        except Exception:  # Spark refused the file, or returned a value Python cannot hold
            got = None
        rc, doc = _verify(f"iceberg://iceberg/{name}", spark_warehouse)
        if expected == "same":
            assert got == attested, case
            if case in ATTACKS:
                assert rc == 1 and codes(doc) == ["table_inconsistent"], (case, doc)
                continue
            assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), (case, doc)
            continue
        if expected is None:
            assert got is None, (case, got)
        else:
            assert got != attested and expected in str(got), (case, got, attested)
        assert rc == 1 and codes(doc) == ["table_inconsistent"], (case, doc)


@pytest.mark.spark
def test_spark_rewrite_of_every_type_verifies(spark: SparkSession, spark_warehouse: Path) -> None:
    """The honest control: Spark writes a table of every type Spark SQL writes to Iceberg (an int column promoted to
    long after the first write, so the rewrite reads INT32 files under a long column), attested, then
    ``rewrite_data_files``: the files it adds store each type as Iceberg does, and it verifies by content."""
    from carriers.iceberg.carrier import attest_after_write as iceberg_attest
    from tests.spark.test_maintenance_iceberg import _compacted, _pyiceberg

    name = "iceberg.physall.t"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.physall")
    columns = ("id INT, b BOOLEAN, f FLOAT, dbl DOUBLE, d5 DECIMAL(5,2), d12 DECIMAL(12,3), d30 DECIMAL(30,4), "
               "dt DATE, ts TIMESTAMP, nt TIMESTAMP_NTZ, s STRING, bin BINARY, st STRUCT<x: INT, y: STRING>, "
               "l ARRAY<BIGINT>, m MAP<STRING, DECIMAL(12,3)>")
    spark.sql(f"CREATE TABLE {name} ({columns}) USING iceberg")
    row = ("{i}, {i} % 2 = 0, {i}.5, {i}.25, {i}.01, {i}.001, {i}.0001, DATE'2024-01-0{i}', "
           "TIMESTAMP'2024-01-0{i} 10:00:00.123456', TIMESTAMP_NTZ'1900-01-0{i} 10:00:00', 's{i}', X'0{i}', "
           "named_struct('x', {i}, 'y', 'y{i}'), array({i}, NULL), map('k{i}', {i}.5)")
    spark.sql(f"INSERT INTO {name} VALUES ({row.format(i=1)}), ({row.format(i=2)})")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"INSERT INTO {name} VALUES ({row.format(i=3)})")
    iceberg_attest(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    spark.sql("CALL iceberg.system.rewrite_data_files(table => 'physall.t', options => map('min-input-files', '2'))"
              ).collect()
    _compacted("iceberg://iceberg/physall.t", spark_warehouse, 2)


def _nested(ts: pa.DataType, dec: pa.DataType) -> pa.Table:
    """``id long, st struct<t timestamptz>, l list<decimal(10, 2)>`` holding the attested values, the struct's field
    stored as ``ts`` and the list's elements as ``dec``, with the field ids pyiceberg assigns (1, 2, 3; st.t 4,
    l.element 5)."""
    def fid(field: pa.Field, i: int) -> pa.Field:
        return field.with_metadata({b"PARQUET:field_id": str(i).encode()})

    st = pa.struct([fid(pa.field("t", ts), 4)])
    lt = pa.list_(fid(pa.field("element", dec), 5))
    schema = pa.schema([fid(pa.field("id", pa.int64()), 1), fid(pa.field("st", st), 2), fid(pa.field("l", lt), 3)])
    scale = dec.scale  # type: ignore[attr-defined]
    return pa.table({"id": [1, 2], "st": [{"t": T0}, {"t": T0}],
                     "l": [[Decimal("12.34").quantize(Decimal(1).scaleb(-scale))], [Decimal("1.00")]]},
                    schema=schema)


@pytest.mark.parametrize(("ts", "dec", "refused"), [
    (pa.timestamp("ms", tz="UTC"), pa.decimal128(10, 2), True),  # a struct's field in milliseconds
    (pa.timestamp("us", tz="UTC"), pa.decimal128(10, 3), True),  # a list's elements at another scale
    (pa.timestamp("us", tz="UTC"), pa.decimal128(10, 2), False),  # as Iceberg writes them
])
def test_nested_columns_are_held_too(ts: pa.DataType, dec: pa.DataType, refused: bool, catalog: SqlCatalog) -> None:
    """Every leaf is held, nested ones too. Spark reads nested columns with its row reader, which read these
    representations of a top-level column right (measured with vectorization off; the vectorized reader, Spark's
    default for flat columns, did not): refused all the same, as no Iceberg writer stores them."""
    from tests.adversarial.conftest import verify

    honest = _nested(pa.timestamp("us", tz="UTC"), pa.decimal128(10, 2))
    table = catalog.create_table("ns.n", schema=honest.schema)
    table.append(honest.slice(0, 1))
    table.append(honest.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.n")
    before = _read(table)
    table = replace(catalog, table, [_nested(ts, dec)])
    assert _read(table) == before  # pyiceberg reads the attested values
    rc, doc = verify(f"iceberg://{CATALOG}/ns.n")
    if refused:
        assert rc == 1 and codes(doc) == ["table_inconsistent"], json.dumps(doc, indent=1)
        assert "not as Iceberg's writers store" in json.dumps(doc), doc
    else:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), json.dumps(doc)


def test_pyiceberg_rewrite_of_every_type_verifies(catalog: SqlCatalog) -> None:
    """The honest control for pyiceberg's writer: a rewrite of uuid, time, fixed, binary, date, boolean, float, int
    and wide decimal columns (as pyiceberg writes them) verifies. A uuid column was refused before (``content_changed``:
    its footer bounds could not be compared with pyarrow's uuid extension values)."""
    import uuid as uuids
    from datetime import date, time

    from pyiceberg import types as it
    from pyiceberg.schema import Schema

    from tests.adversarial.conftest import verify

    schema = Schema(it.NestedField(1, "id", it.LongType()), it.NestedField(2, "u", it.UUIDType()),
                    it.NestedField(3, "tm", it.TimeType()), it.NestedField(4, "fx", it.FixedType(3)),
                    it.NestedField(5, "bn", it.BinaryType()), it.NestedField(6, "dt", it.DateType()),
                    it.NestedField(7, "b", it.BooleanType()), it.NestedField(8, "f", it.FloatType()),
                    it.NestedField(9, "d", it.DecimalType(30, 4)), it.NestedField(10, "i", it.IntegerType()))
    table = catalog.create_table("ns.all", schema=schema)
    arrow = table.schema().as_arrow()
    for i in (1, 2):
        table.append(pa.Table.from_pylist([{"id": i, "u": uuids.UUID(int=i).bytes, "tm": time(1, 2, i), "fx": b"abc",
                                            "bn": b"x", "dt": date(2024, 1, i), "b": i == 1, "f": 1.5,
                                            "d": Decimal("1.2345"), "i": i}], schema=arrow))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    replace(catalog, catalog.load_table("ns.all"))  # the rows pyiceberg reads, written by pyiceberg's writer
    rc, doc = verify(f"iceberg://{CATALOG}/ns.all")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), json.dumps(doc)


@pytest.mark.parametrize("attack", [None, "a timestamp in milliseconds", "a decimal of another scale"])
def test_a_file_without_field_ids_is_held_by_the_name_mapping(attack: str | None, catalog: SqlCatalog) -> None:
    """A rewrite's file without Parquet field ids is read through the table's name mapping (by pyiceberg and
    Iceberg Java alike): its columns are found that way and held all the same; without an attack it verifies."""
    from tests.adversarial.conftest import verify

    table = catalog.create_table("ns.m", schema=_rows().schema)
    mapping = table.metadata.schema().name_mapping.model_dump_json()
    table.transaction().set_properties({"schema.name-mapping.default": mapping}).commit_transaction()
    table = catalog.load_table("ns.m")
    table.append(_rows().slice(0, 1))
    table.append(_rows().slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.m")
    before = _read(table)
    data = _rows() if attack is None else ATTACKS[attack][0](_rows())
    table = replace(catalog, table, [data.cast(pa.schema([f.with_metadata(None) for f in data.schema]))])
    assert _read(table) == before
    rc, doc = verify(f"iceberg://{CATALOG}/ns.m")
    if attack is None:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), json.dumps(doc)
    else:
        assert rc == 1 and codes(doc) == ["table_inconsistent"], json.dumps(doc, indent=1)
        assert "not as Iceberg's writers store" in json.dumps(doc), doc
