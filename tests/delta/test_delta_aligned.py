"""A replay's adds read in the order they are held, without a look-up per path (issue 35.2, docs/scale.md sixteenth
pass): ``Adds.in_order`` / ``same_order`` / ``same_order_as`` give what ``Adds.locate`` gives (rows, live flags, every
field's values and Arrow column) when the paths are the mapping's own in its order, and None otherwise; the comparison
of two replays (``LogState.agrees``) and the carrier's listing (``ALIGNED_LISTING``) give the same verdicts, files,
views and problems either way, and the aligned reading is counted, so the slow path is not compared with itself."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from carriers.delta import adds as delta_adds
from carriers.delta import carrier as delta_carrier
from carriers.delta import columns
from carriers.delta import log as delta_log
from carriers.delta.adds import MISSING, Adds, Located
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.commits import columns_with
from carriers.delta.log import LogState, agree

from .test_delta_agrees_arrow import _mutate, _rows, _state
from .test_delta_bulk_views import _table

_FIELDS = ("path", "size", "modificationTime", "dataChange", "stats", "partitionValues", "deletionVector",
           "baseRowId", "tags")


def _same_located(got: Located, want: Located) -> None:
    assert got.rows == want.rows and got.live == want.live
    for name in _FIELDS:
        assert got.values(name) == want.values(name), name
        assert got.values(name, MISSING) == want.values(name, MISSING), name
        assert got.holds(name) == want.holds(name), name
        mine, theirs = got.arrow(name), want.arrow(name)
        assert (mine is None) == (theirs is None) and (mine is None or mine.to_pylist() == theirs.to_pylist())


def _extended(state: LogState, n: int, start: int) -> LogState:
    """``state`` with a regular commit's ``n`` adds appended to its columns, as the replay appends them."""
    rows = _rows(start + n)[start:]
    fields = {"path": pa.array([r["path"] for r in rows]), "size": pa.array([r["size"] for r in rows], pa.int64()),
              "modificationTime": pa.array([r["modificationTime"] for r in rows], pa.int64()),
              "dataChange": pa.array([True] * n), "stats": pa.array([r["stats"] for r in rows]),
              "partitionValues": delta_adds.EmptyMaps(n)}
    base = state.adds.on_columns()
    out = columns_with(None if base is False else base, [(fields, [r["path"] for r in rows])])
    assert out is not None
    return LogState(version=2, adds=Adds(out), metadata=state.metadata, protocol=state.protocol)


@pytest.mark.parametrize("seed", range(40))
def test_the_adds_in_order_are_located_as_by_path(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice((0, 1, 3, 25))
    state = _state(_rows(n))
    if seed % 3 == 1:
        state = _extended(state, rng.choice((1, 4)), n)  # one part, the commits' arrays chunked onto it
    what = seed % 5
    paths = list(state.adds)
    if what == 1 and paths:
        state.adds[paths[0]] = {"path": paths[0], "size": 1}  # an add on top: located by path
    elif what == 2 and paths:
        del state.adds[paths[-1]]  # a path removed: located by path
    expected = state.adds.locate(list(state.adds))
    ordered = state.adds.in_order()
    base = state.adds._base
    assert base is not None
    if (what in (1, 2) and paths) or len(base.parts) != 1:  # (no row in the checkpoint: the commit a part of its own)
        assert ordered is None
    else:
        assert ordered is not None
        _same_located(ordered, expected)
    # delta-rs's paths: the same in order, or otherwise
    engine = list(state.adds)
    if seed % 4 == 1 and len(engine) > 1:
        engine = engine[::-1]
    elif seed % 4 == 2 and engine:
        engine = engine[:-1]
    elif seed % 4 == 3:
        engine = [*engine, "d/not-there.parquet"]
    got = state.adds.same_order(engine)
    if got is None:
        assert ordered is None or engine != list(state.adds)
    else:
        assert engine == list(state.adds) and set(engine) == state.adds.paths()
        _same_located(got, state.adds.locate(engine))


def test_two_parts_are_located_by_path() -> None:
    state = _state(_rows(4))
    base = state.adds.on_columns()
    assert base
    fields = {"path": pa.array(["x/a.parquet"]), "size": pa.array([1], pa.int32())}  # another type: a part of its own
    out = columns_with(base, [(fields, ["x/a.parquet"])])
    assert out is not None and len(out.parts) == 2
    assert Adds(out).in_order() is None and Adds(out).same_order(list(Adds(out))) is None


@pytest.mark.parametrize("seed", range(60))
def test_two_replays_compared_in_order_agree_as_by_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``agrees`` with the states read in order (``same_order_as``) and with every path looked up give the same
    verdict, and the reference's (``agree`` of ``comparable()``)."""
    ran: list[bool] = []
    real = Adds.same_order_as

    def counted(self: Adds, other: Adds) -> Any:
        got = real(self, other)
        ran.append(got is not None)
        return got

    rng = random.Random(seed)
    rows = _rows(rng.choice((0, 1, 5, 40)))
    other, types = _mutate(rng, rows)
    a, b = _state(rows), _state(other, types)
    if seed % 3 == 2:
        a, b = _extended(a, 3, len(rows)), _extended(b, 3, len(rows))
    reference = (agree(a.comparable(), b.comparable()), agree(b.comparable(), a.comparable()))
    with monkeypatch.context() as m:
        m.setattr(Adds, "same_order_as", counted)
        fast = (a.agrees(b), b.agrees(a))
    with monkeypatch.context() as m:
        m.setattr(Adds, "same_order_as", lambda self, other: None)
        slow = (a.agrees(b), b.agrees(a))
    assert fast == slow == reference
    one_part = a.adds.in_order() is not None and b.adds.in_order() is not None  # (a type changed: two parts)
    if len(rows) > 1 and one_part and [r["path"] for r in rows] == [r["path"] for r in other]:
        assert any(ran), "the comparison in order did not run"
    if [r["path"] for r in rows] != [r["path"] for r in other]:
        assert not any(ran)  # other paths, or the same in another order: looked up by path


def test_equal_paths_in_another_order_are_not_in_order() -> None:
    rows = _rows(6)
    a, b = _state(rows), _state(rows[::-1])
    assert a.adds.same_order_as(b.adds) is None and a.agrees(b) and b.agrees(a)
    renamed = [dict(r) for r in rows]
    renamed[2]["path"] += "x"
    assert a.adds.same_order_as(_state(renamed).adds) is None and not a.agrees(_state(renamed))


def _live(path: Path, aligned: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """The latest version as the carrier lists it, with delta-rs's paths located in order or by path; how often the
    order was found."""
    found: list[int] = []
    real = Adds.same_order

    def counted(self: Adds, paths: Any) -> Any:
        got = real(self, paths)
        found.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(delta_log, "LINE_ROWS_MAX", 1)  # the checkpoint read in columns, as a large one is
        m.setattr(delta_carrier, "ALIGNED_LISTING", aligned)
        m.setattr(Adds, "same_order", counted)
        live = DeltaCarrier(str(path)).live()
    assert live is not None
    return (live.files, dict(live.view.files), live.view.table, [p.to_json() for p in live.problems],
            live.notes), sum(found)


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    slow, none = _live(path, False, monkeypatch)
    fast, ran = _live(path, True, monkeypatch)
    assert none == 0 and fast == slow
    return fast, ran


@pytest.mark.parametrize("after", [0, 2])
def test_the_listing_in_order_is_the_listing_by_path(tmp_path: Path, after: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _table(path, ["part"], commits=4)
    DeltaTable(str(path)).create_checkpoint()
    _table(path, ["part"], commits=after)
    live, ran = _same(path, monkeypatch)
    assert len(live[0]) == 4 + after and not live[3]
    if not after:
        assert ran == 1  # delta-rs lists the checkpoint's adds in its order


@pytest.mark.parametrize("change", ["reversed", "dropped", "doubled", "other", "sizes"])
def test_delta_rs_listing_otherwise_is_found_alike(tmp_path: Path, change: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """delta-rs's paths other than the log's in its order (as a forged or misread log would give them): the same
    problems either way (the order looked for is not found, or found with the other fields compared as before)."""
    path = tmp_path / "t"
    _table(path, commits=4)
    DeltaTable(str(path)).create_checkpoint()
    real = columns.add_columns

    def changed(dt: Any) -> Any:
        adds = real(dt)
        if change == "reversed":
            adds.paths = adds.paths[::-1]
        elif change == "dropped":
            adds.paths = [*adds.paths[:-1], adds.paths[0]]
        elif change == "doubled":
            adds.paths = [adds.paths[0], *adds.paths[:-1]]
        elif change == "other":
            adds.paths = [*adds.paths[:-1], "elsewhere.parquet"]
        else:
            adds.sizes = [s + 1 if i == 1 else s for i, s in enumerate(adds.sizes)]
        return adds

    monkeypatch.setattr(delta_carrier, "add_columns", changed)
    live, ran = _same(path, monkeypatch)
    assert live[3], "a problem is found"
    assert ran == (1 if change == "sizes" else 0)
    if change == "sizes":
        assert [p["message"].startswith("delta-rs and the log disagree on the size of") for p in live[3]] == [True]
    if change == "other":
        assert any("disagree on the live files" in p["message"] for p in live[3])
