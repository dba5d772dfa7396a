"""The file views made in bulk (carriers/delta/carrier.py ``_bulk_views``) are the per-file loop's: the same files,
view digests, times, problems and notes, in the same order, for every table the bulk path takes; tables it must not
take (a path that is not plain, statistics to look into) go through the loop (docs/scale.md, eighth pass)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta import carrier as delta_carrier
from carriers.delta import columns
from carriers.delta.carrier import DeltaCarrier

from .test_delta_columns import _reference_views


def _live(path: Path, bulk: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """What the carrier makes of the latest version with the bulk path on or off, and how often it ran."""
    calls: list[int] = []
    real = delta_carrier._bulk_views

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        out = real(*args, **kwargs)
        assert args[3] == []  # the statistics' texts released once hashed (the listing's peak memory)
        return out

    with monkeypatch.context() as m:
        m.setattr(delta_carrier, "BULK_VIEWS", bulk)
        m.setattr(delta_carrier, "_bulk_views", counted)
        live = DeltaCarrier(str(path)).live()
    assert live is not None
    return (live.files, dict(live.view.files), live.view.table, [p.to_json() for p in live.problems],
            live.notes, list(live.view.files)), len(calls)


def _same(path: Path, monkeypatch: pytest.MonkeyPatch, *, taken: bool) -> Any:
    loop, _ = _live(path, False, monkeypatch)
    bulk, ran = _live(path, True, monkeypatch)
    assert ran == (1 if taken else 0)
    assert bulk == loop
    return bulk


def _edit_commit(path: Path, version: int, old: str, new: str) -> None:
    commit = path / "_delta_log" / f"{version:020d}.json"
    text = commit.read_text()
    assert old in text
    commit.write_text(text.replace(old, new, 1))


def _table(path: Path, partition_by: list[str] | None = None, *, commits: int = 3, rows: int = 3) -> None:
    for c in range(commits):
        write_deltalake(str(path), pa.table({"i": pa.array(range(c * rows, c * rows + rows), pa.int64()),
                                             "s": [f"v{c}"] * rows, "part": [f"p{c % 2}"] * rows,
                                             "ipart": pa.array([c % 3] * rows, pa.int32())}),
                        mode="append", partition_by=partition_by)


@pytest.mark.parametrize("partition_by", [None, ["part"], ["ipart"], ["part", "ipart"]])
def test_bulk_views_are_the_loops_views(tmp_path: Path, partition_by: list[str] | None,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _table(path, partition_by)
    live = _same(path, monkeypatch, taken=True)
    assert len(live[0]) == 3 and not live[3]
    assert {p: d for p, d in live[1].items()} == _reference_views(path)  # and the views as built before the columns


def test_bulk_views_with_a_checkpoint_and_commits_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _table(path, ["part"], commits=5)
    DeltaTable(str(path)).create_checkpoint()
    _table(path, ["part"], commits=2)
    DeltaTable(str(path)).delete("i = 1")  # a file rewritten: removed and added after the checkpoint
    live = _same(path, monkeypatch, taken=True)
    assert live[1] == _reference_views(path)


def test_an_empty_string_partition_value_is_reported_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _table(path, ["part"])
    _edit_commit(path, 1, '"part":"p1"', '"part":""')  # delta-rs reads null, Spark ''
    live = _same(path, monkeypatch, taken=True)
    assert any("empty partition value" in p["message"] for p in live[3])


def test_row_tracking_ids_in_the_log_are_in_the_view_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _table(path)
    _edit_commit(path, 1, '"baseRowId":null,"defaultRowCommitVersion":null',
                 '"baseRowId":7,"defaultRowCommitVersion":1')
    _edit_commit(path, 2, '"baseRowId":null', '"baseRowId":9')
    live = _same(path, monkeypatch, taken=True)
    assert len(set(live[1].values())) == 3 and not any("twice" in p["message"] for p in live[3])


def test_a_size_delta_rs_reads_otherwise_is_reported_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _table(path, commits=4)
    real = columns.add_columns

    def bumped(dt: Any) -> Any:
        adds = real(dt)
        adds.sizes = [s + 1 if i in (0, 2) else s for i, s in enumerate(adds.sizes)]
        return adds

    monkeypatch.setattr(delta_carrier, "add_columns", bumped)
    live = _same(path, monkeypatch, taken=True)
    assert [p["message"].startswith("delta-rs and the log disagree on the size of") for p in live[3]] == [True, True]


def test_a_path_that_is_not_plain_goes_through_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": [1, 2], "part": ["a b", "c"]}), partition_by=["part"])
    _same(path, monkeypatch, taken=False)


def test_statistics_to_look_into_go_through_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": pa.array([None, None], pa.int64())}))  # no bounds: a gap
    _same(path, monkeypatch, taken=False)
    stamped = tmp_path / "ts"  # a timestamp column: its statistics are looked into
    write_deltalake(str(stamped), pa.table({"t": pa.array([1, 2], pa.timestamp("us", "UTC"))}))
    _same(stamped, monkeypatch, taken=False)


class _Engine:
    """delta-rs's table as _cross_check_uris reads it: its URI and the locations it gives."""

    def __init__(self, uri: str, uris: list[str]) -> None:
        self.table_uri, self.uris = uri, uris

    def file_uris(self) -> list[str]:
        return self.uris


def _uris_problems_before(carrier: DeltaCarrier, dt: Any, files: list[Any]) -> list[str]:
    """_cross_check_uris as it was: every location through engine_relative, the two lists sorted and compared."""
    from carriers.delta.rows import engine_relative

    ours = sorted(f.path for f in files if f.kind == "data")
    roots = carrier._engine_roots(dt)
    engine = [engine_relative(roots, uri) for uri in dt.file_uris()]
    return [] if sorted(engine) == ours else [str(sorted(set(engine) ^ set(ours))[:3])]


def test_the_uri_cross_check_is_the_sorted_comparison(tmp_path: Path) -> None:
    from attest.tables import DataFile

    path = tmp_path / "t"
    _table(path, commits=1)
    carrier = DeltaCarrier(str(path))
    root = str(carrier.storage.local_root)
    names = ["a", "b/c", "d%20e", "f g"]
    files = [DataFile(path=n, size=1) for n in names] + [DataFile(path="dv.bin", size=1, kind="deletion_vector")]
    cases = [
        [f"{root}/{n}" for n in reversed(names)],  # the same, another order: no problem
        [f"{root}/{n}" for n in names[:3]],  # one fewer
        [f"{root}/{n}" for n in [*names[:3], "a"]],  # one named twice instead of another
        [f"{root}/{n}" for n in [*names, "a"]],  # one named twice more
        [f"file://{root}/{n}" for n in names],  # as URIs: through engine_relative
        [f"{root}/{n}" for n in names[:3]] + [f"/elsewhere/{names[3]}"],  # one under no root
        [f"{root}/{n}" for n in names] + [f"{root}/dv.bin"],
    ]
    found = []
    for uris in cases:
        dt = _Engine(f"file://{root}", uris)
        problems: list[Any] = []
        carrier._cross_check_uris(dt, files, problems)  # type: ignore[arg-type]
        expected = _uris_problems_before(carrier, dt, files)
        assert [p.message.rpartition("name: ")[2] for p in problems] == expected, uris
        found.append(bool(problems))
    assert found == [False, True, True, True, False, True, True]
    twice = [*files, DataFile(path="a", size=1)]  # ours naming a path twice (never made by the carrier)
    for uris in ([f"{root}/{n}" for n in [*names, "a"]], [f"{root}/{n}" for n in [*names, "b/c"]]):
        dt = _Engine(f"file://{root}", uris)
        problems = []
        carrier._cross_check_uris(dt, twice, problems)  # type: ignore[arg-type]
        assert [p.message.rpartition("name: ")[2] for p in problems] == _uris_problems_before(carrier, dt, twice)
