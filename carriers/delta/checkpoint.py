"""A Delta checkpoint read in columns (pyarrow), for the log replay of carriers/delta/log.py.

The replay (the second opinion against delta-rs) used to read a checkpoint row by row: every row turned into Python
values, every action checked (``log._Validity``), every add's statistics parsed. On a table of many files that was
most of a verification (issue 35.2: 200,000 files, 39× delta-rs's time). This module reads the same checkpoint once,
column by column, and decides in columns whether it is *regular* — one action per row, no field named as a known one in
another case, one metaData and one protocol, every add and remove of a distinct path without deletion vectors, no typed
twins (``stats_parsed``, ``partitionValues_parsed``), no v2 sidecar, statistics that are JSON naming no key twice (the
statistics of a whole batch parsed at once by pyarrow's JSON reader, which refuses a key named twice), maps naming no
key twice. A regular checkpoint is one the line reader would find no problem in: its state is built from the columns
(``columnar_state``). Any other is left to the line reader (``None``), which finds and words the problems as before;
so the verdict on every checkpoint is the line reader's, and only its cost changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attest import fast
from attest.errors import TableInconsistentError

if TYPE_CHECKING:
    from carriers.delta.log import LogState
    from carriers.storage.base import Storage

_READ = ("add", "remove", "metaData", "protocol", "sidecar")
# Statistics parsed per pyarrow JSON call: bounds the memory of the parsed batch, whatever the checkpoint's size.
_STATS_BATCH = 65_536


def columnar_state(storage: Storage, version: int, names: list[str], *, judged: bool = True,
                   read: dict[str, bytes] | None = None) -> LogState | None:
    """The state checkpoint ``names`` (the Parquet parts of one checkpoint of ``version``) holds, read in columns; None
    when it is not regular (see the module docstring): the line reader (``log._checkpoint_state``) decides then.
    Not ``judged`` (a checkpoint only compared, whose problems nobody reads), the statistics texts are not parsed:
    a key named twice in them is a problem of the checkpoint, not a change of the state it holds. ``read``: the bytes of
    parts read already (``log._few_rows``: a checkpoint is immutable, and is read once)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from carriers.delta.adds import Adds, Columns
    from carriers.delta.log import _FIELDS, _FOLDED, ACTIONS, LOG_DIR, LogState, _plain, _Validity

    if not names or not all(n.endswith(".parquet") for n in names):
        return None
    columns = Columns()
    state = LogState(version=version, checkpoint=version, adds=Adds(columns))
    validity = _Validity(f"checkpoint {names[0]}" + (f" (+{len(names) - 1} parts)" if len(names) > 1 else ""),
                         checkpoint=True)
    removed: list[Any] = []
    for name in names:
        data = read.pop(name, None) if read else None
        if data is None:
            data = storage.read(f"{LOG_DIR}/{name}")
        if data is None:
            raise TableInconsistentError(f"checkpoint {name} vanished while reading")
        pf = pq.ParquetFile(pa.BufferReader(data))
        present = set(pf.schema_arrow.names)
        if any(n not in ACTIONS and n.lower() in _FOLDED[""] for n in present):
            return None  # a column named as an action in another case: the line reader refuses the checkpoint
        cols = [c for c in _READ if c in present]
        if not cols:
            continue
        table = pf.read(columns=cols)
        if "sidecar" in cols and table.column("sidecar").null_count < table.num_rows:
            return None  # a v2 checkpoint's file actions are in sidecar files
        for kind in ("add", "remove", "metaData", "protocol"):
            if kind in cols and not _fields_known(table.schema.field(kind).type, kind, _FIELDS, _FOLDED):
                return None
        # One action per row.
        valid = [pc.cast(pc.is_valid(table.column(c)), pa.int8()) for c in cols]
        if len(valid) > 1:
            per_row = valid[0]
            for v in valid[1:]:
                per_row = pc.add(per_row, v)
            if table.num_rows and pc.max(per_row).as_py() > 1:
                return None
        # metaData, protocol and anything else that is not a file action: a few rows, read as the line reader does.
        for kind in ("metaData", "protocol"):
            if kind in cols:
                column = table.column(kind)
                for value in column.filter(pc.is_valid(column)).to_pylist():
                    action = {kind: _plain(value, column.type)}
                    validity.see(action)
                    state.apply_other(action)
        remove = _rows(table.column("remove")) if "remove" in cols else None
        add = _rows(table.column("add")) if "add" in cols else None
        # The part as read is dropped here, its file actions kept as the copies _rows made: both held while the
        # statistics are parsed set the replay's peak memory (a 200,000-file checkpoint: ~75 MiB of Arrow buffers).
        del table
        pa.default_memory_pool().release_unused()
        if remove is not None:
            if not _plain_files(remove) or not _maps_unique(remove):
                return None
            removed.append(_field(remove, "path"))
        if add is not None:
            if not _plain_files(add) or (judged and not _statistics_regular(add)):
                return None
            pa.default_memory_pool().release_unused()  # the statistics' parsed batches, dropped
            fields = _columns(add)
            if fields is None:
                return None
            # Kept in columns (carriers/delta/adds.py): a dict is made of a row only when one is asked for.
            paths = fields["path"]
            if not columns.append(fields, paths if isinstance(paths, list) else paths.to_pylist()):
                return None  # a path added twice (across parts): the line reader words it
    if validity.metadata > 1 or validity.protocol > 1 or validity.report():
        return None
    if removed:
        gone = pa.chunked_array([c for r in removed for c in (r.chunks if isinstance(r, pa.ChunkedArray) else [r])])
        if pc.count_distinct(gone).as_py() != len(gone):
            return None  # a path removed twice
        if any(p in columns.index for p in gone.to_pylist()):
            return None  # a path added and removed: the line reader words it
    return state


def _fields_known(arrow_type: Any, kind: str, fields: dict[str, frozenset[str]],
                  folded: dict[str, dict[str, str]]) -> bool:
    """Whether action ``kind``'s struct names no field as a known one in another case, and holds no typed twin."""
    import pyarrow as pa

    if not pa.types.is_struct(arrow_type):
        return False
    names = {f.name for f in arrow_type}
    if kind == "add" and names & {"stats_parsed", "partitionValues_parsed"}:
        return False  # the two renderings of a file's statistics are compared by the line reader
    return not any(n not in fields[kind] and n.lower() in folded[kind] for n in names)


def _rows(column: Any) -> Any:
    """The non-null rows of a struct column, or None when there are none: when they are one run of rows (a
    checkpoint's adds follow its metaData and protocol, row group after row group), that run sliced out of the column
    as read — a StructArray, or a ChunkedArray of them across row groups — without copying it (a copy of a 200,000-add
    checkpoint's rows was ~45 MiB and ~10 % of its reading, ``COPY_ROWS``); else one StructArray of the rows, copied."""
    import pyarrow as pa
    import pyarrow.compute as pc

    valid = pc.is_valid(column)
    count = len(column) - column.null_count
    if count == 0:
        return None
    if not COPY_ROWS:
        first = pc.index(valid, True).as_py()
        run = column.slice(first, count)
        if run.null_count == 0:  # every row from the first valid one on, for as many rows as are valid: one run
            if not isinstance(run, pa.ChunkedArray):
                return run
            chunks = [c for c in run.chunks if len(c)]
            return chunks[0] if len(chunks) == 1 else pa.chunked_array(chunks, type=column.type)
    column = column.filter(valid)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


# Whether a checkpoint's file actions are copied out of the part as read (the code before): ATTEST_FAST=0 copies them;
# tests/delta/test_delta_checkpoint_columns.py holds the two readings to each other.
COPY_ROWS: bool = not fast.ON


def _field(rows: Any, name: str) -> Any:
    """Field ``name`` of ``rows`` (what ``_rows`` gave): a child array, or a ChunkedArray of one per chunk (no copy)."""
    import pyarrow as pa

    if isinstance(rows, pa.ChunkedArray):
        return pa.chunked_array([c.field(name) for c in rows.chunks], type=rows.type.field(name).type)
    return rows.field(name)


def _plain_files(rows: Any) -> bool:
    """File actions (add or remove) of paths none null, none with a deletion vector. That the paths are distinct is
    judged by the caller, across the checkpoint's parts (adds: the state's count of paths; removes: one count of the
    distinct paths of every part), not here a second time."""
    names = {f.name for f in rows.type}
    if "path" not in names:
        return False
    if _field(rows, "path").null_count:
        return False
    return not ("deletionVector" in names and _field(rows, "deletionVector").null_count != len(rows))


def _statistics_regular(add: Any) -> bool:
    """Every statistics text is a JSON object naming no key twice (pyarrow's JSON reader refuses one that does: the
    whole batch then goes to the line reader), on a line of its own."""
    import io

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    if "stats" not in {f.name for f in add.type}:
        return True
    stats = _field(add, "stats")
    if not pa.types.is_string(stats.type) and not pa.types.is_large_string(stats.type):
        return False
    if stats.null_count:  # (a filter keeping every row is a copy: ~25 MiB at 200,000 files)
        stats = stats.filter(pc.is_valid(stats))
    if len(stats) == 0:
        return True
    for start in range(0, len(stats), _STATS_BATCH):
        chunk = stats.slice(start, _STATS_BATCH)
        if pc.any(pc.equal(pc.utf8_length(chunk), 0)).as_py():
            return False  # an empty text is no row
        body = joined_lines(chunk)
        if body.count(b"\n") != len(chunk) or b"\r" in body:
            return False  # a line break inside would make one text two rows (found in the joined bytes, no regex)
        try:
            parsed = pj.read_json(io.BytesIO(body))
        except (pa.ArrowInvalid, UnicodeEncodeError):
            return False
        if parsed.num_rows != len(chunk):
            return False
    return True


def joined_lines(texts: Any) -> bytes:
    """The UTF-8 bytes of a string array's texts (none null), each followed by a line break: joined by pyarrow in its
    own buffers (made Python strings and joined, they cost a third of the statistics check; the same bytes,
    tests/delta/test_delta_checkpoint_columns.py)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):  # (a checkpoint's rows across row groups, not copied together: _rows)
        return b"".join(joined_lines(c) for c in texts.chunks if len(c))
    lines = pc.binary_join_element_wise(texts, pa.scalar("", texts.type), pa.scalar("\n", texts.type))
    offsets = memoryview(lines.buffers()[1]).cast("q" if pa.types.is_large_string(lines.type) else "i")
    return bytes(memoryview(lines.buffers()[2])[offsets[lines.offset]:offsets[lines.offset + len(lines)]])


def _columns(add: Any) -> dict[str, Any] | None:
    """The add rows' fields, by name in the order of the add struct: a scalar type as its pyarrow array (made Python
    values only when read, carriers/delta/adds.py), a map as dicts and any other nested type as ``log._plain`` gives
    it (both made here: a map naming a key twice is found now), a map with no entry in any row as ``EmptyMaps``;
    None when a map names a key twice (the line reader refuses the checkpoint then)."""
    import pyarrow as pa

    from carriers.delta.adds import EmptyMaps
    from carriers.delta.log import _plain

    out: dict[str, Any] = {}
    for field in add.type:
        child = _field(add, field.name)
        if child.null_count == len(child) and field.name != "path":
            continue  # null in every row: left out, as ``add.get`` reads it (None)
        if pa.types.is_map(field.type) and child.null_count == 0 and _no_entries(child):
            out[field.name] = EmptyMaps(len(child))  # no key in any row (an unpartitioned table)
        elif pa.types.is_map(field.type) and pa.types.is_string(field.type.item_type):
            values: list[Any] = []
            for pairs in child.to_pylist():
                if pairs is None:
                    values.append(None)
                    continue
                mapped = {str(k): v for k, v in pairs}
                if len(mapped) != len(pairs):
                    return None
                values.append(mapped)
            out[field.name] = values
        elif pa.types.is_nested(field.type):
            try:
                out[field.name] = [None if v is None else _plain(v, field.type) for v in child.to_pylist()]
            except TableInconsistentError:
                return None
        else:
            out[field.name] = child
    path_type = add.type.field("path").type
    if not pa.types.is_string(path_type) and not pa.types.is_large_string(path_type):
        out["path"] = [str(p) for p in _field(add, "path").to_pylist()]  # as the line reader's str(path) keys it
    return out


def _maps_unique(rows: Any) -> bool:
    """Whether no map of these rows (a remove's partition values, tags) names a key twice, as ``log._plain`` holds
    them (it refuses the checkpoint when one does)."""
    import pyarrow as pa

    from carriers.delta.log import _plain

    for field in rows.type:
        if not pa.types.is_nested(field.type):
            continue
        child = _field(rows, field.name)
        if child.null_count == len(child):
            continue
        if pa.types.is_map(field.type) and _no_entries(child):
            continue
        try:
            for v in child.to_pylist():
                if v is not None:
                    _plain(v, field.type)
        except TableInconsistentError:
            return False
    return True


def _no_entries(maps: Any) -> bool:
    """Whether no row of a map array (or of each chunk of one) holds an entry."""
    if hasattr(maps, "chunks"):
        return all(_no_entries(c) for c in maps.chunks)
    offsets = maps.offsets
    return len(maps) == 0 or offsets[len(offsets) - 1].as_py() == offsets[0].as_py()
