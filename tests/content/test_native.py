"""The native kernel (native/recipe-attest-digest, ``recipe_attest_digest``) against the pure-Python path, the
reference: the same digests on the doc's test vectors and on generated tables (masks, no rows, one row, huge rows,
rows across many thread chunks), and the kernel is what ``digest_table`` uses when it is present.

Without the kernel its tests skip saying why, except with ``ATTEST_REQUIRE_NATIVE=1`` (CI's .ci/run sets it when
cargo is present, and the Makefile builds the kernel): there, absence is a broken build and they fail. The wiring
tests (which path runs, the switch, the API check) run everywhere, with a stand-in kernel where the real one is
absent.
"""

from __future__ import annotations

import os
import struct
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, TypeVar

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.content import CONTEXT, ColumnSpec, ContentDigest, digest_table, encode_rows, native
from attest.content import encoding as enc
from tests.content.test_properties import SPECS, _row, _table
from tests.content.test_vectors import VECTORS
from tests.content.test_vectors import _table as _vector_table

REQUIRE_ENV = "ATTEST_REQUIRE_NATIVE"
T = TypeVar("T")
_slow = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _require_kernel() -> native.Kernel:
    kernel = native.kernel()
    if kernel is None:
        why = native.status()
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but the native kernel is not used: {why}")
        pytest.skip(f"the native kernel is not used ({why}); `make` builds it when cargo is present")
    return kernel


@pytest.fixture
def kernel() -> native.Kernel:
    return _require_kernel()


@contextmanager
def _env(value: str | None) -> Iterator[None]:
    """ATTEST_CONTENT_NATIVE set to ``value`` (None: unset) for the block (hypothesis: no monkeypatch fixture)."""
    old = os.environ.get(native.ENV)
    if value is None:
        os.environ.pop(native.ENV, None)
    else:
        os.environ[native.ENV] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(native.ENV, None)
        else:
            os.environ[native.ENV] = old


def _both(compute: Callable[[], T]) -> tuple[T, T]:
    """``compute()`` on the pure-Python path, then on the default path (the kernel, when it is used)."""
    with _env("0"):
        pure = compute()
    with _env(None):
        default = compute()
    return pure, default


def _pure_sum(arr: pa.Array) -> ContentDigest:
    """The reference: the pure path's elements and lane sums over the rows of a binary or large_binary array."""
    large = arr.cast(pa.large_binary())
    return ContentDigest(enc._reduce(enc._elements(large)), len(arr))


def _kernel_sum(kernel: native.Kernel, arr: pa.Array, keep: pa.Array | None = None, threads: int = 0
                ) -> ContentDigest:
    buffers = arr.buffers()
    bits, bit0 = (None, 0) if keep is None else (keep.buffers()[1], keep.offset)
    state, rows = kernel.digest_rows(buffers[1], buffers[2], arr.offset, len(arr),
                                     pa.types.is_large_binary(arr.type), CONTEXT, bits, bit0, threads)
    return ContentDigest(state, rows)


# -- the doc's test vectors and generated tables, through digest_table ------------------------------------------------

@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"][:40] for v in VECTORS])
def test_vectors_same_digest_on_both_paths(kernel: native.Kernel, vector: dict[str, Any]) -> None:
    table, specs, constants = _vector_table(vector)
    pure, fast = _both(lambda: digest_table(table, specs, constants))
    assert fast == pure
    assert fast.rows == vector["digest"]["rows"] and fast.short_id() == vector["digest"]["short_id"]
    assert fast.lanes()[:4] == vector["digest"]["first_lanes"]


@_slow
@given(rows=st.lists(_row, max_size=12), data=st.data())
def test_generated_tables_same_digest_with_masks(rows: list[dict[str, Any]], data: st.DataObject) -> None:
    _require_kernel()
    table = _table(rows)
    keep = data.draw(st.none() | st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    pure, fast = _both(lambda: digest_table(table, SPECS, keep=keep))
    assert fast == pure
    assert fast.rows == (len(rows) if keep is None else sum(keep))


def test_no_rows_and_one_row(kernel: native.Kernel) -> None:
    empty = _table([])
    assert _both(lambda: digest_table(empty, SPECS)) == (ContentDigest.zero(), ContentDigest.zero())
    row = {"id": 1, "x": -0.0, "s": "é", "b": b"\x00", "t": 5, "l": [None], "st": {"a": 1, "m": [("k", None)]}}
    one = _table([row])
    pure, fast = _both(lambda: digest_table(one, SPECS))
    assert fast == pure and fast.rows == 1 and fast != ContentDigest.zero()
    # every row masked out: nothing is hashed, on both paths
    assert _both(lambda: digest_table(one, SPECS, keep=[False])) == (ContentDigest.zero(), ContentDigest.zero())


def test_many_rows_across_batches_and_thread_chunks(kernel: native.Kernel, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    n = 5000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"r{i % 7}" for i in range(n)])},
                     schema=schema).combine_chunks()
    specs = [ColumnSpec(f"field-id:{i}", f) for i, f in enumerate(schema)]
    keep = [i % 3 != 1 for i in range(n)]
    monkeypatch.setattr(enc, "NATIVE_BATCH_ROWS", 1500)  # several kernel calls, the last one short, each sliced
    for mask in (None, keep):
        pure, fast = _both(lambda mask=mask: digest_table(table.to_batches(max_chunksize=1700), specs, keep=mask))
        assert fast == pure and fast.rows == (n if mask is None else sum(keep))


def test_huge_rows(kernel: native.Kernel) -> None:
    """Rows past BLAKE3's 1 KiB chunks and its SIMD-parallel subtree sizes (several MiB), beside tiny ones."""
    sizes = [0, 1, 63, 64, 65, 1023, 1024, 1025, 4096, 65536 + 7, 3 * 2**20 + 5]
    arr = pa.array([bytes((i * 7 + j) % 251 for j in range(min(s, 256))) * (s // 256) + b"\x01" * (s % 256)
                    if s >= 256 else bytes(range(s)) for i, s in enumerate(sizes)], pa.large_binary())
    assert [len(v) for v in arr.to_pylist()] == sizes
    assert _kernel_sum(kernel, arr) == _pure_sum(arr)
    table = pa.table({"b": arr})
    pure, fast = _both(lambda: digest_table(table, [ColumnSpec("b", table.schema.field("b"))]))
    assert fast == pure and fast.rows == len(sizes)


# -- the kernel's own encoding (digest_batch) against the pyarrow encoding: every type, nested, nulls, slices ----------

def _pure_digest(rows: Any, specs: list[ColumnSpec], constants: Any = None, keep: Any = None) -> ContentDigest:
    with _env("0"):
        return digest_table(rows, specs, constants, keep=keep)


def _ints(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else st.integers(0, 2**bits - 1)


_f64 = st.integers(0, 2**64 - 1).map(lambda b: struct.unpack(">d", b.to_bytes(8, "big"))[0])
_ZONES = [None, "UTC", "Europe/Paris", "+05:30"]


def _decimal(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    # built from its digits (exact: Decimal arithmetic would round to the context's 28 digits)
    return st.integers(-bound, bound).map(
        lambda n: Decimal((int(n < 0), tuple(int(d) for d in str(abs(n))), -scale)))


#: (type, values) for every leaf type the encoding specifies (docs/content-digest.md, "Values"), values as pyarrow
#: builds them from Python objects (NaN payloads, -0.0 and infinities among the float bits).
_LEAVES: list[tuple[pa.DataType, st.SearchStrategy[Any]]] = [
    (pa.null(), st.none()),
    (pa.bool_(), st.booleans()),
    *[(t, _ints(t.bit_width, signed)) for t, signed in [
        (pa.int8(), True), (pa.int16(), True), (pa.int32(), True), (pa.int64(), True),
        (pa.uint8(), False), (pa.uint16(), False), (pa.uint32(), False), (pa.uint64(), False)]],
    (pa.float16(), st.sampled_from([0.0, -0.0, 1.5, -2.0, float("inf"), float("nan"), 65504.0])),
    (pa.float32(), _f64 | st.sampled_from([0.0, -0.0, float("nan")])),
    (pa.float64(), _f64 | st.sampled_from([0.0, -0.0, float("nan"), float("-inf")])),
    *[(pa.decimal128(p, s), _decimal(p, s)) for p, s in [(1, 0), (10, 2), (38, 0), (38, 38)]],
    *[(pa.decimal256(p, s), _decimal(p, s)) for p, s in [(39, 0), (50, 5), (76, 10)]],
    (pa.string(), st.text(max_size=6)), (pa.large_string(), st.text(max_size=6)),
    (pa.binary(), st.binary(max_size=6)), (pa.large_binary(), st.binary(max_size=6)),
    (pa.binary(3), st.binary(min_size=3, max_size=3)), (pa.binary(0), st.just(b"")),
    (pa.date32(), _ints(32)), (pa.date64(), _ints(48)),
    (pa.time32("s"), st.integers(0, 86399)), (pa.time32("ms"), st.integers(0, 86399999)),
    (pa.time64("us"), st.integers(0, 86399999999)), (pa.time64("ns"), st.integers(0, 86399999999999)),
    *[(pa.timestamp(u, tz), _ints(64)) for u in ("s", "ms", "us", "ns") for tz in _ZONES],
    *[(pa.duration(u), _ints(64)) for u in ("s", "ms", "us", "ns")],
]

_leaf = st.sampled_from(_LEAVES)
_key = st.sampled_from([(t, v) for t, v in _LEAVES if not pa.types.is_null(t)])
_name = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=4)


def _nested(child: st.SearchStrategy[tuple[pa.DataType, st.SearchStrategy[Any]]]
            ) -> st.SearchStrategy[tuple[pa.DataType, st.SearchStrategy[Any]]]:
    def lists(c: tuple[pa.DataType, Any]) -> st.SearchStrategy[tuple[pa.DataType, Any]]:
        t, v = c
        values = st.lists(st.none() | v, max_size=3)
        return st.sampled_from([
            (pa.list_(t), values), (pa.large_list(t), values),
            (pa.list_(t, 2), st.lists(st.none() | v, min_size=2, max_size=2))])

    def structs(children: list[tuple[str, tuple[pa.DataType, Any]]]) -> tuple[pa.DataType, Any]:
        unique = list(dict(children).items())  # one child per name
        t = pa.struct([pa.field(n, c[0]) for n, c in unique])
        return t, st.fixed_dictionaries({n: st.none() | c[1] for n, c in unique})

    def maps(k: tuple[pa.DataType, Any], c: tuple[pa.DataType, Any]) -> tuple[pa.DataType, Any]:
        return pa.map_(k[0], c[0]), st.lists(st.tuples(k[1], st.none() | c[1]), max_size=3)

    return (child.flatmap(lists)
            | st.lists(st.tuples(_name, child), max_size=3).map(structs)
            | st.builds(maps, _key, child))


_types = st.recursive(_leaf, _nested, max_leaves=6)


@st.composite
def _tables(draw: st.DrawFn) -> tuple[pa.Table, list[ColumnSpec], int]:
    kinds = draw(st.lists(_types, min_size=1, max_size=4))
    n = draw(st.integers(0, 9))
    skip = draw(st.integers(0, 3))  # rows sliced off the front: every array has an offset
    columns, specs = {}, []
    for i, (t, values) in enumerate(kinds):
        rows = draw(st.lists(st.none() | values, min_size=n + skip, max_size=n + skip))
        columns[f"c{i}"] = pa.array(rows, t).slice(skip)
        specs.append(ColumnSpec(draw(st.sampled_from([f"field-id:{i}", f"c{i}", f"physical:é{i}"])),
                                pa.field(f"c{i}", t)))
    return pa.table(columns), specs, n


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(drawn=_tables(), data=st.data())
def test_kernel_encoding_matches_pyarrow_on_random_tables(drawn: tuple[pa.Table, list[ColumnSpec], int],
                                                          data: st.DataObject) -> None:
    """The differential test: random tables of every type the kernel encodes (nested struct / list / map, nulls at
    every level, sliced arrays, several batches, masks, a constant) digest alike on the pure path and through
    digest_batch, and digest_batch is what ran."""
    kernel = _require_kernel()
    table, specs, n = drawn
    assert all(enc._kernel_takes(s.field.type) for s in specs)
    keep = data.draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
    constants = data.draw(st.sampled_from([None, {"physical:part": (pa.date32(), 20425)}]))
    chunk = data.draw(st.integers(1, 10))
    batches = table.to_batches(max_chunksize=chunk)
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2])
        return kernel.digest_batch(*args, **kwargs)

    with _env(None), _patched(counted):
        fast = digest_table(batches, specs, constants, keep=keep)
    pure = _pure_digest(batches, specs, constants, keep=keep)
    assert fast == pure and fast.rows == (n if keep is None else sum(keep))
    assert sum(calls) == n  # every row went through the kernel's own encoding
    assert encode_rows(table, specs, constants) == encode_rows(table.combine_chunks(), specs, constants)


@contextmanager
def _patched(batch: Callable[..., Any]) -> Iterator[None]:
    """native.kernel() answers a stand-in whose digest_batch is ``batch`` (the real kernel's other names kept)."""
    real = native.kernel()
    stand_in = types.SimpleNamespace(API=native.API, STATE_BYTES=4096, digest_rows=real.digest_rows,  # type: ignore[union-attr]
                                     digest_batch=batch)
    old = dict(native._loaded)
    native._loaded["kernel"] = (stand_in, "patched")  # type: ignore[assignment]
    try:
        yield
    finally:
        native._loaded.clear()
        native._loaded.update(old)


@pytest.mark.parametrize("column", [
    pa.array([[1, None], None, []], pa.list_view(pa.int32())),
    pa.array([[1, None], None, []], pa.large_list_view(pa.int32())),
    pa.array([["x", None], None, ["y", "x"]], pa.list_(pa.dictionary(pa.int8(), pa.string()))),
    pa.array([{"a": "x"}, None, {"a": None}, {"a": ""}], pa.struct([pa.field("a", pa.string_view())])),
    pa.array([[Decimal("1.5")], None], pa.list_(pa.decimal32(5, 1))),
    pa.ExtensionArray.from_storage(pa.uuid(), pa.array([bytes(16), None], pa.binary(16))),
    pa.array(["x", None, "y", "x"]).dictionary_encode(),
    pa.array(["x", None, ""], pa.string_view()),
    pa.array([b"x", None, b""], pa.binary_view()),
    pa.array([Decimal("1.25"), None], pa.decimal32(5, 2)),
    pa.array([Decimal("1.25"), None], pa.decimal64(15, 2)),
    pa.array([Decimal("1.25"), None], pa.decimal256(20, 2)),
])
def test_layouts_the_kernel_converts_or_leaves_to_pyarrow(kernel: native.Kernel, column: pa.Array) -> None:
    """Dictionaries, extensions, views and narrow or wide decimals: converted before the kernel (top level) or
    encoded by pyarrow and hashed by the kernel (nested): the same digest as the pure path either way."""
    table = pa.table({"c": column, "n": pa.array(range(len(column)), pa.int64())})
    specs = [ColumnSpec("c", table.schema.field("c")), ColumnSpec("n", table.schema.field("n"))]
    pure = _pure_digest(table, specs)
    assert digest_table(table, specs) == pure and pure.rows == len(column)
    # masked: the kernel reads the mask, the pure path filters the batch (pyarrow 26 cannot filter a struct of
    # string_view: the kernel's path has no such limit, so that case is checked against the rows filtered first)
    keep = [i % 2 == 0 for i in range(len(column))]
    kept = pa.table({"c": pa.array(column.to_pylist()[::2], column.type), "n": table.column("n").filter(keep)})
    assert digest_table(table, specs, keep=keep) == _pure_digest(kept, specs) != pure


def _capsules(*arrays: pa.Array) -> list[tuple[object, object]]:
    return [a.__arrow_c_array__() for a in arrays]


def test_digest_batch_refuses_what_it_does_not_take(kernel: native.Kernel) -> None:
    ints = pa.array([1, 2, 3], pa.int64())
    seg = [(b"p", 0)]
    for refused, match in [(pa.array(["a", "b", "a"]).dictionary_encode(), "dictionary"),
                           (pa.array(["a", "b", "c"], pa.string_view()), "not taken"),
                           (pa.array([[1], [2], []], pa.list_view(pa.int8())), "not taken"),
                           (pa.array([Decimal(1)] * 3, pa.decimal64(5, 0)), "casts it to 128 bits"),
                           (pa.array([Decimal(1)] * 3, pa.decimal256(5, 0)), "casts it to 128 bits")]:
        with pytest.raises(ValueError, match=match):
            kernel.digest_batch(_capsules(refused), seg, 3, CONTEXT)
    with pytest.raises(ValueError, match="segment names column 1"):
        kernel.digest_batch(_capsules(ints), [(b"p", 1)], 3, CONTEXT)
    with pytest.raises(ValueError, match="does not hold the 2 rows"):
        kernel.digest_batch(_capsules(ints), seg, 2, CONTEXT)
    with pytest.raises(ValueError, match="keep"):
        kernel.digest_batch(_capsules(ints), seg, 3, CONTEXT, b"\xff", 6)
    with pytest.raises(ValueError, match="incorrect name"):  # the two capsules swapped
        schema, _ = ints.__arrow_c_array__()
        kernel.digest_batch([(schema, schema)], seg, 3, CONTEXT)
    state, rows = kernel.digest_batch(_capsules(ints), seg, 3, CONTEXT, threads=1)
    assert (state, rows) == kernel.digest_batch(_capsules(ints), seg, 3, CONTEXT, threads=3) and rows == 3


def test_digest_batch_no_rows_and_constants_only(kernel: native.Kernel) -> None:
    empty = pa.array([], pa.int64())
    assert kernel.digest_batch(_capsules(empty), [(b"p", 0)], 0, CONTEXT) == (bytes(4096), 0)
    # a row of constants only: the segments' bytes alone, each row the same element
    state, rows = kernel.digest_batch([], [(b"abc", -1)], 4, CONTEXT)
    assert ContentDigest(state, rows) == _pure_sum(pa.array([b"abc"] * 4, pa.large_binary()))


# -- the kernel called directly: layouts, offsets, masks, threads, bad input ------------------------------------------

def test_kernel_binary_and_large_binary_sliced_with_masks(kernel: native.Kernel) -> None:
    values = [bytes([i % 256]) * (i % 97) for i in range(4500)]  # 4,500 rows: five thread chunks of 1,024
    mask = pa.array([i % 5 != 0 for i in range(4500 + 13)])[13:]  # a bitmap whose first row is bit 13
    for t in (pa.binary(), pa.large_binary()):
        arr = pa.array(values, t)
        assert _kernel_sum(kernel, arr) == _pure_sum(arr)
        part = arr.slice(1001, 2500)  # an array offset into the offsets buffer
        assert _kernel_sum(kernel, part) == _pure_sum(part)
        assert _kernel_sum(kernel, arr, mask) == _pure_sum(arr.filter(mask))
        keep = mask.slice(1001, 2500)
        assert _kernel_sum(kernel, part, keep) == _pure_sum(part.filter(keep))
        for threads in (1, 2, 3, 8):  # the sum does not depend on how the rows were split over threads
            assert _kernel_sum(kernel, arr, mask, threads) == _pure_sum(arr.filter(mask))


def test_kernel_no_rows(kernel: native.Kernel) -> None:
    for arr in (pa.array([], pa.large_binary()), pa.array([b"a"], pa.binary()).slice(1)):
        assert _kernel_sum(kernel, arr) == ContentDigest.zero()
    assert kernel.digest_rows(b"", None, 0, 0, True, CONTEXT) == (bytes(4096), 0)
    # rows that are all empty (no data buffer, or an empty one): each still has an element, BLAKE3 of no bytes
    for arr in (pa.array([b"", b"", b""], pa.binary()), pa.array([b"", b""], pa.large_binary())):
        assert _kernel_sum(kernel, arr) == _pure_sum(arr) != ContentDigest.zero()
        assert _kernel_sum(kernel, arr).rows == len(arr)


def test_kernel_refuses_out_of_range_input(kernel: native.Kernel) -> None:
    offsets = pa.array([0, 2, 9], pa.int64()).buffers()[1]  # the last row ends past the data
    with pytest.raises(ValueError, match="offsets"):
        kernel.digest_rows(offsets, b"abcd", 0, 2, True, CONTEXT)
    decreasing = pa.array([0, 3, 1], pa.int64()).buffers()[1]
    with pytest.raises(ValueError, match="offsets"):
        kernel.digest_rows(decreasing, b"abcd", 0, 2, True, CONTEXT)
    with pytest.raises(ValueError, match="offsets"):  # more rows than the offsets buffer holds
        kernel.digest_rows(pa.array([0, 1], pa.int32()).buffers()[1], b"a", 0, 5, False, CONTEXT)
    ok = pa.array([0, 1, 2], pa.int64()).buffers()[1]
    with pytest.raises(ValueError, match="keep"):  # 2 rows from bit 7: past the one byte given
        kernel.digest_rows(ok, b"ab", 0, 2, True, CONTEXT, b"\xff", 7)
    assert kernel.digest_rows(ok, b"ab", 0, 2, True, CONTEXT, b"\xff", 6)[1] == 2


def test_kernel_context_is_the_derive_key_context(kernel: native.Kernel) -> None:
    """The kernel hashes under the context it is given (digest_table passes the scheme's CONTEXT)."""
    arr = pa.array([b"row"], pa.large_binary())
    other = ContentDigest(kernel.digest_rows(arr.buffers()[1], arr.buffers()[2], 0, 1, True, CONTEXT + " ")[0], 1)
    assert _kernel_sum(kernel, arr) == _pure_sum(arr) != other


# -- which path runs ---------------------------------------------------------------------------------------------------

class _Spy:
    """A stand-in kernel computing with the pure path, counting calls (the wiring, with or without the real one)."""

    API = native.API
    STATE_BYTES = 4096

    def __init__(self) -> None:
        self.calls = 0
        self.batch_calls = 0

    def digest_rows(self, offsets: object, data: object | None, offset: int, length: int, large: bool, context: str,
                    keep: object | None = None, keep_offset: int = 0, threads: int = 0) -> tuple[bytes, int]:
        self.calls += 1
        assert large and context == CONTEXT and threads == 0
        arr = pa.Array.from_buffers(pa.large_binary(), length, [None, offsets, data], offset=offset)
        if keep is not None:
            arr = arr.filter(pa.Array.from_buffers(pa.bool_(), length, [None, keep], offset=keep_offset))
        return _pure_sum(arr).state, len(arr)

    def digest_batch(self, columns: list[tuple[object, object]], segments: list[tuple[bytes, int]], length: int,
                     context: str, keep: object | None = None, keep_offset: int = 0, threads: int = 0
                     ) -> tuple[bytes, int]:
        self.batch_calls += 1
        assert context == CONTEXT and threads == 0
        arrays = [enc.encode_values(pa.Array._import_from_c_capsule(s, a)) for s, a in columns]
        parts: list[Any] = []
        for prefix, column in segments:
            parts.append(pa.scalar(prefix, pa.large_binary()))
            if column >= 0:
                parts.append(arrays[column])
        if all(isinstance(p, pa.Scalar) for p in parts):
            parts.append(pa.array([b""] * length, pa.large_binary()))
        encoded = pa.compute.binary_join_element_wise(*parts, pa.scalar(b"", pa.large_binary()))
        if keep is not None:
            encoded = encoded.filter(pa.Array.from_buffers(pa.bool_(), length, [None, keep], offset=keep_offset))
        return _pure_sum(encoded).state, len(encoded)



def test_digest_table_uses_the_kernel_native_kernel_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    monkeypatch.setattr(native, "_loaded", {"kernel": (spy, "spy")})
    monkeypatch.delenv(native.ENV, raising=False)
    table = _table([{"id": i, "x": None, "s": "a", "b": None, "t": None, "l": None, "st": None} for i in range(5)])
    keep = [True, False, True, True, False]
    fast = digest_table(table, SPECS, keep=keep)
    assert spy.batch_calls == 1 and spy.calls == 0 and fast.rows == 3  # every type taken: the kernel encodes
    monkeypatch.setenv(native.ENV, "0")  # the switch: the pure path, the kernel not called
    assert digest_table(table, SPECS, keep=keep) == fast and spy.batch_calls == 1 and spy.calls == 0
    assert native.status() == f"pure Python ({native.ENV}=0)"
    # a column the kernel does not take (a list view): pyarrow encodes, the kernel hashes the encodings
    monkeypatch.delenv(native.ENV)
    view = pa.table({"v": pa.array([[1], None, []], pa.list_view(pa.int32()))})
    specs = [ColumnSpec("v", view.schema.field("v"))]
    assert digest_table(view, specs) == _pure_digest(view, specs) and spy.calls == 1 and spy.batch_calls == 1


def test_a_kernel_of_another_api_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setitem(sys.modules, native.MODULE, types.SimpleNamespace(API=native.API + 1, STATE_BYTES=4096))
    monkeypatch.delenv(native.ENV, raising=False)
    assert native.kernel() is None
    assert "rebuild it" in native.status()


def test_the_real_kernel_is_used_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """When recipe_attest_digest imports (CI: ATTEST_REQUIRE_NATIVE=1 says it must), native.kernel() is that module,
    and digest_table calls it."""
    kernel = _require_kernel()
    import recipe_attest_digest  # type: ignore[import-not-found,unused-ignore]

    assert kernel is recipe_attest_digest and native.status().startswith("native")
    calls: list[int] = []
    real = recipe_attest_digest.digest_batch

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(recipe_attest_digest, "digest_batch", counted)
    digest_table(_table([]), SPECS)  # no rows: no call
    assert calls == []
    digest_table(_table([{"id": 1, "x": 1.0, "s": None, "b": None, "t": None, "l": None, "st": None}]), SPECS)
    assert calls == [1]
