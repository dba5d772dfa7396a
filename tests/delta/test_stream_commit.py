"""Which commit a streaming micro-batch made, as the formats answer it (carriers/delta/stream_commit.py,
carriers/iceberg/stream_commit.py), and what a batch read, from its offsets (carriers/spark/streaming.py): no JVM.

The commit logs are written as Spark's DeltaSink writes them (measured: docs/streaming.md): a ``txn`` action
``{"appId": <query id>, "version": <batch id>}`` beside the batch's data. A forged log with two commits of one batch
is refused — never a guess at which one the stream made."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from carriers.base import AmbiguousCommit
from carriers.delta.stream_commit import commit_for_batch, stream_commits
from carriers.iceberg.stream_commit import snapshot_for_batch, stream_snapshots
from carriers.spark.streaming import Source, read_through
from carriers.storage.delta import DeltaStorage

QUERY = "e5312648-8a1f-4c85-908e-c8dac6a2963c"


def _log(root: Path, commits: list[list[dict[str, Any]]]) -> DeltaStorage:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    for version, actions in enumerate(commits):
        info = {"commitInfo": {"operation": "STREAMING UPDATE"}}
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in [info, *actions]) + "\n")
    return DeltaStorage(root.as_uri())


def _txn(app: str, batch: int) -> dict[str, Any]:
    return {"txn": {"appId": app, "version": batch, "lastUpdated": 1}}


def test_the_delta_commit_of_a_batch_is_the_one_carrying_its_txn(tmp_path: Path) -> None:
    other = "0f0f0f0f-0000-0000-0000-000000000000"
    storage = _log(tmp_path, [[_txn(QUERY, 0)], [_txn(other, 0)], [_txn(QUERY, 1)], [], [_txn(QUERY, 2)]])
    assert [commit_for_batch(storage, QUERY, b, 4, what="t") for b in (0, 1, 2, 3)] == [0, 2, 4, None]
    assert commit_for_batch(storage, other, 0, 4, what="t") == 1
    assert [(c.version, c.batch) for c in stream_commits(storage, QUERY, 4)] == [(4, 2), (2, 1), (0, 0)]
    # The catch-up's walk stops where it is told (at the newest attested batch).
    assert [c.batch for c in stream_commits(storage, QUERY, 4, stop=lambda c: c.batch == 1)] == [2, 1]


def test_two_delta_commits_of_one_batch_are_refused(tmp_path: Path) -> None:
    # Someone with write access committed a second commit claiming the batch: which one the stream made is a guess.
    storage = _log(tmp_path, [[_txn(QUERY, 0)], [_txn(QUERY, 1)], [_txn(QUERY, 1)]])
    with pytest.raises(AmbiguousCommit, match="2 commits"):
        commit_for_batch(storage, QUERY, 1, 2, what="t")


def test_a_malformed_delta_commit_claims_no_batch(tmp_path: Path) -> None:
    storage = _log(tmp_path, [[_txn(QUERY, 0)], [{"txn": {"appId": QUERY, "version": "1"}}]])
    broken = json.dumps(_txn(QUERY, 1)) + "\nnot json\n"
    (tmp_path / "_delta_log" / f"{2:020d}.json").write_text(broken)
    assert commit_for_batch(storage, QUERY, 1, 2, what="t") is None  # a string version, an unreadable commit
    assert commit_for_batch(storage, QUERY, 0, 2, what="t") == 0


def _snapshot(sid: int, seq: int, props: dict[str, str]) -> Any:
    return SimpleNamespace(snapshot_id=sid, sequence_number=seq,
                           summary=SimpleNamespace(additional_properties=props, operation="append"))


def test_the_iceberg_snapshot_of_a_batch_carries_its_query_id_and_epoch() -> None:
    def props(q: str, e: str) -> dict[str, str]:
        return {"spark.sql.streaming.queryId": q, "spark.sql.streaming.epochId": e}

    snaps = [_snapshot(11, 1, props(QUERY, "0")), _snapshot(12, 2, {}), _snapshot(13, 3, props(QUERY, "1")),
             _snapshot(14, 4, props("other", "2")), _snapshot(15, 5, props(QUERY, "x"))]
    assert [s.snapshot_id for s in stream_snapshots(snaps, QUERY)] == [11, 13]
    assert [snapshot_for_batch(snaps, QUERY, b, what="t") for b in (0, 1, 2)] == [11, 13, None]
    with pytest.raises(AmbiguousCommit):
        snapshot_for_batch([*snaps, _snapshot(16, 6, props(QUERY, "1"))], QUERY, 1, what="t")


def test_the_version_a_batch_read_through_comes_from_its_end_offset() -> None:
    delta, iceberg, rate = Source("DeltaSource[x]", "delta", "/x"), Source("iceberg:i", "iceberg"), Source("rate")

    def off(version: int, index: int, starting: bool = False) -> str:
        return json.dumps({"sourceVersion": 1, "reservoirId": "r", "reservoirVersion": version, "index": index,
                           "isStartingVersion": starting})

    assert read_through(delta, off(4, -1)) == "3"  # version 4 not started: read through 3 (measured)
    assert read_through(delta, off(4, 2)) == "4"  # part of version 4's files
    assert read_through(delta, off(4, -1, starting=True)) == "4"  # the initial snapshot of version 4
    assert read_through(delta, off(0, -1)) is None
    assert read_through(iceberg, '{"version":1,"snapshot_id":2574477906053037627,"position":1,'
                                 '"scan_all_files":false}') == "2574477906053037627"
    assert read_through(rate, "53") is None and read_through(delta, None) is None
    assert read_through(delta, "not json") is None and read_through(delta, '{"reservoirVersion": "4"}') is None
