"""``LogState.agrees`` compares two replays' adds in Arrow (``log._arrow_differ``, issue 35.2) where both hold a field
as one Arrow column of one integer or string type; held here to the Python-list comparison it replaces
(``ARROW_AGREES`` off) and to ``agree`` of ``comparable()`` (the dict-per-file reference), on random pairs of states
that differ in one way or several: a size changed or null on one side, a modification time changed or null, statistics
respelled (equal as JSON), changed, null on one side or not JSON, a path renamed (as many paths either side), the
paths in another order, another integer type on one side, adds put on top or removed after the columns, an empty
state. That the Arrow comparison ran is counted, so the lists are not compared with themselves."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest

from carriers.delta import log as delta_log
from carriers.delta.adds import Adds, Columns
from carriers.delta.checkpoint import _columns
from carriers.delta.log import LogState, agree

_TYPES = {"path": pa.string(), "size": pa.int64(), "modificationTime": pa.int64(), "dataChange": pa.bool_(),
          "stats": pa.string(), "partitionValues": pa.map_(pa.string(), pa.string())}


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"path": f"d/part-{i:05d}.parquet", "size": 10 + i, "modificationTime": 1_700_000_000_000 + i,
             "dataChange": True, "stats": json.dumps({"numRecords": 1, "minValues": {"id": i}}, separators=(",", ":")),
             "partitionValues": []} for i in range(n)]


def _state(rows: list[dict[str, Any]], types: dict[str, pa.DataType] | None = None) -> LogState:
    """A state whose adds are one checkpoint part's columns, as checkpoint.columnar_state keeps them."""
    struct = pa.array(rows, pa.struct(list({**_TYPES, **(types or {})}.items())))
    fields = _columns(struct)
    assert fields is not None
    columns = Columns()
    paths = fields["path"]
    assert columns.append(fields, paths if isinstance(paths, list) else paths.to_pylist())
    return LogState(version=1, adds=Adds(columns), metadata={"schemaString": "{}"}, protocol={"minReaderVersion": 1})


def _mutate(rng: random.Random, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, pa.DataType]]:
    rows = [dict(r) for r in rows]
    types: dict[str, pa.DataType] = {}
    for _ in range(rng.randint(0, 3)):
        if not rows:
            break
        r = rng.choice(rows)
        what = rng.randrange(11)
        if what == 0:
            r["size"] += 1
        elif what == 1:
            r["size"] = None
        elif what == 2:
            r["modificationTime"] += rng.choice((1, -1))
        elif what == 3:
            r["modificationTime"] = None
        elif what == 4:
            r["stats"] = json.dumps(json.loads(r["stats"]), indent=1)  # the same JSON, spelt otherwise
        elif what == 5:
            r["stats"] = '{"numRecords":2}'
        elif what == 6:
            r["stats"] = None
        elif what == 7:
            r["stats"] = "not json"
        elif what == 8:
            r["path"] += ".renamed"
        elif what == 9:
            rng.shuffle(rows)
        else:
            types["size"] = pa.int32()  # another type: compared as Python values
    return rows, types


def _agrees_both_ways(a: LogState, b: LogState) -> tuple[bool, bool]:
    delta_log.ARROW_AGREES = True
    fast = (a.agrees(b), b.agrees(a))
    delta_log.ARROW_AGREES = False
    slow = (a.agrees(b), b.agrees(a))
    delta_log.ARROW_AGREES = True
    assert fast == slow
    return fast


@pytest.mark.parametrize("seed", range(60))
def test_the_arrow_comparison_agrees_with_the_lists_and_the_reference(seed: int,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delta_log, "ARROW_AGREES", True)
    calls: list[Any] = []
    real = delta_log._arrow_differ

    def counted(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        calls.append(got)
        return got

    monkeypatch.setattr(delta_log, "_arrow_differ", counted)
    rng = random.Random(seed)
    base = _rows(rng.choice((0, 1, 5, 40)))
    other, types = _mutate(rng, base)
    a, b = _state(base), _state(other, types)
    if seed % 4 == 3 and base:  # adds on top of the columns, and a removal: compared as lists where they are
        path = base[0]["path"]
        a.adds[path] = {**base[0], "partitionValues": {}}
        b.adds[path] = {**base[0], "partitionValues": {}, "size": base[0]["size"] + (seed % 8 == 7)}
    if seed % 5 == 4 and len(base) > 1:
        del a.adds[base[1]["path"]]
    reference = agree(a.comparable(), b.comparable())
    assert _agrees_both_ways(a, b) == (reference, agree(b.comparable(), a.comparable()))
    if seed % 4 != 3 and len(base) > 1 and a.adds.paths() == b.adds.paths():
        assert any(c is not None for c in calls), "the Arrow comparison did not run"


def test_each_difference_is_found_in_arrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of difference by hand: the verdict of the lists, and the Arrow comparison ran for it."""
    monkeypatch.setattr(delta_log, "ARROW_AGREES", True)
    rows = _rows(30)
    cases: list[tuple[str, Any, bool]] = [
        ("size", 11, False), ("size", None, False), ("modificationTime", 1, False),
        ("modificationTime", None, True), ("stats", json.dumps(json.loads(rows[7]["stats"]), indent=2), True),
        ("stats", '{"numRecords":7}', False), ("stats", None, True), ("stats", "{", False)]
    for key, value, same in cases:
        other = [dict(r) for r in rows]
        other[7][key] = value
        a, b = _state(rows), _state(other)
        x, y = a.adds.locate(list(a.adds)), b.adds.locate(list(a.adds))
        assert delta_log._arrow_differ(x, y, key, nulls_differ=key == "size") is not None
        assert _agrees_both_ways(a, b) == (same, same), (key, value)
        assert agree(a.comparable(), b.comparable()) is same


def test_a_string_column_that_is_not_utf8_is_left_to_the_lists() -> None:
    class _Bad:
        def arrow(self, name: str) -> Any:
            return pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(b"\x00\x00\x00\x00\x01\x00\x00\x00"),
                                                          pa.py_buffer(b"\xff")])

    rows = _rows(3)
    a, b = _state(rows), _state(rows)
    x, y = a.adds.locate(list(a.adds)), b.adds.locate(list(a.adds))
    assert delta_log._arrow_differ(x, y, "stats", nulls_differ=False) is False
    assert delta_log._arrow_differ(_Bad(), _Bad(), "stats", nulls_differ=False) is None


@pytest.mark.parametrize("order", ["same", "reversed", "shuffled", "fewer", "one_missing"])
def test_a_located_column_in_order_is_the_column_itself(order: str) -> None:
    """``Located.arrow`` gives the part's own column when the paths are its rows in order (no copy: the cross-check's
    peak memory), else the rows taken: the same values either way."""
    state = _state(_rows(50))
    paths = list(state.adds)
    if order == "reversed":
        paths = paths[::-1]
    elif order == "shuffled":
        random.Random(3).shuffle(paths)
    elif order == "fewer":
        paths = paths[:-1]
    elif order == "one_missing":
        paths[7] = "d/not-there.parquet"
    located = state.adds.locate(paths)
    base = state.adds._base
    assert base is not None
    for key in ("size", "stats", "modificationTime"):
        got = located.arrow(key)
        if order == "one_missing":
            assert got is None  # a path not live: read as values
            continue
        assert got.to_pylist() == located.values(key) == [state.adds[p][key] for p in paths]
        assert (got is base.parts[0][key]) == (order == "same")
