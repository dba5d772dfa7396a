"""Plain JSON for the command line's head start, without importing ``json``.

``json``'s Python layer imports ``re`` (and with it ``enum``, ``functools``, ``collections``): a few milliseconds that
would all pass before the head start can begin hashing. The head start decides nothing (attest.verify.artifacts,
carriers.delta_prefetch), so it reads documents with the C scanner CPython's own ``json`` uses, directly; where there
is none (another interpreter), with ``json.loads``. The strict parse that decides comes later, with ``json``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported before the hashing starts
if TYPE_CHECKING:
    from typing import Any

__all__ = ["loads"]

_WHITESPACE = " \t\n\r"  # JSON's insignificant whitespace (RFC 8259)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Context:
    """What ``_json.make_scanner`` reads from a JSONDecoder (CPython's json.scanner.c_make_scanner takes one): strict
    strings, plain ints and floats, no hooks."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_no_constant)  # NaN / Infinity: not JSON, no head start


_scanner: Any = None


def loads(data: bytes) -> Any:
    """The JSON value of UTF-8 ``data``; raises ValueError (or RecursionError) on anything else."""
    global _scanner
    if _scanner is None:
        try:
            from _json import make_scanner
        except ImportError:  # no C scanner here: the json module's (importing re is then the cost of a head start)
            import json

            return json.loads(data)
        context: Any = _Context()  # duck-typed: typeshed names JSONDecoder
        _scanner = make_scanner(context)
    text = data.decode("utf-8")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scanner(text, start)
    except StopIteration as exc:  # no value where one must start
        raise ValueError(f"no JSON value at {exc.value}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value
