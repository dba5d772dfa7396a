"""Which Delta commit a streaming micro-batch made: the ``txn`` action (docs/streaming.md). The Spark hook asks the
format; it never reads the log itself.

A streaming write into Delta (Spark's ``DeltaSink``, or ``foreachBatch`` with the ``txnAppId`` / ``txnVersion``
write options) commits a ``txn`` action ``{"appId": <query id>, "version": <batch id>}`` in the same commit as its
data: the Delta protocol's idempotent-writer mechanism, by which the sink itself skips a batch that already
committed when a restarted query runs it again. So the commit a batch made is the one carrying its ``txn``, and a
batch that never committed has none (what the hook relies on to attest every committed batch exactly once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from carriers.base import one_commit
from carriers.delta.lines import actions, commit_name
from carriers.storage.base import Storage

__all__ = ["StreamCommit", "commit_for_batch", "stream_commits"]


@dataclass(frozen=True)
class StreamCommit:
    """A commit of a streaming query's micro-batch: table version, query id (``txn.appId``), batch id."""

    version: int
    query_id: str
    batch: int


def _txn(storage: Storage, version: int) -> list[tuple[str, int]] | None:
    """The ``txn`` actions of commit ``version`` (None: its JSON is gone, log cleanup after a checkpoint). An
    unreadable line carries no batch that could be claimed."""
    data = storage.read(commit_name(version))
    if data is None:
        return None
    out: list[tuple[str, int]] = []
    try:
        for action in actions(data):
            txn = action.get("txn") if isinstance(action, dict) else None
            if isinstance(txn, dict) and isinstance(txn.get("appId"), str) and type(txn.get("version")) is int:
                out.append((txn["appId"], int(txn["version"])))
    except (ValueError, RecursionError):
        return []
    return out


def stream_commits(storage: Storage, query_id: str, latest: int, *,
                   stop: Callable[[StreamCommit], bool] | None = None) -> Iterator[StreamCommit]:
    """The commits of ``query_id``'s batches, newest first, from version ``latest`` down; the walk ends after
    the first commit for which ``stop`` is true, or where the log's JSON is gone."""
    for version in range(latest, -1, -1):
        found = _txn(storage, version)
        if found is None:
            return
        for app_id, batch in found:
            if app_id == query_id:
                commit = StreamCommit(version, app_id, batch)
                yield commit
                if stop is not None and stop(commit):
                    return
                break


def commit_for_batch(storage: Storage, query_id: str, batch: int, latest: int, *, what: str | None) -> int | None:
    """The version whose commit carries ``txn(query_id, batch)``; None when the batch committed nothing;
    AmbiguousCommit when two do (a log no Delta writer makes). Batches of one query commit in increasing order,
    so the walk stops at the first older batch of the query."""
    found = [c.version for c in stream_commits(storage, query_id, latest, stop=lambda c: c.batch < batch)
             if c.batch == batch]
    return one_commit(found, what, f"streaming batch {batch}")
