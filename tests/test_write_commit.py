"""Which commit carries a write, as each format answers it (carriers/delta/write_commit.py,
carriers/iceberg/write_commit.py): the Spark hook asks, and never reads a log or a summary itself."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from carriers.base import AmbiguousCommit
from carriers.delta.lines import commit_name
from carriers.delta.write_commit import commit_for_write as delta_commit
from carriers.iceberg.write_commit import commit_for_write as iceberg_commit

STAMP = "recipe-attest:write:abc"


def _delta(commits: dict[int, dict[str, Any]]) -> Any:
    logs = {commit_name(v): (json.dumps({"add": {"path": "x"}}) + "\n" + json.dumps({"commitInfo": info})).encode()
            for v, info in commits.items()}
    return SimpleNamespace(latest_version=lambda: max(commits), storage=SimpleNamespace(read=logs.get))


def _find(carrier: Any, stamp: str | None, *, read: int | None = 0, claimed: frozenset[int] = frozenset()) -> Any:
    return delta_commit(carrier, write_id=stamp, operations=frozenset({"WRITE"}), read_version=read,
                        hint_version=None, what="t", command="AppendData", claimed=claimed.__contains__,
                        is_write_id=lambda v: isinstance(v, str) and v.startswith("recipe-attest:write:"))


def test_delta_the_stamped_commit_and_only_it() -> None:
    carrier = _delta({0: {"operation": "CREATE TABLE"}, 1: {"operation": "WRITE", "userMetadata": STAMP},
                      2: {"operation": "WRITE", "readVersion": 1}})
    assert _find(carrier, STAMP) == 1
    assert _find(carrier, None, read=1) == 2  # unstamped: the commit that read version 1
    assert _find(carrier, None, read=1, claimed=frozenset({2})) is None  # taken by an earlier write
    twice = _delta({0: {"operation": "CREATE TABLE"}, 1: {"operation": "WRITE", "userMetadata": STAMP},
                    2: {"operation": "WRITE", "userMetadata": STAMP}})
    with pytest.raises(AmbiguousCommit, match="2 commits of t fit this AppendData"):
        _find(twice, STAMP)


def test_delta_a_stamped_write_whose_id_no_commit_carries_is_not_guessed() -> None:
    carrier = _delta({0: {"operation": "CREATE TABLE"}, 1: {"operation": "WRITE", "readVersion": 0}})
    with pytest.raises(AmbiguousCommit, match="carries the write id"):
        _find(carrier, STAMP)


def _snap(sid: int, parent: int | None, summary: dict[str, str], operation: str = "append") -> Any:
    return SimpleNamespace(snapshot_id=sid, parent_snapshot_id=parent, sequence_number=sid,
                           summary=SimpleNamespace(additional_properties=summary, operation=operation))


def test_iceberg_stamped_unstamped_and_through_our_follow_ups() -> None:
    table = SimpleNamespace(metadata=SimpleNamespace(snapshots=[
        _snap(1, None, {}), _snap(2, 1, {"recipe_manifest.model": "m"}),  # our attestation snapshot of 1
        _snap(3, 2, {"spark.app.id": "app"}), _snap(4, 3, {"spark.app.id": "app", "id": STAMP})]))

    def find(stamp: str | None, read: int | None) -> int | None:
        return iceberg_commit(table, write_id=stamp, id_key="id", operations=frozenset({"append"}),
                              read_snapshot=read, hint_sequence=None, creates=False, writer={"spark.app.id": "app"},
                              what="t", command="AppendData")

    assert find(STAMP, 3) == 4
    assert find(None, 1) == 3  # descends from the read snapshot through our attestation snapshot
    with pytest.raises(AmbiguousCommit, match="carries the write id"):
        find("recipe-attest:write:other", 1)
