"""The statistics of a Delta log's JSON commits checked in bulk (carriers/delta/log.py ``_BulkStatistics``, issue 35.2):
pyarrow's JSON reader vouches for a batch of statistics texts only when none names a key twice, and anything it does
not vouch for is judged one text at a time as before — the problems found, and their words and order, are the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attest.fast import jsonscan
from carriers.delta import log as delta_log
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import replay, statistics_unique

# Every spelling of a key named twice that a parser may read one of: plain, nested, in arrays, null, escaped (a
# character, a surrogate pair against the character itself, ``\/``, hex in either case), empty, NUL.
TWICE = [
    '{"numRecords":1,"numRecords":2}',
    '{"numRecords":null,"numRecords":2}',
    '{"minValues":{"a":1,"a":2}}',
    '{"minValues":{"a":{"b":1,"b":1}}}',
    '{"x":[{"a":1,"a":2}]}',
    '{"x":[[{"a":1,"a":2}]]}',
    '{"numRecords":1,"\\u006eumRecords":2}',
    '{"\\ud83d\\ude00":1,"\U0001f600":2}',
    '{"\\ud83d\\ude00":1,"\\uD83D\\uDE00":2}',
    '{"\\/":1,"/":2}',
    '{"":1,"":2}',
    '{"a\\u0000":1,"a\\u0000":2}',
    '{"\u00e9":1,"\\u00e9":2}',
    '{"minValues":{},"minValues":{}}',
    '{"x":[],"x":[]}',
]


@pytest.fixture(autouse=True)
def _bulk_even_when_few(monkeypatch: pytest.MonkeyPatch) -> None:
    """The logs here are small: the bulk reading is used for them all the same (BULK_MIN is tested on its own)."""
    monkeypatch.setattr(delta_log, "BULK_MIN", 1)


def _stats(i: int) -> str:
    bounds = {"id": i, "name": f"n{i}"}
    return json.dumps({"numRecords": 1, "minValues": bounds, "maxValues": bounds, "nullCount": {"id": 0, "name": 0}},
                      separators=(",", ":"))


@pytest.mark.parametrize("text", TWICE)
def test_bulk_never_vouches_for_a_key_named_twice(text: str) -> None:
    with pytest.raises(jsonscan.DuplicateKeyError):
        jsonscan.loads_unique(text)
    clean = [_stats(i) for i in range(50)]
    assert statistics_unique(clean)  # the bulk reading is used: honest statistics are vouched for
    for at in (0, 25, 50):
        assert not statistics_unique([*clean[:at], text, *clean[at:]])


@pytest.mark.parametrize("text", ['{"a":1}\n', '{"a":\n1}', "", " ", '{"a":1}{"a":2}', '{"a":1}\r{"a":1,"a":2}',
                                  '{"a":"\ud800"}', "[1]"])
def test_bulk_does_not_vouch_for_what_is_not_one_object_on_one_line(text: str) -> None:
    assert not statistics_unique([_stats(1), text, _stats(2)])


def _log(root: Path, commits: int, per_commit: int, forged: dict[tuple[int, int], str]) -> int:
    """A Delta log of ``commits`` commits of ``per_commit`` adds with statistics; ``forged[(commit, add)]`` replaces
    that add's statistics text. Returns the last version."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                           {"name": "name", "type": "string", "nullable": True, "metadata": {}}]}
    head = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "00000000-0000-0000-0000-000000000000", "format": {"provider": "parquet",
             "options": {}}, "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                          "createdTime": 0}}]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in head) + "\n")
    for v in range(1, commits + 1):
        lines = [json.dumps({"commitInfo": {"operation": "WRITE"}})]
        for j in range(per_commit):
            i = (v - 1) * per_commit + j
            add = {"path": f"part-{i:06d}.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0,
                   "dataChange": True, "stats": forged.get((v, j), _stats(i))}
            lines.append(json.dumps({"add": add}))
            (root / str(add["path"])).write_bytes(b"x")
        (log / f"{v:020d}.json").write_text("\n".join(lines) + "\n")
    return commits


def _problems(root: Path, version: int) -> list[str]:
    return replay(DeltaCarrier(str(root)).storage, version)[1]


@pytest.mark.parametrize("forged", [
    {(3, 7): TWICE[0]},
    {(2, 1): TWICE[7], (5, 0): TWICE[2]},
    {(1, 0): TWICE[3], (4, 9): '{"numRecords":1}\n'},  # one twice, one the bulk reading cannot read
    {(v, j): TWICE[(v * 10 + j) % len(TWICE)] for v in range(1, 7) for j in range(0, 10, 3)},  # > 5 per commit
], ids=["one", "two-commits", "with-an-unreadable-text", "many"])
def test_replay_finds_and_words_the_same_problems_as_one_by_one(tmp_path: Path, forged: dict[tuple[int, int], str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    last = _log(tmp_path, 6, 10, forged)
    bulk = _problems(tmp_path, last)
    monkeypatch.setattr(delta_log, "statistics_unique", lambda texts: False)  # everything judged one by one
    one_by_one = _problems(tmp_path, last)
    assert bulk == one_by_one
    assert any("names the key" in p and "twice" in p for p in bulk), bulk


def test_an_honest_log_is_vouched_for_in_bulk_and_not_kept_parsed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    last = _log(tmp_path, 4, 30, {})
    calls: list[int] = []
    real = delta_log.statistics_unique

    def counted(texts: list[str]) -> bool:
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(delta_log, "statistics_unique", counted)
    state, problems = replay(DeltaCarrier(str(tmp_path)).storage, last)
    assert problems == [] and len(state.adds) == 120
    assert calls == [120]  # the statistics of all four commits in one reading
    assert state.parsed_stats == {}


def test_a_batch_boundary_sends_back_only_the_commits_it_holds(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With batches smaller than the log, a key named twice sends back its batch's commits only; the problem is
    found and worded as before."""
    monkeypatch.setattr(delta_log, "_STATS_BATCH", 7)
    last = _log(tmp_path, 6, 10, {(6, 9): TWICE[1]})
    seen: list[Any] = []
    real = delta_log._Validity._unique_json

    def spy(self: Any, text: Any, what: str) -> Any:
        seen.append(what)
        return real(self, text, what)

    monkeypatch.setattr(delta_log._Validity, "_unique_json", spy)
    problems = _problems(tmp_path, last)
    assert len(problems) == 1 and "part-000059.parquet" in problems[0] and "'numRecords' twice" in problems[0]
    stats_judged = [w for w in seen if w.startswith("the statistics")]
    assert len(stats_judged) == 10  # the batch of texts 56..59 is all commit 6's: its 10 adds judged again, no other


@pytest.mark.parametrize("forged", [{}, {(2, 1): TWICE[7], (5, 0): TWICE[2]}], ids=["honest", "twice"])
def test_few_statistics_are_judged_one_by_one_without_pyarrow(tmp_path: Path, forged: dict[tuple[int, int], str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer than BULK_MIN texts never reach the bulk reading (importing pyarrow.json costs more than they do): the
    same problems, found and worded as by the bulk reading."""
    last = _log(tmp_path, 6, 10, forged)
    bulk = _problems(tmp_path, last)
    monkeypatch.setattr(delta_log, "BULK_MIN", 61)  # the log holds 60 statistics texts

    def refused(texts: list[str]) -> bool:
        raise AssertionError("bulk reading of a few texts")

    monkeypatch.setattr(delta_log, "statistics_unique", refused)
    assert _problems(tmp_path, last) == bulk
    assert bool(bulk) == bool(forged)
    monkeypatch.setattr(delta_log, "BULK_MIN", 60)
    with pytest.raises(AssertionError, match="bulk reading"):
        _problems(tmp_path, last)
