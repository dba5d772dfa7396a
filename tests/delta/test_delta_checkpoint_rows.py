"""A checkpoint's file actions taken out of the part as read without a copy when they are one run of rows
(``checkpoint._rows``, docs/scale.md sixteenth pass): the same rows as the copy (``COPY_ROWS``, the code before) for
every pattern of null rows and row groups, and the same state and verdicts as the copy and the line reader on
checkpoints whose actions are in any order, across row groups of any size, regular or not."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carriers.delta import checkpoint
from carriers.delta.log import LOG_DIR, LogState

from .test_delta_checkpoint_columns import _SCHEMA, _both, _newest, _same, _table
from .test_delta_checkpoint_columns import IRREGULAR as _IRREGULAR

_TYPE = pa.struct([("path", pa.string()), ("size", pa.int64()), ("pv", pa.map_(pa.string(), pa.string()))])


def _column(rng: random.Random) -> tuple[Any, list[Any]]:
    n = rng.randint(0, 12)
    rows: list[Any] = []
    for i in range(n):
        rows.append(None if rng.random() < rng.choice((0.0, 0.3, 0.8)) else
                    {"path": f"p{i}", "size": i, "pv": [("k", str(i))] if rng.random() < 0.5 else []})
    if rng.random() < 0.5:  # one run: nulls before and after
        lead, tail = rng.randint(0, 3), rng.randint(0, 3)
        filled = [r if r is not None else {"path": "x", "size": 0, "pv": []} for r in rows]
        rows = [None] * lead + filled + [None] * tail
    cuts = sorted(rng.sample(range(len(rows) + 1), k=min(len(rows) + 1, rng.randint(1, 4))))
    bounds = [0, *cuts, len(rows)]
    chunks = [pa.array(rows[a:b], _TYPE) for a, b in itertools.pairwise(bounds) if b >= a]
    column = pa.chunked_array(chunks, type=_TYPE) if rng.random() < 0.8 else pa.array(rows, _TYPE)
    return column, [r for r in rows if r is not None]


@pytest.mark.parametrize("seed", range(200))
def test_the_rows_sliced_are_the_rows_copied(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    column, expected = _column(rng)
    monkeypatch.setattr(checkpoint, "COPY_ROWS", True)
    copied = checkpoint._rows(column)
    monkeypatch.setattr(checkpoint, "COPY_ROWS", False)
    sliced = checkpoint._rows(column)
    if not expected:
        assert copied is None and sliced is None
        return
    assert copied.to_pylist() == sliced.to_pylist() == [{**r, "pv": r["pv"]} for r in expected]
    for name in ("path", "size", "pv"):
        a, b = checkpoint._field(copied, name), checkpoint._field(sliced, name)
        assert a.to_pylist() == b.to_pylist() and a.null_count == b.null_count == 0
        if name == "pv":
            assert checkpoint._no_entries(a) == checkpoint._no_entries(b) == all(not r["pv"] for r in expected)
    assert checkpoint._plain_files(copied) and checkpoint._plain_files(sliced)
    stats_like = checkpoint._field(sliced, "path")
    assert checkpoint.joined_lines(stats_like) == checkpoint.joined_lines(checkpoint._field(copied, "path"))
    run = all(r is not None for r in _between_first_and_last(column))
    if run:  # one run of rows: nothing copied (the path column's bytes are the column's as read)
        assert _data_buffers(checkpoint._field(sliced, "path")) <= _data_buffers(column.field("path") if
                                                                                 isinstance(column, pa.Array) else
                                                                                 pa.chunked_array([c.field("path")
                                                                                                   for c in
                                                                                                   column.chunks]))


def _between_first_and_last(column: Any) -> list[Any]:
    rows = column.to_pylist()
    valid = [i for i, r in enumerate(rows) if r is not None]
    return rows[valid[0]:valid[-1] + 1] if valid else []


def _data_buffers(array: Any) -> set[int]:
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    return {b.address for c in chunks for b in c.buffers()[1:] if b is not None and b.size}


def _reorder(path: Path, order: str, group: int, edit: Any = None) -> None:
    """The newest checkpoint's rows put in ``order`` and written in row groups of ``group`` rows."""
    names = _newest(path)[1]
    cp = path / LOG_DIR / names[0]
    table = pq.read_table(cp)
    rows = table.to_pylist()
    schema = table.schema
    if edit is not None:
        result = edit(rows)
        rows, schema = result if isinstance(result, tuple) else (result, schema)
    files = [r for r in rows if r.get("add") or r.get("remove")]
    others = [r for r in rows if not (r.get("add") or r.get("remove"))]
    if order == "actions last":
        rows = files + others
    elif order == "actions between":
        rows = files[:2] + others + files[2:]
    elif order == "removes between":
        adds = [r for r in files if r.get("add")]
        removes = [r for r in files if not r.get("add")]
        rows = others + adds[:1] + removes + adds[1:]
    else:
        rows = others + files
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), cp, row_group_size=group)


def _columns_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Any]:
    monkeypatch.setattr(checkpoint, "COPY_ROWS", True)
    copied, line = _both(path)
    monkeypatch.setattr(checkpoint, "COPY_ROWS", False)
    sliced, _ = _both(path)
    return copied, sliced, line


@pytest.mark.parametrize("order", ["actions first", "actions last", "actions between", "removes between"])
@pytest.mark.parametrize("group", [1, 2, 3, 1000])
@pytest.mark.parametrize("partitioned", [True, False])
def test_a_checkpoint_in_any_order_and_row_groups_is_read_alike(tmp_path: Path, order: str, group: int,
                                                                partitioned: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = _table(tmp_path, partitioned=partitioned)
    _reorder(path, order, group)
    copied, sliced, line = _columns_both_ways(path, monkeypatch)
    assert copied is not None and sliced is not None and isinstance(line, LogState)
    _same(sliced, line)
    _same(sliced, copied)
    assert list(sliced.adds) == list(copied.adds) == list(line.adds)
    assert sliced.agrees(copied) and copied.agrees(sliced)


@pytest.mark.parametrize("kind", sorted(_IRREGULAR))
@pytest.mark.parametrize("group", [1, 3])
def test_a_checkpoint_that_is_not_regular_is_left_to_the_line_reader_in_row_groups(
        tmp_path: Path, kind: str, group: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _table(tmp_path)
    _SCHEMA[:] = [pq.read_schema(path / LOG_DIR / _newest(path)[1][0])]
    _reorder(path, "actions first", group, _IRREGULAR[kind])
    copied, sliced, _ = _columns_both_ways(path, monkeypatch)
    assert copied is None and sliced is None


@pytest.mark.parametrize("parts", [1, 3])
def test_a_checkpoint_read_in_columns_is_read_once(tmp_path: Path, parts: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytes read to count a checkpoint's rows (``log._few_rows``) are the ones read in columns: each part is read
    from storage once, and the replay finds what it found before (nothing)."""
    from carriers.delta import log as delta_log
    from carriers.storage.delta import DeltaStorage

    from .test_delta_checkpoint_columns import _rewrite

    path = _table(tmp_path)
    if parts > 1:
        _rewrite(path, lambda rows: rows, parts=parts)
    monkeypatch.setattr(delta_log, "LINE_ROWS_MAX", 1)  # read in columns, as a large checkpoint is
    storage = DeltaStorage(str(path))
    reads: list[str] = []
    real = type(storage).read

    def counted(self: Any, rel: str) -> Any:
        reads.append(rel)
        return real(self, rel)

    monkeypatch.setattr(type(storage), "read", counted)
    version, names = _newest(path)
    state, problems = delta_log.replay(storage, version)
    assert problems == [] and len(state.adds) > 1 and state.adds.on_columns()
    for name in names:
        assert reads.count(f"{LOG_DIR}/{name}") == 1, name
