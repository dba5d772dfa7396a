"""Round 14, second part: the manifest list's summaries of its manifests — file and row counts, the smallest data
sequence number, partition summaries — against the manifests, for pyiceberg-made tables (the Spark module,
test_spark_iceberg_round14b.py, measures Iceberg Java's reads of the same forgeries).

Readers plan with the summaries before they open a manifest. Measured (pyiceberg 0.12; Spark 4.1 / Iceberg 1.12):

- added and existing file counts of 0 for a data manifest: Spark read no row of it, pyiceberg every row; for a delete
  manifest, Spark brought the deleted row back, pyiceberg applied the delete;
- a data manifest's ``min_sequence_number`` raised above the delete manifest's sequence number: pyiceberg brought the
  deleted row back, Spark applied the delete;
- a partition summary's upper bound below a value, or ``contains_null`` false over a null: a filtered read
  (``p = 2``, ``p IS NULL``) skipped the manifest in both;
- added and existing row counts of 0: no reader's rows changed.

Each forgery that changes a reader's rows was refused at verify already (``table_inconsistent``, carriers/iceberg/
manifests.py ``_summary_problems``); these pin that a table forged before ``attest record`` is not attested either, and
that the row counts, which no reader plans with, are not judged.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial import test_iceberg_attacks as base
from tests.adversarial.conftest import PROGRAM, assert_refused, verify
from tests.adversarial.test_iceberg_attacks import REF, _rewrite_manifest_list
from tests.iceberg.conftest import commit_delete_file, local, rows

catalog, iceberg_env = base.catalog, base.iceberg_env


def _table(catalog: SqlCatalog, forgery: str) -> Any:
    """For a partition forgery, ids 0-8 partitioned by ``p`` (``id % 3``, null for id 8), one data manifest; else ids
    0-5 in two appends and a position delete file hiding the first file's row 0, in a delete manifest of its own."""
    if not forgery.startswith("partition"):
        t = catalog.create_table("ns.t", schema=rows(0).schema)
        t.append(rows(0))
        t.append(rows(3))
        commit_delete_file(t, local(t.location()) / "data" / "pos.parquet")
        return catalog.load_table("ns.t")
    t = catalog.create_table("ns.t", schema=pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64())]))
    with t.update_spec() as spec:
        spec.add_identity("p")
    t.append(pa.table({"id": pa.array(range(9), pa.int64()),
                       "p": pa.array([None if i == 8 else i % 3 for i in range(9)], pa.int64())}))
    return catalog.load_table("ns.t")


def _set(content: int | None, **values: Any) -> Any:
    from pyiceberg.manifest import MANIFEST_LIST_FILE_SCHEMAS

    names = [f.name for f in MANIFEST_LIST_FILE_SCHEMAS[2].fields]

    def edit(m: Any) -> None:
        if content is None or int(m.content.value) == content:
            for field, value in values.items():
                m._data[names.index(field)] = value  # pyiceberg has no setters for most of them
    return edit


def _summary(index: int, value: Any) -> Any:
    def edit(m: Any) -> None:
        if m.partitions:
            m.partitions[0]._data[index] = value  # 0 contains_null, 3 upper_bound
    return edit


# forgery: (the edit of the list, a row filter whose answer it changes for pyiceberg, or None)
FORGERIES: dict[str, tuple[Any, str | None]] = {
    "data_counts_zero": (_set(0, added_files_count=0, existing_files_count=0), None),
    "delete_counts_zero": (_set(1, added_files_count=0, existing_files_count=0), None),
    "data_min_sequence_number": (_set(0, min_sequence_number=10), "True"),
    "partition_upper_bound": (_summary(3, (1).to_bytes(8, "little", signed=True)), "p == 2"),
    "partition_contains_null": (_summary(0, False), "p IS NULL"),
}


def _ids(catalog: SqlCatalog, row_filter: str = "True") -> list[int]:
    return sorted(catalog.load_table("ns.t").scan(row_filter=row_filter).to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_list_forged_before_the_record_is_not_attested(catalog: SqlCatalog, forgery: str) -> None:
    edit, row_filter = FORGERIES[forgery]
    t = _table(catalog, forgery)
    honest = _ids(catalog, row_filter or "True")
    _rewrite_manifest_list(t, edit)
    if row_filter is not None:
        assert _ids(catalog, row_filter) != honest  # the forgery changes pyiceberg's answer
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value
    assert "the manifest list says manifest" in str(refused.value), refused.value


@pytest.mark.parametrize("forgery", ["partition_contains_null", "delete_counts_zero"])
def test_a_list_forged_after_the_record_is_refused(catalog: SqlCatalog, forgery: str) -> None:
    edit, _ = FORGERIES[forgery]
    attest_after_write(_table(catalog, forgery), model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["passed"], doc
    _rewrite_manifest_list(catalog.load_table("ns.t"), edit)
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert any("the manifest list says manifest" in e["message"] for e in doc["errors"]), doc


def test_row_counts_no_reader_plans_with_are_not_judged(catalog: SqlCatalog) -> None:
    """Added and existing row counts of 0 change no reader's rows (measured, pyiceberg and Spark): attested, and a
    table whose list is so rewritten after the record still verifies."""
    t = _table(catalog, "counts")
    honest = _ids(catalog)
    edit = _set(None, added_rows_count=0, existing_rows_count=0)
    _rewrite_manifest_list(t, edit)
    assert _ids(catalog) == honest
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    _rewrite_manifest_list(catalog.load_table("ns.t"), edit)
    rc, doc = verify(REF)
    assert rc == 0 and doc["passed"], doc
