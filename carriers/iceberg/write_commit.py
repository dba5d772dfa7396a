"""Which Iceberg snapshot carries a write: the answer the Spark hook asks of the format (it never reads a summary
itself).

A writer that stamps its commits puts a write id under a summary key; the snapshot carrying it is the write's. An
unstamped write is matched by what its snapshot says of itself: the writer, the operation, and that it descends from
the snapshot the write read (possibly through our own no-file attestation snapshots).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from carriers import properties as props
from carriers.base import NOT_STAMPED, AmbiguousCommit, one_commit
from carriers.iceberg.summaries import operation, summary

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["commit_for_write", "unstamped_commit"]


def commit_for_write(table: Table | Any, *, write_id: str | None, id_key: str, operations: frozenset[str],
                     read_snapshot: int | None, hint_sequence: int | None, creates: bool, writer: Mapping[str, str],
                     what: str | None, command: str) -> int | None:
    """The snapshot id a write committed, None when it committed nothing; AmbiguousCommit when that is a guess.

    Stamped (``write_id``): the one snapshot whose summary carries the write id under ``id_key`` (any operation: our
    own attestation snapshots come from pyiceberg and never carry an engine's conf). Unstamped: see
    :func:`unstamped_commit`; a stamped write whose id no snapshot carries while an unstamped one fits it is refused
    (never a guess). ``what`` names the table in messages."""
    if write_id is not None:
        found = [int(snap.snapshot_id) for snap in table.metadata.snapshots
                 if summary(snap).get(id_key) == write_id]
        if found or unstamped_commit(table, id_key=id_key, operations=operations, read_snapshot=read_snapshot,
                                     hint_sequence=hint_sequence, creates=creates, writer=writer) is None:
            return one_commit(found, what, command)
        raise AmbiguousCommit(NOT_STAMPED.format(what=what, command=command))
    return unstamped_commit(table, id_key=id_key, operations=operations, read_snapshot=read_snapshot,
                            hint_sequence=hint_sequence, creates=creates, writer=writer)


def unstamped_commit(table: Table | Any, *, id_key: str, operations: frozenset[str], read_snapshot: int | None,
                     hint_sequence: int | None, creates: bool, writer: Mapping[str, str]) -> int | None:
    """A snapshot whose summary holds ``writer``'s keys and values, with an operation of ``operations`` and no write
    id, descending from the read snapshot (possibly through our own no-file attestation snapshots). ``creates``: the
    write creates or replaces the table (CTAS/RTAS), so no read snapshot bounds it."""
    by_id = {s.snapshot_id: s for s in table.metadata.snapshots}
    # Known read snapshot: its first matching descendant is the commit. No read snapshot (CTAS/RTAS): the
    # newest matching root up to the hint, since an RTAS's new root sits beside the replaced table's old one.
    ordered = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0, reverse=read_snapshot is None)
    for snap in ordered:
        if hint_sequence is not None and (snap.sequence_number or 0) > hint_sequence:
            continue
        found = summary(snap)
        if any(found.get(k) != v for k, v in writer.items()) or operation(snap) not in operations \
                or id_key in found:
            continue
        parent = snap.parent_snapshot_id
        seen: set[int] = set()
        while parent is not None and parent != read_snapshot and parent not in seen:
            seen.add(parent)  # a parent cycle (forged metadata) ends the walk instead of hanging the caller
            p = by_id.get(parent)
            psum = {} if p is None else summary(p)
            if p is None or not any(k.startswith(props.PREFIX) for k in psum):
                break  # only our attestation snapshots may sit between the read snapshot and the commit
            parent = p.parent_snapshot_id
        if parent == read_snapshot and (read_snapshot is not None or creates or snap.parent_snapshot_id is None):
            return int(snap.snapshot_id)
    return None
