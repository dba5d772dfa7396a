"""Round 17, Iceberg delete applicability: a position delete file whose manifest entry carries metrics of a *data*
column (the ``row`` column's fields a position delete file may hold share the table's field ids) that misstate the
rows it deletes.

Readers plan delete manifests with the query's filter: pyiceberg runs every manifest entry, delete files included,
through its inclusive-metrics evaluator (``_open_manifest``), and Iceberg Java reads delete manifests filtered by the
data filter (``DeleteFileIndex.Builder.filterData`` -> ``ManifestReader.filterRows``). A position delete file hiding
``id = 1`` whose entry says its ``id`` lies in 1000..2000 (or is all null) is skipped for ``WHERE id = 1``: the
deleted row comes back for the filtered query while a full read applies the delete. Measured with pyiceberg 0.12
below: the full scan read ids 2, 3, 4, ``id = 1`` read id 1. ``record`` attested the full scan's rows and verify
said VERIFIED: only the ``file_path`` metrics of a delete file were judged. Likewise for Iceberg Java, an equality
delete file's metrics of a column it does not delete by (``v``) that leave out the deleted row's value.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import verify
from tests.adversarial.test_iceberg_delete_physical_types import PATH_ID, POS_ID, _read, _rows
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    commit_delete_file,
    local,
)
from tests.iceberg.rewrites import live_data_files

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table



def _long(v: int) -> bytes:
    return v.to_bytes(8, "little", signed=True)


def _table_with_delete(catalog: SqlCatalog, metrics: dict[str, Any] | None) -> Table:
    """ids 1, 2 and 3, 4 in two files; a position delete file hiding id 1 (row 0 of the first file), its entry
    carrying ``metrics``."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2]))
    table.append(_rows([3, 4]))
    import pyarrow.parquet as pq

    (first,) = [f for f in live_data_files(table) if pq.read_table(local(f.file_path)).column("id")[0].as_py() == 1]
    commit_delete_file(table, local(table.location()) / "data" / "pos.parquet", target=first.file_path,
                       metrics=metrics)
    return catalog.load_table("ns.t")


def _filtered(table: Table, expr: str) -> list[int]:
    return sorted(table.scan(row_filter=expr).to_arrow().column("id").to_pylist())


FORGED = {
    "bounds above the deleted id": {"lower_bounds": {1: _long(1000)}, "upper_bounds": {1: _long(2000)}},
    "null counts saying its id is all nulls": {"value_counts": {1: 1}, "null_value_counts": {1: 1}},
}


@pytest.mark.parametrize("case", sorted(FORGED))
def test_a_delete_file_whose_data_column_metrics_hide_it_from_filtered_reads(catalog: SqlCatalog, case: str) -> None:
    table = _table_with_delete(catalog, FORGED[case])
    assert _read(table) == [2, 3, 4]  # a full read applies the delete
    assert _filtered(table, "id = 1") == [1]  # the filtered read skips the delete file by its id metrics
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "metrics" in refused.value.message


def test_a_delete_file_with_metrics_of_its_own_columns_attests(catalog: SqlCatalog) -> None:
    """The control: metrics of the delete file's own ``file_path`` and ``pos`` (as Iceberg Java's writers keep them:
    equal path bounds naming the data file) — a filtered read for id 1 applies the delete, and the table attests and
    verifies. Metrics of a data column are refused even when sound (no engine here writes them: the conservative
    side)."""
    import pyarrow.parquet as pq

    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2]))
    (first,) = live_data_files(table)
    assert pq.read_table(local(first.file_path)).column("id")[0].as_py() == 1
    path = first.file_path.encode()
    commit_delete_file(table, local(table.location()) / "data" / "pos.parquet", target=first.file_path, metrics={
        "lower_bounds": {PATH_ID: path, POS_ID: _long(0)}, "upper_bounds": {PATH_ID: path, POS_ID: _long(0)},
        "value_counts": {PATH_ID: 1, POS_ID: 1}, "null_value_counts": {PATH_ID: 0, POS_ID: 0}})
    table = catalog.load_table("ns.t")
    assert _filtered(table, "id = 1") == [] and _read(table) == [2]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)


def _equality_deleted(catalog: SqlCatalog, metrics: dict[str, Any]) -> Table:
    """ids 1..4 (``v`` = ``v<id>``, field id 3), an equality delete of ``id = 1`` whose entry carries ``metrics``."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2, 3, 4]))
    import pyarrow as pa

    commit_delete_file(table, local(table.location()) / "data" / "eq.parquet", metrics=metrics,
                       deleted=pa.table({"id": pa.array([1], pa.int64())}), equality_ids=[1])
    return catalog.load_table("ns.t")


def test_an_equality_delete_whose_other_column_metrics_exclude_the_deleted_row_is_refused(
        catalog: SqlCatalog) -> None:
    """The same skip for Iceberg Java (pyiceberg reads no equality delete): metrics of ``v``, which the delete of
    ``id = 1`` does not delete by, saying ``zzz`` only — ``WHERE v = 'v1'`` would skip it and read the deleted row."""
    table = _equality_deleted(catalog, {"lower_bounds": {3: b"zzz"}, "upper_bounds": {3: b"zzz"}})
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "not one of its equality fields" in refused.value.message


def test_an_equality_delete_whose_other_column_metrics_hold_the_deleted_row_attests(catalog: SqlCatalog) -> None:
    """A full-row delete's metrics (as Flink writes them) that hold the deleted row's ``v``: attested."""
    table = _equality_deleted(catalog, {"lower_bounds": {3: b"v1"}, "upper_bounds": {3: b"v1"},
                                        "value_counts": {3: 1}, "null_value_counts": {3: 0}})
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)


def test_other_column_metrics_of_an_equality_delete_are_refused_without_a_digest(catalog: SqlCatalog) -> None:
    """The delete file stored without Parquet field ids (no content digest: ``record`` attests files and bytes and
    runs the readers' checks alone), its ``v`` metrics forged: the rows it deletes are not known, so its metrics of
    ``v`` cannot be held — refused rather than attested."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2, 3, 4]))
    commit_delete_file(table, local(table.location()) / "data" / "eq.parquet", equality=True,
                       metrics={"lower_bounds": {3: b"zzz"}, "upper_bounds": {3: b"zzz"}})
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "not one of its equality fields" in refused.value.message
