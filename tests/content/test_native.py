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
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.content import CONTEXT, ColumnSpec, ContentDigest, digest_table, native
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

    def digest_rows(self, offsets: object, data: object | None, offset: int, length: int, large: bool, context: str,
                    keep: object | None = None, keep_offset: int = 0, threads: int = 0) -> tuple[bytes, int]:
        self.calls += 1
        assert large and context == CONTEXT and threads == 0
        arr = pa.Array.from_buffers(pa.large_binary(), length, [None, offsets, data], offset=offset)
        if keep is not None:
            arr = arr.filter(pa.Array.from_buffers(pa.bool_(), length, [None, keep], offset=keep_offset))
        return _pure_sum(arr).state, len(arr)


def test_digest_table_uses_the_kernel_native_kernel_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    monkeypatch.setattr(native, "_loaded", {"kernel": (spy, "spy")})
    monkeypatch.delenv(native.ENV, raising=False)
    table = _table([{"id": i, "x": None, "s": "a", "b": None, "t": None, "l": None, "st": None} for i in range(5)])
    keep = [True, False, True, True, False]
    fast = digest_table(table, SPECS, keep=keep)
    assert spy.calls == 1 and fast.rows == 3
    monkeypatch.setenv(native.ENV, "0")  # the switch: the pure path, the kernel not called
    assert digest_table(table, SPECS, keep=keep) == fast and spy.calls == 1
    assert native.status() == f"pure Python ({native.ENV}=0)"


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
    real = recipe_attest_digest.digest_rows

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(recipe_attest_digest, "digest_rows", counted)
    digest_table(_table([]), SPECS)  # no rows: no call
    assert calls == []
    digest_table(_table([{"id": 1, "x": 1.0, "s": None, "b": None, "t": None, "l": None, "st": None}]), SPECS)
    assert calls == [1]
