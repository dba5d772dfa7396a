"""The page index check over the Arrow array (``carriers.content_store._page_index_problems``: per-page hash
aggregates, ``_page_stats``) against the Python reference it replaced (``reference=True``: every value a Python object,
``_observe_values`` a page at a time): on random columns of every type the check takes, written by pyarrow with page
indexes and small pages, their column indexes honest or forged (null counts, only-null flags, bounds from other pages,
truncated bounds, -0.0 / 0.0 / NaN bounds), their offset indexes too (empty pages, pages past the last row), each
column also read as an equivalent type (views, narrow decimals, large types) — the same problems, in the same order,
with the same messages, the same answer, or the same error.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import math
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import carriers.content_store as store

_slow = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])

_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                    st.sampled_from([0.0, -0.0, math.nan, 1.5, -1.5]))
_TEXT = st.text(alphabet=st.sampled_from("ab\u00e9\U0001f600z\x00"), max_size=4)
_BYTES = st.binary(max_size=4) | st.sampled_from([b"\xff", b"\xff\xff", b""])
_DECIMALS = {9: (2, 10**9 - 1), 18: (3, 10**18 - 1), 30: (4, 10**30 - 1), 50: (5, 10**50 - 1)}
_EPOCH = datetime.datetime(1970, 1, 1)
_EXACT = decimal.Context(prec=100)  # the default context rounds to 28 digits

# (type, values, equivalent types the column is also read as)
_TYPES: dict[str, tuple[pa.DataType, Any, list[pa.DataType]]] = {
    "int8": (pa.int8(), st.integers(-128, 127), []),
    "int32": (pa.int32(), st.integers(-2**31, 2**31 - 1), []),
    "int64": (pa.int64(), st.integers(-2**63, 2**63 - 1), []),
    "uint32": (pa.uint32(), st.integers(0, 2**32 - 1), []),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1), []),
    "float32": (pa.float32(), st.floats(width=32) | st.sampled_from([0.0, -0.0, math.nan]), []),
    "float64": (pa.float64(), _FLOATS, []),
    "bool": (pa.bool_(), st.booleans(), []),
    "string": (pa.string(), _TEXT, [pa.large_string(), pa.string_view()]),
    "binary": (pa.binary(), _BYTES, [pa.large_binary(), pa.binary_view()]),
    "fixed": (pa.binary(3), st.binary(min_size=3, max_size=3), []),
    "dec9": (pa.decimal128(9, 2), st.integers(-(10**9 - 1), 10**9 - 1), [pa.decimal32(9, 2), pa.decimal64(9, 2)]),
    "dec18": (pa.decimal128(18, 3), st.integers(-(10**18 - 1), 10**18 - 1), [pa.decimal64(18, 3)]),
    "dec30": (pa.decimal128(30, 4), st.integers(-(10**30 - 1), 10**30 - 1), [pa.decimal256(30, 4)]),
    "dec50": (pa.decimal256(50, 5), st.integers(-(10**50 - 1), 10**50 - 1), []),
    "ts_ns": (pa.timestamp("ns", tz="UTC"), st.integers(-2**62, 2**62), []),
    "ts_us": (pa.timestamp("us"), st.integers(-2**62, 2**62), []),
    "date": (pa.date32(), st.integers(-2**20, 2**20), []),
    "time": (pa.time64("us"), st.integers(0, 86_400_000_000 - 1), []),
}


def _array(kind: str, raw: list[Any]) -> pa.Array:
    t = _TYPES[kind][0]
    if pa.types.is_decimal(t):
        return pa.array([None if v is None else decimal.Decimal(v).scaleb(-t.scale, _EXACT) for v in raw], t)
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        storage = pa.int32() if pa.types.is_date(t) else pa.int64()
        return pa.array(raw, storage).cast(t)
    return pa.array(raw, t)


@st.composite
def _columns(draw: Any) -> tuple[str, list[Any]]:
    kind = draw(st.sampled_from(sorted(_TYPES)))
    values = _TYPES[kind][1]
    # runs of nulls (only-null pages) beside values
    raw = draw(st.lists(st.one_of(st.none(), values, st.none()), min_size=0, max_size=60))
    return kind, raw


def _forge(draw: Any, ci: dict[int, Any], kind: str) -> dict[int, Any]:
    ci = copy.deepcopy(ci)
    n = len(ci.get(1) or [])
    if not n:
        return ci
    for _ in range(draw(st.integers(0, 3))):
        k = draw(st.integers(0, n - 1))
        j = draw(st.integers(0, n - 1))
        what = draw(st.sampled_from(["count", "only_nulls", "min_from", "max_from", "truncate", "zero", "nan",
                                     "no_counts", "swap"]))
        if what == "count" and ci.get(5) is not None:
            ci[5][k] = int(ci[5][k]) + draw(st.sampled_from([-1, 1]))
        elif what == "only_nulls":
            ci[1][k] = not ci[1][k]
        elif what == "min_from":
            ci[2][k] = ci[3][j] if draw(st.booleans()) else ci[2][j]
        elif what == "max_from":
            ci[3][k] = ci[2][j] if draw(st.booleans()) else ci[3][j]
        elif what == "truncate":
            side = draw(st.sampled_from([2, 3]))
            ci[side][k] = ci[side][k][:-1]
        elif what == "zero" and kind in ("float32", "float64"):
            fmt = "<f" if kind == "float32" else "<d"
            ci[draw(st.sampled_from([2, 3]))][k] = struct.pack(fmt, draw(st.sampled_from([0.0, -0.0])))
        elif what == "nan" and kind in ("float32", "float64"):
            fmt = "<f" if kind == "float32" else "<d"
            ci[draw(st.sampled_from([2, 3]))][k] = struct.pack(fmt, math.nan)
        elif what == "no_counts":
            ci.pop(5, None)
        elif what == "swap":
            ci[2][k], ci[3][k] = ci[3][k], ci[2][k]
    return ci


def _run(ci: dict[int, Any], oi: dict[int, Any], column: pa.Array, physical: str, length: int, total_order: bool,
         reference: bool) -> tuple[Any, ...]:
    problems: list[str] = []
    try:
        stored, decode = store._physical_array(column, physical, length)
        matched = store._page_index_problems(problems, "c (Parquet row group 0)", ci, oi, column, stored, decode,
                                             physical, length, total_order=total_order, reference=reference)
    except (pa.ArrowException, TypeError, ValueError, OverflowError, struct.error) as exc:
        return problems, type(exc).__name__, str(exc)
    return problems, matched


@given(data=st.data(), column=_columns(), rows_a_page=st.integers(1, 7), total_order=st.booleans())
@_slow
def test_vectorised_page_index_check_is_the_reference(tmp_path: Path, data: Any, column: tuple[str, list[Any]],
                                                      rows_a_page: int, total_order: bool) -> None:
    kind, raw = column
    array = _array(kind, raw)
    path = tmp_path / "page.parquet"
    pq.write_table(pa.table({"c": array}), path, write_page_index=True, max_rows_per_page=rows_a_page,
                   write_batch_size=rows_a_page, data_page_size=1, use_dictionary=data.draw(st.booleans()),
                   store_decimal_as_integer=True)
    with path.open("rb") as handle:
        indexes = store.read_parquet_indexes(handle)
    assert not isinstance(indexes, str), indexes
    leaf = pq.ParquetFile(path).metadata.schema.column(0)
    stored = pq.read_table(path).column("c").combine_chunks()
    for chunk in indexes:
        if chunk.column_index is None or chunk.offset_index is None:
            continue
        ci = _forge(data.draw, chunk.column_index, kind)
        oi = copy.deepcopy(chunk.offset_index)
        firsts = oi.get(1) or []
        if len(firsts) > 1 and data.draw(st.booleans()):
            # an empty page (a first row repeated), or pages past the last row (a Python slice reads none)
            k = data.draw(st.integers(1, len(firsts) - 1))
            past = len(raw) + data.draw(st.integers(0, 3))
            for j in range(k, len(firsts)):
                firsts[j][3] = past if data.draw(st.booleans()) else max(firsts[k - 1][3], firsts[j][3] - 1)
            if [p[3] for p in firsts] != sorted(p[3] for p in firsts):
                for j, page in enumerate(sorted(p[3] for p in firsts)):
                    firsts[j][3] = page
        for read_as in [stored.type, *_TYPES[kind][2]]:
            try:
                as_read = stored.cast(read_as)
            except pa.ArrowException:
                continue  # a value the narrower type does not hold
            fast = _run(ci, oi, as_read, leaf.physical_type, leaf.length or 0, total_order, False)
            slow = _run(ci, oi, as_read, leaf.physical_type, leaf.length or 0, total_order, True)
            assert fast == slow, (kind, read_as, raw, ci)


def test_forged_pages_are_found_as_the_reference_finds_them(tmp_path: Path) -> None:
    """Not vacuous: forged bounds, counts and flags of a float column (-0.0 beside 0.0, NaN) are found, with the
    reference's messages (its -0.0 / 0.0 as stored first on the page)."""
    path = tmp_path / "f.parquet"
    array = pa.array([-0.0, 0.0, 1.0, None, math.nan, 2.0, None, None, 0.0, -0.0], pa.float64())
    pq.write_table(pa.table({"c": array}), path, write_page_index=True, max_rows_per_page=2, write_batch_size=2,
                   data_page_size=1, use_dictionary=False)
    with path.open("rb") as handle:
        chunk = store.read_parquet_indexes(handle)[0]  # type: ignore[index]
    assert chunk.column_index is not None and chunk.offset_index is not None
    ci = copy.deepcopy(chunk.column_index)
    assert len(ci[1]) == 5
    ci[2][0] = struct.pack("<d", 0.0)   # a minimum of 0.0 over -0.0
    ci[5][1] = 0                        # a null stated away
    ci[1][2] = True                     # values said to be nulls only
    ci[3][2] = struct.pack("<d", 1.0)   # (hidden by the flag above)
    ci[3][4] = struct.pack("<d", -0.0)  # a maximum of -0.0 over 0.0
    fast = _run(ci, chunk.offset_index, array, "DOUBLE", 0, True, False)
    assert fast == _run(ci, chunk.offset_index, array, "DOUBLE", 0, True, True)
    problems, matched = fast
    assert matched is True
    assert [p.split(": ", 1)[0].rsplit(", ", 1)[1] for p in problems] == \
        ["page 0 of its page index", "page 1 of its page index", "page 2 of its page index",
         "page 4 of its page index"]
    assert "a minimum of 0.0 over a -0.0" in problems[0]
    assert "0 nulls stated, 1 stored" in problems[1]
    assert "said to hold only nulls, holds values" in problems[2]
    assert "a maximum of -0.0 over a 0.0" in problems[3]
    # a truncated bound: the reference's error, after what was found before it
    ci[2][1] = b"\x00"
    cut = _run(ci, chunk.offset_index, array, "DOUBLE", 0, True, False)
    assert cut == _run(ci, chunk.offset_index, array, "DOUBLE", 0, True, True)
    assert cut[1] == "error" and len(cut[0]) == 2


@pytest.mark.parametrize("physical", ["INT96", "BYTE_ARRAY"])
def test_refusals_are_the_reference_refusals(physical: str) -> None:
    """A type or physical type the check does not take is refused with ``_physical``'s words."""
    for column in (pa.array([1, 2], pa.int64()), pa.array([decimal.Decimal("1.5")], pa.decimal128(5, 1)),
                   pa.array([1.0], pa.float16()) if physical == "BYTE_ARRAY" else pa.array([b"x"]),
                   pa.array([_EPOCH], pa.timestamp("ns"))):
        with pytest.raises(Exception) as fast:
            store._physical_array(column, physical, 0)
        with pytest.raises(Exception) as slow:
            store._physical(column, physical, 0)
        assert (type(fast.value), str(fast.value)) == (type(slow.value), str(slow.value))


class _Celsius(pa.ExtensionType):  # type: ignore[misc]
    """An extension over doubles: its values are floats, its type not a float type."""

    def __init__(self) -> None:
        super().__init__(pa.float64(), "test.celsius")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: Any, serialized: bytes) -> _Celsius:
        return cls()


def test_an_extension_over_floats_is_judged_by_the_reference(tmp_path: Path) -> None:
    """``_observe_values`` counts no NaN of a column whose type is not a float type: such a column is observed by the
    reference alone (the same answer as the reference, forged bounds found)."""
    path = tmp_path / "e.parquet"
    storage = pa.array([1.0, math.nan, -0.0, 2.0, None, 0.0], pa.float64())
    pq.write_table(pa.table({"c": storage}), path, write_page_index=True, max_rows_per_page=2, write_batch_size=2,
                   data_page_size=1, use_dictionary=False)
    with path.open("rb") as handle:
        chunk = store.read_parquet_indexes(handle)[0]  # type: ignore[index]
    assert chunk.column_index is not None and chunk.offset_index is not None
    column = pa.ExtensionArray.from_storage(_Celsius(), storage)
    ci = copy.deepcopy(chunk.column_index)
    ci[3][1] = struct.pack("<d", -1.0)
    for total_order in (False, True):
        fast = _run(ci, chunk.offset_index, column, "DOUBLE", 0, total_order, False)
        assert fast == _run(ci, chunk.offset_index, column, "DOUBLE", 0, total_order, True)
        assert fast[1] is True and any("page 1 of its page index" in p for p in fast[0]), fast
