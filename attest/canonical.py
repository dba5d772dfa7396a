"""Hash scheme v1: canonical JSON bytes and the BLAKE3 identity over them.

Canonical form (every producer in any language can reproduce it):
UTF-8; object keys sorted by Unicode code point at every depth; separators "," and ":";
no insignificant whitespace; non-ASCII written as is; absent optionals omitted by the caller.
An identity is the lowercase hex of BLAKE3-256 over those bytes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import blake3

HASH_SCHEME = "v1"

JSONValue = Any  # a JSON document: dict / list / str / int / float / bool / None


class CanonicalizationError(ValueError):
    """The value cannot be written as canonical JSON (non-finite float, non-string key, unknown type)."""


def _check(value: JSONValue, where: str) -> None:
    # Python's json would write NaN/Infinity, which are not JSON: refuse instead of forking the format.
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalizationError(f"{where}: non-finite number {value!r} has no JSON form")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalizationError(f"{where}: object key {key!r} is not a string")
            _check(item, f"{where}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]")
        return
    raise CanonicalizationError(f"{where}: {type(value).__name__} is not a JSON value")


def canonical_bytes(document: JSONValue) -> bytes:
    """The v1 canonical JSON encoding of ``document``."""
    _check(document, "$")
    # sort_keys sorts str keys by code point, which is the v1 rule; ensure_ascii=False keeps non-ASCII as is.
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    # surrogatepass would hide lone surrogates; strict UTF-8 refuses them, as the format must.
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalizationError(f"$: string is not valid Unicode ({exc.reason})") from exc


def blake3_hex(data: bytes) -> str:
    """Lowercase hex of BLAKE3-256 over ``data``."""
    return blake3.blake3(data).hexdigest()


def digest(document: JSONValue) -> str:
    """The v1 identity of a JSON document: BLAKE3-256 of its canonical bytes, lowercase hex."""
    return blake3_hex(canonical_bytes(document))
