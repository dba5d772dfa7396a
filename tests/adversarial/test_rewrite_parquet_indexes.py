"""Rewrites whose added Parquet file prunes rows through structures the footer-statistics check did not see.

A rewrite's added file is held to its rows by content, and its statistics — the log's or the manifest's, and its
Parquet footer's as pyarrow reads them (test_rewrite_statistics.py) — to those rows. Readers skip rows by more than
that: **page indexes** (ColumnIndex / OffsetIndex: per-page null counts and bounds, which delta-rs and parquet-mr —
Spark, Iceberg Java — skip pages by), **bloom filters** (delta-rs and parquet-mr skip a row group whose filter leaves
the constant of ``x = c`` out), and **footer statistics pyarrow disregards** (a file whose ``created_by`` names an
old parquet-mr: pyarrow ignores its string bounds, delta-rs prunes by them). Measured with delta-rs 1.6: each forged
structure made a filtered query return no row while a full scan returned every row, and the verdict said
``VERIFIED (content; …, same rows)``. Each must be ``content_changed``; the same files written honestly (pyarrow's
page index and bloom filters; delta-rs's own files) still verify.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

from carriers.delta.log import commit_name
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_content_rewrite_delta import _attested, _engine_rows, _merged, _partition, rewrite
from tests.adversarial.test_rewrite_statistics import _restat, _sql, _true_stats

STATS = ["v", "w", "ts"]  # pyarrow's footer bounds leave NaN out: no statistics on f (test_rewrite_statistics)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    _attested(path)
    return path


def _rewritten(table: Path, **options: object) -> Path:
    """Partition a rewritten into one file written by pyarrow with ``options`` (honest rows, log statistics as Spark
    writes them); the path of the file it added."""
    rels = _partition(table, "a")
    rows = _merged(table, rels)
    n = rewrite(table, rels, [(rows, {"p": "a"})])
    _restat(table, n, _true_stats)
    commit = table / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    (add,) = [a["add"] for a in actions if "add" in a]
    added = table / add["path"]
    pq.write_table(rows, added, write_statistics=STATS, **options)  # type: ignore[arg-type]
    add["size"] = added.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return added


def _footer_bounds(path: Path) -> tuple[bytearray, int, int]:
    data = bytearray(path.read_bytes())
    length = struct.unpack("<i", bytes(data[-8:-4]))[0]
    return data, len(data) - 8 - length, len(data) - 8


def _forge_page_index(path: Path, true: bytes, forged: bytes) -> None:
    """The page indexes (between the last column chunk and the footer) with ``true`` written as ``forged``."""
    md = pq.ParquetFile(path).metadata
    end = max((c.dictionary_page_offset or c.data_page_offset) + c.total_compressed_size
              for c in (md.row_group(0).column(i) for i in range(md.num_columns)))
    data, start, _ = _footer_bounds(path)
    region = bytes(data[end:start])
    assert region.count(true) == 1, region
    data[end:start] = region.replace(true, forged)
    path.write_bytes(bytes(data))


def _zero_bloom(path: Path, column: int) -> None:
    """Column ``column``'s bloom filter with every bit cleared (its header kept)."""
    c = pq.ParquetFile(path).metadata.row_group(0).column(column)
    offset, length = c.bloom_filter_offset, c.bloom_filter_length
    bits = 32
    while bits * 2 <= length:
        bits *= 2
    data = bytearray(path.read_bytes())
    data[offset + length - bits:offset + length] = bytes(bits)
    path.write_bytes(bytes(data))


def _old_writer(path: Path, by: bytes, true: bytes, forged: bytes) -> None:
    """The footer's ``created_by`` replaced by ``by`` (same length) and the string bound ``true`` written as
    ``forged``."""
    data, start, end = _footer_bounds(path)
    footer = bytes(data[start:end])
    old = pq.ParquetFile(path).metadata.created_by.encode()
    assert len(by) == len(old) and footer.count(true) == 1
    data[start:end] = footer.replace(old, by).replace(true, forged)
    path.write_bytes(bytes(data))


def _refused(table: Path, before: object, query: str) -> None:
    assert _engine_rows(table) == before  # a full scan reads every row ...
    assert _sql(table, query) == 0  # ... a filtered read gets none of them (delta-rs, measured)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "Parquet footer statistics that misstate its rows" in doc["errors"][0]["message"], doc


@pytest.mark.parametrize("options", [{"write_page_index": True},
                                     {"bloom_filter_options": {"v": {"ndv": 10}, "w": {"ndv": 10}}}])
def test_honest_page_index_and_bloom_filters_verify(table: Path, options: dict[str, object]) -> None:
    added = _rewritten(table, **options)
    meta = pq.ParquetFile(added).metadata.row_group(0)
    assert any(meta.column(i).has_column_index or meta.column(i).bloom_filter_offset for i in range(4))
    assert _sql(table, "select count(*) from t where v = 23") == 1
    assert _sql(table, "select count(*) from t where w = 'z'") == 3
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_page_index_maximum_below_the_greatest_value(table: Path) -> None:
    before = _engine_rows(table)
    added = _rewritten(table, write_page_index=True)
    assert _sql(table, "select count(*) from t where v = 23") == 1
    _forge_page_index(added, struct.pack("<q", 23), struct.pack("<q", 20))
    _refused(table, before, "select count(*) from t where v = 23")


def test_a_page_index_string_maximum_truncated_without_increment(table: Path) -> None:
    """A string page maximum cut short and not incremented ('z' kept as a shorter, lower prefix is what the
    writers' truncation must avoid): here 'z' written as 'y' of the same length."""
    before = _engine_rows(table)
    added = _rewritten(table, write_page_index=True)
    _forge_page_index(added, b"\x01z", b"\x01y")
    _refused(table, before, "select count(*) from t where w = 'z'")


@pytest.mark.parametrize(("column", "query"), [(0, "select count(*) from t where v = 23"),
                                               (2, "select count(*) from t where w = 'z'")])
def test_a_bloom_filter_that_leaves_out_a_stored_value(table: Path, column: int, query: str) -> None:
    before = _engine_rows(table)
    added = _rewritten(table, bloom_filter_options={"v": {"ndv": 10}, "w": {"ndv": 10}})
    assert _sql(table, query) >= 1
    _zero_bloom(added, column)
    _refused(table, before, query)


def test_footer_statistics_pyarrow_disregards(table: Path) -> None:
    """``created_by`` an old parquet-mr: pyarrow drops the string column's bounds (no statistics to check), delta-rs
    prunes the row group by them."""
    before = _engine_rows(table)
    added = _rewritten(table)
    _old_writer(added, b"parquet-mr version 1.9.0 (build)", b"\x01z", b"\x01y")
    assert pq.ParquetFile(added).metadata.row_group(0).column(2).statistics is None  # pyarrow: none
    _refused(table, before, "select count(*) from t where w = 'z'")


def test_the_footer_reader_never_raises_on_hostile_bytes(tmp_path: Path) -> None:
    """Every byte of a footer with page indexes and bloom filters changed, or the file cut anywhere: a list of
    structures or a reason, never an exception or a hang (a map of booleans a billion long is refused at once)."""
    import io
    import random

    from carriers.content_store import _Thrift, read_parquet_indexes

    path = tmp_path / "f.parquet"
    pq.write_table(pa_rows(), path, write_page_index=True, bloom_filter_options={"w": {"ndv": 4}})
    data = path.read_bytes()
    assert isinstance(read_parquet_indexes(io.BytesIO(data)), list)
    rng = random.Random(7)
    for _ in range(300):
        forged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            forged[rng.randrange(max(0, len(data) - 600), len(data) - 8)] = rng.randrange(256)
        assert isinstance(read_parquet_indexes(io.BytesIO(bytes(forged))), list | str)
    for cut in range(0, len(data), 97):
        assert isinstance(read_parquet_indexes(io.BytesIO(data[:cut])), str)
    with pytest.raises(ValueError):
        _Thrift(b"\x1b\xff\xff\xff\xff\x0f\x11").value(12, 0)  # field 1: map of 2^32 - 1 entries, bool keys


def pa_rows() -> Any:
    import pyarrow as pa

    return pa.table({"v": pa.array(range(100), pa.int64()), "w": [f"x{i % 7}" for i in range(100)]})


def test_honest_indexes_of_every_physical_type_hold() -> None:
    """pyarrow's page indexes and bloom filters of decimals (INT32 and fixed-length), a uuid, booleans, timestamps,
    dates, floats with -0.0, struct fields with parent nulls and a list: no problem (the check reads each in the
    domain its physical type encodes); and one cleared bloom filter of them is found."""
    import decimal
    import io
    import uuid

    import pyarrow as pa

    from carriers.content_store import index_problems, read_parquet_indexes

    dec = [decimal.Decimal("1.25"), decimal.Decimal("-3.5"), None, decimal.Decimal("7"), decimal.Decimal("0.01")]
    rows = pa.table({
        "u": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuid.uuid4().bytes for _ in range(5)], pa.binary(16))),
        "d": pa.array(dec, pa.decimal128(9, 2)), "e": pa.array(dec, pa.decimal128(30, 2)),
        "b": [True, False, None, True, True], "ts": pa.array([1, 2, 3, 4, 5], pa.timestamp("us")),
        "dt": pa.array([1, 2, 3, 4, 5], pa.date32()), "f": pa.array([1.5, -0.0, 2.0, None, 3.0], pa.float32()),
        "st": pa.array([{"x": 1, "y": "a"}, None, {"x": 3, "y": None}, {"x": None, "y": "q"}, {"x": 5, "y": "z"}]),
        "l": [[1, 2], [3], None, [], [4]]})
    blooms = {c: {"ndv": 5} for c in ("u", "d", "e", "ts", "dt", "f")}
    buffer = io.BytesIO()
    pq.write_table(rows, buffer, write_page_index=True, store_decimal_as_integer=True, bloom_filter_options=blooms)
    data = buffer.getvalue()
    parquet = pq.ParquetFile(io.BytesIO(data))
    table = parquet.read()
    assert index_problems(read_parquet_indexes(io.BytesIO(data)), parquet.metadata, table, total_order=True) == []
    meta = parquet.metadata.row_group(0).column(1)
    forged = bytearray(data)
    end = meta.bloom_filter_offset + meta.bloom_filter_length
    forged[end - 32:end] = bytes(32)
    found = index_problems(read_parquet_indexes(io.BytesIO(bytes(forged))), parquet.metadata, table, total_order=True)
    assert len(found) == 1 and "bloom filter that leaves out" in found[0], found


def _int96(when: int) -> bytes:
    """An INT96 timestamp (nanoseconds of the day, then the Julian day, little-endian) of ``when`` seconds."""
    days, seconds = divmod(when, 86_400)
    return struct.pack("<qi", seconds * 10**9, 2_440_588 + days)


def _forge_int96_bounds(path: Path, column: str, lo: bytes, hi: bytes) -> None:
    """Column ``column``'s footer minimum and maximum (deprecated and current) written as ``lo`` / ``hi``."""
    from tests.adversarial import parquet_footer as pf

    def edit(meta: list[list[Any]]) -> None:
        for group in pf.field(meta, pf.ROW_GROUPS)[1]:
            for chunk in pf.field(group, 1)[1]:
                md = pf.field(chunk, 3)
                if pf.field(md, 3)[1] == [column.encode()]:
                    stats = pf.field(md, 12)  # ColumnMetaData 12: statistics
                    if stats is None:
                        stats = []
                        pf.set_field(md, 12, pf.STRUCT, stats)
                    for fid, value in ((1, hi), (2, lo), (5, hi), (6, lo)):
                        pf.set_field(stats, fid, pf.BINARY, value)

    pf.edit_footer(path, edit)
    (path.parent / f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old bytes (Spark's files)
    table = next(p for p in path.parents if (p / "_delta_log").is_dir())
    commit = max((table / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:  # the footer grew: the log's size of the file follows (readers seek the footer by it)
        if "add" in action and (table / unquote(action["add"]["path"])).samefile(path):
            action["add"]["size"] = path.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for checksum in (commit.parent / f".{commit.name}.crc", commit.with_suffix(".crc")):
        checksum.unlink(missing_ok=True)  # Hadoop's checksum of the commit's old bytes, Delta's of the old table size


def test_int96_footer_bounds_no_reader_prunes_by_are_not_refused(table: Path) -> None:
    """Spark writes timestamps as INT96 with footer bounds pyarrow disregards (INT96's sort order is undefined). No
    reader prunes by them — delta-rs here; Spark in test_spark_int96_statistics — so bounds forged 24 years away
    change no answer, and the rewrite verifies (it was refused, and so was every Spark OPTIMIZE of a table with a
    timestamp column)."""
    added = _rewritten(table, use_deprecated_int96_timestamps=True)
    schema = pq.ParquetFile(added).schema
    assert [schema.column(i).physical_type for i in range(len(schema)) if schema.column(i).name == "ts"] == ["INT96"]
    query = "select count(*) from t where ts = '2023-11-14T22:13:20Z'::timestamptz"
    before = _sql(table, query)
    assert before >= 1
    _forge_int96_bounds(added, "ts", _int96(946_684_800), _int96(946_684_800))  # 2000-01-01
    assert _sql(table, query) == before  # not pruned
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_an_old_writers_bounds_beside_int96_ones_are_still_refused(table: Path) -> None:
    """The INT96 exemption is by physical type: in the same file, an old parquet-mr's string bound forged (pyarrow
    disregards it, delta-rs prunes by it) is refused as before."""
    before = _engine_rows(table)
    added = _rewritten(table, use_deprecated_int96_timestamps=True)
    _forge_int96_bounds(added, "ts", _int96(946_684_800), _int96(946_684_800))
    _old_writer(added, b"parquet-mr version 1.9.0 (build)", b"\x01z", b"\x01y")
    _refused(table, before, "select count(*) from t where w = 'z'")
