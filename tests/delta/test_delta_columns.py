"""Per-file reader views built from delta-rs's Arrow columns (carriers/delta/columns.py) are the same bytes as the views
built file by file from Python rows (the code before, kept here as the reference): every digest an attestation bound
before still verifies, and a change of any typed value still changes its file's digest."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.view import file_digest, json_safe
from carriers.core import canonical_relative
from carriers.delta import columns
from carriers.delta.carrier import DeltaCarrier, _dv_entry, add_action_rows
from carriers.delta.columns import _array_text, _encoded
from carriers.delta.log import replay
from carriers.delta.spellings import _Spellings


def _reference_views(path: Path) -> dict[str, str]:
    """The per-file view digests as _compute_live built them before the columns: a dict per file through json_safe."""
    table = DeltaTable(str(path))
    log, _ = replay(DeltaCarrier(str(path)).storage, int(table.version()))
    rows = add_action_rows(table)
    cols = set(rows[0]) if rows else set()
    spellings = _Spellings(table)
    stat_keys = [k for k in ("num_records", "null_count", "min", "max") if k in cols]
    out: dict[str, str] = {}
    for row in rows:
        raw = str(row["path"])
        rel, _ = canonical_relative(raw)
        assert rel is not None
        add = log.adds.get(raw) or {}
        values = add.get("partitionValues")
        unread = spellings.see(rel, values, add.get("stats"), row, log.parsed_stats)
        entry: dict[str, Any] = {
            "kind": "data",
            "size": int(row["size_bytes"]),
            "partition": json_safe(row.get("partition")) if "partition" in cols else None,
            "stats": json_safe({k: row.get(k) for k in stat_keys}),
            "deletion_vector": _dv_entry(add.get("deletionVector")),
            "row_tracking": json_safe({k: add.get(k) for k in ("baseRowId", "defaultRowCommitVersion")}),
        }
        if spellings.partitions:
            entry["partition_text"] = json_safe(values) if isinstance(values, dict) else None
        if unread is not None:
            entry["stats_unread"] = unread
        out[rel] = file_digest(entry)
    return out


def _live_views(path: Path) -> dict[str, str]:
    carrier = DeltaCarrier(str(path))
    live = carrier.live()
    assert live is not None
    return {p: d for p, d in live.view.files.items() if any(f.path == p and f.kind == "data" for f in live.files)}


def _rows(offset: int) -> pa.Table:
    return pa.table({
        "i": pa.array([offset, None, -7], pa.int64()),
        "small": pa.array([1, 2, None], pa.int8()),
        "s": pa.array(["plain", 'quote " and \\ back', None]),
        "ctl": pa.array(["a\nb", "tab\tx", "\x01"]),
        "uni": pa.array(["é", "\u2028", "日本"]),
        "f": pa.array([1.5, float("nan"), -0.0]),
        "b": pa.array([True, None, False]),
        "d": pa.array([dt.date(2024, 1, 5), None, dt.date(1970, 1, 1)]),
        "ts": pa.array([dt.datetime(2024, 1, 5, 10, tzinfo=dt.UTC), None, None], pa.timestamp("us", "UTC")),
        "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")], pa.decimal128(10, 2)),
        "bin": pa.array([b"\x00\xff", None, b""]),
        "none": pa.array([None, None, None], pa.string()),
        "nested": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": 'q"'}],
                           pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "part": pa.array([f"p{offset % 2}", f"p{offset % 2}", f"p{offset % 2}"]),
        "ipart": pa.array([offset % 3] * 3, pa.int32()),
    })


@pytest.fixture(params=["pyarrow", "rows"])
def reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both readings of the add actions: in columns with pyarrow compute (many files), as Python rows (few)."""
    if request.param == "pyarrow":
        monkeypatch.setattr(columns, "ROWS_MAX", 0)
    return str(request.param)


def _fields(adds: columns.AddColumns) -> dict[str, Any]:
    return {"paths": adds.paths, "sizes": adds.sizes, "times": adds.times, "partition_texts": adds.partition_texts,
            "stats_texts": adds.stats_texts, "gaps": adds.gaps, "plain": adds.plain, "stat_keys": adds.stat_keys,
            "has_partition": adds.has_partition, "columns": adds.columns,
            "stats_rows": [adds.stats_row(i) for i in range(len(adds.paths))]}


@pytest.mark.parametrize("partition_by", [None, ["part"], ["part", "ipart"]])
def test_rows_reading_gives_the_columns_values(tmp_path: Path, partition_by: list[str] | None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A version of few files is read without pyarrow (columns._RowColumns): every value the carrier uses is the
    same as the pyarrow reading's, so are the views built from them."""
    path = tmp_path / "t"
    for offset in range(4):
        write_deltalake(str(path), _rows(offset), mode="append", partition_by=partition_by)
    write_deltalake(str(path), _rows(9).slice(1, 1), mode="append", partition_by=partition_by)
    write_deltalake(str(path), pa.table({"i": pa.array([None], pa.int64())}), mode="append",
                    schema_mode="merge", partition_by=partition_by)
    plain = tmp_path / "plain"  # files without a null: no gap
    write_deltalake(str(plain), pa.table({"i": [1, 2], "s": ["a", "b"]}))
    write_deltalake(str(plain), pa.table({"i": [3, None], "s": ["c", "d"]}), mode="append")
    write_deltalake(str(plain), pa.table({"i": pa.array([None], pa.int64()), "s": ["e"]}), mode="append")
    read = [_fields(columns.add_columns(DeltaTable(str(p)))) for p in (path, plain)]
    assert [type(columns.add_columns(DeltaTable(str(p)))) for p in (path, plain)] == [columns._RowColumns] * 2
    monkeypatch.setattr(columns, "ROWS_MAX", 0)
    assert [type(columns.add_columns(DeltaTable(str(p)))) for p in (path, plain)] == [columns.AddColumns] * 2
    assert read == [_fields(columns.add_columns(DeltaTable(str(p)))) for p in (path, plain)]
    assert sorted(read[1]["gaps"]) == [False, False, True] and all(read[0]["plain"])


def test_types_read_otherwise_go_to_pyarrow(tmp_path: Path) -> None:
    """A column of a type the rows reading is not held to (a struct naming a field twice, a list, a map, ...) sends
    the whole version to the pyarrow reading."""
    from arro3.core import DataType

    assert columns._row_type(DataType.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())]))
    assert not columns._row_type(DataType.struct([pa.field("a", pa.int64()), pa.field("a", pa.int64())]))
    assert not columns._row_type(DataType.struct([pa.field("s", pa.struct([("a", pa.int8()), ("a", pa.int8())]))]))
    assert not columns._row_type(DataType.list(pa.field("x", pa.int64())))
    assert not columns._row_type(DataType.from_arrow(pa.map_(pa.string(), pa.int64())))
    assert not columns._row_type(DataType.from_arrow(pa.string_view()))


@pytest.mark.parametrize("partition_by", [None, ["part"], ["part", "ipart"]])
def test_views_from_columns_are_the_rows_views(tmp_path: Path, partition_by: list[str] | None, reading: str) -> None:
    path = tmp_path / "t"
    for offset in range(4):
        write_deltalake(str(path), _rows(offset), mode="append", partition_by=partition_by)
    # A file of only nulls in a column, and one with no statistics at all (a gap delta-rs reads none of).
    write_deltalake(str(path), _rows(9).slice(1, 1), mode="append", partition_by=partition_by)
    reference = _reference_views(path)
    assert len(reference) >= 5
    assert _live_views(path) == reference


def test_views_from_columns_many_files_and_a_checkpoint(tmp_path: Path, reading: str) -> None:
    path = tmp_path / "t"
    for offset in range(12):
        write_deltalake(str(path), _rows(offset), mode="append", partition_by=["part"])
    DeltaTable(str(path)).create_checkpoint()
    write_deltalake(str(path), _rows(20), mode="append", partition_by=["part"])
    assert _live_views(path) == _reference_views(path)


def _texts_of(array: pa.Array) -> list[str] | None:
    text = _array_text(array)
    return None if text is None else text.to_pylist()


@pytest.mark.parametrize("array", [
    pa.array([1, None, -2**63], pa.int64()),
    pa.array([2**64 - 1, 0, None], pa.uint64()),
    pa.array([True, False, None]),
    pa.array(["a", None, "é", "日本", "\u2028", "\x7f"]),
    pa.array(["a", None], pa.large_string()),
    pa.array([None, None], pa.null()),
    pa.array([{"b": 1, "a": "x"}, None, {"b": None, "a": None}], pa.struct([("b", pa.int64()), ("a", pa.string())])),
    pa.array([{"z": {"y": 2}}, {"z": None}, None], pa.struct([("z", pa.struct([("y", pa.int16())]))])),
    pa.array([{"x": 1}, {"x": 2}, None, {"x": 4}], pa.struct([("x", pa.int64())])).slice(1, 3),
    pa.array([], pa.struct([])),
    pa.array([{}, None], pa.struct([])),
])
def test_array_text_is_json_safe_encoded(array: pa.Array) -> None:
    assert _texts_of(array) == _encoded(array.to_pylist())


@pytest.mark.parametrize("array", [
    pa.array(['q"', "x"]), pa.array(["back\\slash"]), pa.array(["new\nline"]), pa.array(["\x00"]),
    pa.array([1.5, None]), pa.array([b"x"]), pa.array([dt.date(2024, 1, 1)]), pa.array([[1, 2]]),
    pa.array([decimal.Decimal("1.5")], pa.decimal128(4, 1)),
    pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"]),
    pa.array([{"s": 'x"'}], pa.struct([("s", pa.string())])),
])
def test_values_spelled_otherwise_are_encoded_value_by_value(array: pa.Array) -> None:
    # Not written by pyarrow: the caller encodes each value as json_safe does (the same text either way).
    assert _texts_of(array) is None
