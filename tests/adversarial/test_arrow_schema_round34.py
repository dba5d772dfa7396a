"""Round 34: a column's field id given by the Arrow schema a Parquet footer carries, not by its Parquet schema.

pyarrow (so pyiceberg, and the content digest) and arrow-rs (delta-rs) read a field's ``PARQUET:field_id`` from the
Arrow schema a file carries (key-value ``ARROW:schema``) where its Parquet schema gives none; parquet-mr (Iceberg
Java, Spark) reads the Parquet schema's only. A file of no Parquet ids whose Arrow schema gives ``a`` the id of ``b``
and ``b`` the id of ``a`` reads as the attested rows to pyiceberg, and with ``a`` and ``b`` swapped to Spark — which
then resolves the file by the table's name mapping, or by position when it has none (measured below with Spark 4.1
and Iceberg's 1.12 runtime):

- an Iceberg rewrite (``replace``) adding such a file was ``VERIFIED (content; …, same rows)``, exit 0;
- ``attest record`` of a snapshot appending one digested it as pyiceberg read it;
- a Delta table mapped by id (Spark reads its files by field id, delta-rs by name) took the Arrow schema's ids as
  the file's: a rewrite's file of no Parquet ids was ``VERIFIED`` while Spark failed every read of it.

Now a footer whose Arrow schema gives any field another id than its Parquet schema (none included) cannot be held to
its rows (``content_store._footer_arrow_ids``): ``content_changed`` in a rewrite, ``table_inconsistent`` at record.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.cli import main
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.parquet_thrift import field, with_footer
from tests.adversarial.test_file_size_round33 import state_size

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

ROWS = pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([10, 20], pa.int64())})
SWAPPED = pa.table({"a": ROWS.column("b"), "b": ROWS.column("a")})


def no_parquet_ids(data: bytes, *, same_size: bool = False) -> bytes:
    """The Parquet file ``data`` with every field id of its Parquet schema (SchemaElement field 9) left out — or,
    ``same_size``, written last as field 12, which parquet.thrift does not define and readers skip (one byte of
    header either way: the file keeps its size); its Arrow schema (``ARROW:schema``) as written."""
    def strip(meta: Any) -> None:
        for element in field(meta, 2)[2][1]:  # type: ignore[index]
            ids = [x for x in element if x[0] == 9]
            element[:] = [x for x in element if x[0] != 9]
            if same_size and ids:  # moved last as field 12 (after 10 at most: a one-byte header)
                element.append([12, *ids[0][1:]])
    return with_footer(data, strip)


def test_pyarrow_takes_an_id_from_the_arrow_schema_alone() -> None:
    """The premise: no Parquet id, and pyarrow's schema still says a is field 2 (from the Arrow schema)."""
    from tests.iceberg.rewrites import with_ids

    out = pa.BufferOutputStream()
    pq.write_table(with_ids(SWAPPED, [2, 1]), out)
    data = no_parquet_ids(out.getvalue().to_pybytes())
    parquet = pq.ParquetFile(pa.BufferReader(data))
    assert "field_id=-1 a" in str(parquet.schema) and "field_id=-1 b" in str(parquet.schema)
    assert [f.metadata[b"PARQUET:field_id"] for f in parquet.schema_arrow] == [b"2", b"1"]


def iceberg_file(table: Any) -> Any:
    """A DataFile of ``table`` (a: field 1, b: field 2) holding b's values under the name a and a's under b, no
    Parquet field ids, its Arrow schema naming a field 2 and b field 1: the attested rows as pyiceberg reads it."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from tests.iceberg.rewrites import with_ids, write_file

    written = write_file(table, with_ids(SWAPPED, [2, 1]))
    local = Path(str(written.file_path).removeprefix("file://"))
    local.write_bytes(no_parquet_ids(local.read_bytes()))
    return DataFile.from_args(content=DataFileContent.DATA, file_path=written.file_path,
                              file_format=FileFormat.PARQUET, partition=Record(), record_count=ROWS.num_rows,
                              file_size_in_bytes=local.stat().st_size, spec_id=0)


def _rows(table: Any) -> list[tuple[int, int]]:
    read = table.scan().to_arrow()
    return sorted(zip(read.column("a").to_pylist(), read.column("b").to_pylist(), strict=True))


def test_an_iceberg_replace_whose_file_ids_are_its_arrow_schemas(catalog: SqlCatalog) -> None:
    from carriers.iceberg.carrier import attest_after_write
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import replace

    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table.append(ROWS)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = replace(catalog, catalog.load_table("ns.t"), data_files=[iceberg_file(catalog.load_table("ns.t"))])
    assert _rows(table) == [(1, 10), (2, 20)]  # pyiceberg: the attested rows
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "field id 2, its Parquet schema none" in doc["errors"][0]["message"], doc


def test_record_refuses_an_appended_file_whose_ids_are_its_arrow_schemas(catalog: SqlCatalog, capsys: Any) -> None:
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import replace

    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table = replace(catalog, table, remove=[], data_files=[iceberg_file(table)], operation="append")
    assert _rows(table) == [(1, 10), (2, 20)]
    rc = main(["record", f"iceberg://{CATALOG}/ns.t", "--model", "orders", "--sql", "select 1", "--json"])
    out = capsys.readouterr().out
    assert rc == 2 and '"table_inconsistent"' in out and "its Parquet schema none" in out, out
    assert catalog.load_table("ns.t").current_snapshot().summary.get("recipe_manifest.body") is None  # nothing


def test_honest_files_with_ids_in_both_schemas_still_verify(catalog: SqlCatalog) -> None:
    """pyarrow writes a field's id into both schemas (pyiceberg's own rewrite, as ``replace`` makes by default)."""
    from carriers.iceberg.carrier import attest_after_write
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import replace

    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table.append(ROWS.slice(0, 1))
    table.append(ROWS.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    replace(catalog, catalog.load_table("ns.t"))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), doc


def _delta_id_mapped(path: Path) -> Path:
    """A Delta table mapped by id (a: col-aaaa id 1, b: col-bbbb id 2), attested, then rewritten into one file holding
    its rows under their physical names with no Parquet field ids, its Arrow schema giving each its own id."""
    from carriers.delta.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_delta import _adds, _ids, _mapped_table, _merged, rewrite

    _mapped_table(path, "id")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    old = sorted(_adds(path))
    n = rewrite(path, old, [(_ids(_merged(path, old), {"col-aaaa": 1, "col-bbbb": 2}), {})])
    (added,) = (p for p in _adds(path) if p not in old)
    (path / added).write_bytes(no_parquet_ids((path / added).read_bytes()))
    state_size(path, n, (path / added).stat().st_size)
    return path / added


def test_a_delta_rewrite_of_an_id_mapped_table_whose_ids_are_its_arrow_schemas(tmp_path: Path) -> None:
    """delta-rs reads by name (the same rows); Spark by Parquet field id, which the file has none of
    (test_spark_reads_the_parquet_ids_only)."""
    from tests.adversarial.test_content_rewrite_delta import _engine_rows, _mapped_table

    path = tmp_path / "t"
    _mapped_table(path, "id")
    before = _engine_rows(path)
    shutil.rmtree(path)
    added = _delta_id_mapped(path)
    assert "field_id=-1 col-aaaa" in str(pq.ParquetFile(added).schema)
    assert _engine_rows(path) == before
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "its Parquet schema none" in doc["errors"][0]["message"], doc


@pytest.mark.spark
def test_spark_reads_the_parquet_ids_only(spark: SparkSession, spark_warehouse: Path, tmp_path: Path) -> None:
    """Measured: Iceberg Java resolves a file of no Parquet ids by the table's name mapping (a holds 10, 20: b's
    values), and Delta's id mapping fails the read of a file of none ("expects field Ids"); pyiceberg read the
    attested rows (above)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_spark_rewrite_readers import spark_rows
    from tests.iceberg.rewrites import live_data_files, replace

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.r34")
    spark.sql("CREATE TABLE iceberg.r34.t (a BIGINT, b BIGINT) USING iceberg")
    spark.sql("INSERT INTO iceberg.r34.t VALUES (1, 10), (2, 20)")
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    table = catalog.load_table("r34.t")
    mapping = table.metadata.schema().name_mapping.model_dump_json()
    table.transaction().set_properties({"schema.name-mapping.default": mapping}).commit_transaction()
    table = catalog.load_table("r34.t")
    table = replace(catalog, table, remove=live_data_files(table), data_files=[iceberg_file(table)])
    assert _rows(table) == [(1, 10), (2, 20)]  # pyiceberg
    spark.sql("REFRESH TABLE iceberg.r34.t")
    assert sorted(tuple(r) for r in spark.sql("SELECT a, b FROM iceberg.r34.t").collect()) == [(10, 1), (20, 2)]

    path = tmp_path / "d"
    _delta_id_mapped(path)
    with pytest.raises(Exception, match="expects field Ids, but Parquet file schema doesn't contain any"):
        spark_rows(spark, path)


def test_a_nested_field_whose_id_is_its_arrow_schemas_alone() -> None:
    """pyiceberg resolves a struct's fields by id at every depth: a child's id from the Arrow schema alone is refused
    as a top-level one is; a file whose two schemas agree (ids in both, or in neither) is read on."""
    from carriers.content_store import read_parquet_indexes

    child = pa.struct([pa.field("x", pa.int64(), metadata={"PARQUET:field_id": "3"}),
                       pa.field("y", pa.int64(), metadata={"PARQUET:field_id": "4"})])
    rows = pa.table({"s": pa.array([{"x": 1, "y": 2}], child)},
                    schema=pa.schema([pa.field("s", child, metadata={"PARQUET:field_id": "2"})]))
    out = pa.BufferOutputStream()
    pq.write_table(rows, out)
    honest = out.getvalue().to_pybytes()
    assert not isinstance(read_parquet_indexes(pa.BufferReader(honest)), str)

    def strip_child(meta: Any) -> None:
        for element in field(meta, 2)[2][1]:  # type: ignore[index]
            if field(element, 4)[2] == b"y":  # type: ignore[index]
                element[:] = [x for x in element if x[0] != 9]

    reason = read_parquet_indexes(pa.BufferReader(with_footer(honest, strip_child)))
    assert isinstance(reason, str) and "column 's.y' field id 4, its Parquet schema none" in reason, reason
    plain = pa.BufferOutputStream()
    pq.write_table(rows, plain, store_schema=False)  # no Arrow schema: nothing to disagree with
    assert not isinstance(read_parquet_indexes(pa.BufferReader(no_parquet_ids(plain.getvalue().to_pybytes()))), str)


def test_an_equality_delete_file_whose_ids_are_its_arrow_schemas(catalog: SqlCatalog) -> None:
    """An equality delete file's columns are matched by field id: one of no Parquet ids whose Arrow schema names its
    second column ``id`` (field 1) deletes ``id == 1`` as pyarrow reads it; Iceberg Java gives a file of no ids
    fallback ids by position (its first column, 999, as ``id``): no digest is claimed (``unsupported_table``), as for
    a delete file of no ids at all (tests/iceberg/test_iceberg_content.py)."""
    from attest.errors import AttestError
    from carriers.iceberg.carrier import attest_after_write
    from tests.iceberg.conftest import commit_delete_file
    from tests.iceberg.rewrites import carrier_of, local

    table = catalog.create_table("ns.e", schema=ROWS.schema)
    table.append(ROWS)
    path = local(table.location()) / "data" / "eq.parquet"
    commit_delete_file(table, path, deleted=pa.table({"b": pa.array([999], pa.int64()),
                                                      "a": pa.array([1], pa.int64())}), equality_ids=[2, 1])
    (field_b, field_a) = pq.ParquetFile(path).schema_arrow
    assert (field_b.metadata, field_a.metadata) == ({b"PARQUET:field_id": b"2"}, {b"PARQUET:field_id": b"1"})
    before = path.read_bytes()
    path.write_bytes(no_parquet_ids(before, same_size=True))  # the size its manifest entry states
    assert path.stat().st_size == len(before)
    carrier = carrier_of(table)
    v = carrier._resolve(None)
    with pytest.raises(AttestError, match="its Parquet schema none") as caught:
        carrier.file_content_digests(v, carrier._live(v).files)
    assert caught.value.code == "unsupported_table"
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    state = carrier_of(table).state()
    assert state.attestation is not None and state.attestation.content is None


def test_an_arrow_schema_that_is_not_base64_is_refused_not_skipped() -> None:
    """The check skips pyarrow's two reads of a footer only when its Arrow schema, decoded as pyarrow decodes it
    (strict base64), names no field id; one pyarrow cannot decode is refused (pyarrow refuses the file too)."""
    from carriers.content_store import read_parquet_indexes

    out = pa.BufferOutputStream()
    pq.write_table(ROWS, out)  # no field ids: its Arrow schema names none
    honest = out.getvalue().to_pybytes()
    assert not isinstance(read_parquet_indexes(pa.BufferReader(honest)), str)

    def spoil(meta: Any) -> None:
        for kv in field(meta, 5)[2][1]:  # type: ignore[index]
            if field(kv, 1)[2] == b"ARROW:schema":  # type: ignore[index]
                value = field(kv, 2)
                value[2] = value[2][:40] + b"!" + value[2][40:]  # type: ignore[index]

    spoiled = with_footer(honest, spoil)
    with pytest.raises(Exception, match="base64"):
        pq.ParquetFile(pa.BufferReader(spoiled))
    reason = read_parquet_indexes(pa.BufferReader(spoiled))
    assert isinstance(reason, str) and "schemas cannot be read" in reason, reason
