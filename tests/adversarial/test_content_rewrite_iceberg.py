"""Dishonest Iceberg rewrites (issue 32): a ``replace`` snapshot — what rewrite_data_files commits — whose new file
does not hold the rows of the files it replaced. An attacker with write access to the table's storage makes it by
hand (pyiceberg's snapshot producer, the operation then set to ``replace`` in a hand-written metadata.json,
tests/iceberg/rewrites.py). Each asserts what pyiceberg actually reads from the rewritten table, that the rows of the
files the rewrite removed (digested at the attested snapshot) differ from the rows of the files it added (digested
at the current one), and that ``attest verify`` is NOT VERIFIED with ``content_changed``.

An honest rewrite of the same table passes the same check (the control), so each attack fails for its own reason.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    commit_delete_file,
    local,
)
from tests.iceberg.rewrites import content_check, live_data_files, replace, replace_manifests, with_ids

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
# Field ids pyiceberg assigns to this schema, in column order.
IDS = [1, 2, 3, 4, 5, 6]


def _rows() -> pa.Table:
    return pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "v": pa.array(["a", "b", "c"], pa.string()),
        "f": pa.array([0.0, float("nan"), 2.5], pa.float64()),
        "ts": pa.array([T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2)], pa.timestamp("us", tz="UTC")),
        "a": pa.array([10, 20, 30], pa.int32()),
        "b": pa.array([11, 21, 31], pa.int32()),
    })


def _nan(payload: int) -> float:
    value: float = struct.unpack(">d", struct.pack(">Q", 0x7FF8000000000000 | payload))[0]
    return value


def _with(data: pa.Table, column: str, values: list[Any]) -> pa.Table:
    i = data.schema.get_field_index(column)
    return data.set_column(i, data.schema.field(i), pa.array(values, data.schema.field(i).type))



@pytest.fixture
def attested(catalog: SqlCatalog) -> tuple[Table, str]:
    """A table of two files (rows 1, then 2 and 3), attested; (table, attested snapshot id)."""
    table = catalog.create_table("ns.t", schema=_rows().schema)
    table.append(_rows().slice(0, 1))
    table.append(_rows().slice(1))
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert result.attested_version is not None
    return catalog.load_table("ns.t"), result.attested_version


def _verify(table: Table) -> tuple[int, dict[str, Any]]:
    from tests.adversarial.conftest import verify

    return verify(f"iceberg://{CATALOG}/ns.t")


def _refused(table: Table, code: str = "content_changed") -> dict[str, Any]:
    from tests.adversarial.conftest import codes

    rc, doc = _verify(table)
    assert rc != 0 and not doc["passed"] and code in codes(doc), json.dumps(doc, indent=1)
    assert doc["verdict"].startswith("NOT VERIFIED"), doc["verdict"]
    return doc


def _scanned(table: Table) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: (r["id"], str(r)))


ATTACKS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "a row missing": lambda d: d.slice(0, 2),
    "a value changed": lambda d: _with(d, "v", ["a", "B", "c"]),
    "a row duplicated": lambda d: pa.concat_tables([d, d.slice(2, 1)]),
    "-0.0 for 0.0": lambda d: _with(d, "f", [-0.0, float("nan"), 2.5]),
    "another NaN payload": lambda d: _with(d, "f", [0.0, _nan(1), 2.5]),
    "a timestamp shifted by a zone": lambda d: _with(d, "ts", [t - timedelta(hours=1) for t in
                                                                d.column("ts").to_pylist()]),
}


def test_an_honest_rewrite_keeps_the_rows(attested: tuple[Table, str], catalog: SqlCatalog) -> None:
    table, snapshot = attested
    before = _scanned(table)
    table = replace(catalog, table, [with_ids(_rows(), IDS)])
    assert _scanned(table) == before or str(_scanned(table)) == str(before)  # NaN != NaN
    assert content_check(table, snapshot) == (True, 3, 3)
    rc, doc = _verify(table)
    assert rc == 0 and doc["level"] == "bytes", json.dumps(doc, indent=1)
    assert doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), doc["verdict"]
    assert "2 files → 1, same rows" in doc["verdict"], doc["verdict"]


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_dishonest_rewrite_is_caught(attack: str, attested: tuple[Table, str], catalog: SqlCatalog) -> None:
    table, snapshot = attested
    before = _scanned(table)
    table = replace(catalog, table, [with_ids(ATTACKS[attack](_rows()), IDS)])
    assert str(_scanned(table)) != str(before) or attack in ("-0.0 for 0.0", "another NaN payload")
    if attack == "-0.0 for 0.0":  # what pyiceberg reads: the sign bit (equal as numbers, another value)
        assert struct.pack(">d", table.scan().to_arrow().column("f").to_pylist()[0]) == struct.pack(">d", -0.0)
    if attack == "another NaN payload":
        read = table.scan().to_arrow().column("f").cast(pa.float64()).to_pylist()[1]
        assert struct.pack(">d", read) == struct.pack(">d", _nan(1))
    same, _removed, _added = content_check(table, snapshot)
    assert not same
    _refused(table)


def test_a_column_read_by_the_wrong_field_id(attested: tuple[Table, str], catalog: SqlCatalog) -> None:
    """Columns a and b (both int) written under each other's field id: readers resolve by id and get them
    swapped, although every column name in the file is right."""
    table, snapshot = attested
    table = replace(catalog, table, [with_ids(_rows(), [1, 2, 3, 4, 6, 5])])
    got = table.scan().to_arrow()
    assert got.column("a").to_pylist() == [11, 21, 31] and got.column("b").to_pylist() == [10, 20, 30]
    assert content_check(table, snapshot)[0] is False
    _refused(table)


def test_a_column_by_its_new_name_without_an_id(attested: tuple[Table, str], catalog: SqlCatalog) -> None:
    """The public compaction bug: after a rename, a rewrite writes the column by name with an unknown field id;
    readers resolve by id and get nulls."""
    table, snapshot = attested
    with table.update_schema() as update:
        update.rename_column("v", "label")
    table = catalog.load_table("ns.t")
    data = _rows().rename_columns(["id", "label", "f", "ts", "a", "b"])
    table = replace(catalog, table, [with_ids(data, [1, 99, 3, 4, 5, 6])])
    assert table.scan().to_arrow().column("label").to_pylist() == [None, None, None]
    assert content_check(table, snapshot)[0] is False
    _refused(table)


def test_a_rewrite_that_forgets_a_position_delete(catalog: SqlCatalog) -> None:
    """The attested snapshot hides row 1 by a position delete file; the rewrite's new file holds every row of the
    old one (the delete not applied) and the delete file is left dangling."""
    table = catalog.create_table("ns.t", schema=_rows().schema)
    table.append(_rows())
    commit_delete_file(table, local(table.location()) / "data" / "del.parquet")  # position 0 of the one data file
    snapshot = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    assert snapshot is not None
    table = catalog.load_table("ns.t")
    assert [r["id"] for r in _scanned(table)] == [2, 3]
    table = replace(catalog, table, [with_ids(_rows(), IDS)], remove=live_data_files(table))
    assert [r["id"] for r in _scanned(table)] == [1, 2, 3]  # the deleted row is back for pyiceberg
    assert content_check(table, snapshot) == (False, 2, 3)
    _refused(table)


@pytest.mark.parametrize("other_delete", [False, True])
def test_a_replace_that_drops_a_delete_file_of_a_kept_data_file(catalog: SqlCatalog, other_delete: bool) -> None:
    """rewrite_position_delete_files' shape, dishonest: the replace snapshot's manifest list leaves out a delete
    manifest while the data file it applied to stays as it was (same entry, same bytes): the deleted row is back.
    With ``other_delete`` another delete file stays, so no data file's reader-view entry changes at all."""
    from pyiceberg.manifest import ManifestContent

    table = catalog.create_table("ns.t", schema=_rows().schema)
    table.append(_rows().slice(0, 2))
    table.append(_rows().slice(2))
    first, second = sorted(live_data_files(table), key=lambda f: f.record_count, reverse=True)
    folder = local(table.location()) / "data"
    commit_delete_file(table, folder / "del-1.parquet", target=first.file_path)  # hides id 1
    if other_delete:
        commit_delete_file(table, folder / "del-2.parquet", target=second.file_path)  # hides id 3
    snapshot = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    assert snapshot is not None
    table = catalog.load_table("ns.t")
    assert [r["id"] for r in _scanned(table)] == ([2] if other_delete else [2, 3])
    dropped = [m for m in table.current_snapshot().manifests(table.io)  # type: ignore[union-attr]
               if m.content == ManifestContent.DELETES and any(
                   "del-1" in e.data_file.file_path for e in m.fetch_manifest_entry(table.io))]
    assert len(dropped) == 1
    table = replace_manifests(catalog, table, lambda m: m.manifest_path != dropped[0].manifest_path,
                              {"removed-position-delete-files": "1", "removed-delete-files": "1"})
    assert [r["id"] for r in _scanned(table)] == ([1, 2] if other_delete else [1, 2, 3])  # id 1 is back
    _refused(table)


def test_a_rewritten_file_whose_column_contradicts_its_partition_value(catalog: SqlCatalog) -> None:
    """Partitioned by identity(a): the rewrite's file keeps the partition tuple (a=10) in the manifest but holds
    a=99 in the file. pyiceberg reads the file's value, Iceberg Java the tuple's: readers disagree."""
    from tests.iceberg.rewrites import write_file

    table = catalog.create_table("ns.t", schema=_rows().schema)
    with table.update_spec() as update:
        update.add_identity("a")
    table = catalog.load_table("ns.t")
    table.append(_rows())
    snapshot = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    assert snapshot is not None
    table = catalog.load_table("ns.t")
    (victim,) = [f for f in live_data_files(table) if f.partition[0] == 10]
    forged = write_file(table, with_ids(_with(_rows().slice(0, 1), "a", [99]), IDS), partition=victim.partition,
                        spec_id=victim.spec_id)
    table = replace(catalog, table, remove=[victim], data_files=[forged])
    assert sorted(r["a"] for r in _scanned(table)) == [20, 30, 99]  # pyiceberg: the file's value
    doc = _refused(table, "table_inconsistent")
    assert "partition value" in json.dumps(doc), doc
