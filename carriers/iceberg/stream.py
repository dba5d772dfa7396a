"""Which Iceberg snapshot a streaming micro-batch made: the snapshot summary's query id and epoch (docs/streaming.md).

Iceberg's Spark streaming writer puts ``spark.sql.streaming.queryId`` and ``spark.sql.streaming.epochId`` (the batch
id) into the summary of the snapshot it commits, and before committing a batch again (a restarted query re-runs the
last uncommitted one) it looks for that pair among the table's snapshots and skips the commit when it is there. So
the snapshot a batch made is the one carrying its pair, and a batch that never committed has none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["EPOCH_KEY", "QUERY_KEY", "StreamSnapshot", "batch_snapshot", "stream_snapshots"]

QUERY_KEY = "spark.sql.streaming.queryId"
EPOCH_KEY = "spark.sql.streaming.epochId"


@dataclass(frozen=True)
class StreamSnapshot:
    """A snapshot a streaming query's micro-batch committed."""

    snapshot_id: int
    sequence_number: int
    query_id: str
    batch: int


def _summary(snapshot: Any) -> dict[str, str]:
    summary = getattr(snapshot, "summary", None)
    if summary is None:
        return {}
    return {str(k): str(v) for k, v in summary.additional_properties.items()}


def stream_snapshots(snapshots: Iterable[Any], query_id: str) -> list[StreamSnapshot]:
    """The snapshots of ``query_id``'s batches (pyiceberg ``Snapshot`` objects in), oldest first."""
    out: list[StreamSnapshot] = []
    for snap in snapshots:
        summary = _summary(snap)
        epoch = summary.get(EPOCH_KEY, "")
        if summary.get(QUERY_KEY) == query_id and epoch.isdigit() and epoch.isascii():
            out.append(StreamSnapshot(int(snap.snapshot_id), int(snap.sequence_number or 0), query_id, int(epoch)))
    return sorted(out, key=lambda s: (s.sequence_number, s.batch))


def batch_snapshot(snapshots: Iterable[Any], query_id: str, batch: int) -> int | None:
    """The snapshot ``batch`` of ``query_id`` committed; None when it committed nothing. Two snapshots of one
    batch (a forged table: the writer skips a committed epoch) are refused."""
    from attest.errors import TableInconsistentError

    found = [s.snapshot_id for s in stream_snapshots(snapshots, query_id) if s.batch == batch]
    if len(found) > 1:
        raise TableInconsistentError(f"batch {batch} of streaming query {query_id} is committed in "
                                     f"{len(found)} snapshots ({', '.join(map(str, sorted(found)))})")
    return found[0] if found else None
