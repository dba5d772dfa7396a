"""What an Iceberg snapshot's summary says: its properties, its operation, whether it changed any file.

Every reader of a summary goes through these (the carrier, write-audit-publish, the search for a write's snapshot),
so a summary is read one way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["CHANGE_COUNTERS", "built_on_earlier", "changed_no_file", "operation", "summary"]

# Summary counters Iceberg computes; a snapshot whose counters are all zero/absent changed no file.
CHANGE_COUNTERS = (
    "added-data-files", "deleted-data-files", "added-delete-files", "removed-delete-files",
    "added-position-delete-files", "removed-position-delete-files", "added-equality-delete-files",
    "removed-equality-delete-files", "added-dvs", "removed-dvs", "added-records", "deleted-records",
)


def summary(snapshot: Snapshot) -> dict[str, str]:
    """The summary's properties, {} for a snapshot without a summary. Only string values: pyiceberg keeps a number or
    boolean as written, which Iceberg Java refuses to read at all (``JsonUtil.getString``; the carrier reports the
    table ``table_inconsistent``), and every reader here takes a summary value for text (round 32, found fuzzing: a
    binding of 5 was an internal error)."""
    if snapshot.summary is None:
        return {}
    return {k: v for k, v in snapshot.summary.additional_properties.items() if isinstance(v, str)}


def operation(snapshot: Snapshot) -> str:
    """The summary's operation ("append", "overwrite", "delete", "replace"), "unknown" without a summary."""
    if snapshot.summary is None:
        return "unknown"
    op = snapshot.summary.operation
    return str(getattr(op, "value", op))


def changed_no_file(snapshot: Snapshot) -> bool:
    """Whether the snapshot added and removed no file, by its summary's counters."""
    found = summary(snapshot)
    return all(str(found.get(k, "0")) in ("0", "") for k in CHANGE_COUNTERS)


def built_on_earlier(snapshot: Snapshot) -> bool:
    """Whether the snapshot's summary says the table held data before it: it deleted data files or records, or it
    holds more data files or records in total than it added. A table's first snapshot never does; a snapshot without
    these counters (or with ones that do not parse) says nothing."""
    found = summary(snapshot)

    def count(key: str) -> int | None:
        value = str(found.get(key, ""))
        return int(value) if value.isascii() and value.isdigit() else None

    deleted = [count("deleted-data-files"), count("deleted-records")]
    if any(n is not None and n > 0 for n in deleted):
        return True
    pairs = (("total-data-files", "added-data-files"), ("total-records", "added-records"))
    for total_key, added_key in pairs:
        total, added = count(total_key), count(added_key) if added_key in found else 0
        if total is not None and added is not None and total > added:
            return True
    return False
