"""``os.path.realpath`` of an absolute path through the C library's ``realpath(3)`` where it answers.

An audit of many small tables resolves a handful of paths per table (the table's root three times as the carrier is
made, each carrier file it reads once: ``carriers.storage.base.Storage._local_real``). ``os.path.realpath`` is Python
that ``lstat``s every component (about 24 µs a path eight folders deep, measured); ``realpath(3)`` does the same walk
in C (about 9 µs). Where the C library answers, the path exists and every link on the way was followed, which is what
``os.path.realpath`` returns for it; where it does not (a component missing, not a folder, not searchable, a link
loop, a path too long, no glibc), ``os.path.realpath`` is asked, so every answer is the one it gives. Only an absolute
``str`` path spelt without a leading ``//`` (which POSIX leaves to the implementation) goes through C.
``ATTEST_FAST=0`` (attest/fast/__init__.py): ``os.path.realpath`` always.
"""

from __future__ import annotations

import os
import sys
import threading

from attest import fast

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

_C: Callable[[str], str | None] | None = None
_LOADED = False
_LOCK = threading.Lock()


def _load() -> Callable[[str], str | None] | None:
    global _C, _LOADED
    with _LOCK:
        if _LOADED:
            return _C
        _LOADED = True
        if not fast.ON or not sys.platform.startswith("linux"):
            return None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            c_realpath = libc.realpath
            c_free = libc.free
        except (OSError, AttributeError):
            return None
        c_realpath.restype = ctypes.c_void_p  # a malloc'ed answer (resolved_path NULL: no PATH_MAX buffer shared)
        c_realpath.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        c_free.restype = None
        c_free.argtypes = [ctypes.c_void_p]
        string_at = ctypes.string_at

        def real(path: str) -> str | None:
            try:
                raw = os.fsencode(path)
            except UnicodeError:
                return None
            if b"\0" in raw:
                return None
            got = c_realpath(raw, None)
            if not got:
                return None
            try:
                return os.fsdecode(string_at(got))
            finally:
                c_free(got)

        _C = real
        return _C


def realpath(path: str | os.PathLike[str]) -> str:
    """``os.path.realpath(path)`` (non-strict), computed in C where the C library resolves the whole path."""
    text = os.fspath(path)
    if isinstance(text, str) and text[:1] == "/" and text[1:2] != "/":
        c = _C if _LOADED else _load()
        if c is not None:
            got = c(text)
            if got is not None:
                return got
    return os.path.realpath(text)


def resolve(path: Path) -> Path:
    """``path.resolve()``: through ``realpath(3)`` where it resolves the whole path (then the path exists, and
    ``Path.resolve``'s own check for a link loop has nothing to find), else ``Path.resolve`` itself."""
    text = str(path)
    if text[:1] == "/" and text[1:2] != "/":
        c = _C if _LOADED else _load()
        if c is not None:
            got = c(text)
            if got is not None:
                return type(path)(got)
    return path.resolve()
