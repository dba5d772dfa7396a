"""Hash scheme v1: canonical JSON bytes and the BLAKE3 identity over them.

Canonical form (every producer in any language can reproduce it; the reference is rocky-core's
``canonical_json``, serde_json 1.0.151 without arbitrary precision):
UTF-8; object keys sorted by Unicode code point at every depth; separators "," and ":"; no insignificant
whitespace; non-ASCII written as is; absent optionals omitted by the caller; numbers as attest.numbers says
(integers within i64/u64 as is, everything else an f64 in serde_json's shortest form); at most MAX_DEPTH
nested arrays/objects. An identity is the lowercase hex of BLAKE3-256 over those bytes.
"""

from __future__ import annotations

import json
import os
from itertools import chain, repeat

import blake3

from attest.errors import AttestError, Code
from attest.numbers import I64_MIN, U64_MAX, NumberOutOfRange, format_number

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    JSONValue = Any  # a JSON document: dict / list / str / int / float / bool / None

HASH_SCHEME = "v1"
# serde_json's recursion limit: the reference reads at most 127 nested arrays/objects, so a deeper document
# has no identity it can reproduce (and Python's own recursion stays far from its limit).
MAX_DEPTH = 127


class CanonicalizationError(AttestError, ValueError):
    """The value cannot be written as canonical JSON (non-finite or out-of-range number, non-string key,
    lone surrogate, unknown type, nesting deeper than MAX_DEPTH)."""

    code = Code.MANIFEST_MALFORMED_JSON


def _check(value: JSONValue, where: str, depth: int) -> bool:
    """Refuse what has no canonical form; True when a number needs the reference's own writing (a float, or an
    int beyond i64/u64) rather than Python's json."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return False
    if isinstance(value, int):
        return not I64_MIN <= value <= U64_MAX
    if isinstance(value, float):
        return True
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH:
            raise CanonicalizationError(f"{where}: nested deeper than {MAX_DEPTH} arrays/objects")
        special = False
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise CanonicalizationError(f"{where}: object key {key!r} is not a string")
                special = _check(item, f"{where}.{key}", depth + 1) or special
        else:
            for index, item in enumerate(value):
                special = _check(item, f"{where}[{index}]", depth + 1) or special
        return special
    raise CanonicalizationError(f"{where}: {type(value).__name__} is not a JSON value")


class _NotCanonical(Exception):
    """Raised by _scan; _check then walks again to say where."""


def _scan(value: JSONValue, depth: int) -> bool:
    """_check's answer without building a location for every value (documents hold a file list of thousands of
    entries); raises _NotCanonical (or CanonicalizationError) where _check raises, and canonical_bytes asks _check
    for the message."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return False
    if kind is int:
        return not I64_MIN <= value <= U64_MAX
    if kind is float:
        return True
    if kind is dict or kind is list:
        if depth >= MAX_DEPTH:
            raise _NotCanonical
        if kind is dict:
            for key in value:
                if type(key) is not str and not isinstance(key, str):
                    raise _NotCanonical
            items = value.values()
        else:
            items = value
        special = False
        for item in items:
            item_kind = type(item)
            if item_kind is str or item is None or item_kind is bool:
                continue
            if _scan(item, depth + 1):
                special = True
        return special
    return _check(value, "$", depth)  # subclasses, tuples and what is no JSON value: the full rules


def _string(text: str) -> str:
    # Python's escaping is serde_json's: \" \\ \b \f \n \r \t, other controls as \u00xx, the rest as is.
    return json.dumps(text, ensure_ascii=False)


def _write(value: JSONValue, out: list[str]) -> None:
    """The slow path, for documents holding numbers Python's json would write differently."""
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, (int, float)):
        out.append(format_number(value))
    elif isinstance(value, dict):
        out.append("{")
        for index, key in enumerate(sorted(value)):
            if index:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    else:
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")


def canonical_bytes(document: JSONValue) -> bytes:
    """The v1 canonical JSON encoding of ``document``."""
    try:
        try:
            special = _scan(document, 0)
        except (_NotCanonical, CanonicalizationError):
            special = _check(document, "$", 0)  # the walk that says where: it raises on what _scan refused
        if special:
            parts: list[str] = []
            _write(document, parts)
            text = "".join(parts)
        else:
            # Strings, in-range ints, booleans and null only: Python's C encoder writes exactly the v1 bytes
            # (sort_keys sorts by code point; ensure_ascii=False keeps non-ASCII as is).
            text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except NumberOutOfRange as exc:
        raise CanonicalizationError(f"$: {exc}: the reference reads no f64 from it") from exc
    # surrogatepass would hide lone surrogates; strict UTF-8 refuses them, as the format must.
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalizationError(f"$: string is not valid Unicode ({exc.reason})") from exc


_HEX_DIGITS = b"0123456789abcdef"


def all_hex_digests(values: list[Any]) -> bool:
    """Whether every value is a string of 64 lower-case hex digits (a BLAKE3 digest as written), in whole-list passes:
    a manifest or sidecar lists one per file. Every value 64 characters long, the joined string is lower-case hex
    exactly when each value is: ASCII, and nothing left once those digits are deleted (one C pass over the bytes; a
    regex per value, or over the joined string, took 5x as long, measured)."""
    if set(map(type, values)) - {str} or set(map(len, values)) - {64}:
        return False
    joined = "".join(values)
    return joined.isascii() and not joined.encode("ascii").translate(None, _HEX_DIGITS)


def blake3_hex(data: bytes) -> str:
    """Lowercase hex of BLAKE3-256 over ``data``."""
    return blake3.blake3(data).hexdigest()


def digest(document: JSONValue) -> str:
    """The v1 identity of a JSON document: BLAKE3-256 of its canonical bytes, lowercase hex."""
    return blake3_hex(canonical_bytes(document))


# Large documents (a sidecar, a reader view: one entry per file of a table) are written in pieces: canonical JSON is
# written value by value with keys sorted at every level, so an object or a list written a slice at a time is the same
# bytes as written whole, and none of it is held whole (docs/scale.md, "The sidecar in bounded memory").
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator


def object_chunks(small: dict[str, JSONValue], streamed: dict[str, Callable[[], Iterator[bytes]]]) \
        -> Iterator[bytes]:
    """The canonical bytes of an object of ``small``'s values (each encoded whole) and ``streamed``'s (each given in
    pieces by its function), in pieces: joined, ``canonical_bytes`` of the whole object."""
    yield b"{"
    for index, key in enumerate(sorted([*small, *streamed])):
        yield (b"," if index else b"") + canonical_bytes(key) + b":"
        if key in streamed:
            yield from streamed[key]()
        else:
            yield canonical_bytes(small[key])
    yield b"}"


def mapping_chunks(mapping: dict[str, JSONValue], batch: int = 8192) -> Iterator[bytes]:
    """The canonical bytes of ``mapping``, ``batch`` keys at a time (keys in code point order, as a whole)."""
    keys = sorted(mapping)
    yield b"{"
    for start in range(0, len(keys), batch):
        some = keys[start:start + batch]
        part = string_members(some, list(map(mapping.__getitem__, some)))
        if part is None:
            part = canonical_bytes({k: mapping[k] for k in some})[1:-1]
        yield part if start == 0 else b"," + part
    yield b"}"


# The text of values canonical_bytes writes with Python's C encoder, written here in C passes over whole columns (a
# sidecar's file list and a reader view's members: one per file of a table), with no Python call per value. Its
# string encoder is json.dumps(ensure_ascii=False)'s, which canonical_bytes uses; an exact int in range is written
# as json.dumps writes it (int.__repr__). Anything else is left to canonical_bytes.
_STRING = json.encoder.encode_basestring
_MEMBER = "{}:{}".format


def _column_text(values: list[Any]) -> Iterator[str] | None:
    """Each value's canonical text, when every value is an exact string, or every one an exact int in i64/u64 range
    (what canonical_bytes writes with the C encoder); else None."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return map(_STRING, values)
    if kinds == {int} and min(values) >= I64_MIN and max(values) <= U64_MAX:
        return map(int.__repr__, values)
    return None


def string_members(keys: list[Any], values: list[Any]) -> bytes | None:
    """``canonical_bytes(dict(zip(keys, values)))`` without its braces, for ``keys`` given distinct and in code point
    order, when every key and value is an exact string; None otherwise, or when a string holds a lone surrogate
    (canonical_bytes then refuses it in its own words)."""
    if not keys or set(map(type, chain(keys, values))) != {str}:
        return None
    try:
        return ",".join(map(_MEMBER, map(_STRING, keys), map(_STRING, values))).encode("utf-8")
    except UnicodeEncodeError:
        return None


def rows_text(names: tuple[str, ...], columns: list[list[Any]]) -> bytes | None:
    """``canonical_bytes([{names[j]: columns[j][i] for j ...} for i ...])`` without its brackets: a list of flat
    objects named ``names`` (distinct, in code point order), when each column is all exact strings or all exact ints
    in range; None otherwise, or when a string holds a lone surrogate (canonical_bytes then refuses it)."""
    if not columns or not columns[0] or list(names) != sorted(set(names)) or len(names) != len(columns) \
            or len(set(map(len, columns))) != 1:
        return None
    texts: list[Iterator[str]] = []
    for column in columns:
        text = _column_text(column)
        if text is None:
            return None
        texts.append(text)
    template = "{{" + ",".join(_STRING(n).replace("{", "{{").replace("}", "}}") + ":{}" for n in names) + "}}"
    try:
        return ",".join(map(template.format, *texts)).encode("utf-8")
    except UnicodeEncodeError:
        return None


def _outputs_text(items: list[Any]) -> bytes | None:
    """``canonical_bytes(items)[1:-1]`` when each of ``items`` is an object of exactly ``hash`` and ``path``, both
    exact strings (``rows_text``): a manifest's outputs, one a file, without a walk of the objects and ``json.dumps``
    sorting each one's keys (docs/scale.md, sixteenth pass). None otherwise, or for a lone surrogate."""
    if not items or set(map(type, items)) != {dict} or set(map(len, items)) != {2}:
        return None
    # Two members each, both found: exactly "hash" and "path" (a missing one is None, which is no string).
    hashes, paths = list(map(dict.get, items, repeat("hash"))), list(map(dict.get, items, repeat("path")))
    if set(map(type, chain(hashes, paths))) != {str}:
        return None
    return rows_text(("hash", "path"), [hashes, paths])


def outputs_bytes(document: dict[str, JSONValue], key: str = "output_hashes", batch: int = 8192) -> bytes:
    """``canonical_bytes(document)``, with the list ``document[key]`` written ``batch`` members at a time by
    ``_outputs_text`` when every member is an object of plain ``hash`` and ``path`` strings (a manifest's outputs; a
    batch at a time: no text of all members held beside the bytes). The rest of the document is encoded whole with a
    unique marker where the list goes (so its refusals and depth limit are ``canonical_bytes``'); any other document
    is encoded by ``canonical_bytes`` as it is."""
    items = document.get(key) if type(document) is dict else None
    if type(items) is not list or not items:
        return canonical_bytes(document)
    parts: list[bytes] = []  # the members' bytes, a batch a piece, with the commas between: joined once below
    for start in range(0, len(items), batch):
        part = _outputs_text(items[start:start + batch])
        if part is None:
            return canonical_bytes(document)
        parts.extend((b",", part) if parts else (part,))
    around = _around(document, key)
    if around is None:
        return canonical_bytes(document)
    return b"".join((around[0], b"[", *parts, b"]", around[1]))


def _around(document: dict[str, JSONValue], key: str) -> tuple[bytes, bytes] | None:
    """The canonical bytes of ``document`` before and after its ``key``'s value: the rest encoded whole with a unique
    marker in the value's place (so its refusals and depth limit are ``canonical_bytes``'). None when the marker's text
    is found elsewhere too (not met in practice): then the document is encoded whole."""
    token = f"{key}:{os.urandom(16).hex()}"
    marker = json.dumps(token).encode("ascii")
    head = canonical_bytes({**document, key: token})
    if head.count(marker) != 1:
        return None
    before, _, after = head.partition(marker)
    return before, after


# A list of fewer members than this is encoded whole (digest): the streamed form pays off on a manifest's file list.
STREAM_BATCH = 8192


def digest_streamed(document: dict[str, JSONValue], key: str, batch: int = STREAM_BATCH) -> str:
    """``digest(document)``, with the list ``document[key]`` encoded and hashed ``batch`` members at a time when each
    member is an object of strings (a manifest's outputs, ``{"hash": ..., "path": ...}``): canonical JSON is written
    value by value, so the bytes hashed are ``canonical_bytes(document)``'s, without the whole text (~25 MB at
    200,000 files) made at once, nor a member walked in Python (C passes find each a flat object of strings: nothing
    in it can be refused but a lone surrogate, which the encoding refuses as ``canonical_bytes`` does). Any other
    document is encoded whole, as ``digest`` does; the rest of the document is too (with a unique marker where the
    list goes), so its refusals and depth limit are ``canonical_bytes``'."""
    items = document.get(key) if type(document) is dict else None
    if type(items) is not list or len(items) < batch or set(map(type, document)) - {str} \
            or set(map(type, items)) != {dict} or set(map(type, chain.from_iterable(items))) - {str} \
            or set(map(type, chain.from_iterable(map(dict.values, items)))) - {str}:
        return digest(document)
    around = _around(document, key)
    if around is None:
        return digest(document)
    before, after = around
    hasher = blake3.blake3(before)
    hasher.update(b"[")
    for start in range(0, len(items), batch):
        some = items[start:start + batch]
        plain = _outputs_text(some)  # a manifest's outputs: one format call each (the same bytes)
        if plain is not None:
            hasher.update(plain if start == 0 else b"," + plain)
            continue
        text = json.dumps(some, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        try:
            part = text[1:-1].encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CanonicalizationError(f"$: string is not valid Unicode ({exc.reason})") from exc
        hasher.update(part if start == 0 else b"," + part)
    hasher.update(b"]")
    hasher.update(after)
    return hasher.hexdigest()


def digest_of_chunks(chunks: Iterable[bytes]) -> str:
    """BLAKE3-256 (lowercase hex) of the bytes ``chunks`` gives, hashed as they come."""
    hasher = blake3.blake3()
    for chunk in chunks:
        hasher.update(chunk)
    return hasher.hexdigest()


def digest_of_rows(document: dict[str, JSONValue], key: str, names: tuple[str, ...], columns: list[list[Any]],
                   batch: int = STREAM_BATCH) -> str | None:
    """``digest({**document, key: rows})`` for ``key`` not in ``document``, where ``rows`` is the list of flat objects
    ``{names[j]: columns[j][i], ...}`` (``rows_text``: a manifest's outputs made from a sidecar's files), hashed from
    the columns ``batch`` rows at a time without an object a row. None when that cannot be told so (``key`` in the
    document, a key of it not a string, no rows, a column not all exact strings or ints in range, a lone surrogate):
    the caller then makes the rows and asks ``digest_streamed``. The same bytes are hashed as ``canonical_bytes``
    writes (tests/test_outputs_of.py)."""
    if type(document) is not dict or key in document or set(map(type, document)) - {str} or not columns \
            or not columns[0]:
        return None
    try:
        around = _around({**document, key: []}, key)
    except (CanonicalizationError, TypeError, ValueError, RecursionError):
        return None  # the caller's digest_streamed refuses it, in its words
    if around is None:
        return None
    before, after = around
    hasher = blake3.blake3(before)
    hasher.update(b"[")
    for start in range(0, len(columns[0]), batch):
        part = rows_text(names, [column[start:start + batch] for column in columns])
        if part is None:
            return None
        hasher.update(part if start == 0 else b"," + part)
    hasher.update(b"]")
    hasher.update(after)
    return hasher.hexdigest()
