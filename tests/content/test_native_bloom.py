"""The native kernel's Parquet bloom filter check (``recipe_attest_digest.bloom_missing``, native/recipe-attest-digest/
src/bloom.rs) against the pure-Python reference (``carriers.content_store``: ``_physical``, ``_plain``, ``xxh64``,
``bloom_holds``): XXH64 test vectors, the filters writers write (pyarrow's parquet-cpp), and random values of every
type the check takes, on random filters — the same first missing value, or an error on both sides.

Without the kernel the kernel's tests skip saying why (``ATTEST_REQUIRE_NATIVE=1``: they fail, as test_native.py's);
the reference's vectors and the wiring tests run everywhere.
"""

from __future__ import annotations

import contextlib
import decimal
import random
import struct
import sys
import types
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import carriers.content_store as store
from attest.content import native
from tests.content.test_native import _env, _require_kernel

# XXH64 (seed 0) of the bytes 0, 1, ..., n-1 for n = 0..31: parquet-mr's sanity vectors of its bloom filter hasher
# (TestBlockSplitBloomFilter), which Arrow's parquet-cpp tests repeat; as signed 64-bit integers, as written there.
LOOPING_BYTES = [
    -1205034819632174695, -1642502924627794072, 5216751715308240086, -1889335612763511331, -13835840860730338,
    -2521325055659080948, 4867868962443297827, 1498682999415010002, -8626056615231480947, 7482827008138251355,
    -617731006306969209, 7289733825183505098, 4776896707697368229, 1428059224718910376, 6690813482653982021,
    -6248474067697161171, 4951407828574235127, 6198050452789369270, 5776283192552877204, -626480755095427154,
    -6637184445929957204, 8370873622748562952, -1705978583731280501, -7898818752540221055, -2516210193198301541,
    8356900479849653862, -4413748141896466000, -6040072975510680789, 1451490609699316991, -7948005844616396060,
    8567048088357095527, -4375578310507393311]
# The xxHash reference's (and python-xxhash's documented) values: the empty input, short inputs, and inputs of 32
# bytes and more (the four-lane loop the vectors above never reach).
VECTORS = [(b"", 0xEF46DB3751D8E999), (b"a", 0xD24EC4F1A98C6E5B), (b"abc", 0x44BC2CF5AD770999),
           (b"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1)]
_SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)
_slow = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _vectors() -> list[tuple[bytes, int]]:
    return [(bytes(range(n)), h & (2**64 - 1)) for n, h in enumerate(LOOPING_BYTES)] + VECTORS


def _insert(bitset: bytearray, h: int) -> None:
    """Parquet's split-block insert (BloomFilter.md), written here apart from the checks under test."""
    block = ((h >> 32) * (len(bitset) // 32)) >> 32
    key = h & 0xFFFFFFFF
    for i, salt in enumerate(_SALT):
        at = block * 32 + 4 * i
        word = int.from_bytes(bitset[at:at + 4], "little") | (1 << (((key * salt) & 0xFFFFFFFF) >> 27))
        bitset[at:at + 4] = word.to_bytes(4, "little")


def _native(kernel: native.Kernel, bitset: bytes, column: pa.Array, physical: str, length: int) -> int | str | None:
    try:
        ready = store._bloom_ready(column, physical)
        assert ready is not None, (column.type, physical)
        return kernel.bloom_missing(bitset, ready.__arrow_c_array__(), physical, length)
    except (ValueError, pa.ArrowException):
        return "error"


def _reference(bitset: bytes, column: pa.Array, physical: str, length: int) -> int | str | None:
    """The Python path's answer, value by value in row order: the first value the filter leaves out."""
    try:
        values, _ = store._physical(column, physical, length)
        for i, v in enumerate(values):
            if v is not None and not store.bloom_holds(bitset, store._plain(v, physical, length, True)):
                return i
        return None
    except (ValueError, OverflowError, struct.error, TypeError, pa.ArrowException):
        return "error"


def test_python_xxh64_vectors() -> None:
    for data, h in _vectors():
        assert store.xxh64(data) == h, data


def test_kernel_xxh64_vectors(kernel: native.Kernel) -> None:
    """A filter holding exactly a vector's stated hash holds its bytes (a BYTE_ARRAY value, hashed without its length)
    and an INT64 column of the same 8 bytes; one holding the next hash does not."""
    for data, h in _vectors():
        for blocks in (1, 7, 64):
            bitset = bytearray(32 * blocks)
            _insert(bitset, h)
            column = pa.array([None, data], pa.binary())
            assert kernel.bloom_missing(bytes(bitset), column.__arrow_c_array__(), "BYTE_ARRAY") is None, data
            other = bytearray(32 * blocks)
            _insert(other, (h + 1) % 2**64)
            assert kernel.bloom_missing(bytes(other), column.__arrow_c_array__(), "BYTE_ARRAY") == 1, data
            if len(data) == 8:
                ints = pa.array([int.from_bytes(data, "little", signed=True)], pa.int64())
                assert kernel.bloom_missing(bytes(bitset), ints.__arrow_c_array__(), "INT64") is None


@pytest.fixture
def kernel() -> native.Kernel:
    return _require_kernel()


def _written(tmp_path: Path) -> tuple[pa.Table, list[store.ChunkIndexes], Any]:
    """A table of every type the check takes, written by pyarrow (parquet-cpp) with a bloom filter on each column."""
    rng = random.Random(7)
    n = 300
    ints = [rng.randrange(-2**31, 2**31) for _ in range(n)]
    table = pa.table({
        "i8": pa.array([v % 128 for v in ints], pa.int8()),
        "i32": pa.array(ints, pa.int32()),
        "i64": pa.array([v * 2**31 for v in ints], pa.int64()),
        "u32": pa.array([v % 2**32 for v in ints], pa.uint32()),
        "u64": pa.array([(v * 2**33) % 2**64 for v in ints], pa.uint64()),
        "f32": pa.array([v / 7 for v in ints[:-3]] + [float("nan"), -0.0, 0.0], pa.float32()),
        "f64": pa.array([v / 7 for v in ints[:-3]] + [float("nan"), -0.0, float("inf")], pa.float64()),
        "s": pa.array([f"s{v}é" if v % 5 else None for v in ints], pa.string()),
        "b": pa.array([str(v).encode() * (v % 4) for v in ints], pa.binary()),
        "fsb": pa.array([struct.pack("<q", v)[:5] for v in ints], pa.binary(5)),
        "d9": pa.array([decimal.Decimal(v % 10**9).scaleb(-2) for v in ints], pa.decimal128(9, 2)),
        "d18": pa.array([decimal.Decimal(v * 10**8).scaleb(-4) for v in ints], pa.decimal128(18, 4)),
        "d38": pa.array([decimal.Decimal(v * 10**28 - 1).scaleb(-10) for v in ints], pa.decimal128(38, 10)),
        "d50": pa.array([decimal.Decimal(v * 10**40).scaleb(-3) for v in ints], pa.decimal256(50, 3)),
        "date": pa.array([v % 100_000 for v in ints], pa.date32()),
        "ts": pa.array([v * 1000 for v in ints], pa.timestamp("us", tz="UTC")),
        "t64": pa.array([abs(v) * 1000 for v in ints], pa.time64("us")),
        "dur": pa.array(ints, pa.duration("ms")),
    })
    path = tmp_path / "f.parquet"
    pq.write_table(table.slice(0, 200), path, bloom_filter_options={c: {"ndv": 200} for c in table.column_names},
                   store_decimal_as_integer=True)
    with open(path, "rb") as handle:
        indexes = store.read_parquet_indexes(handle)
    assert not isinstance(indexes, str), indexes
    return table, indexes, pq.ParquetFile(path).metadata


def test_writers_filters_hold_their_values(tmp_path: Path, kernel: native.Kernel) -> None:
    """pyarrow's own filters hold every value it wrote, by the kernel and by the reference, for every type (INT32 /
    INT64 / FIXED_LEN_BYTE_ARRAY decimals among them); values it did not write are left out alike."""
    table, indexes, meta = _written(tmp_path)
    physicals = set()
    for chunk in indexes:
        assert chunk.bloom is not None, chunk.column
        leaf = meta.schema.column(chunk.column)
        column = table.column(chunk.column).combine_chunks()
        physicals.add(leaf.physical_type)
        length = leaf.length or 0
        written, unwritten = column.slice(0, 200), column.slice(200)
        assert _native(kernel, chunk.bloom, written, leaf.physical_type, length) is None, leaf.name
        assert _reference(chunk.bloom, written, leaf.physical_type, length) is None, leaf.name
        missing = _native(kernel, chunk.bloom, unwritten, leaf.physical_type, length)
        assert missing == _reference(chunk.bloom, unwritten, leaf.physical_type, length), leaf.name
        assert isinstance(missing, int), leaf.name  # 100 unwritten values: one is left out
    assert physicals == {"INT32", "INT64", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}


def test_a_signaling_nan_is_hashed_as_stored(tmp_path: Path, kernel: native.Kernel) -> None:
    """A float32 signaling NaN: the writer hashes its stored bits, and so does the kernel (the reference goes through
    a Python float, which quiets it, and refuses the honest file: the only difference, on the safe side)."""
    bits = pa.array([0x7FA00001, 0x3F800000], pa.uint32())
    column = pa.Array.from_buffers(pa.float32(), 2, [None, bits.buffers()[1]])
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"f": column}), path, bloom_filter_options={"f": {"ndv": 4}})
    with open(path, "rb") as handle:
        indexes = store.read_parquet_indexes(handle)
    assert not isinstance(indexes, str) and indexes[0].bloom is not None
    stored = pq.read_table(path).column(0).combine_chunks()
    assert stored.view(pa.uint32()).to_pylist()[0] == 0x7FA00001
    assert _native(kernel, indexes[0].bloom, stored, "FLOAT", 0) is None
    assert _reference(indexes[0].bloom, stored, "FLOAT", 0) == 0


def _ints(bits: int, signed: bool) -> st.SearchStrategy[int]:
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return st.integers(lo, hi)


def _decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    top = 10**precision - 1
    exact = decimal.Context(prec=100)
    return st.integers(-top, top).map(lambda v: decimal.Decimal(v).scaleb(-scale, exact))


# (arrow type, values, physical types it is stored as): every pair _physical takes but a boolean's
_INT_TYPES = [(pa.int8(), 8, True), (pa.int16(), 16, True), (pa.int32(), 32, True), (pa.int64(), 64, True),
              (pa.uint8(), 8, False), (pa.uint16(), 16, False), (pa.uint32(), 32, False), (pa.uint64(), 64, False)]
CASES: list[tuple[pa.DataType, st.SearchStrategy[Any], tuple[str, ...]]] = [
    *[(t, _ints(b, s), ("INT32", "INT64")) for t, b, s in _INT_TYPES],
    (pa.float32(), st.floats(width=32), ("FLOAT", "DOUBLE")),
    (pa.float64(), st.floats(), ("FLOAT", "DOUBLE")),
    (pa.float64(), st.floats(width=32), ("FLOAT",)),  # a float promoted to double (pyiceberg), stored as FLOAT
    (pa.string(), st.text(max_size=40), ("BYTE_ARRAY",)),
    (pa.large_string(), st.text(max_size=40), ("BYTE_ARRAY",)),
    (pa.string_view(), st.text(max_size=40), ("BYTE_ARRAY",)),
    (pa.binary(), st.binary(max_size=70), ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")),
    (pa.large_binary(), st.binary(max_size=70), ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")),
    (pa.binary_view(), st.binary(max_size=70), ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")),
    (pa.binary(16), st.binary(min_size=16, max_size=16), ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")),
    (pa.decimal128(9, 2), _decimals(9, 2), ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY")),
    (pa.decimal128(18, 0), _decimals(18, 0), ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY")),
    (pa.decimal128(38, 18), _decimals(38, 18), ("INT64", "FIXED_LEN_BYTE_ARRAY")),
    (pa.decimal256(40, 5), _decimals(40, 5), ("FIXED_LEN_BYTE_ARRAY",)),
    (pa.decimal256(76, 6), _decimals(76, 6), ("FIXED_LEN_BYTE_ARRAY",)),
    (pa.decimal256(20, 2), _decimals(20, 2), ("INT64", "FIXED_LEN_BYTE_ARRAY")),  # cast to 128 bits for the kernel
    (pa.date32(), _ints(32, True), ("INT32", "INT64")),
    (pa.timestamp("us", tz="UTC"), _ints(64, True), ("INT32", "INT64")),
    (pa.timestamp("ns"), _ints(64, True), ("INT64",)),
    (pa.time32("ms"), st.integers(0, 86_399_999), ("INT32", "INT64")),
    (pa.time64("ns"), st.integers(0, 86_399_999_999_999), ("INT64",)),
    (pa.duration("s"), _ints(64, True), ("INT32", "INT64")),
]
if hasattr(pa, "decimal32"):
    CASES += [(pa.decimal32(7, 3), _decimals(7, 3), ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY")),
              (pa.decimal64(15, 1), _decimals(15, 1), ("INT64", "FIXED_LEN_BYTE_ARRAY"))]


@st.composite
def _case(draw: st.DrawFn) -> tuple[pa.Array, str, int, bytes]:
    t, values, physicals = draw(st.sampled_from(CASES))
    physical = draw(st.sampled_from(physicals))
    rows = draw(st.lists(st.one_of(st.none(), values), max_size=40))
    column = pa.array(rows, t)
    if len(column) > 2 and draw(st.booleans()):  # an array with an offset
        start = draw(st.integers(0, len(column) - 1))
        column = column.slice(start, draw(st.integers(0, len(column) - start)))
    length = draw(st.integers(0, 34)) if physical == "FIXED_LEN_BYTE_ARRAY" else 0
    if physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(t):
        length = t.byte_width
    blocks = draw(st.sampled_from([1, 2, 5, 32]))
    bitset = bytearray(draw(st.binary(min_size=32 * blocks, max_size=32 * blocks)) if draw(st.booleans())
                       else bytes(32 * blocks))
    try:
        held = store._physical(column, physical, length)[0]
    except (ValueError, pa.ArrowException):
        held = []
    for v in held:  # most of the values held, so a miss lands anywhere
        if v is not None and draw(st.integers(0, 9)) > 0:
            with contextlib.suppress(OverflowError, struct.error):  # a value the physical type cannot hold
                _insert(bitset, store.xxh64(store._plain(v, physical, length, True)))
    return column, physical, length, bytes(bitset)


@_slow
@given(_case())
def test_kernel_matches_the_reference(case: tuple[pa.Array, str, int, bytes]) -> None:
    kernel = _require_kernel()
    column, physical, length, bitset = case
    assert _native(kernel, bitset, column, physical, length) == _reference(bitset, column, physical, length)


def test_boolean_and_unsupported_types_take_the_python_path() -> None:
    """A type the kernel is not sent (a boolean, float16, a decimal stored as a byte array, INT96, a dictionary)
    takes the reference, which refuses what it refused before."""
    assert store._bloom_ready(pa.array([True]), "BOOLEAN") is None
    assert store._bloom_ready(pa.array([1.5], pa.float16()), "FLOAT") is None
    assert store._bloom_ready(pa.array([decimal.Decimal("1.5")]), "BYTE_ARRAY") is None
    assert store._bloom_ready(pa.array([1], pa.int64()), "INT96") is None
    assert store._bloom_ready(pa.array(["a"]).dictionary_encode(), "BYTE_ARRAY") is None
    with pytest.raises(ValueError):
        store.bloom_problem("c", bytes(32), pa.array([1], pa.int64()).dictionary_encode(), "INT64", 0)


@pytest.mark.parametrize("path", ["native", "python"])
def test_both_paths_name_the_value_left_out(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bloom_problem`` on either path: None for a filter that holds every value, the value left out otherwise —
    -0.0 included when 0.0 is held (the reference took values as distinct by ``==``, and 0.0 == -0.0: it checked one
    of the two, though they hash apart)."""
    if path == "native":
        _require_kernel()
    else:
        monkeypatch.setenv(native.ENV, "0")
    column = pa.array([0.0, None, -0.0, 2.5], pa.float64())
    full, partial = bytearray(64), bytearray(64)
    for v in (0.0, -0.0, 2.5):
        _insert(full, store.xxh64(struct.pack("<d", v)))
    for v in (0.0, 2.5):
        _insert(partial, store.xxh64(struct.pack("<d", v)))
    assert not store.bloom_holds(bytes(partial), struct.pack("<d", -0.0))  # the filter below does leave -0.0 out
    assert store.bloom_problem("c", bytes(full), column, "DOUBLE", 0) is None
    assert store.bloom_problem("c", bytes(partial), column, "DOUBLE", 0) == \
        "c: a bloom filter that leaves out the stored value -0.0"
    strings = pa.array(["x", "y", None], pa.string())
    held = bytearray(32)
    _insert(held, store.xxh64(b"x"))
    assert store.bloom_problem("c", bytes(held), strings, "BYTE_ARRAY", 0) == \
        "c: a bloom filter that leaves out the stored value b'y'"


def test_index_problems_calls_the_kernel(tmp_path: Path, kernel: native.Kernel,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """With the kernel, a column with a bloom filter and no page index is checked by it, without converting the
    column to Python objects; a cleared filter is refused on both paths with the same message."""
    rows = pa.table({"v": pa.array(range(50), pa.int64()), "w": [f"w{i}" for i in range(50)]})
    path = tmp_path / "f.parquet"
    pq.write_table(rows, path, bloom_filter_options={"v": {"ndv": 50}, "w": {"ndv": 50}})
    meta = pq.ParquetFile(path).metadata
    with open(path, "rb") as handle:
        indexes = store.read_parquet_indexes(handle)
    assert not isinstance(indexes, str)
    calls: list[str] = []
    stand_in = types.SimpleNamespace(API=native.API, STATE_BYTES=4096,
                                     bloom_missing=lambda *a: calls.append(a[2]) or kernel.bloom_missing(*a))
    converted: list[str] = []
    physical = store._physical

    def spy(column: Any, kind: str, length: int) -> Any:
        converted.append(kind)
        return physical(column, kind, length)

    monkeypatch.setattr(store, "_physical", spy)
    monkeypatch.setitem(sys.modules, native.MODULE, stand_in)
    monkeypatch.setattr(native, "_loaded", {})
    assert store.index_problems(indexes, meta, rows, total_order=True) == []
    assert calls == ["INT64", "BYTE_ARRAY"] and converted == []
    cleared = [store.ChunkIndexes(**{**c.__dict__, "bloom": bytes(len(c.bloom or b""))}) for c in indexes]
    by_kernel = store.index_problems(cleared, meta, rows, total_order=True)
    with _env("0"):
        by_python = store.index_problems(cleared, meta, rows, total_order=True)
    assert by_kernel == by_python == ["v (Parquet row group 0): a bloom filter that leaves out the stored value 0",
                                      "w (Parquet row group 0): a bloom filter that leaves out the stored value b'w0'"]
