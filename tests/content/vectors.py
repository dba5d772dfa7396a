"""Reading docs/content-digest.md's test vectors: the type tag grammar parsed back to Arrow types, the JSON values
to Arrow arrays. Independent of attest.content's encoder: the tests compare its output with the vectors."""

from __future__ import annotations

import json
import re
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

DOC = Path(__file__).resolve().parents[2] / "docs" / "content-digest.md"
_FIXED = {"null": pa.null(), "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
          "int64": pa.int64(), "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(),
          "uint64": pa.uint64(), "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
          "string": pa.string(), "binary": pa.binary(), "date32": pa.date32(), "date64": pa.date64()}


def vectors() -> list[dict[str, Any]]:
    """Every ```json {.content-vector} block of the doc (the class keeps the fence a code block in the docs site)."""
    text = DOC.read_text(encoding="utf-8")
    return [json.loads(block) for block in re.findall(r"```json \{\.content-vector\}\n(.*?)\n```", text, re.S)]


class _Tags:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def take(self, literal: str) -> None:
        assert self.text.startswith(literal, self.at), (self.text, self.at, literal)
        self.at += len(literal)

    def until(self, end: str) -> str:
        stop = self.text.index(end, self.at)
        value, self.at = self.text[self.at:stop], stop + len(end)
        return value

    def parse(self) -> pa.DataType:
        rest = self.text[self.at:]
        for prefix, build in (("decimal(", self._decimal), ("fixed_binary(", self._fixed_binary),
                              ("timestamp[", self._timestamp), ("duration[", self._duration),
                              ("time32[", self._time), ("time64[", self._time), ("fixed_list(", self._fixed_list),
                              ("list<", self._list), ("map<", self._map), ("struct<", self._struct)):
            if rest.startswith(prefix):
                return build()
        name = re.match(r"[a-z0-9]+", rest)
        assert name and name.group(0) in _FIXED, rest
        self.at += len(name.group(0))
        return _FIXED[name.group(0)]

    def _decimal(self) -> pa.DataType:
        self.take("decimal(")
        precision, scale = (int(x) for x in self.until(")").split(","))
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)

    def _fixed_binary(self) -> pa.DataType:
        self.take("fixed_binary(")
        return pa.binary(int(self.until(")")))

    def _timestamp(self) -> pa.DataType:
        self.take("timestamp[")
        unit, *zone = self.until("]").split(",")
        return pa.timestamp(unit, tz="UTC" if zone == ["utc"] else None)

    def _duration(self) -> pa.DataType:
        self.take("duration[")
        return pa.duration(self.until("]"))

    def _time(self) -> pa.DataType:
        bits = self.text[self.at + 4:self.at + 6]
        self.take(f"time{bits}[")
        unit = self.until("]")
        return pa.time32(unit) if bits == "32" else pa.time64(unit)

    def _fixed_list(self) -> pa.DataType:
        self.take("fixed_list(")
        size = int(self.until(")"))
        self.take("<")
        value = self.parse()
        self.take(">")
        return pa.list_(value, size)

    def _list(self) -> pa.DataType:
        self.take("list<")
        value = self.parse()
        self.take(">")
        return pa.list_(value)

    def _map(self) -> pa.DataType:
        self.take("map<")
        key = self.parse()
        self.take(",")
        item = self.parse()
        self.take(">")
        return pa.map_(key, item)

    def _struct(self) -> pa.DataType:
        self.take("struct<")
        fields: list[pa.Field] = []
        while not self.text.startswith(">", self.at):
            if fields:
                self.take(",")
            length = int(self.until(":"))
            name = self.text[self.at:self.at + length]
            self.at += length
            self.take(":")
            fields.append(pa.field(name, self.parse()))
        self.take(">")
        return pa.struct(fields)


def arrow_type(tag: str) -> pa.DataType:
    parser = _Tags(tag)
    t = parser.parse()
    assert parser.at == len(tag), tag
    return t


def _value(t: pa.DataType, v: Any) -> Any:
    if v is None:
        return None
    if pa.types.is_floating(t):
        raw = bytes.fromhex(v["bits"])
        return struct.unpack(">d", raw)[0] if len(raw) == 8 else struct.unpack(">f", raw)[0]
    if pa.types.is_decimal(t):
        return Decimal(v)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes.fromhex(v["hex"])
    if pa.types.is_map(t):
        return [(_value(t.key_type, k), _value(t.item_type, i)) for k, i in v["map"]]
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        return [_value(t.value_type, x) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _value(t.field(i).type, v[t.field(i).name]) for i in range(t.num_fields)}
    return v


def arrow_array(t: pa.DataType, values: list[Any]) -> pa.Array:
    """A column of the vector: floats from their exact bits (NaN payloads kept), the rest from JSON."""
    if pa.types.is_floating(t):
        width = t.bit_width
        ints = [None if v is None else int(v["bits"], 16) for v in values]
        return pa.array(ints, {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[width]).view(t)
    if pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_date(t) or pa.types.is_duration(t):
        return pa.array(values, pa.int64() if t.bit_width == 64 else pa.int32()).view(t)
    return pa.array([_value(t, v) for v in values], t)
