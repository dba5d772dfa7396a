"""The optional native kernel of the content digest: ``recipe_attest_digest`` (native/recipe-attest-digest, Rust).

It encodes rows and sums their LtHash<32,1024> elements in one call per batch (BLAKE3's SIMD XOF, every core, the
4 KiB elements never materialised) and returns exactly what the pure-Python path of ``attest.content.encoding``
computes; that path stays the reference and the fallback. ``digest_batch`` builds each row's canonical encoding
itself from the columns' Arrow arrays (the Arrow C data interface, read in place); a column whose layout it does
not take is encoded by pyarrow and its encodings hashed by ``digest_rows``. The kernel is used when it is
importable, has the API version below and ``ATTEST_CONTENT_NATIVE`` is not ``0``. ``pip install
./native/recipe-attest-digest`` (Rust and maturin) builds it; ``make`` does when cargo is present. No pyarrow here:
encoding.py passes the Arrow arrays and buffers. It also holds Parquet bloom filters to a column's values
(``bloom_missing``, for carriers/content_store.py's ``index_problems``; its pure-Python path is the reference too).
"""

from __future__ import annotations

import importlib
import os
from typing import Protocol, cast

__all__ = ["API", "ENV", "MODULE", "Kernel", "kernel", "status"]

#: The import name of the kernel.
MODULE = "recipe_attest_digest"
#: The kernel API this module calls (the crate's ``API`` constant); another version is not used. 2: ``digest_batch``;
#: 3: ``bloom_missing`` (the Parquet bloom filter check of carriers/content_store.py).
API = 3
#: ``ATTEST_CONTENT_NATIVE=0`` forces the pure-Python path (read at every digest, so tests can switch it).
ENV = "ATTEST_CONTENT_NATIVE"
_OFF = {"0", "false", "no", "off"}


class Kernel(Protocol):
    """What ``recipe_attest_digest`` exports (typed here: mypy needs no stub of the compiled module)."""

    API: int
    STATE_BYTES: int

    def digest_rows(self, offsets: object, data: object | None, offset: int, length: int, large: bool, context: str,
                    keep: object | None = None, keep_offset: int = 0, threads: int = 0) -> tuple[bytes, int]:
        """The 4096-byte lane sum of the elements of ``length`` rows of a (large_)binary array and how many were
        kept (``keep``: a bitmap, bit ``keep_offset + i`` for row ``i``)."""
        ...

    def digest_batch(self, columns: list[tuple[object, object]], segments: list[tuple[bytes, int]], length: int,
                     context: str, keep: object | None = None, keep_offset: int = 0, threads: int = 0
                     ) -> tuple[bytes, int]:
        """The same sum over ``length`` rows whose canonical encodings the kernel builds itself: ``columns`` are
        Arrow C data interface capsule pairs (``Array.__arrow_c_array__()``), ``segments`` the row's encoding in
        order, ``(bytes, column)`` (a column's prefix then its value; ``column`` -1: the bytes alone)."""
        ...

    def bloom_missing(self, bitset: object, column: tuple[object, object], physical: str, type_length: int = 0
                      ) -> int | None:
        """The first non-null value of an Arrow array (a capsule pair) whose Parquet plain encoding (for a column of
        Parquet type ``physical``) the split-block bloom filter ``bitset`` leaves out, or None: XXH64 per the spec."""
        ...


_loaded: dict[str, tuple[Kernel | None, str]] = {}


def _load() -> tuple[Kernel | None, str]:
    if "kernel" not in _loaded:
        try:
            module = cast(Kernel, importlib.import_module(MODULE))
        except ImportError as exc:
            _loaded["kernel"] = (None, f"{MODULE} is not installed ({exc})")
        else:
            api = getattr(module, "API", None)
            if api != API or getattr(module, "STATE_BYTES", None) != 4096:
                _loaded["kernel"] = (None, f"{MODULE} has kernel API {api!r}, this attest needs {API}: rebuild it")
            else:
                _loaded["kernel"] = (module, f"native ({MODULE}, kernel API {API})")
    return _loaded["kernel"]


def kernel() -> Kernel | None:
    """The kernel to use, or None for the pure-Python path (absent, another API version, or switched off)."""
    if os.environ.get(ENV, "").strip().lower() in _OFF:
        return None
    return _load()[0]


def status() -> str:
    """Which path a digest takes now, and why: for benchmarks, tests and bug reports."""
    if os.environ.get(ENV, "").strip().lower() in _OFF:
        return f"pure Python ({ENV}={os.environ[ENV]})"
    module, why = _load()
    return why if module is not None else f"pure Python: {why}"
