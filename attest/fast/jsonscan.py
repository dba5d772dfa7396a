"""Plain JSON for the command line's head start, without importing ``json`` (part of the fast path, attest/fast/).

``json``'s Python layer imports ``re`` (and with it ``enum``, ``functools``, ``collections``): a few milliseconds that
would all pass before the head start can begin hashing. The head start decides nothing (attest.verify.artifacts,
carriers.delta.prefetch), so it reads documents with the C scanner CPython's own ``json`` uses, directly; where there
is none (another interpreter), or with the fast path switched off (``ATTEST_FAST=0``), with ``json.loads`` and the
same rules (strict, no NaN, no key twice for ``loads_unique``). The strict parse that decides comes later, with
``json``.
"""

from __future__ import annotations

from attest.fast import ON

TYPE_CHECKING = False  # typing is not imported before the hashing starts
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DuplicateKeyError", "loads", "loads_unique"]

_WHITESPACE = " \t\n\r"  # JSON's insignificant whitespace (RFC 8259)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Context:
    """What ``_json.make_scanner`` reads from a JSONDecoder (CPython's json.scanner.c_make_scanner takes one): strict
    strings, plain ints and floats, no hooks."""

    strict = True
    object_hook = None
    object_pairs_hook: Any = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_no_constant)  # NaN / Infinity: not JSON, no head start


class DuplicateKeyError(ValueError):
    """A JSON object names one key twice: parsers keep the first, the last or refuse (Python's ``json`` keeps the last,
    delta-rs and Spark the first of a struct's field and the last of a map's key), so readers disagree on its value."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # the rare case pays for finding the key; the common one is one C call
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return out


class _UniqueContext(_Context):
    """Strict as ``_Context``, and an object naming a key twice is refused."""

    object_pairs_hook = staticmethod(_unique)


_scanner: Any = None
_unique_scanner: Any = None


def loads(data: bytes) -> Any:
    """The JSON value of UTF-8 ``data``; raises ValueError (or RecursionError) on anything else."""
    global _scanner
    if _scanner is None:
        make_scanner = _c_scanner()
        if make_scanner is None:  # the json module's (importing re is then the cost of a head start)
            import json

            return json.loads(data, parse_constant=_no_constant)
        context: Any = _Context()  # duck-typed: typeshed names JSONDecoder
        _scanner = make_scanner(context)
    return _scan(_scanner, data.decode("utf-8"))


def loads_unique(text: str) -> Any:
    """The JSON value of ``text`` when no object in it names a key twice (DuplicateKeyError, a ValueError, otherwise),
    nor holds NaN or Infinity; raises ValueError (or RecursionError) on anything else that is not JSON. Where text
    decides what a table is, two readers must not read two values out of it."""
    global _unique_scanner
    if _unique_scanner is None:
        make_scanner = _c_scanner()
        if make_scanner is None:
            import json

            return json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant)
        context: Any = _UniqueContext()
        _unique_scanner = make_scanner(context)
    return _scan(_unique_scanner, text)


def _c_scanner() -> Any:
    """CPython's C scanner factory (``_json.make_scanner``), or None: another interpreter, or the fast path off."""
    if not ON:
        return None
    try:
        from _json import make_scanner
    except ImportError:
        return None
    return make_scanner


def _scan(scanner: Any, text: str) -> Any:
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = scanner(text, start)
    except StopIteration as exc:  # no value where one must start
        raise ValueError(f"no JSON value at {exc.value}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value
