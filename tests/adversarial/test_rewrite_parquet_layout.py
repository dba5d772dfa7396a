"""A rewrite's added Parquet file whose footer makes readers take other rows from the same pages (issue 32 trust).

The digest reads a rewritten file with pyarrow. pyarrow (and parquet-mr, Spark's reader) read as many rows of a row
group as its footer's ``num_rows`` says; delta-rs (arrow-rs) reads every row its pages hold. A file whose last row
group holds more rows in its pages than ``num_rows`` says therefore gives delta-rs rows the digest never saw
(measured below: 35 rows where pyarrow reads the attested 30) — flat columns and repeated ones (a list column, whose
rows are counted by its repetition levels) alike: VERIFIED before. Each column chunk's pages are now counted (values,
and rows: DataPageV2 headers or the repetition levels of v1 pages) and held to the footer: ``content_changed``
(data pages v1 and v2).

Controls: the same files with an honest footer, and delta-rs's own ``optimize.compact()`` of a table of nested
columns (lists of lists, maps, structs of lists) whose names differ only in case from one another's folded forms,
verify by content.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from carriers.content_store import _struct
from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, delta_stats, verify
from tests.adversarial.parquet_thrift import field, with_footer
from tests.adversarial.test_content_rewrite_delta import _adds, rewrite


def zigzag(n: int) -> bytes:
    """``n`` as Thrift's compact protocol writes an integer: zigzag, then a varint."""
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def forge_row_group(path: Path, group: int, **values: int) -> None:
    """The file's footer with row group ``group``'s ``num_rows`` / ``total_compressed_size`` set in place (as pyarrow
    writes a RowGroup: total_byte_size, num_rows, file_offset, total_compressed_size; same encoded length)."""
    data = bytearray(path.read_bytes())
    start = len(data) - 8 - struct.unpack("<i", bytes(data[-8:-4]))[0]
    footer = bytes(data[start:-8])
    g = _struct(footer)[0][4][group]
    fields = {2: g[2], 3: g[3], 5: g[5], 6: g[6]}

    def encoded(f: dict[int, int]) -> bytes:
        return b"\x16" + zigzag(f[2]) + b"\x16" + zigzag(f[3]) + b"\x26" + zigzag(f[5]) + b"\x16" + zigzag(f[6])

    old = encoded(fields)
    fields.update({{"num_rows": 3, "total_compressed_size": 6}[k]: v for k, v in values.items()})
    new = encoded(fields)
    assert len(new) == len(old) and footer.count(old) == 1, (old, new)
    data[start:-8] = footer.replace(old, new)
    path.write_bytes(bytes(data))


def delta_rs_rows(path: Path) -> list[dict[str, Any]]:
    table = QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
    return pa.table(table).to_pylist()


def replace_added(path: Path, n: int, groups: list[pa.Table], stored_rows: int, **write: Any) -> Path:
    """The file rewrite commit ``n`` added, written again with one row group per table of ``groups``; its add's
    size and ``numRecords`` (``stored_rows``: what pyarrow will read) set to match."""
    import json

    from carriers.delta.log import commit_name

    commit = path / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    (add,) = [a["add"] for a in actions if "add" in a]
    added = path / add["path"]
    with pq.ParquetWriter(added, groups[0].schema, **write) as writer:
        for group in groups:
            writer.write_table(group, row_group_size=len(group))
    add["size"] = added.stat().st_size
    stats = json.loads(delta_stats(pa.concat_tables(groups).slice(0, stored_rows)))
    add["stats"] = json.dumps({**stats, "numRecords": stored_rows})
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return added


COLUMNS = {
    "flat": lambda i: pa.array(range(i, i + 10), pa.int64()),
    "list": lambda i: pa.array([[j, j + 1] if j % 3 else [] for j in range(i, i + 10)], pa.list_(pa.int64())),
}


@pytest.mark.parametrize("forged", [False, True])
@pytest.mark.parametrize("pages", ["1.0", "2.0"])
@pytest.mark.parametrize("shape", sorted(COLUMNS))
def test_row_group_holding_more_rows_than_its_footer_says(tmp_path: Path, shape: str, pages: str,
                                                          forged: bool) -> None:
    path = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(path), pa.table({"c": COLUMNS[shape](10 * i)}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    attested = sorted(map(repr, delta_rs_rows(path)))
    rels = sorted(_adds(path))
    rows = pa.concat_tables([pq.read_table(path / r) for r in rels])
    extra = pa.table({"c": COLUMNS[shape](100)}).slice(0, 5)
    n = rewrite(path, rels, [(rows, {})])
    # Two row groups of 15 rows; forged: the second holds 5 rows no attested version holds after them.
    second = pa.concat_tables([rows.slice(15), extra]) if forged else rows.slice(15)
    added = replace_added(path, n, [rows.slice(0, 15), second], 30, data_page_version=pages)
    if forged:
        forge_row_group(added, 1, num_rows=15)  # said to hold 15 rows, as pyarrow reads it
        # and the file 30, its row groups' sum (a file stating another sum is refused first, round 35)
        added.write_bytes(with_footer(added.read_bytes(), lambda meta: field(meta, 3).__setitem__(2, 30)))
        assert pq.read_table(added).num_rows == 30  # pyarrow reads the attested rows ...
        assert sorted(map(repr, pq.read_table(added).to_pylist())) == attested
        assert len(delta_rs_rows(path)) == 35  # ... delta-rs the 5 others too
    else:
        assert sorted(map(repr, delta_rs_rows(path))) == attested
    rc, doc = verify(str(path), "--level", "bytes")
    if forged:
        assert rc == 1 and codes(doc) == ["content_changed"], doc
        assert "its pages hold" in doc["errors"][0]["message"], doc
    else:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_delta_rs_compaction_of_nested_columns_verifies(tmp_path: Path) -> None:
    """The row-count and case checks leave honest files alone: delta-rs's own compaction of lists of lists, maps,
    structs of lists and columns named ``V`` and ``w`` (data pages v1, repetition levels of widths 1 and 2)."""
    path = tmp_path / "t"
    for i in range(3):
        n = 50
        write_deltalake(str(path), pa.table({
            "V": pa.array(range(i * n, i * n + n), pa.int64()),
            "w": [f"w{j}" for j in range(n)],
            "ll": pa.array([[[j] * (j % 3), []] if j % 4 else None for j in range(n)],
                           pa.list_(pa.list_(pa.int32()))),
            "m": pa.array([[(str(j), j)] * (j % 2) for j in range(n)], pa.map_(pa.string(), pa.int64())),
            "s": pa.array([{"a": [j] * (j % 3), "b": j} for j in range(n)],
                          pa.struct([("a", pa.list_(pa.int32())), ("b", pa.int64())])),
        }), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    DeltaTable(str(path)).optimize.compact()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_mapped_column_in_another_case(tmp_path: Path) -> None:
    """Column mapping by name: the rewrite's file holds ``b``'s physical name upper-cased (``COL-BBBB``) with values
    where the attested rows had nulls. delta-rs (and the digest) read the exact physical name: nulls, the attested
    rows; Spark (delta-spark 4.4, measured by hand: tests/adversarial/test_spark_rewrite_readers.py measures the
    unmapped case) matched it without case and read 7 and 8 — VERIFIED before."""
    import json
    import uuid

    from carriers.delta.log import commit_name

    path = tmp_path / "t"
    (path / "_delta_log").mkdir(parents=True)
    fields = [{"name": n, "type": "long", "nullable": True,
               "metadata": {"delta.columnMapping.id": i + 1, "delta.columnMapping.physicalName": physical}}
              for i, (n, physical) in enumerate([("a", "col-aaaa"), ("b", "col-bbbb")])]
    pq.write_table(pa.table({"col-aaaa": pa.array([1, 2], pa.int64()), "col-bbbb": pa.nulls(2, pa.int64())}),
                   path / "part-0.parquet")
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps({"type": "struct", "fields": fields}), "partitionColumns": [],
                      "configuration": {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
                      "createdTime": 1}},
        {"add": {"path": "part-0.parquet", "partitionValues": {}, "size": (path / "part-0.parquet").stat().st_size,
                 "modificationTime": 1, "dataChange": True, "stats": json.dumps({"numRecords": 2})}}]
    (path / commit_name(0)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rewrite(path, ["part-0.parquet"],
            [(pa.table({"col-aaaa": pa.array([1, 2], pa.int64()), "COL-BBBB": pa.array([7, 8], pa.int64())}), {})])
    assert [r["b"] for r in delta_rs_rows(path)] == [None, None]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["unsupported_table"], doc
    assert "in another case" in doc["errors"][0]["message"], doc
