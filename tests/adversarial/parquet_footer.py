"""Hand-edits of a Parquet file's footer (FileMetaData, Thrift compact protocol) for attack tests: a schema shape no
writer at hand writes (a 2-level list, a repeated group named ``array``) over the very same pages.

The footer is decoded into typed nodes (a struct is a list of ``[field id, compact type, value]``, a list is
``[element type, values]``), edited, encoded again and written back in place of the old one; the pages before it
are left as they are (their offsets stay right)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out, shift = 0, 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, t: int) -> Any:
        if t in (_TRUE, _FALSE):
            return t == _TRUE
        if t == _BYTE:
            return self.byte()
        if t in (_I16, _I32, _I64):
            return self.zigzag()
        if t == _DOUBLE:
            self.pos += 8
            return struct.unpack("<d", self.data[self.pos - 8:self.pos])[0]
        if t == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n:self.pos]
        if t in (_LIST, _SET):
            head = self.byte()
            size, et = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if et in (_TRUE, _FALSE):
                return [et, [self.byte() == 1 for _ in range(size)]]
            return [et, [self.value(et) for _ in range(size)]]
        if t == _STRUCT:
            fields: list[list[Any]] = []
            last = 0
            while True:
                head = self.byte()
                if head == _STOP:
                    return fields
                delta, ft = head >> 4, head & 0x0F
                fid = last + delta if delta else self.zigzag()
                fields.append([fid, ft, self.value(ft)])
                last = fid
        raise ValueError(f"compact type {t} not handled")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _encode(t: int, value: Any) -> bytes:
    if t in (_TRUE, _FALSE):
        return b""  # a struct field's boolean is in its header
    if t == _BYTE:
        return bytes([value & 0xFF])
    if t in (_I16, _I32, _I64):
        return _zigzag(int(value))
    if t == _DOUBLE:
        return struct.pack("<d", value)
    if t == _BINARY:
        return _varint(len(value)) + bytes(value)
    if t in (_LIST, _SET):
        et, items = value
        head = bytes([(len(items) << 4) | et]) if len(items) < 15 else bytes([0xF0 | et]) + _varint(len(items))
        if et in (_TRUE, _FALSE):
            return head + bytes(1 if v else 2 for v in items)
        return head + b"".join(_encode(et, v) for v in items)
    if t == _STRUCT:
        out = bytearray()
        last = 0
        for fid, ft, v in value:
            if ft in (_TRUE, _FALSE):
                ft = _TRUE if v else _FALSE
            delta = fid - last
            out += bytes([(delta << 4) | ft]) if 0 < delta <= 15 else bytes([ft]) + _zigzag(fid)
            out += _encode(ft, v)
            last = fid
        return bytes(out + b"\x00")
    raise ValueError(f"compact type {t} not handled")


def field(node: list[list[Any]], fid: int) -> Any:
    """The value of struct ``node``'s field ``fid`` (None when absent)."""
    return next((v for f, _t, v in node if f == fid), None)


def set_field(node: list[list[Any]], fid: int, t: int, value: Any) -> None:
    """Set (or add, in field order) struct ``node``'s field ``fid`` of compact type ``t``."""
    for item in node:
        if item[0] == fid:
            item[1], item[2] = t, value
            return
    node.append([fid, t, value])
    node.sort(key=lambda item: item[0])


def drop_field(node: list[list[Any]], fid: int) -> None:
    node[:] = [item for item in node if item[0] != fid]


def edit_footer(path: Path, edit: Callable[[list[list[Any]]], None]) -> None:
    """Rewrite the footer of the Parquet file at ``path`` by ``edit`` (FileMetaData, typed)."""
    data = path.read_bytes()
    length = struct.unpack("<i", data[-8:-4])[0]
    start = len(data) - 8 - length
    reader = _Reader(data[start:len(data) - 8])
    meta = reader.value(_STRUCT)
    assert _encode(_STRUCT, meta) == data[start:len(data) - 8], "the footer does not encode back as it was"
    edit(meta)
    footer = _encode(_STRUCT, meta)
    path.write_bytes(data[:start] + footer + struct.pack("<i", len(footer)) + b"PAR1")


# parquet.thrift: FileMetaData 2 schema, 4 row_groups; RowGroup 1 columns; ColumnChunk 3 meta_data;
# ColumnMetaData 3 path_in_schema; SchemaElement 3 repetition_type, 4 name, 5 num_children, 6 converted_type,
# 9 field_id, 10 logicalType.
SCHEMA, ROW_GROUPS, REPETITION, NAME, CHILDREN, CONVERTED, FIELD_ID, LOGICAL = 2, 4, 3, 4, 5, 6, 9, 10
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
I32, BINARY, LIST, STRUCT = _I32, _BINARY, _LIST, _STRUCT


def schema_elements(meta: list[list[Any]]) -> list[list[list[Any]]]:
    elements: list[list[list[Any]]] = field(meta, SCHEMA)[1]
    return elements


def column_paths(meta: list[list[Any]]) -> list[list[bytes]]:
    """The ``path_in_schema`` list of every column chunk, in every row group (edited in place)."""
    out: list[list[bytes]] = []
    for group in field(meta, ROW_GROUPS)[1]:
        for chunk in field(group, 1)[1]:
            out.append(field(field(chunk, 3), 3)[1])
    return out
