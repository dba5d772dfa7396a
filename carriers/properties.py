"""The key layout shared by the Delta and Iceberg carriers (open spec: docs/carrier-properties.md).

- ``recipe_manifest.<dotted path>``: manifest fields only, one key per string leaf, exactly the reference
  convention (strip the prefix, split on ``.``, nest objects), so another producer's reader reconstitutes a
  schema-valid manifest from our metadata. ``output_hashes`` never goes there (the convention has no lists): the
  sidecar holds the file list;
- ``recipe_attest.*``: this project's carrier metadata (binding, sidecar pointer, output count, layout, and the
  envelope of a signed attestation);
- legacy (first-wave) maps also carry ``recipe_manifest._binding.*`` / ``_sidecar.*`` / ``_outputs.*`` keys and
  inline ``output_hashes.<i>.*``; they are still read (``from_properties`` returns the ``_`` keys apart);
- the empty string means "absent" when reading (first-wave writers blanked keys they could not delete).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from attest.errors import AttestError, Code
from attest.numbers import is_digits

PREFIX = "recipe_manifest."
CARRIER_PREFIX = "recipe_attest."
ABSENT = ""
LAYOUT = "2"
KEY_LAYOUT = CARRIER_PREFIX + "layout"
KEY_VERSION = CARRIER_PREFIX + "binding.version"
KEY_SIDECAR_PATH = CARRIER_PREFIX + "sidecar.path"
KEY_SIDECAR_HASH = CARRIER_PREFIX + "sidecar.blake3"
KEY_OUTPUTS_COUNT = CARRIER_PREFIX + "outputs.count"
# A signed attestation: the BLAKE3 of its DSSE envelope, stored as <sidecar dir>/<blake3>.dsse.json (docs/signing.md).
KEY_ENVELOPE = CARRIER_PREFIX + "envelope.blake3"
CARRIER_KEYS = frozenset({KEY_LAYOUT, KEY_VERSION, KEY_SIDECAR_PATH, KEY_SIDECAR_HASH, KEY_OUTPUTS_COUNT,
                          KEY_ENVELOPE})
# First-wave layout (read, never written): binding keys under the manifest prefix, first segment "_".
LEGACY_KEY_VERSION = PREFIX + "_binding.version"
LEGACY_KEY_SIDECAR_PATH = PREFIX + "_sidecar.path"
LEGACY_KEY_SIDECAR_HASH = PREFIX + "_sidecar.blake3"
LEGACY_KEY_OUTPUTS_COUNT = PREFIX + "_outputs.count"
LEGACY_KEY_OUTPUTS_WHERE = PREFIX + "_outputs.location"  # "inline" | "sidecar"
# First-wave writers kept up to this many output hashes inline.
INLINE_OUTPUTS_MAX = 16
# A hostile property map must not make the reader allocate a huge list.
_MAX_INDEX = 1_000_000
_MAX_DEPTH = 16
_SEGMENT = re.compile(r"^(?:0|[1-9][0-9]*|[A-Za-z_][A-Za-z0-9_]*)$")


class KeyMappingError(AttestError, ValueError):
    """The properties under the prefix do not form a manifest (conflicting or malformed keys)."""

    code = Code.CARRIER_TAMPERED


def _flatten(value: Any, path: str, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not _SEGMENT.match(key) or is_digits(key):
                raise KeyMappingError(f"field name {key!r} cannot be carried as a key segment")
            _flatten(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _flatten(item, f"{path}.{index}", out)
    elif isinstance(value, str):
        if value == ABSENT:
            raise KeyMappingError(f"{path}: the empty string is reserved for 'absent'")
        out[PREFIX + path] = value
    else:
        raise KeyMappingError(f"{path}: only string leaves can be carried, got {type(value).__name__}")


def to_properties(document: Mapping[str, Any]) -> dict[str, str]:
    """Flatten a manifest document into ``recipe_manifest.*`` keys (no binding keys)."""
    out: dict[str, str] = {}
    _flatten(document, "", out)
    return out


def manifest_keys(properties: Mapping[str, str]) -> dict[str, str]:
    """The keys under the manifest prefix, with their values, from a table's whole property map."""
    return {k: v for k, v in properties.items() if k.startswith(PREFIX)}


def attestation_keys(properties: Mapping[str, str]) -> dict[str, str]:
    """Every key an attestation owns (manifest and carrier prefixes) with a non-blank value."""
    return {k: v for k, v in properties.items()
            if (k.startswith(PREFIX) or k.startswith(CARRIER_PREFIX)) and v != ABSENT}


def replacement(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(keys to set, keys to remove) that make ``new`` the whole attestation in a map holding ``old``: nothing of an
    older attestation (an ``inputs_hash`` the new run did not observe, first-wave keys) survives."""
    owned = {k for k in old if k.startswith(PREFIX) or k.startswith(CARRIER_PREFIX)}
    remove = sorted(owned - set(new))
    return {k: v for k, v in new.items() if old.get(k) != v}, remove


def _insert(root: dict[str, Any], segments: list[str], value: str, key: str) -> None:
    node: Any = root
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if not _SEGMENT.match(seg):
            raise KeyMappingError(f"{key}: malformed segment {seg!r}")
        if isinstance(node, dict):
            if is_digits(seg):
                raise KeyMappingError(f"{key}: numeric segment {seg!r} under an object")
            if last:
                if seg in node:
                    raise KeyMappingError(f"{key}: conflicts with another key")
                node[seg] = value
                return
            nxt = node.setdefault(seg, [] if is_digits(segments[i + 1]) else {})
        else:  # a list being built as {index: item}; turned into a list at the end
            raise KeyMappingError(f"{key}: internal list state")  # pragma: no cover
        if isinstance(nxt, str):
            raise KeyMappingError(f"{key}: {seg!r} is both a value and a container")
        if isinstance(nxt, list):
            # Lists are collected as index -> item dicts first, then checked for contiguity.
            holder: dict[str, Any] = {"__list__": {}}
            node[seg] = holder
            nxt = holder
        if "__list__" in nxt:
            if not is_digits(segments[i + 1]):
                raise KeyMappingError(f"{key}: {seg!r} is both a list and an object")
            index = int(segments[i + 1])
            if index > _MAX_INDEX:
                raise KeyMappingError(f"{key}: list index {index} is out of range")
            items: dict[int, Any] = nxt["__list__"]
            if i + 1 == len(segments) - 1:
                if index in items:
                    raise KeyMappingError(f"{key}: conflicts with another key")
                items[index] = value
                return
            child = items.setdefault(index, {})
            if not isinstance(child, dict):
                raise KeyMappingError(f"{key}: list item {index} is both a value and an object")
            _insert(child, segments[i + 2:], value, key)
            return
        node = nxt


def _finish(node: Any, path: str) -> Any:
    if isinstance(node, dict) and "__list__" in node:
        items: dict[int, Any] = node["__list__"]
        if sorted(items) != list(range(len(items))):
            raise KeyMappingError(f"{path}: list indices are not contiguous from 0 ({sorted(items)[:5]}...)")
        return [_finish(items[i], f"{path}.{i}") for i in range(len(items))]
    if isinstance(node, dict):
        return {k: _finish(v, f"{path}.{k}" if path else k) for k, v in node.items()}
    return node


def from_properties(properties: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Reverse the mapping: (manifest document, binding keys).

    Keys outside the prefix are ignored; empty values mean absent; ``_``-segments go to the binding dict.
    Raises KeyMappingError when the keys conflict.
    """
    root: dict[str, Any] = {}
    binding: dict[str, str] = {}
    for key in sorted(properties):
        value = properties[key]
        if not key.startswith(PREFIX) or value == ABSENT:
            continue
        if not isinstance(value, str):
            raise KeyMappingError(f"{key}: value is not a string")
        rest = key[len(PREFIX):]
        segments = rest.split(".")
        if segments[0].startswith("_"):
            binding[key] = value
            continue
        if not rest or any(s == "" for s in segments):
            raise KeyMappingError(f"{key}: empty path segment")
        if len(segments) > _MAX_DEPTH:
            raise KeyMappingError(f"{key}: deeper than {_MAX_DEPTH} segments")  # hostile keys must not recurse
        _insert(root, segments, value, key)
    return _finish(root, ""), binding
