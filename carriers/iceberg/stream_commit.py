"""Which Iceberg snapshot a streaming micro-batch made: the summary's query id and epoch (docs/streaming.md). The
Spark hook asks the format; it never reads the snapshots itself.

Iceberg's Spark streaming writer puts ``spark.sql.streaming.queryId`` and ``spark.sql.streaming.epochId`` (the batch
id) into the summary of the snapshot it commits, and before committing a batch again (a restarted query re-runs the
last uncommitted one) looks for that pair among the table's snapshots and skips the commit when it is there. So the
snapshot a batch made is the one carrying its pair, and a batch that never committed has none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from carriers.base import one_commit
from carriers.iceberg.summaries import summary

if TYPE_CHECKING:
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["EPOCH_KEY", "QUERY_KEY", "StreamSnapshot", "snapshot_for_batch", "stream_snapshots"]

QUERY_KEY = "spark.sql.streaming.queryId"
EPOCH_KEY = "spark.sql.streaming.epochId"


@dataclass(frozen=True)
class StreamSnapshot:
    """A snapshot a streaming query's micro-batch committed."""

    snapshot_id: int
    sequence_number: int
    query_id: str
    batch: int


def stream_snapshots(snapshots: Iterable[Snapshot], query_id: str) -> list[StreamSnapshot]:
    """The snapshots of ``query_id``'s batches, oldest first."""
    out: list[StreamSnapshot] = []
    for snap in snapshots:
        found = summary(snap)
        epoch = str(found.get(EPOCH_KEY, ""))
        if found.get(QUERY_KEY) == query_id and epoch.isdigit() and epoch.isascii():
            out.append(StreamSnapshot(int(snap.snapshot_id), int(snap.sequence_number or 0), query_id, int(epoch)))
    return sorted(out, key=lambda s: (s.sequence_number, s.batch))


def snapshot_for_batch(snapshots: Iterable[Snapshot], query_id: str, batch: int, *, what: str | None) -> int | None:
    """The snapshot ``batch`` of ``query_id`` committed; None when it committed nothing; AmbiguousCommit when two
    carry it (a table no Iceberg writer makes: the writer skips an epoch it finds committed)."""
    found = [s.snapshot_id for s in stream_snapshots(snapshots, query_id) if s.batch == batch]
    return one_commit(found, what, f"streaming batch {batch}")
