"""Which Delta commit a streaming micro-batch made: the ``txn`` action (docs/streaming.md).

A streaming write into Delta (Spark's ``DeltaSink``, or ``foreachBatch`` with the ``txnAppId`` / ``txnVersion``
write options) commits a ``txn`` action ``{"appId": <query id>, "version": <batch id>}`` in the same commit as its
data: the Delta protocol's idempotent-writer mechanism, by which the sink itself skips a batch that already
committed when a restarted query runs it again. So the commit a batch made is the one carrying its ``txn``, and a
batch that never committed has none (what the hook relies on to attest every committed batch exactly once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from attest.errors import TableInconsistentError
from carriers.delta.log import commit_name, json_lines
from carriers.storage.base import Storage

__all__ = ["StreamCommit", "batch_commit", "stream_commits"]


@dataclass(frozen=True)
class StreamCommit:
    """A commit of a streaming query's micro-batch: table version, query id (``txn.appId``), batch id."""

    version: int
    query_id: str
    batch: int


def _txn(storage: Storage, version: int) -> list[tuple[str, int]] | None:
    """The ``txn`` actions of commit ``version`` (None: its JSON is gone, log cleanup after a checkpoint)."""
    data = storage.read(commit_name(version))
    if data is None:
        return None
    out: list[tuple[str, int]] = []
    try:
        for action in json_lines(data, commit_name(version)):
            txn = action.get("txn")
            if isinstance(txn, dict) and isinstance(txn.get("appId"), str) and type(txn.get("version")) is int:
                out.append((txn["appId"], int(txn["version"])))
    except TableInconsistentError:
        return []  # an unreadable commit carries no batch we could claim
    return out


def stream_commits(storage: Storage, query_id: str, latest: int, *,
                   stop: Callable[[StreamCommit], bool] | None = None) -> Iterator[StreamCommit]:
    """The commits of ``query_id``'s batches, newest first, from version ``latest`` down; the walk ends after
    the first commit for which ``stop`` is true, or where the log's JSON is gone."""
    for version in range(latest, -1, -1):
        actions = _txn(storage, version)
        if actions is None:
            return
        for app_id, batch in actions:
            if app_id == query_id:
                found = StreamCommit(version, app_id, batch)
                yield found
                if stop is not None and stop(found):
                    return
                break


def batch_commit(storage: Storage, query_id: str, batch: int, latest: int) -> int | None:
    """The version whose commit carries ``txn(query_id, batch)``; None when the batch committed nothing. Batches
    of one query commit in increasing order, so the walk stops at the first older batch of the query."""
    found: list[int] = []
    for commit in stream_commits(storage, query_id, latest, stop=lambda c: c.batch < batch):
        if commit.batch == batch:
            found.append(commit.version)
    if len(found) > 1:
        raise TableInconsistentError(f"batch {batch} of streaming query {query_id} is committed twice "
                                     f"(versions {', '.join(map(str, sorted(found)))}): the log is not one a Delta "
                                     "writer makes")
    return found[0] if found else None
