"""Round 20, Iceberg delete applicability: the row positions position deletes name, as each reader numbers them.

A position delete (a Parquet position delete file, a deletion vector) names rows by their position in the data file.
pyiceberg 0.12 (and the digest) number a file's rows in footer order, each row group from the rows of the row groups
listed before it. Iceberg Java 1.12 (``ReadConf.generateOffsetToStartPos``) maps each row group's *starting offset*
(its first column chunk's, as parquet-mr's ``getStartingPos``) to that count and looks each row group up by its
offset: two row groups at one offset both start where the last of them does.

The forgery: a data file whose footer lists its one row group twice (ids 0-4; both readers read ten rows), appended,
and a position delete of position 0. pyiceberg deleted the first id 0 (nine rows); Spark numbered both groups' rows
5-9 (its ``_pos``), deleted nothing and returned ten (measured, tests/adversarial/test_spark_iceberg_round20.py).
``record`` attested pyiceberg's rows and ``verify`` said VERIFIED; with the content digest refused for another reason
(an equality delete by a ``double``), ``record`` attested files and bytes, VERIFIED too. A ``replace`` adding such a
file and a position delete of position 5 (pyiceberg's rows the attested ones, Spark's one fewer) was
``VERIFIED (content; …, same rows)``. Now ``table_inconsistent`` (the rewrite: ``content_changed``): no writer puts two
row groups at one offset. Honest files with two row groups verify.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.parquet_footer import ROW_GROUPS, edit_footer, field, set_field
from tests.iceberg.conftest import CATALOG, PROGRAM, commit_delete_file, local
from tests.iceberg.rewrites import live_data_files, replace, rewrite_metadata, with_ids

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

REF = f"iceberg://{CATALOG}/ns.t"
_I64 = 6  # Thrift compact type of FileMetaData.num_rows


def _rows(ids: list[int], *, double: bool = False) -> pa.Table:
    columns: dict[str, Any] = {"id": pa.array(ids, pa.int64()), "v": pa.array([f"row-{i}" for i in ids], pa.string())}
    if double:
        columns["x"] = pa.array([float(i) for i in ids], pa.float64())
    return pa.table(columns)


def _data_file(table: Table, name: str, data: pa.Table, *, doubled: bool, row_group_size: int | None = None) -> Any:
    """``data`` written under the table's data folder with its columns' field ids (1, 2, ...), and (``doubled``) its
    footer then listing its one row group twice (the same bytes: every reader reads the rows twice): a DataFile."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    folder = local(table.location()) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    pq.write_table(with_ids(data, list(range(1, data.num_columns + 1))), path, row_group_size=row_group_size)
    if doubled:

        def twice(meta: list[list[Any]]) -> None:
            groups = field(meta, ROW_GROUPS)[1]
            groups.append(copy.deepcopy(groups[0]))
            set_field(meta, 3, _I64, 2 * data.num_rows)

        edit_footer(path, twice)
    records = pq.ParquetFile(path).metadata.num_rows
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f"file://{path}",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=records,
        file_size_in_bytes=path.stat().st_size,
        spec_id=0,
    )


def _table(
    catalog: SqlCatalog, *, doubled: bool, double: bool = False, row_group_size: int | None = None, position: int = 0
) -> tuple[Table, Any]:
    """A table of one hand-appended data file (ids 0-4, ``doubled`` or not), and a position delete of ``position``
    of it in a snapshot of its own (Java writers' shape: a delete manifest)."""
    data = _rows([0, 1, 2, 3, 4] * (1 if doubled else 2), double=double)
    table = catalog.create_table("ns.t", schema=data.schema)
    added = _data_file(table, "data.parquet", data, doubled=doubled, row_group_size=row_group_size)
    table = replace(catalog, table, remove=[], data_files=[added], operation="append")
    commit_delete_file(
        table,
        local(table.location()) / "data" / "pos.parquet",
        target=added.file_path,
        stored=lambda t: t.set_column(1, t.schema.field(1), pa.array([position], pa.int64())),
    )
    return catalog.load_table("ns.t"), added


def _delete_by_a_double(table: Table) -> None:
    """An equality delete by the ``double`` column ``x`` (field 3) deleting no row: the content digest is then refused
    (``unsupported_table``) and ``record`` attests files and bytes after the readers' checks alone."""
    commit_delete_file(
        table,
        local(table.location()) / "data" / "eq.parquet",
        deleted=pa.table({"x": pa.array([99.5], pa.float64())}),
        equality_ids=[3],
    )


def _refused_without_a_digest(catalog: SqlCatalog, table: Table) -> str:
    """``record`` of ``table`` after ``_delete_by_a_double``: refused, ``table_inconsistent``; its message."""
    _delete_by_a_double(table)
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    return refused.value.message


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_a_file_listing_its_row_group_twice_is_read_twice_and_pyiceberg_deletes_once(catalog: SqlCatalog) -> None:
    table, added = _table(catalog, doubled=True)
    assert pq.read_table(local(added.file_path)).column("id").to_pylist() == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    assert _ids(table) == [0, 1, 1, 2, 2, 3, 3, 4, 4]  # pyiceberg: position 0, the first group's id 0


def test_record_refuses_row_groups_sharing_an_offset(catalog: SqlCatalog) -> None:
    """Spark numbers both groups' rows 5-9 and deletes nothing (ten rows, measured); refused before any digest."""
    table, _ = _table(catalog, doubled=True)
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "Iceberg Java numbers its rows from 5, pyiceberg from 0" in refused.value.message
    rc, doc = verify(REF)
    assert rc != 0 and not doc["passed"], json.dumps(doc)  # nothing recorded


def test_record_without_a_digest_refuses_row_groups_sharing_an_offset(catalog: SqlCatalog) -> None:
    """An equality delete by a ``double`` makes the digest ``unsupported_table``: ``record`` then attests files and
    bytes after the readers' checks alone (``IcebergContentReader.agree``), which read no data file a position
    delete applied to — attested, VERIFIED before."""
    table, _ = _table(catalog, doubled=True, double=True)
    assert "starts at byte" in _refused_without_a_digest(catalog, table)


def test_a_rewrite_adding_row_groups_sharing_an_offset_is_content_changed(catalog: SqlCatalog) -> None:
    """Attested: ids 0-4 and 1-4 (nine rows). A ``replace`` swapping the file for one listing ids 0-4 twice, then a
    ``replace`` adding a position delete of position 5: pyiceberg deletes the second group's id 0 (the attested
    rows: ``same rows`` before), Spark position 5 of both groups (ids 1-4 twice, eight rows)."""
    attested = _rows([0, 1, 2, 3, 4, 1, 2, 3, 4])
    table = catalog.create_table("ns.t", schema=attested.schema)
    table.append(attested)
    table = catalog.load_table("ns.t")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    doubled = _data_file(table, "doubled.parquet", _rows([0, 1, 2, 3, 4]), doubled=True)
    table = replace(catalog, table, remove=live_data_files(table), data_files=[doubled])
    commit_delete_file(
        table,
        local(table.location()) / "data" / "pos5.parquet",
        target=doubled.file_path,
        stored=lambda t: t.set_column(1, t.schema.field(1), pa.array([5], pa.int64())),
    )
    table = catalog.load_table("ns.t")

    def as_replace(doc: dict[str, Any]) -> None:
        for snap in doc["snapshots"]:
            if snap["snapshot-id"] == doc["current-snapshot-id"]:
                snap["summary"]["operation"] = "replace"

    table = rewrite_metadata(catalog, table, as_replace)
    assert _ids(table) == sorted(attested.column("id").to_pylist())  # pyiceberg: the attested rows
    rc, doc = verify(REF, "--level", "bytes")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "content_changed" in codes(doc), json.dumps(doc)
    assert "starts at byte" in json.dumps(doc), json.dumps(doc)


def test_two_row_groups_at_their_own_offsets_verify(catalog: SqlCatalog) -> None:
    """The same rows in an honest file of two row groups (ids 0-4, 0-4) and a delete of position 5: both readers
    number the second group from 5 and delete its id 0 (measured with Spark too)."""
    table, added = _table(catalog, doubled=False, row_group_size=5, position=5)
    assert pq.ParquetFile(local(added.file_path)).metadata.num_row_groups == 2
    assert _ids(table) == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF, "--level", "bytes")
    assert rc == 0 and doc["passed"] and doc["content_digest_bound"], json.dumps(doc)


def test_the_files_path_needs_no_footer_when_no_position_delete_applies(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a digest, a data file no position delete applies to is not opened for its row groups."""
    from carriers.iceberg import content

    opened: list[str] = []
    monkeypatch.setattr(
        content.IcebergContentReader, "_layout", lambda self, df, io, path, positions: opened.append(path)
    )
    data = _rows([0, 1, 2], double=True)
    table = catalog.create_table("ns.t", schema=data.schema)
    table.append(data)
    table = catalog.load_table("ns.t")
    _delete_by_a_double(table)
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert opened == []
    rc, doc = verify(REF)
    assert rc == 0 and doc["passed"], json.dumps(doc)


# ---- split offsets ---------------------------------------------------------------------------------------------------
# Iceberg Java splits a data file at its manifest's split offsets (strictly ascending, the last below the file's size)
# and parquet-mr reads a row group in the split holding its midpoint; pyiceberg reads files whole. A file appended
# (or added by a ``replace``) with offsets ``[size - 10]``: Spark read none of its rows, pyiceberg all (measured,
# test_spark_iceberg_round20.py) — attested, VERIFIED before; the offsets were in the view, so only a later change of
# them was caught (tests/adversarial/test_iceberg_attacks.py).


def _split_file(table: Table, name: str, offsets: Any) -> Any:
    """ids 10-19 in two row groups of five, with ``offsets(file size, [row group starts])`` as split offsets."""
    written = _data_file(table, name, _rows(list(range(10, 20))), doubled=False, row_group_size=5)
    path = local(written.file_path)
    meta = pq.ParquetFile(path).metadata
    starts = [
        meta.row_group(i).column(0).dictionary_page_offset or meta.row_group(i).column(0).data_page_offset
        for i in range(meta.num_row_groups)
    ]
    return _with_split_offsets(written, offsets(written.file_size_in_bytes, starts))


def _with_split_offsets(written: Any, offsets: list[int]) -> Any:
    """The DataFile ``written`` with the manifest split offsets ``offsets``."""
    from pyiceberg.manifest import DataFile

    return DataFile.from_args(
        content=written.content,
        file_path=written.file_path,
        file_format=written.file_format,
        partition=written.partition,
        record_count=written.record_count,
        file_size_in_bytes=written.file_size_in_bytes,
        spec_id=0,
        split_offsets=offsets,
    )


def _past(size: int, starts: list[int]) -> list[int]:
    return [size - 10]


SPLITS: dict[str, Any] = {
    "none": lambda size, starts: None,
    "first_row_group": lambda size, starts: [4],
    "each_row_group": lambda size, starts: starts,
    "inside_the_second_row_group": lambda size, starts: [starts[0], starts[1] + 1],  # its midpoint still after it
    "not_ascending": lambda size, starts: [size - 10, 4],  # Java splits the file from 0 in fixed sizes
    "past_the_end": lambda size, starts: [4, size + 10],  # not well defined: Java ignores them
}


def test_record_refuses_split_offsets_java_reads_no_row_group_by(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.t", schema=_rows([0]).schema)
    table = replace(
        catalog, table, remove=[], data_files=[_split_file(table, "split.parquet", _past)], operation="append"
    )
    assert _ids(table) == list(range(10, 20))  # pyiceberg reads the file whole
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "no split reads its rows" in refused.value.message


def test_record_without_a_digest_refuses_such_split_offsets(catalog: SqlCatalog) -> None:
    """The digest refused (an equality delete by a ``double``): ``record`` attested files and bytes, VERIFIED."""
    data = _rows([0], double=True)
    table = catalog.create_table("ns.t", schema=data.schema)
    table.append(data)
    table = catalog.load_table("ns.t")
    written = _data_file(
        table, "with-x.parquet", _rows(list(range(10, 20)), double=True), doubled=False, row_group_size=5
    )
    added = _with_split_offsets(written, [written.file_size_in_bytes - 10])
    table = replace(catalog, table, remove=[], data_files=[added], operation="append")
    assert "no split reads its rows" in _refused_without_a_digest(catalog, table)


def test_a_rewrite_adding_such_split_offsets_is_content_changed(catalog: SqlCatalog) -> None:
    attested = _rows(list(range(10, 20)))
    table = catalog.create_table("ns.t", schema=attested.schema)
    table.append(attested)
    table = catalog.load_table("ns.t")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    table = replace(
        catalog, table, remove=live_data_files(table), data_files=[_split_file(table, "split.parquet", _past)]
    )
    assert _ids(table) == list(range(10, 20))  # pyiceberg: the attested rows ("same rows" before)
    rc, doc = verify(REF, "--level", "bytes")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "content_changed" in codes(doc), json.dumps(doc)
    assert "no split reads its rows" in json.dumps(doc), json.dumps(doc)


@pytest.mark.parametrize("splits", sorted(SPLITS))
def test_split_offsets_every_row_group_is_read_by_verify(catalog: SqlCatalog, splits: str) -> None:
    """Offsets under which Java reads every row group once (measured with Spark for ``each_row_group`` and
    ``inside_the_second_row_group``): attested and VERIFIED, as a record and as a rewrite's added file."""
    attested = _rows(list(range(10, 20)))
    table = catalog.create_table("ns.t", schema=attested.schema)
    table = replace(
        catalog, table, remove=[], data_files=[_split_file(table, "a.parquet", SPLITS[splits])], operation="append"
    )
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF, "--level", "bytes")
    assert rc == 0 and doc["passed"], json.dumps(doc)
    table = catalog.load_table("ns.t")
    table = replace(
        catalog, table, remove=live_data_files(table), data_files=[_split_file(table, "b.parquet", SPLITS[splits])]
    )
    rc, doc = verify(REF, "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), json.dumps(doc)
