"""A live file's reader-view entry written as its canonical text straight from the manifest's data-file record (issue
35 item 2, eighteenth pass: docs/scale.md).

The listing made each file's entry a dict (``IcebergCarrier.file_entry``: ``view_value`` of each of its 16 fields,
maps of counts and bounds sorted and rebuilt), then encoded it (:func:`attest.view.file_text`: sorted keys, no spaces,
``ensure_ascii=False``). :func:`view_text` writes that same text field by field, in the keys' sorted order, for the
records every writer writes: each value ``None``, a ``bool``, an ``int``, a ``str``, ``bytes`` or a ``float`` (each
of these exact types), a map (a dict or pyiceberg's ``LazyDict``) of such values by exact ``int`` keys, a list of such
values, or a partition tuple (a ``Record``) of such values, maps and tuples. Anything else — an enum member, a
``Decimal``, a subclass, a nested list, a map keyed otherwise, an integer too long to print — gives ``None``, and the
listing makes the entry the general way (which writes it, or fails, in its own words). ``ATTEST_FAST=0`` always
takes the general way. ``tests/iceberg/test_iceberg_entry_text.py`` holds the two to each other on random records.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["view_text"]

_encode_str: Callable[[str], str] = json.encoder.encode_basestring  # the string encoder attest.view.file_text uses


def _bytes_text(value: bytes) -> str:
    return '{"bytes":"' + value.hex() + '"}'  # json_safe's {"bytes": hex}


def _float_text(value: float) -> str:
    return '{"float":"' + float.__repr__(value) + '"}'  # json_safe's {"float": repr}: repr is ASCII, nothing escaped


# How a value of each of these exact types is written wherever it stands in an entry (view_value and json_safe give
# each back as it is, or tag bytes and floats, at every depth).
_LEAVES: dict[type, Callable[[Any], str]] = {
    type(None): lambda _v: "null",
    bool: lambda v: "true" if v else "false",
    int: int.__repr__,
    str: _encode_str,
    bytes: _bytes_text,
    float: _float_text,
}


@functools.cache
def _types() -> tuple[type, type]:
    from pyiceberg.typedef import Record
    from pyiceberg.utils.lazydict import LazyDict

    return LazyDict, Record


def _map_text(held: dict[Any, Any]) -> str:
    """view_value of a map: ``{str(k): value}``, written in the order of the keys' text (as sort_keys orders them)."""
    if not held:
        return "{}"
    if {*map(type, held)} != {int}:
        raise _Other  # str(k) of other keys may collide, or sorting them fail: the general way says what happens
    values = {*map(type, held.values())}
    if len(values) == 1 and (int in values or bytes in values):
        # The common maps (counts; bounds): one form per set of keys in their order, the values put in its places.
        keys = tuple(held)
        form = _FORMS.get(keys)
        if form is None:
            form = _form(keys)
        order, ints, hexes = form
        ordered = held.values() if order is None else [held[k] for k in order]
        return ints % tuple(ordered) if int in values else hexes % tuple(map(bytes.hex, ordered))
    leaves = _LEAVES
    return (
        "{"
        + ",".join(
            [
                '"' + k + '":' + leaves[type(v)](v)
                for k, v in sorted(zip(map(int.__repr__, held), held.values(), strict=True))
            ]
        )
        + "}"
    )


# Per tuple of a map's keys (exact ints, in the map's order): the keys in the order of their text (None: the map's
# own), and the map's text with each value's place left as %d (an int) or as a {"bytes": %s} of its hex. Bounded: a
# table's maps name a few sets of columns.
_FORMS: dict[tuple[int, ...], tuple[tuple[int, ...] | None, str, str]] = {}


def _form(keys: tuple[int, ...]) -> tuple[tuple[int, ...] | None, str, str]:
    order = tuple(sorted(keys, key=int.__repr__))
    names = [int.__repr__(k) for k in order]
    form = (
        None if order == keys else order,
        "{" + ",".join(['"' + k + '":%d' for k in names]) + "}",
        "{" + ",".join(['"' + k + '":{"bytes":"%s"}' for k in names]) + "}",
    )
    if len(_FORMS) < 4096:
        _FORMS[keys] = form
    return form


def _value_text(value: Any) -> str:
    """view_value of a field's value, as its canonical text."""
    kind = type(value)
    leaf = _LEAVES.get(kind)
    if leaf is not None:
        return leaf(value)
    lazy, record = _types()
    if kind is dict:
        return _map_text(value)
    if kind is lazy:
        return _map_text(value._dict or value._build_dict())
    if kind is record:  # a partition tuple: view_value of each member
        return "[" + ",".join([_value_text(v) for v in value._data]) + "]"
    if kind is list:  # json_safe of a list: each member as it is, bytes and floats tagged
        return _list_text(value)
    raise _Other


def _list_text(value: list[Any]) -> str:
    leaves = _LEAVES
    return "[" + ",".join([leaves[type(v)](v) for v in value]) + "]"


def _raw_text(value: Any) -> str:
    """A value the entry holds as the record gives it (``spec_id``, ``data_sequence_number``): None or an int."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    raise _Other


class _Other(Exception):
    """A value the text is not written for here."""


def view_text(df: Mapping[str, Any], location: str, *, deletes_apply: bool = False) -> str | None:
    """``file_text`` of the entry ``IcebergCarrier.file_entry(df, deletes_apply=...)`` makes (``location``: its
    ``str(df["file_path"])``), or None when the record holds a value this writer does not write (see the module)."""
    get = df.get
    try:
        file_format = get("file_format")
        if type(file_format) is not str:
            return None  # an enum member or anything else: file_entry's str(_plain(...)).upper() and view_value
        offsets = get("split_offsets")
        if offsets is None:
            split = ""
        elif type(offsets) is not list:
            return None
        elif file_format.upper() == "PARQUET" and offsets == [4]:
            split = ""  # one split of the whole file: file_entry leaves it out
        else:
            split = ',"split_offsets":' + _list_text(offsets)
        if deletes_apply:
            sequence = ',"data_sequence_number":' + _raw_text(get("data_sequence_number"))
            where = ',"location":' + _encode_str(location)
        else:
            sequence = where = ""
        value = _value_text
        # The entry's keys in code point order (the optional ones where they sort); spelt out, not looped over a key
        # list: this runs once per live file of a 200,000-file record, and the literal list is its fastest form.
        return "".join(
            [
                '{"content":',
                value(get("content")),
                ',"content_offset":',
                value(get("content_offset")),
                ',"content_size_in_bytes":',
                value(get("content_size_in_bytes")),
                sequence,
                ',"equality_ids":',
                value(get("equality_ids")),
                ',"file_format":',
                _encode_str(file_format),
                ',"file_size_in_bytes":',
                value(get("file_size_in_bytes")),
                ',"first_row_id":',
                value(get("first_row_id")),
                ',"key_metadata":',
                value(get("key_metadata")),
                where,
                ',"lower_bounds":',
                value(get("lower_bounds")),
                ',"nan_value_counts":',
                value(get("nan_value_counts")),
                ',"null_value_counts":',
                value(get("null_value_counts")),
                ',"partition":',
                value(get("partition")),
                ',"record_count":',
                value(get("record_count")),
                ',"referenced_data_file":',
                value(get("referenced_data_file")),
                ',"spec_id":',
                _raw_text(get("spec_id")),
                split,
                ',"upper_bounds":',
                value(get("upper_bounds")),
                ',"value_counts":',
                value(get("value_counts")),
                "}",
            ]
        )
    except (_Other, KeyError, ValueError):  # a type not written here; an int too long to print (the general way's)
        return None
