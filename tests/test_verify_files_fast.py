"""The files level's comparisons in bulk (attest/verify/table.py, issue 35.2) held to the set comparisons they
replace: the manifest's (path, hash) list against the sidecar's (``_same_pairs``: in order first, as sets otherwise),
and the missing / unattested / size verdicts when the live and attested paths are the same (sorted once) or not."""

from __future__ import annotations

import random
from typing import Any

import pytest

from attest.errors import Code
from attest.tables import DataFile, FileIdentity
from attest.verify import table as verify_table
from attest.verify.report import Report
from attest.verify.table import _same_pairs


def _reference(outputs: list[Any], files: list[FileIdentity]) -> bool:
    return {(o.get("path"), o.get("hash")) for o in outputs} == {(f.path, f.hash) for f in files}


def _files(n: int) -> list[FileIdentity]:
    return [FileIdentity(path=f"d/p{i:04d}.parquet", size=i, hash=f"{i:064x}") for i in range(n)]


@pytest.mark.parametrize("seed", range(80))
def test_same_pairs_is_the_set_comparison(seed: int) -> None:
    rng = random.Random(seed)
    files = _files(rng.choice((0, 1, 3, 12)))
    outputs: list[Any] = [{"hash": f.hash, "path": f.path} for f in files]
    for _ in range(rng.randint(0, 2)):
        what = rng.randrange(8)
        if what == 0 and outputs:
            rng.shuffle(outputs)
        elif what == 1 and outputs:
            outputs[rng.randrange(len(outputs))] = {"hash": "0" * 64, "path": files[0].path}
        elif what == 2 and outputs:
            outputs[rng.randrange(len(outputs))] = {"path": "elsewhere", "hash": files[0].hash}
        elif what == 3 and outputs:
            outputs.append(dict(outputs[0]))  # a pair twice: one more entry, the same set
        elif what == 4 and outputs:
            del outputs[rng.randrange(len(outputs))]
        elif what == 5 and outputs:
            outputs[rng.randrange(len(outputs))] = {"hash": files[0].hash}  # no path
        elif what == 6 and files:
            files = [*files, files[0]]  # the sidecar naming a file twice
        elif what == 7 and outputs:
            outputs[rng.randrange(len(outputs))] = {"hash": files[0].hash, "path": files[0].path, "x": 1}
    assert _same_pairs(outputs, files) is _reference(outputs, files)


def test_an_output_that_is_not_a_dict_raises_as_before() -> None:
    files = _files(2)
    outputs: list[Any] = [{"hash": files[0].hash, "path": files[0].path}, "not a dict"]
    with pytest.raises(AttributeError):
        _reference(outputs, files)
    with pytest.raises(AttributeError):
        _same_pairs(outputs, files)


class _State:
    table_format = "delta"
    version = "3"


@pytest.mark.parametrize("bulk", [True, False])
@pytest.mark.parametrize("seed", range(30))
def test_the_file_verdicts_are_the_set_verdicts(seed: int, bulk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The errors of the files level's comparison (missing, unattested, sizes: codes, paths, order) and the paths
    looked at next, with the paths the same on both sides or not, against the set comparisons written out; the sizes
    compared a list at a time (``_sizes_agree``) or file by file."""
    monkeypatch.setattr(verify_table, "SIZES_IN_BULK", bulk)
    rng = random.Random(seed)
    attested = _files(rng.randint(0, 8))
    live = [DataFile(path=f.path, size=f.size, location=f"/t/{f.path}") for f in attested]
    rng.shuffle(live)
    for _ in range(rng.randint(0, 3)):
        what = rng.randrange(3)
        if what == 0 and live:
            live.pop(rng.randrange(len(live)))
        elif what == 1:
            live.append(DataFile(path=f"d/new{rng.randrange(9)}.parquet", size=1, location="/t/x"))
        elif what == 2 and live:
            i = rng.randrange(len(live))
            live[i] = DataFile(path=live[i].path, size=live[i].size + 1, location=live[i].location)
    report = Report(subject="t", table_format="delta", version="3")
    state: Any = _State()
    # The set comparisons verify_state made before.
    by_path = {f.path: f for f in (attested if seed % 2 else rng.sample(attested, len(attested)))}
    live_map = {f.path: f for f in live}
    expected = [(Code.FILE_MISSING, p) for p in sorted(set(by_path) - set(live_map))]
    expected += [(Code.FILE_UNATTESTED, p) for p in sorted(set(live_map) - set(by_path))]
    expected += [(Code.SIZE_MISMATCH, p) for p in sorted(set(live_map) & set(by_path))
                 if by_path[p].size != live_map[p].size]
    got = verify_table._compare_files(state, report, by_path, live_map)
    assert [(e.code, e.path) for e in report.errors] == expected
    assert got == sorted(set(live_map) & set(by_path))


class _Looking:
    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored

    def stored_files(self, files: list[DataFile]) -> dict[str, Any]:
        return self.stored

    def removed_by_cleanup(self, version: str, gone: list[str]) -> str:
        return f"VACUUM removed {len(gone)}"


@pytest.mark.parametrize("seed", range(60))
def test_the_storage_look_in_bulk_is_the_loop(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """_check_stored with the sizes compared a list at a time (``_stored_as_logged``) and file by file: the same
    errors (codes, paths, words, order), whatever storage holds (a size, another size, missing, not there at all, a
    FIFO, a size of another type) and whatever the log records (a size, -1: none)."""
    rng = random.Random(seed)
    files = [DataFile(path=f"d/p{i}", size=rng.choice([i, 0, -1]) if rng.random() < 0.2 else i, location=f"/t/d/p{i}")
             for i in range(rng.randint(0, 12))]
    stored: dict[str, Any] = {f.path: max(f.size, 0) if f.size < 0 and rng.random() < 0.5 else f.size
                              for f in files}
    for f in files:
        what = rng.random()
        if what < 0.05:
            stored[f.path] = "missing"
        elif what < 0.08:
            del stored[f.path]
        elif what < 0.12:
            stored[f.path] = "a FIFO"
        elif what < 0.16:
            stored[f.path] = f.size + 1
        elif what < 0.2:
            stored[f.path] = float(f.size) if rng.random() < 0.5 else bool(f.size)
    found = []
    for bulk in (False, True):
        monkeypatch.setattr(verify_table, "SIZES_IN_BULK", bulk)
        report = Report(subject="t", table_format="delta", version="3")
        verify_table._check_stored(_State(), report, _Looking(stored), files)  # type: ignore[arg-type]
        found.append([(e.code, e.path, e.message) for e in report.errors])
    assert found[0] == found[1]


def test_the_bulk_storage_comparison_runs() -> None:
    files = _files(50)
    live = [DataFile(path=f.path, size=f.size, location=f"/t/{f.path}") for f in files]
    assert verify_table._stored_as_logged({f.path: f.size for f in live}, live)
    assert not verify_table._stored_as_logged({f.path: f.size for f in live[1:]}, live)
    assert not verify_table._stored_as_logged({**{f.path: f.size for f in live}, live[3].path: 4}, live)


def test_the_sizes_in_bulk() -> None:
    files = _files(50)
    live = {f.path: DataFile(path=f.path, size=f.size, location=f"/t/{f.path}") for f in files}
    attested: dict[str, Any] = {f.path: f for f in files}
    common = sorted(live)
    assert verify_table._sizes_agree(common, attested, live)
    live[files[7].path] = DataFile(path=files[7].path, size=99, location="/t/x")
    assert not verify_table._sizes_agree(common, attested, live)
    live[files[7].path] = DataFile(path=files[7].path, size=float(files[7].size), location="/t/x")  # type: ignore[arg-type]
    assert not verify_table._sizes_agree(common, attested, live)  # another type: left to the loop
    assert not verify_table._sizes_agree(common, {**attested, files[3].path: {"hash": "0" * 64}}, live)
