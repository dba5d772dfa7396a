"""The checkpoint read in columns (carriers/delta/checkpoint.py) against the line reader (log._line_checkpoint_state).

The columnar reader is a fast path only: on a checkpoint it calls regular it must build the state the line reader
builds, and the line reader must find no problem there; on any other it must step aside (None), so the line reader finds
and words the problem as before. Checked on honest checkpoints (delta-rs's, multi-part, partitioned) and on each kind of
checkpoint the replay refuses or must read row by row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import TableInconsistentError
from carriers.delta import checkpoint
from carriers.delta.log import LOG_DIR, LogState, _checkpoints, _line_checkpoint_state, agree, replay
from carriers.storage.delta import DeltaStorage


def _table(tmp_path: Path, *, partitioned: bool = True, appends: int = 3) -> Path:
    path = tmp_path / "t"
    data = pa.table({"p": ["a", "b", "a"], "v": [1, 2, 3], "w": ["x", "y", "z"]})
    write_deltalake(str(path), data, partition_by=["p"] if partitioned else None)
    for i in range(appends):
        more = pa.table({"p": ["c", "a"], "v": [10 + i, 20 + i], "w": ["q", "r"]})
        write_deltalake(str(path), more, partition_by=["p"] if partitioned else None, mode="append")
    DeltaTable(str(path)).delete("v = 2")  # a remove tombstone in the checkpoint
    DeltaTable(str(path)).create_checkpoint()
    return path


def _newest(path: Path) -> tuple[int, list[str]]:
    names = [p.name for p in (path / LOG_DIR).iterdir()]
    found = _checkpoints(names, 10**9)
    version = max(found)
    return version, sorted(found[version].values())[0]


def _both(path: Path) -> tuple[LogState | None, LogState | Exception]:
    storage = DeltaStorage(str(path))
    version, names = _newest(path)
    fast = checkpoint.columnar_state(storage, version, names)
    try:
        line: LogState | Exception = _line_checkpoint_state(storage, version, names)
    except TableInconsistentError as exc:
        line = exc
    return fast, line


def _same(fast: LogState, line: LogState) -> None:
    assert line.invalid == [] and fast.invalid == []
    assert agree(fast.comparable(), line.comparable()) and fast.agrees(line) and line.agrees(fast)
    assert fast.comparable() == line.comparable()
    assert fast.metadata == line.metadata and fast.protocol == line.protocol and fast.twice == line.twice == {}
    for path, add in line.adds.items():  # the line reader's add, less the fields null in every row
        assert {k: v for k, v in add.items() if v is not None} == {k: v for k, v in fast.adds[path].items()
                                                                    if v is not None}


@pytest.mark.parametrize("partitioned", [True, False])
def test_a_delta_rs_checkpoint_is_read_in_columns_as_the_line_reader_reads_it(tmp_path: Path,
                                                                            partitioned: bool) -> None:
    path = _table(tmp_path, partitioned=partitioned)
    fast, line = _both(path)
    assert fast is not None and isinstance(line, LogState)
    assert len(fast.adds) == len(DeltaTable(str(path)).file_uris()) > 1
    _same(fast, line)


def _rewrite(path: Path, edit: Any, *, parts: int = 1) -> None:
    """The newest checkpoint's rows edited (``edit(rows) -> rows``), written back as one or ``parts`` Parquet parts
    with the same schema (or ``edit`` returns (rows, schema))."""
    version, names = _newest(path)
    cp = path / LOG_DIR / names[0]
    table = pq.read_table(cp)
    result = edit(table.to_pylist())
    rows, schema = result if isinstance(result, tuple) else (result, table.schema)
    for name in names:
        (path / LOG_DIR / name).unlink()
    if parts == 1:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), cp)
        return
    size = -(-len(rows) // parts)
    for i in range(parts):
        name = f"{version:020d}.checkpoint.{i + 1:010d}.{parts:010d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[i * size:(i + 1) * size], schema=schema), path / LOG_DIR / name)


def test_a_multi_part_checkpoint_is_read_in_columns_as_the_line_reader_reads_it(tmp_path: Path) -> None:
    path = _table(tmp_path)
    _rewrite(path, lambda rows: rows, parts=3)
    assert len(_newest(path)[1]) == 3
    fast, line = _both(path)
    assert fast is not None and isinstance(line, LogState)
    _same(fast, line)


def _first_add(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r["add"] for r in rows if r.get("add"))


def _stats(text: str) -> Any:
    def edit(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _first_add(rows)["stats"] = text
        return rows
    return edit


def _adds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["add"] for r in rows if r.get("add")]


def _stats_beside_null(text: str) -> Any:
    """The first add's statistics ``text``, the second add's null: the null rows are left out before the rest are
    parsed (only then; a filter keeping every row is skipped), and what remains is still every other text."""
    def edit(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first, second = _adds(rows)[:2]
        first["stats"], second["stats"] = text, None
        return rows
    return edit


def _twice_added(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*rows, {"add": dict(_first_add(rows))}]


def _added_and_removed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    add = _first_add(rows)
    return [*rows, {"remove": {"path": add["path"], "dataChange": True, "deletionTimestamp": 1}}]


def _twice_removed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    gone = next(r["remove"] for r in rows if r.get("remove"))
    return [*rows, {"remove": dict(gone)}]


def _two_actions_in_a_row(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    row = next(r for r in rows if r.get("add"))
    row["remove"] = {"path": "elsewhere.parquet", "dataChange": True, "deletionTimestamp": 1}
    return rows


def _two_metadata(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*rows, {"metaData": next(r["metaData"] for r in rows if r.get("metaData"))}]


def _map_key_twice(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    _first_add(rows)["partitionValues"] = [("p", "a"), ("p", "b")]
    return rows


def _remove_tag_twice(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    next(r["remove"] for r in rows if r.get("remove"))["tags"] = [("k", "1"), ("k", "2")]
    return rows


def _deletion_vector(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    _first_add(rows)["deletionVector"] = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f",
                                          "offset": 1, "sizeInBytes": 36, "cardinality": 1}
    return rows


def _with_field(name: str, value: Any) -> Any:
    """An add field the schema does not have (``stats_parsed``, ``Path``), set on the first add."""
    def edit(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], pa.Schema]:
        add_type = _SCHEMA[0].field("add").type
        extra = pa.field(name, pa.infer_type([value]))
        new_add = pa.struct([*add_type, extra])
        fields = [pa.field("add", new_add) if f.name == "add" else f for f in _SCHEMA[0]]
        for r in rows:
            if r.get("add"):
                r["add"][name] = None
        _first_add(rows)[name] = value
        return rows, pa.schema(fields)
    return edit


_SCHEMA: list[pa.Schema] = []


def _sidecar_row(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*rows, {"sidecar": {"path": "x.parquet", "sizeInBytes": 1, "modificationTime": 1, "tags": None}}]


IRREGULAR = {
    "an add named twice": _twice_added,
    "a path added and removed": _added_and_removed,
    "a tombstone named twice": _twice_removed,
    "two actions in one row": _two_actions_in_a_row,
    "two metaData actions": _two_metadata,
    "statistics naming a key twice": _stats('{"numRecords":1,"numRecords":2}'),
    "statistics naming a nested key twice": _stats('{"numRecords":1,"minValues":{"v":1,"v":9}}'),
    "statistics naming a key twice through an escape": _stats('{"numRecords":1,"\\u006eumRecords":2}'),
    "statistics naming a key twice beside a null one": _stats_beside_null('{"numRecords":1,"numRecords":2}'),
    "statistics naming a key twice in an array": _stats('{"numRecords":1,"x":[{"a":1,"a":2}]}'),
    "statistics naming a key twice in nested arrays": _stats('{"numRecords":1,"x":[[{"a":1,"a":2}]]}'),
    "statistics naming an object key twice": _stats('{"numRecords":1,"minValues":{"v":{}},"minValues":{}}'),
    "statistics naming a null key twice": _stats('{"numRecords":1,"nullCount":null,"nullCount":null}'),
    "statistics of two lines": _stats('{"numRecords":1}\n{"numRecords":2}'),
    "statistics holding two objects": _stats('{"numRecords":1} {"numRecords":1,"numRecords":2}'),
    "statistics holding a carriage return": _stats('{"numRecords":1,\r"x":1}'),
    "statistics of two lines by a carriage return": _stats('{"numRecords":1}\r{"numRecords":2}'),
    "a partition value named twice": _map_key_twice,
    "a tombstone's tag named twice": _remove_tag_twice,
    "a deletion vector": _deletion_vector,
    "typed statistics beside the JSON ones": _with_field("stats_parsed", {"numRecords": 5}),
    "a field named as 'path' in another case": _with_field("Path", "other.parquet"),
    "a v2 sidecar": _sidecar_row,
}


@pytest.mark.parametrize("kind", sorted(IRREGULAR))
def test_a_checkpoint_that_is_not_regular_is_left_to_the_line_reader(tmp_path: Path, kind: str) -> None:
    path = _table(tmp_path)
    _SCHEMA[:] = [pq.read_schema(path / LOG_DIR / _newest(path)[1][0])]
    _rewrite(path, IRREGULAR[kind])
    fast, line = _both(path)
    assert fast is None
    if kind == "a deletion vector":  # regular, yet read row by row: no problem
        assert isinstance(line, LogState) and line.invalid == []
    elif kind == "a v2 sidecar":  # the sidecar file is missing
        assert isinstance(line, TableInconsistentError)
    elif kind.startswith("statistics of two lines") or kind.startswith("statistics holding"):
        # Not JSON to the line reader either (malformed, not ambiguous), or JSON with a carriage return as white
        # space: no problem, and not read in columns (one text would be two lines of the bulk reading).
        assert isinstance(line, LogState)
    else:
        assert isinstance(line, TableInconsistentError) or line.invalid, line


@pytest.mark.parametrize("nulls", ["none", "one", "all"])
@pytest.mark.parametrize("parts", [1, 2])
def test_null_statistics_are_read_in_columns_as_the_line_reader_reads_them(tmp_path: Path, nulls: str,
                                                                            parts: int) -> None:
    """Statistics null in no add, in one, in every one (one part or two): read in columns as the line reader reads
    them, with no problem."""
    path = _table(tmp_path)

    def edit(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        adds = _adds(rows)
        for add in adds[:{"none": 0, "one": 1, "all": len(adds)}[nulls]]:
            add["stats"] = None
        return rows
    _rewrite(path, edit, parts=parts)
    fast, line = _both(path)
    assert fast is not None and isinstance(line, LogState)
    _same(fast, line)
    stats = [add.get("stats") for add in line.adds.values()]
    assert (None in stats) == (nulls != "none") and any(s is not None for s in stats) == (nulls != "all")


def test_statistics_that_differ_only_in_spelling_agree(tmp_path: Path) -> None:
    """``agrees`` compares statistics by their JSON value where the texts differ (as ``agree`` of ``comparable``)."""
    path = _table(tmp_path)
    fast, line = _both(path)
    assert fast is not None and isinstance(line, LogState)
    first = next(iter(line.adds))
    line.adds[first] = {**line.adds[first], "stats": json.dumps(json.loads(line.adds[first]["stats"]), indent=1)}
    assert fast.agrees(line) and agree(fast.comparable(), line.comparable())
    line.adds[first] = {**line.adds[first], "stats": '{"numRecords":99}'}
    assert not fast.agrees(line) and not agree(fast.comparable(), line.comparable())
    line.adds[first] = {**line.adds[first], "stats": None}  # absent on one side: not compared
    assert fast.agrees(line) and agree(fast.comparable(), line.comparable())
    line.adds[first] = {**line.adds[first], "size": -1}
    assert not fast.agrees(line) and not agree(fast.comparable(), line.comparable())


def test_the_replay_of_a_regular_checkpoint_finds_nothing_and_matches_the_engine(tmp_path: Path) -> None:
    path = _table(tmp_path)
    storage = DeltaStorage(str(path))
    state, problems = replay(storage, int(DeltaTable(str(path)).version()))
    assert problems == []
    engine = {str(r["path"]) for r in pa.table(DeltaTable(str(path)).get_add_actions()).to_pylist()}
    assert set(state.adds) == engine


def test_joined_lines_are_the_texts_joined_in_python() -> None:
    """The statistics check's bytes (checkpoint.joined_lines) are the texts made Python strings and joined."""
    import random

    import pyarrow as pa

    from carriers.delta.checkpoint import joined_lines

    rng = random.Random(35)
    alphabet = ['a', '"', "\\", "\n", "\r", " ", "é", "日", "\u2028", "\U0001f600", "{", "}", ":", ","]
    for kind in (pa.string(), pa.large_string()):
        for _ in range(200):
            texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 9))]
            array = pa.array(texts, kind)
            start = rng.randint(0, len(texts) - 1)
            for part in (array, array.slice(start), array.slice(start, 1)):
                assert joined_lines(part) == "".join(t + "\n" for t in part.to_pylist()).encode("utf-8")
