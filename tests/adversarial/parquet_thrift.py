"""Parquet footers rewritten field by field (Thrift compact protocol, each field's type kept), for attacks that move
what a footer points at: ``two_in_one`` makes one file that reads as two, by where a reader looks for its footer."""

from __future__ import annotations

import copy
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


def _fields_within(node: list[list[Any]], path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], list[Any],
                                                                                     list[list[Any]]]]:
    """Every [field id, type, value] entry of a struct (as ``read`` gives it), at any depth: (path, entry, parent)."""
    out: list[tuple[tuple[int, ...], list[Any], list[list[Any]]]] = []
    for entry in node:
        fid, kind, value = entry
        out.append(((*path, fid), entry, node))
        if kind == _STRUCT:
            out += _fields_within(value, (*path, fid))
        elif kind in (_LIST, _SET) and value[0] == _STRUCT:
            for j, item in enumerate(value[1]):
                out += _fields_within(item, (*path, fid, j))
    return out


def random_edit(rng: Any, meta: list[list[Any]]) -> str:
    """One random edit of a Thrift struct (a footer's FileMetaData, a page header) at any depth, each field's type
    kept: a field dropped, a flag flipped, an integer moved (by one, eight, doubled, zero, -1, small or large), bytes
    cut, grown, respelled or a byte flipped, two list elements swapped, one repeated or removed. Returns what it did
    (the structure-aware edits of round 35's differential fuzzer)."""
    path, entry, parent = rng.choice(_fields_within(meta))
    _, kind, value = entry
    if rng.random() < 0.1 and len(parent) > 1:
        parent.remove(entry)
        return f"dropped {path}"
    if kind in (1, 2):
        entry[2] = not value
        return f"flipped {path}"
    if kind in (3, 4, 5, 6):
        entry[2] = rng.choice([value + 1, value - 1, value + 8, value - 8, 0, -1, value * 2, rng.randint(0, 12),
                               rng.randint(0, 1 << 20)])
        if kind == 3:
            entry[2] &= 0xFF
        return f"{path}: {value} -> {entry[2]}"
    if kind == 8:
        data = bytes(value)
        if data and rng.random() < 0.5:
            j = rng.randrange(len(data))
            c = data[j:j + 1]
            new = c.swapcase() if c.isalpha() else bytes([data[j] ^ (1 << rng.randrange(8))])
            entry[2] = data[:j] + new + data[j + 1:]
        else:
            entry[2] = rng.choice([b"", data + b"x", data[:-1], b"element", b"list", b"id"])
        return f"{path}: {data[:24]!r} -> {bytes(entry[2])[:24]!r}"
    if kind == 7:
        entry[2] = bytes(rng.randrange(256) for _ in range(8))
        return f"{path}: a double respelled"
    if kind in (_LIST, _SET):
        items = value[1]
        if len(items) >= 2 and rng.random() < 0.6:
            a, b = rng.sample(range(len(items)), 2)
            items[a], items[b] = items[b], items[a]
            return f"{path}: elements {a} and {b} swapped"
        if items and rng.random() < 0.5:
            items.append(copy.deepcopy(rng.choice(items)))
            return f"{path}: an element repeated"
        if items:
            items.pop(rng.randrange(len(items)))
            return f"{path}: an element removed"
    if kind == _STRUCT and value:
        value.pop(rng.randrange(len(value)))
        return f"{path}: a field removed"
    return "unchanged"


def with_page_header(data: bytes, chunk: int, page: int, edit: Any) -> bytes:
    """The Parquet file ``data`` (no page index, no bloom filter) with the header of page ``page`` of column chunk
    ``chunk`` (in file order) passed to ``edit`` in place: every chunk rewritten, the footer's offsets and sizes moved
    to match (page bodies unchanged)."""
    length = struct.unpack("<i", data[-8:-4])[0]
    meta, _ = read(data[-8 - length:-8], 0, _STRUCT)
    chunks = []
    for group in _field(meta, 4)[2][1]:  # type: ignore[index]
        for column_chunk in _field(group, 1)[2][1]:  # type: ignore[index]
            cmd = _field(column_chunk, 3)[2]  # type: ignore[index]
            offsets = {k: _field(cmd, k)[2] for k in (9, 11) if _field(cmd, k) is not None}  # type: ignore[index]
            start = min(v for v in offsets.values() if v > 0)
            chunks.append((start, _field(cmd, 7)[2], cmd, column_chunk, offsets))  # type: ignore[index]
    chunks.sort(key=lambda c: c[0])
    out = bytearray(data[:chunks[0][0]])
    for n, (start, size, cmd, column_chunk, offsets) in enumerate(chunks):
        pages, at = [], start
        while at < start + size:
            header, body_at = read(data, at, _STRUCT)
            body = data[body_at:body_at + _field(header, 3)[2]]  # type: ignore[index]
            pages.append((at - start, header, body))
            at = body_at + len(body)
        new_start, moved = len(out), {}
        for k, (rel, header, body) in enumerate(pages):
            if n == chunk and k == page:
                edit(header)
            moved[rel] = len(out) - new_start
            out += write(_STRUCT, header) + body
        _field(cmd, 7)[2] = len(out) - new_start  # type: ignore[index]  # total_compressed_size
        for k, v in offsets.items():
            _field(cmd, k)[2] = new_start + moved[v - start]  # type: ignore[index]
        if _field(column_chunk, 2) is not None:
            _field(column_chunk, 2)[2] = new_start + moved[min(offsets.values()) - start]  # type: ignore[index]
    for group in _field(meta, 4)[2][1]:  # type: ignore[index]
        columns = [_field(c, 3)[2] for c in _field(group, 1)[2][1]]  # type: ignore[index]
        if _field(group, 5) is not None:
            _field(group, 5)[2] = min(min(_field(c, k)[2] for k in (9, 11) if _field(c, k) is not None  # type: ignore[index]
                                          and _field(c, k)[2] > 0) for c in columns)  # type: ignore[index]
        if _field(group, 7) is not None:
            _field(group, 7)[2] = sum(_field(c, 7)[2] for c in columns)  # type: ignore[index]
    footer = write(_STRUCT, meta)
    return bytes(out) + footer + struct.pack("<i", len(footer)) + b"PAR1"
