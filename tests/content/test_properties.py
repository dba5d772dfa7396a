"""The digest's properties: order and file boundaries do not change it, any change of the multiset of rows does, and
so does every dishonest rewrite of issue 32 (docs/content-digest.md, "What it catches")."""

from __future__ import annotations

import datetime as dt
import itertools
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.content import ColumnSpec, ContentDigest, digest_table

SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("x", pa.float64()),
    pa.field("s", pa.string()),
    pa.field("b", pa.binary()),
    pa.field("t", pa.timestamp("us", tz="UTC")),
    pa.field("l", pa.list_(pa.int32())),
    pa.field("st", pa.struct([pa.field("a", pa.int16()), pa.field("m", pa.map_(pa.string(), pa.int8()))])),
])
SPECS = [ColumnSpec(f"field-id:{i + 1}", f) for i, f in enumerate(SCHEMA)]

_float_bits = st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack(">d", bits.to_bytes(8, "big"))[0])
_row = st.fixed_dictionaries({
    "id": st.none() | st.integers(-2**63, 2**63 - 1),
    "x": st.none() | _float_bits | st.sampled_from([0.0, -0.0, float("nan"), float("inf")]),
    "s": st.none() | st.text(max_size=5),
    "b": st.none() | st.binary(max_size=5),
    "t": st.none() | st.integers(-2**62, 2**62),
    "l": st.none() | st.lists(st.none() | st.integers(-2**31, 2**31 - 1), max_size=3),
    "st": st.none() | st.fixed_dictionaries({
        "a": st.none() | st.integers(-2**15, 2**15 - 1),
        "m": st.none() | st.lists(st.tuples(st.text(max_size=2), st.none() | st.integers(-128, 127)), max_size=2)}),
})
_rows = st.lists(_row, max_size=12)
_slow = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    columns = {}
    for f in SCHEMA:
        values = [r[f.name] for r in rows]
        if f.name == "t":
            columns[f.name] = pa.array(values, pa.int64()).view(f.type)
        else:
            columns[f.name] = pa.array(values, f.type)
    return pa.table(columns, schema=SCHEMA)


def _d(rows: list[dict[str, Any]]) -> ContentDigest:
    return digest_table(_table(rows), SPECS)


def _key(row: dict[str, Any]) -> bytes:
    from attest.content import encode_rows

    return encode_rows(_table([row]), SPECS)[0]


@_slow
@given(_rows, st.randoms(use_true_random=False), st.lists(st.integers(0, 12), max_size=3))
def test_order_and_files_do_not_change_the_digest(rows: list[dict[str, Any]], rnd: Any, cuts: list[int]) -> None:
    whole = _d(rows)
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    assert _d(shuffled) == whole
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    files = [_d(shuffled[a:b]) for a, b in itertools.pairwise(bounds)]
    assert ContentDigest.total(files) == whole and sum(files, ContentDigest.zero()) == whole
    assert whole.rows == len(rows)


@_slow
@given(_rows, _rows)
def test_another_multiset_of_rows_has_another_digest(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    same = sorted(map(_key, a)) == sorted(map(_key, b))
    assert (_d(a) == _d(b)) == same


@_slow
@given(_rows.filter(bool), st.data())
def test_removing_duplicating_or_changing_one_row_changes_the_digest(rows: list[dict[str, Any]], data: Any) -> None:
    i = data.draw(st.integers(0, len(rows) - 1))
    whole = _d(rows)
    assert _d(rows[:i] + rows[i + 1:]) != whole
    assert _d([*rows, rows[i]]) != whole
    other = data.draw(_row)
    changed = [*rows[:i], other, *rows[i + 1:]]
    assert (_d(changed) == whole) == (_key(other) == _key(rows[i]))
    # A removal and the matching subtraction agree; the kept mask is the deletion vector.
    assert whole - _d([rows[i]]) == _d(rows[:i] + rows[i + 1:])
    assert digest_table(_table(rows), SPECS, keep=[j != i for j in range(len(rows))]) == whole - _d([rows[i]])


# The dishonest rewrites of issue 32: each changes the digest.

def _one(t: pa.DataType, values: list[Any], identity: str = "c", name: str = "c") -> ContentDigest:
    arr = values if isinstance(values, pa.Array) else pa.array(values, t)
    return digest_table(pa.table({name: arr}), [ColumnSpec(identity, pa.field(name, arr.type))])


def _floats(bits: list[int], t: pa.DataType | None = None) -> pa.Array:
    t = t or pa.float64()
    return pa.array(bits, pa.uint64() if t.bit_width == 64 else pa.uint32()).view(t)


def test_negative_zero_is_not_zero() -> None:
    assert _one(pa.float64(), _floats([0x8000000000000000])) != _one(pa.float64(), _floats([0]))
    assert _one(pa.float32(), _floats([0x80000000], pa.float32())) != _one(pa.float32(), _floats([0], pa.float32()))


def test_another_nan_payload_is_another_value() -> None:
    canonical, other = _floats([0x7FF8000000000000]), _floats([0x7FF8000000000001])
    assert _one(pa.float64(), canonical) != _one(pa.float64(), other)
    assert _one(pa.float64(), canonical) != _one(pa.float64(), _floats([0xFFF8000000000000]))  # the sign bit
    f32 = pa.float32()
    assert _one(f32, _floats([0x7FC00000], f32)) != _one(f32, _floats([0x7FC00001], f32))


def test_a_duplicated_missing_or_changed_row() -> None:
    base = _one(pa.int64(), [1, 2, 3])
    assert _one(pa.int64(), [1, 2, 3, 3]) != base
    assert _one(pa.int64(), [1, 2]) != base
    assert _one(pa.int64(), [1, 2, 4]) != base
    assert _one(pa.int64(), [3, 1, 2]) == base


def test_a_column_read_by_the_wrong_identity() -> None:
    table = pa.table({"a": [1, 2], "b": [3, 4]})
    right = [ColumnSpec("field-id:1", table.schema.field("a")), ColumnSpec("field-id:2", table.schema.field("b"))]
    swapped = [ColumnSpec("field-id:2", table.schema.field("a")), ColumnSpec("field-id:1", table.schema.field("b"))]
    renamed = [ColumnSpec("field-id:1", table.schema.field("a")), ColumnSpec("field-id:3", table.schema.field("b"))]
    assert digest_table(table, right) != digest_table(table, swapped)
    assert digest_table(table, right) != digest_table(table, renamed)
    # The names the rows carry are not what is digested: the identities are.
    other_names = table.rename_columns(["x", "y"])
    moved = [ColumnSpec("field-id:1", other_names.schema.field("x")),
             ColumnSpec("field-id:2", other_names.schema.field("y"))]
    assert digest_table(other_names, moved) == digest_table(table, right)


def test_a_timestamp_shifted_by_a_zone_or_a_unit() -> None:
    instant = 1_764_720_000_000_000
    utc = _one(pa.timestamp("us", tz="UTC"), pa.array([instant], pa.int64()).view(pa.timestamp("us", tz="UTC")))
    local = _one(pa.timestamp("us"), pa.array([instant], pa.int64()).view(pa.timestamp("us")))
    assert utc != local  # the same count, UTC-adjusted against local: readers get another instant
    shifted = pa.array([instant + 3_600_000_000], pa.int64()).view(pa.timestamp("us", tz="UTC"))
    assert _one(shifted.type, shifted) != utc  # the value moved by a zone's offset
    # Another zone name over the same instant is the same value (the zone is display only).
    paris = pa.array([instant], pa.int64()).view(pa.timestamp("us", tz="Europe/Paris"))
    assert _one(paris.type, paris) == utc
    ms = pa.array([instant // 1000], pa.int64()).view(pa.timestamp("ms", tz="UTC"))
    assert _one(ms.type, ms) != utc  # the same instant in another unit: another type
    reinterpreted = pa.array([instant], pa.int64()).view(pa.timestamp("ns", tz="UTC"))
    assert _one(reinterpreted.type, reinterpreted) != utc


def test_a_type_change_of_equal_numbers() -> None:
    assert _one(pa.int32(), [7]) != _one(pa.int64(), [7])
    assert _one(pa.int64(), [7]) != _one(pa.uint64(), [7])
    assert _one(pa.float32(), [1.5]) != _one(pa.float64(), [1.5])
    assert _one(pa.decimal128(10, 2), [Decimal("1.00")]) != _one(pa.decimal128(12, 2), [Decimal("1.00")])
    assert _one(pa.decimal128(10, 2), [Decimal("1.00")]) != _one(pa.decimal128(10, 3), [Decimal("1.000")])
    assert _one(pa.date32(), [dt.date(2026, 1, 1)]) != _one(pa.int32(), [20454])
    assert _one(pa.string(), ["a"]) != _one(pa.binary(), [b"a"])
    assert _one(pa.binary(), [b"abc"]) != _one(pa.binary(3), [b"abc"])


def test_null_is_not_empty() -> None:
    assert _one(pa.string(), [None]) != _one(pa.string(), [""])
    assert _one(pa.binary(), [None]) != _one(pa.binary(), [b""])
    assert _one(pa.list_(pa.int8()), [None]) != _one(pa.list_(pa.int8()), [[]])
    assert _one(pa.list_(pa.int8()), [[None]]) != _one(pa.list_(pa.int8()), [[]])
    assert _one(pa.map_(pa.string(), pa.int8()), [None]) != _one(pa.map_(pa.string(), pa.int8()), [[]])
    t = pa.struct([pa.field("a", pa.int8())])
    assert _one(t, [None]) != _one(t, [{"a": None}])


def test_map_entries_in_another_order() -> None:
    t = pa.map_(pa.string(), pa.int8())
    assert _one(t, [[("a", 1), ("b", 2)]]) != _one(t, [[("b", 2), ("a", 1)]])


def test_a_partition_value() -> None:
    table = pa.table({"a": [1, 2]})
    spec = [ColumnSpec("a", table.schema.field("a"))]
    day = digest_table(table, spec, {"physical:part": (pa.date32(), dt.date(2026, 12, 3))})
    assert day != digest_table(table, spec, {"physical:part": (pa.date32(), dt.date(2026, 12, 4))})
    assert day != digest_table(table, spec)
    assert day != digest_table(table, spec, {"physical:part": (pa.timestamp("us"), dt.datetime(2026, 12, 3))})
    assert day != digest_table(table, spec, {"physical:part": (pa.date32(), None)})
    # A constant is encoded as a column holding it: the same digest as the column written out.
    written = table.append_column("p", pa.array([dt.date(2026, 12, 3)] * 2, pa.date32()))
    assert day == digest_table(written, [*spec, ColumnSpec("physical:part", written.schema.field("p"))])


@pytest.mark.parametrize("cut", [0, 1, 2, 3])
def test_a_deletion_vector_is_a_subtraction(cut: int) -> None:
    table = pa.table({"a": [1, 1, 2]})
    spec = [ColumnSpec("a", table.schema.field("a"))]
    keep = [i != cut for i in range(3)]
    kept = digest_table(table, spec, keep=pa.array(keep))
    assert kept == digest_table(table.filter(pa.array(keep)), spec)
    assert kept.rows == sum(keep)
    assert digest_table(table, spec, keep=pa.chunked_array([keep[:1], keep[1:]])) == kept
