"""Parquet footers rewritten field by field (Thrift compact protocol, each field's type kept), for attacks that move
what a footer points at: ``two_in_one`` makes one file that reads as two, by where a reader looks for its footer."""

from __future__ import annotations

import struct
from typing import Any

_STRUCT, _LIST, _SET = 12, 9, 10


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = data[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7


def _put_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def read(data: bytes, pos: int, kind: int) -> tuple[Any, int]:
    """A value of Thrift compact type ``kind`` at ``pos``; a struct is a list of [field id, type, value]."""
    if kind in (1, 2):
        return kind == 1, pos
    if kind == 3:
        return data[pos], pos + 1
    if kind in (4, 5, 6):
        n, pos = _varint(data, pos)
        return (n >> 1) ^ -(n & 1), pos
    if kind == 7:
        return data[pos:pos + 8], pos + 8
    if kind == 8:
        n, pos = _varint(data, pos)
        return data[pos:pos + n], pos + n
    if kind in (_LIST, _SET):
        head = data[pos]
        pos += 1
        n, elem = head >> 4, head & 0x0F
        if n == 15:
            n, pos = _varint(data, pos)
        items = []
        for _ in range(n):
            if elem in (1, 2):
                items.append(data[pos] == 1)
                pos += 1
            else:
                item, pos = read(data, pos, elem)
                items.append(item)
        return (elem, items), pos
    if kind == _STRUCT:
        fields: list[list[Any]] = []
        last = 0
        while True:
            head = data[pos]
            pos += 1
            if head == 0:
                return fields, pos
            delta, ftype = head >> 4, head & 0x0F
            if delta:
                fid = last + delta
            else:
                n, pos = _varint(data, pos)
                fid = (n >> 1) ^ -(n & 1)
            value, pos = read(data, pos, ftype)
            fields.append([fid, ftype, value])
            last = fid
    raise ValueError(f"Thrift type {kind}")


def write(kind: int, value: Any) -> bytes:
    """``value`` (as ``read`` gives it) in Thrift compact type ``kind``."""
    if kind in (1, 2):
        return b""
    if kind == 3:
        return bytes([value])
    if kind in (4, 5, 6):
        return _put_varint((value << 1) ^ (value >> 63))
    if kind == 7:
        return bytes(value)
    if kind == 8:
        return _put_varint(len(value)) + bytes(value)
    if kind in (_LIST, _SET):
        elem, items = value
        out = bytearray([(len(items) << 4) | elem] if len(items) < 15 else [0xF0 | elem])
        if len(items) >= 15:
            out += _put_varint(len(items))
        for item in items:
            out += bytes([1 if item else 2]) if elem in (1, 2) else write(elem, item)
        return bytes(out)
    if kind == _STRUCT:
        out, last = bytearray(), 0
        for fid, ftype, item in value:
            t = (1 if item else 2) if ftype in (1, 2) else ftype
            if 0 < fid - last <= 15:
                out.append(((fid - last) << 4) | t)
            else:
                out.append(t)
                out += _put_varint((fid << 1) ^ (fid >> 63))
            out += write(ftype, item)
            last = fid
        out.append(0)
        return bytes(out)
    raise ValueError(f"Thrift type {kind}")


def _field(fields: list[list[Any]], fid: int) -> list[Any] | None:
    return next((f for f in fields if f[0] == fid), None)


def _moved(meta: list[list[Any]], by: int) -> None:
    """Every offset of a FileMetaData moved by ``by`` bytes (row groups, column chunks, pages, indexes, filters)."""
    for group in _field(meta, 4)[2][1]:  # type: ignore[index]
        for f in filter(None, [_field(group, 5)]):  # RowGroup.file_offset
            f[2] += by
        for chunk in _field(group, 1)[2][1]:  # type: ignore[index]
            for f in filter(None, (_field(chunk, k) for k in (2, 4, 6))):  # file offset, offset / column index
                f[2] += by
            column = _field(chunk, 3)[2]  # type: ignore[index]
            for f in filter(None, (_field(column, k) for k in (9, 10, 11, 14))):  # pages, dictionary, bloom filter
                f[2] += by


def two_in_one(first: bytes, second: bytes) -> bytes:
    """One file that is two Parquet files: ``first``, then ``second`` with every offset of its footer moved past
    ``first``. A reader that looks for the footer at ``len(first)`` reads ``first``'s rows, one that looks at the
    file's end ``second``'s."""
    length = struct.unpack("<i", second[-8:-4])[0]
    meta, _ = read(second[-8 - length:-8], 0, _STRUCT)
    _moved(meta, len(first))
    footer = write(_STRUCT, meta)
    return first + second[:-8 - length] + footer + struct.pack("<i", len(footer)) + b"PAR1"


def field(fields: list[list[Any]], fid: int) -> list[Any] | None:
    """The [field id, type, value] of a struct (as ``read`` gives it) with id ``fid``; None when absent."""
    return _field(fields, fid)


def with_footer(data: bytes, edit: Any) -> bytes:
    """The Parquet file ``data`` with its footer (FileMetaData, as ``read`` gives it) passed to ``edit`` in place and
    written back (its length too; nothing before it moves)."""
    length = struct.unpack("<i", data[-8:-4])[0]
    meta, _ = read(data[-8 - length:-8], 0, _STRUCT)
    edit(meta)
    footer = write(_STRUCT, meta)
    return data[:-8 - length] + footer + struct.pack("<i", len(footer)) + b"PAR1"
