"""``carriers.spark.streaming.beyond_version``: when a streaming batch's input may name its end version's content.

A stream reads the files its offsets cover, not a version; the hook records the end version's content (``strong``)
only when nothing between the offsets removed a file (round 23). Pure Python: the history is given as functions."""

from __future__ import annotations

import json

import pytest

from carriers.spark.streaming import Source, beyond_version

DELTA = Source("DeltaSource[t]", "delta", location="file:/t")
FEED = Source("DeltaSource[t]", "delta", location="file:/t", changes=True)
ICEBERG = Source("iceberg:c.t", "iceberg", catalog="c", identifier=("t",))


def _delta(version: int, index: int = -1, starting: bool = False) -> str:
    return json.dumps({"sourceVersion": 1, "reservoirId": "x", "reservoirVersion": version, "index": index,
                       "isStartingVersion": starting})


def _ice(snapshot: int) -> str:
    return json.dumps({"version": 1, "snapshot_id": snapshot, "position": 1, "scan_all_files": False})


def test_a_delta_first_batch_of_a_fresh_stream_reads_its_starting_version() -> None:
    assert beyond_version(DELTA, None, _delta(3, 5, starting=True), "3", lambda v: ()) is None


def test_a_delta_first_batch_from_an_earlier_version_is_not_its_content() -> None:
    why = beyond_version(DELTA, None, _delta(4, starting=False), "3", lambda v: ())
    assert why is not None and "earlier version" in why


@pytest.mark.parametrize("removed_at", [5, 6, 7])
def test_a_delta_range_with_a_removal_is_not_the_versions_content(removed_at: int) -> None:
    def removes(v: int) -> tuple[dict[str, str], ...]:
        return ({"path": "a.parquet"},) if v == removed_at else ()

    why = beyond_version(DELTA, _delta(4), _delta(8), "7", removes)
    assert why is not None and f"version {removed_at} removed" in why
    assert beyond_version(DELTA, _delta(4), _delta(8), "7", lambda v: ()) is None  # appends only


def test_a_delta_range_whose_commit_is_gone_or_too_long_or_a_change_feed() -> None:
    assert beyond_version(DELTA, _delta(4), _delta(8), "7", lambda v: None if v == 6 else ()) is not None
    assert beyond_version(DELTA, _delta(4), _delta(5000), "4999", lambda v: ()) is not None  # not looked at
    assert beyond_version(FEED, None, _delta(3, 5, starting=True), "3", lambda v: ()) is not None
    assert beyond_version(DELTA, "not json", _delta(8), "7", lambda v: ()) is not None


def _history(ops: dict[int, tuple[str, int | None]]) -> object:
    return lambda sid: ops.get(sid)


def test_iceberg_ranges() -> None:
    appends = _history({1: ("append", None), 2: ("append", 1), 3: ("append", 2)})
    assert beyond_version(ICEBERG, None, _ice(3), "3", appends) is None  # from the oldest: appends only
    assert beyond_version(ICEBERG, _ice(1), _ice(3), "3", appends) is None
    compacted = _history({1: ("append", None), 2: ("append", 1), 3: ("replace", 2), 4: ("append", 3)})
    why = beyond_version(ICEBERG, None, _ice(4), "4", compacted)
    assert why is not None and "snapshot 3 is a replace" in why
    assert beyond_version(ICEBERG, _ice(3), _ice(4), "4", compacted) is None  # after the compaction: appends
    deleted = _history({1: ("append", None), 2: ("delete", 1)})
    assert beyond_version(ICEBERG, _ice(1), _ice(2), "2", deleted) is not None
    expired = _history({5: ("append", 4), 6: ("append", 5)})  # 4 expired: 5 is the oldest there is
    assert beyond_version(ICEBERG, None, _ice(6), "6", expired) is None
    assert beyond_version(ICEBERG, _ice(2), _ice(6), "6", expired) is not None  # the start is gone
    assert beyond_version(ICEBERG, _ice(9), _ice(3), "3", appends) is not None  # not in its history
    assert beyond_version(ICEBERG, None, _ice(7), "7", appends) is not None  # the end itself is unknown


def test_a_history_that_cannot_be_read_is_not_content() -> None:
    def broken(_: object) -> object:
        raise OSError("gone")

    assert beyond_version(ICEBERG, None, _ice(3), "3", broken) is not None
    assert beyond_version(DELTA, _delta(4), _delta(8), "7", broken) is not None
