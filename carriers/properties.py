"""The ``recipe_manifest.<dotted path>`` key mapping shared by the Delta and Iceberg carriers.

Open spec: docs/carrier-properties.md. In short:
- every leaf of the manifest becomes one key: prefix ``recipe_manifest.`` + field path joined by ``.``; a list
  element takes its decimal index (no leading zeros) as a segment: ``recipe_manifest.output_hashes.0.hash``;
- every value is a string (all v0.1 leaves are strings);
- the empty string means "absent": carriers that cannot delete keys (delta-rs) blank the keys of an older
  attestation instead, so nothing of it survives a re-attestation;
- a first segment starting with ``_`` is carrier binding metadata (which version, the sidecar), not a manifest
  field; a reader drops those before reconstituting the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PREFIX = "recipe_manifest."
ABSENT = ""
# Binding keys (first segment "_"): not manifest fields.
KEY_VERSION = PREFIX + "_binding.version"
KEY_SIDECAR_PATH = PREFIX + "_sidecar.path"
KEY_SIDECAR_HASH = PREFIX + "_sidecar.blake3"
KEY_OUTPUTS_COUNT = PREFIX + "_outputs.count"
KEY_OUTPUTS_WHERE = PREFIX + "_outputs.location"  # "inline" | "sidecar"
# Above this many output files the list moves to the sidecar, keeping one attestation's keys a few KiB.
INLINE_OUTPUTS_MAX = 16
# A hostile property map must not make the reader allocate a huge list.
_MAX_INDEX = 1_000_000
_SEGMENT = re.compile(r"^(?:0|[1-9][0-9]*|[A-Za-z_][A-Za-z0-9_]*)$")


class KeyMappingError(ValueError):
    """The properties under the prefix do not form a manifest (conflicting or malformed keys)."""


def _flatten(value: Any, path: str, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not _SEGMENT.match(key) or key.isdigit():
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
    """The keys under the prefix, with their values, from a table's whole property map."""
    return {k: v for k, v in properties.items() if k.startswith(PREFIX)}


def replacement(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """The property updates that make ``new`` the whole attestation: every old key not in ``new`` is blanked."""
    updates = {k: ABSENT for k in manifest_keys(old) if k not in new and old[k] != ABSENT}
    updates.update(new)
    return updates


def _insert(root: dict[str, Any], segments: list[str], value: str, key: str) -> None:
    node: Any = root
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if not _SEGMENT.match(seg):
            raise KeyMappingError(f"{key}: malformed segment {seg!r}")
        if isinstance(node, dict):
            if seg.isdigit():
                raise KeyMappingError(f"{key}: numeric segment {seg!r} under an object")
            if last:
                if seg in node:
                    raise KeyMappingError(f"{key}: conflicts with another key")
                node[seg] = value
                return
            nxt = node.setdefault(seg, [] if segments[i + 1].isdigit() else {})
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
            if not segments[i + 1].isdigit():
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
        _insert(root, segments, value, key)
    return _finish(root, ""), binding
