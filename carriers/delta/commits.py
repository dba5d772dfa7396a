"""The JSON commits of a Delta log read in columns, for the log replay of carriers/delta/log.py (issue 35.2).

The replay reads each ``_delta_log/<version>.json`` line by line with the strict reader (``log.json_lines``: the whole
file UTF-8, each line one JSON object naming no key twice, no NaN, no trailing text) and applies each add as a dict.
On a table of many files most commits are appends of plain files: a commitInfo line and adds of new paths. Such a
*regular* commit is read here with pyarrow's JSON reader and its adds kept in Arrow columns, as a regular checkpoint's
are (``adds.Columns``); the state is the same mapping (``tests/delta/test_delta_commit_columns.py`` holds the two
readers to each other). A commit is regular only when the strict reader would read the same values from it without a
problem, which is checked, not assumed — pyarrow's reader is more lenient (it reads ``NaN``, ``Infinity``, two objects
on one line, a byte-order mark, a carriage return as a line break, and skips blank lines), so before it reads a commit:

- the bytes are UTF-8 (decoded by Python, as the strict reader decodes them);
- every line starts with ``{`` and ends with ``}``, none is blank, and the line count is pyarrow's row count;
- no byte below 0x20 but the line breaks, no ``NaN``, no ``Inf`` but in ``Info``, no ``\\u`` escape anywhere (a lone
  surrogate is a string to Python and an error to pyarrow: refused twice over);

and after: every line holds one ``add`` object or one ``commitInfo`` object (no other action: a commit holding a
remove, metaData, protocol, txn, ... is read line by line), pyarrow refused no object naming a key twice (it refuses
any, nested or in arrays), and each add names the same fields, all non-null, of the types JSON gives the strict reader
exactly: ``path`` and ``stats`` strings, ``size`` and ``modificationTime`` 64-bit integers (a larger integer or a
fraction is a double to pyarrow: refused here), ``dataChange`` a boolean, ``partitionValues`` the empty object — and
``tags``, ``baseRowId``, ``defaultRowCommitVersion``, ``clusteringProvider``, ``deletionVector`` null or absent in
every add (as delta-rs writes them: left out, read as null). Any other commit is read by the strict reader, exactly
as before, which finds and words its problems. Commits of few lines are read together (``regular_adds_of``).
"""

from __future__ import annotations

from typing import Any

from attest import fast

# Bytes the strict reader may read otherwise than pyarrow's (see the module docstring): control characters but the
# line break (deleted by ``bytes.translate``: a commit that loses a byte holds one).
_CONTROLS = bytes(c for c in range(0x20) if c != 0x0A)
# The add fields a regular commit may name, each of the one Arrow type pyarrow reads the strict reader's value as.
_ADD_FIELDS = {"path": "string", "size": "int64", "modificationTime": "int64", "dataChange": "bool",
               "stats": "string", "partitionValues": "struct<>"}
# Fields a regular commit's adds may name null (delta-rs writes the first four so in every add): null in every add of
# the reading, they are left out of the columns, as a checkpoint's fields null in every row are (adds.Columns) — every
# reader of them reads an absent field as null (``add.get(name)``, ``Adds.having``), none with another default.
_NULL_FIELDS = frozenset({"tags", "baseRowId", "defaultRowCommitVersion", "clusteringProvider", "deletionVector"})
# Whether a commit's bytes are first judged ASCII (then UTF-8 without decoding them: a commit of plain paths and
# statistics is); ATTEST_FAST=0 decodes every one (tests/delta/test_delta_commit_ascii.py holds the two together).
ASCII_FIRST: bool = fast.ON


def regular_adds(data: bytes) -> tuple[dict[str, Any], list[str]] | None:
    """The adds of commit ``data`` as a checkpoint part's fields (``adds.Columns.append``: name -> pyarrow array, the
    empty ``partitionValues`` as ``EmptyMaps``, in the order of pyarrow's add struct) and their paths, when the commit
    is regular (module docstring) and adds a file; None otherwise: the strict reader decides."""
    got = regular_adds_of([data])
    return None if got is None or not got[0][1] else got[0]


def looks_regular(data: bytes) -> bool:
    """Whether every line of commit ``data`` starts as an add's or a commitInfo's does: a cheap look that keeps a
    commit that cannot be regular (a metaData, a remove, a blank line) out of a reading of small commits together,
    which it would fail. It decides nothing: the reading (``regular_adds_of``) does."""
    body = data[:-1] if data.endswith(b"\n") else data
    starts = body.count(b'\n{"add"') + body.count(b'\n{"commitInfo"')
    return starts + (body.startswith(b'{"add"') or body.startswith(b'{"commitInfo"')) == body.count(b"\n") + 1


def regular_adds_of(commits: list[bytes]) -> list[tuple[dict[str, Any], list[str]]] | None:
    """``regular_adds`` of each of ``commits``, read in one pyarrow call (one pyarrow reading costs ~0.3 ms whatever
    its size: small commits are read together), when every one is regular and one adds a file at least (a commit
    that adds none gives no fields and no paths); None otherwise: the strict reader decides for each."""
    bodies = [data[:-1] if data.endswith(b"\n") else data for data in commits]
    # Joined by line breaks: every check below holds of the whole when it holds of each commit, and only then (a
    # commit not starting with "{" or not ending with "}" breaks the "}\n{" between two).
    body = b"\n".join(bodies)
    if body[:1] != b"{" or body[-1:] != b"}" or b"\\u" in body or b"NaN" in body:
        return None
    # pyarrow reads NaN, Inf and Infinity (signed or not) as numbers; a commit names "commitInfo" and "engineInfo": an
    # "Inf" anywhere but in "Info" (no number: pyarrow refuses the letter after one) sends it to the strict reader.
    if body.count(b"Inf") != body.count(b"Info") or len(body.translate(None, _CONTROLS)) != len(body):
        return None
    breaks = body.count(b"\n")
    if body.count(b"}\n{") != breaks:  # each break between a "}" and a "{" (the three never overlap)
        return None  # a line not an object alone (blank, indented, two values, an empty commit, ...)
    if not (ASCII_FIRST and body.isascii()):  # ASCII is UTF-8: one C pass, no decoded copy of the commit made
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    import io

    import pyarrow as pa
    import pyarrow.json as pj

    try:
        table = pj.read_json(io.BytesIO(body), read_options=pj.ReadOptions(block_size=len(body) + 1))
    except (pa.ArrowException, ValueError):
        return None
    # As many rows as lines: no line read as two rows (none is blank, so none is read as none).
    if table.num_rows != breaks + 1 or not set(table.column_names) <= {"add", "commitInfo"}:
        return None
    if "add" not in table.column_names:
        return None  # no add: nothing to gain
    add = table.column("add").combine_chunks()
    if not pa.types.is_struct(add.type):
        return None
    rows = len(add) - add.null_count
    if "commitInfo" in table.column_names:
        info = table.column("commitInfo").combine_chunks()
        if not pa.types.is_struct(info.type) or rows + len(info) - info.null_count != len(add):
            return None
        import pyarrow.compute as pc

        if pc.any(pc.and_(add.is_valid(), info.is_valid())).as_py():
            return None  # a line holding both (the strict reader reports it)
    elif rows != len(add):
        return None
    if rows == 0:
        return None
    names = [f.name for f in add.type if not (f.name in _NULL_FIELDS and pa.types.is_null(f.type))]
    if "path" not in names or any(_ADD_FIELDS.get(name) != str(add.type.field(name).type) for name in names):
        return None
    from carriers.delta.adds import EmptyMaps

    out: list[tuple[dict[str, Any], list[str]]] = []
    at = 0
    for part in bodies:
        lines = part.count(b"\n") + 1
        adds = add.slice(at, lines)
        at += lines
        if adds.null_count:
            adds = adds.filter(adds.is_valid())
        fields: dict[str, Any] = {}
        for name in names if len(adds) else ():
            child = adds.field(name)
            if child.null_count:
                return None  # a field null or absent in some adds: their dicts differ in keys
            fields[name] = EmptyMaps(len(child)) if name == "partitionValues" else child
        out.append((fields, fields["path"].to_pylist() if fields else []))
    return out


def columns_with(base: Any, parts: list[tuple[dict[str, Any], list[str]]], *, owned: bool = False) -> Any:
    """``base``'s rows (``adds.Columns`` or None), then the adds of ``parts`` (what ``regular_adds`` gave for commits
    applied in order); None when a path would be held twice (added again by a commit, or twice in one: the strict
    reader applies those commits and words their problems), ``base`` unchanged then. A new ``Columns`` sharing
    ``base``'s arrays (a checkpoint's, never changed), or ``base`` itself extended when it is ``owned`` (made by this
    function for the same replay: a log alternating regular commits with others is not copied once per commit). Parts
    whose fields are the previous part's, of the same types, are put in that part (their arrays chunked together):
    readers of aligned columns read one part faster than many."""
    from carriers.delta.adds import Columns, EmptyMaps

    index: dict[str, int] = {} if base is None else base.index
    fresh: set[str] = set()
    for _, paths in parts:
        fresh.update(paths)
    # (isdisjoint on the index's keys walks the smaller side in C: no Python step per path)
    if len(fresh) != sum(len(paths) for _, paths in parts) or not index.keys().isdisjoint(fresh):
        return None
    if owned and base is not None:
        out = base
    else:
        out = Columns()
        if base is not None:
            out.index = dict(base.index)
            out.starts = list(base.starts)
            out.parts = list(base.parts)
            out.rows = base.rows
    groups: list[list[dict[str, Any]]] = []  # runs of parts of the same fields, the first with out's last part
    if out.parts:
        groups.append([out.parts[-1]])
    for fields, paths in parts:
        if not paths:
            continue  # a commit that adds no file
        out.index.update(zip(paths, range(out.rows, out.rows + len(paths)), strict=True))
        if groups and _same_fields(groups[-1][0], fields):
            groups[-1].append(fields)
        else:
            out.starts.append(out.rows)
            groups.append([fields])
        out.rows += len(paths)
    merged = [group[0] if len(group) == 1 else
              {name: EmptyMaps(sum(g[name].length for g in group)) if isinstance(column, EmptyMaps)
               else _chunked([g[name] for g in group]) for name, column in group[0].items()} for group in groups]
    out.parts[len(out.parts) - 1 if out.parts else 0:] = merged
    return out


def _same_fields(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two parts hold the same fields, each a pyarrow array (or chunked array) of one type or ``EmptyMaps``."""
    from carriers.delta.adds import EmptyMaps

    if a.keys() != b.keys():
        return False
    for name, x in a.items():
        y = b[name]
        if isinstance(x, EmptyMaps) or isinstance(y, EmptyMaps):
            if not (isinstance(x, EmptyMaps) and isinstance(y, EmptyMaps)):
                return False
        elif isinstance(x, list) or isinstance(y, list) or x.type != y.type:
            return False
    return True


def _chunked(columns: list[Any]) -> Any:
    import pyarrow as pa

    chunks = [c for column in columns for c in (column.chunks if isinstance(column, pa.ChunkedArray) else [column])]
    return pa.chunked_array(chunks, type=columns[0].type)
