"""delta-rs's add actions in columns, for the per-file reader views of a version of many files (docs/scale.md).

A file's view (carriers/delta/carrier.py, ``DeltaCarrier._compute_live``) is the canonical JSON of a small object:
its size, its partition values and statistics as delta-rs types them (``json_safe``), its deletion vector and row
tracking fields as the log writes them, and what the log spells otherwise. Built file by file, every row of delta-rs's
Arrow table became Python values, then a dict through ``json_safe``, then text: most of a verification of 200,000
files. Here the JSON text of the two typed parts — ``partition`` and ``stats`` — is written for all files at once
with pyarrow compute, column by column, wherever a column's type has one spelling that is the same text: integers,
booleans, strings without a character JSON escapes, structs of those, nulls. Any other column (floats, timestamps,
decimals, binary, lists, strings JSON escapes, a struct naming a field twice) is encoded value by value exactly as
before (``json_safe`` + the views' encoder), so every file's text, and its digest, is the same bytes either way
(``tests/delta/test_delta_columns.py`` holds the two to each other).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from attest import fast
from attest.view import _file_encode, json_safe
from carriers.core import _PLAIN_PATH

__all__ = ["AddColumns", "add_columns"]

# The statistics delta-rs types (get_add_actions), in the order of their keys in a view (sorted, as the encoder does).
STAT_KEYS = ("max", "min", "null_count", "num_records")
# Characters JSON escapes (json.encoder.ESCAPE: '"', '\\', and the controls below 0x20): a string column holding one is
# encoded value by value.
_ESCAPED = '["\\\\\\x00-\\x1f]'


class AddColumns:
    """The add actions of one loaded version: per file (in delta-rs's order) its path, size and modification time,
    the JSON text of its ``partition`` and ``stats`` view parts, whether delta-rs's statistics lack something (the
    spellings check looks into those files), and delta-rs's row (as ``add_action_rows`` gives it) on demand."""

    def __init__(self, table: Any) -> None:
        self.table = table
        names = table.column_names
        self.columns = set(names)
        self.paths: list[str] = [str(p) for p in table.column("path").to_pylist()] if "path" in names else []
        self.sizes: list[int] = table.column("size_bytes").to_pylist() if "size_bytes" in names else []
        self.times: list[Any] = table.column("modification_time").to_pylist() if "modification_time" in names \
            else [None] * len(self.paths)
        self.has_partition = "partition" in names
        self.stat_keys = [k for k in STAT_KEYS if k in names]
        self.partition_texts: list[str] | None = _texts(table.column("partition")) if self.has_partition else None
        self.stats_texts: list[str] = _object_texts(table, self.stat_keys)
        self.gaps: list[bool] = _gaps(table, self.stat_keys)
        self.plain: list[bool] = _plain(table.column("path")) if "path" in names else []
        self._many = sum(self.gaps) > 1024
        self._stats: dict[str, list[Any]] | None = None

    def stats_row(self, index: int) -> dict[str, Any]:
        """delta-rs's statistics of file ``index`` (``num_records``, ``null_count``, ``min``, ``max``: those it gives)
        as Python values, as pyarrow's ``to_pylist`` gives them: read for the files the spellings check looks into
        (one at a time while they are few, all at once when many are)."""
        if not self._many:
            return dict(self.table.select(self.stat_keys).slice(index, 1).to_pylist()[0])
        if self._stats is None:
            self._stats = {k: self.table.column(k).to_pylist() for k in self.stat_keys}
        return {k: values[index] for k, values in self._stats.items()}


class _RowColumns(AddColumns):
    """The same values as AddColumns, read as Python values from delta-rs's own Arrow table (arro3's ``to_pylist``,
    as ``add_action_rows`` reads them: the same values as pyarrow's, tests/test_cli_fast.py) and encoded value by
    value (``json_safe`` + the views' encoder, as the column path does wherever a column's type has no one spelling):
    for a version of few files, where importing pyarrow and its compute functions costs more than the files."""

    def __init__(self, table: Any) -> None:
        values: dict[str, list[Any]] = {name: table.column(name).to_pylist() for name in table.column_names}
        rows = int(table.num_rows)
        self.table = table
        self.columns = set(values)
        self.paths = [str(p) for p in values["path"]] if "path" in values else []
        self.sizes = values.get("size_bytes", [])
        self.times = values["modification_time"] if "modification_time" in values else [None] * len(self.paths)
        self.has_partition = "partition" in values
        self.stat_keys = [k for k in STAT_KEYS if k in values]
        self.partition_texts = _encoded(values["partition"]) if self.has_partition else None
        self._stats = {k: values[k] for k in self.stat_keys}
        self._many = True  # stats_row reads self._stats
        self.stats_texts = _encoded([self.stats_row(i) for i in range(rows)]) if self.stat_keys else ["{}"] * rows
        self.gaps = _row_gaps(self._stats, rows)
        self.plain = [p is not None and _PLAIN_PATH.fullmatch(p) is not None and _SCHEME.match(p) is None
                      for p in values["path"]] if "path" in values else []


# Below this many files a version's add actions are read as Python rows (_RowColumns) without pyarrow: importing
# pyarrow and pyarrow.compute (~100-200 ms) costs more than encoding that many files value by value (~15 µs a file).
ROWS_MAX = 4_096
# The scheme test of _plain (carriers.core.canonical_relative's): a colon before any slash.
_SCHEME = re.compile("[^/]*:")


def add_columns(dt: Any, actions: Any = None) -> AddColumns:
    """delta-rs's add actions of the loaded version (``get_add_actions(flatten=False)``, or ``actions`` when already
    read), in columns: for fewer than ROWS_MAX files whose columns are all of types read alike without pyarrow
    (_row_type), read as Python rows."""
    if actions is None:
        actions = dt.get_add_actions(flatten=False)
    if int(actions.num_rows) < ROWS_MAX and _row_types(actions.schema):
        return _RowColumns(actions)
    import pyarrow as pa

    return AddColumns(pa.table(actions))


# _row_types' answers by the schema's types as arrow-rs prints them: an audit of thousands of small tables asks the same
# question of the same few add-action schemas (~80 µs a table, measured). Not by the types themselves: arro3's
# DataType equality ignores a struct's field names (Struct<a: Int64> == Struct<b: Int64>), which _row_type reads;
# the printed type spells every name (escaped: a name holding '", "' is not two names) and every nested type.
_ROW_TYPES: dict[tuple[str, ...], bool] = {}
_ROW_TYPES_MAX = 256


def _row_types(schema: Any) -> bool:
    """Whether every column of delta-rs's add actions is of a type _row_type accepts (asked once a schema spelling
    with the fast path on, attest/fast/; ``ATTEST_FAST=0``: of every column each time)."""
    if not fast.ON:
        return all(_row_type(field.type) for field in schema)
    key = tuple(str(field.type) for field in schema)
    found = _ROW_TYPES.get(key)
    if found is None:
        found = all(_row_type(field.type) for field in schema)
        if len(_ROW_TYPES) >= _ROW_TYPES_MAX:
            _ROW_TYPES.clear()
        _ROW_TYPES[key] = found
    return found


def _row_type(kind: Any) -> bool:
    """Whether a column of this (arro3) type is read by arro3 as pyarrow reads it and judged as the column path judges
    it: the scalar types delta-rs's statistics and partition values hold (a test holds their values to pyarrow's), and
    structs of those naming no field twice (_gaps looks at every field of such a struct, a dict keeps the last)."""
    from arro3.core import DataType

    if DataType.is_struct(kind):
        names = [field.name for field in kind.fields]
        return len(set(names)) == len(names) and all(_row_type(field.type) for field in kind.fields)
    return any(check(kind) for check in (
        DataType.is_null, DataType.is_boolean, DataType.is_integer, DataType.is_float32, DataType.is_float64,
        DataType.is_string, DataType.is_large_string, DataType.is_binary, DataType.is_large_binary,
        DataType.is_date32, DataType.is_timestamp, DataType.is_decimal128))


def _row_gaps(stats: dict[str, list[Any]], rows: int) -> list[bool]:
    """_gaps of the rows: ``spellings._gap`` of each file's statistics."""
    from carriers.delta.spellings import _gap

    if any(key not in stats for key in ("num_records", "null_count", "min", "max")):
        return [True] * rows
    return [records is None or _gap(nulls) or _gap(low) or _gap(high)
            for records, nulls, low, high in zip(stats["num_records"], stats["null_count"], stats["min"], stats["max"],
                                                 strict=True)]


def _encoded(values: list[Any]) -> list[str]:
    encode: Callable[[Any], str] = _file_encode()
    return [encode(json_safe(v)) for v in values]


def _texts(column: Any) -> list[str]:
    """The canonical JSON text of ``json_safe(value)`` for every value of a column (chunked array)."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out: list[str] = []
    for chunk in chunks:
        text = _array_text(chunk)
        out += _encoded(chunk.to_pylist()) if text is None else text.to_pylist()
    return out


def _object_texts(table: Any, keys: list[str]) -> list[str]:
    """The text of ``json_safe({k: row[k] for k in keys})`` for every row of ``table`` (``keys`` sorted)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    if not keys:
        return ["{}"] * rows
    encode = _file_encode()
    parts: list[Any] = []
    for index, key in enumerate(keys):
        column = table.column(key)
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        pieces = []
        for chunk in chunks:
            text = _array_text(chunk)
            pieces.append(pa.array(_encoded(chunk.to_pylist()), pa.string()) if text is None else text)
        prefix = ("{" if index == 0 else ",") + encode(key) + ":"
        parts += [pa.scalar(prefix), pa.chunked_array(pieces, pa.string()) if pieces else pa.array([], pa.string())]
    joined = pc.binary_join_element_wise(*parts, pa.scalar("}"), pa.scalar(""))
    return [str(t) for t in joined.to_pylist()]


def _array_text(array: Any) -> Any:
    """The JSON text of every value of one Arrow array (a string array without nulls), or None where a value would
    be spelled otherwise than pyarrow writes it (then the caller encodes value by value)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    null = pa.scalar("null")
    if pa.types.is_null(kind):
        return pa.array(["null"] * len(array), pa.string())
    if pa.types.is_integer(kind):
        return pc.fill_null(pc.cast(array, pa.string()), null)
    if pa.types.is_boolean(kind):
        return pc.fill_null(pc.if_else(array, pa.scalar("true"), pa.scalar("false")), null)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if len(array) - array.null_count and pc.any(pc.match_substring_regex(array, _ESCAPED)).as_py():
            return None
        quoted = pc.binary_join_element_wise(pa.scalar('"'), pc.cast(array, pa.string()), pa.scalar('"'),
                                             pa.scalar(""))
        return pc.fill_null(quoted, null)
    if pa.types.is_struct(kind):
        names = [kind.field(i).name for i in range(kind.num_fields)]
        if len(set(names)) != len(names):
            return None  # a dict keeps one of the two: as pyarrow's to_pylist does
        if not names:
            body: Any = pa.array(["{}"] * len(array), pa.string())
        else:
            encode = _file_encode()
            parts: list[Any] = []
            # json_safe keeps the keys, the encoder sorts them: by code point, as sorted() does.
            for index, name in enumerate(sorted(names)):
                child = _array_text(array.field(names.index(name)))
                if child is None:
                    return None
                parts += [pa.scalar(("{" if index == 0 else ",") + encode(name) + ":"), child]
            body = pc.binary_join_element_wise(*parts, pa.scalar("}"), pa.scalar(""))
        if array.null_count:
            body = pc.if_else(array.is_valid(), body, null)
        return body
    return None


def _plain(paths: Any) -> list[bool]:
    """Per path, whether it is plain (carriers.core.canonical_relative's common case: nothing encoded, no dot
    segment, no scheme): a plain path is its own relative path. Any other is judged by canonical_relative itself."""
    import pyarrow.compute as pc

    plain = pc.and_(pc.match_substring_regex(paths, f"^(?:{_PLAIN_PATH.pattern})$"),
                    pc.invert(pc.match_substring_regex(paths, "^[^/]*:")))
    return [bool(p) for p in pc.fill_null(plain, False).to_pylist()]


def _gaps(table: Any, keys: list[str]) -> list[bool]:
    """Per row, ``spellings._gap`` of delta-rs's statistics: ``num_records`` null, or a null anywhere in the null
    counts, minimums or maximums (the struct itself, or a value inside, through nested structs)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    if "num_records" not in keys:
        return [True] * rows  # no column: None for every file
    gap: Any = pc.is_null(table.column("num_records"))
    for key in ("null_count", "min", "max"):
        if key not in keys:
            return [True] * rows
        column = table.column(key)
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        nulls = pa.chunked_array([_any_null(c) for c in chunks], pa.bool_()) if chunks else pa.chunked_array(
            [], pa.bool_())
        gap = pc.or_(gap, nulls)
    return [bool(g) for g in gap.to_pylist()]


def _any_null(array: Any) -> Any:
    """Per value: null itself, or (a struct) a null in any field, through nested structs — what ``_gap`` finds in the
    dict to_pylist gives (a struct naming a field twice: the dict keeps the last, so every field is looked at, which
    finds at least what the dict shows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: Any = pc.is_null(array)
    if pa.types.is_struct(array.type):
        for i in range(array.type.num_fields):
            out = pc.or_(out, _any_null(array.field(i)))
    return pc.fill_null(out, True)
