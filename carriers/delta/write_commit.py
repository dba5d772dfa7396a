"""Which Delta commit carries a write: the answer the Spark hook asks of the format (it never reads the log itself).

A writer that stamps its commits puts a write id in ``commitInfo.userMetadata``; the commit carrying it, with an
operation the write may commit, is the write's. An unstamped write is matched by what its commit says of itself:
the operation, and the version it read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from carriers.base import NOT_STAMPED, AmbiguousCommit, one_commit
from carriers.delta.lines import commit_info, commit_name

if TYPE_CHECKING:
    from carriers.delta.carrier import DeltaCarrier

__all__ = ["commit_for_write", "unstamped_commit"]


def commit_for_write(carrier: DeltaCarrier, *, write_id: str | None, operations: frozenset[str],
                     read_version: int | None, hint_version: int | None, what: str | None, command: str,
                     claimed: Callable[[int], bool], is_write_id: Callable[[object], bool]) -> int | None:
    """The version a write committed, None when it committed nothing; AmbiguousCommit when that is a guess.

    Stamped (``write_id``): the one commit whose ``commitInfo.userMetadata`` is the write id and whose operation is
    one of ``operations`` (an attestation's own ALTER may carry a conf stamp of another statement). Unstamped: see
    :func:`unstamped_commit`. A stamped write whose id no commit carries while an unstamped commit fits it is
    refused too (never a guess). ``what`` names the table in messages; ``claimed(version)``: a commit an earlier
    write already took; ``is_write_id``: whether a ``userMetadata`` value is some write's id."""
    low = -1 if read_version is None else read_version
    if write_id is not None:
        # The commit happened before the caller read the hint; the latest version bounds a stale hint.
        high = max(hint_version if hint_version is not None else -1, carrier.latest_version())
        found: list[int] = []
        for v in range(high, low, -1):
            info = commit_info(carrier.storage.read(commit_name(v)))
            if info.get("userMetadata") == write_id and str(info.get("operation", "")) in operations:
                found.append(v)
                if read_version is None:
                    break  # CTAS/RTAS: no read version bounds the search; a stamp is unique, stop at it
        if found or unstamped_commit(carrier, operations=operations, read_version=read_version,
                                     hint_version=hint_version, what=what, command=command, claimed=claimed,
                                     is_write_id=is_write_id) is None:
            return one_commit(found, what, command)
        raise AmbiguousCommit(NOT_STAMPED.format(what=what, command=command))
    return unstamped_commit(carrier, operations=operations, read_version=read_version, hint_version=hint_version,
                            what=what, command=command, claimed=claimed, is_write_id=is_write_id)


def unstamped_commit(carrier: DeltaCarrier, *, operations: frozenset[str], read_version: int | None,
                     hint_version: int | None, what: str | None, command: str, claimed: Callable[[int], bool],
                     is_write_id: Callable[[object], bool]) -> int | None:
    """A commit in (read, hint] that read that version with a matching operation, carries no write id and is
    unclaimed — exact only without concurrent writers, and refused (AmbiguousCommit) when two commits fit."""
    low = -1 if read_version is None else read_version
    hint = hint_version if hint_version is not None else carrier.latest_version()
    candidates = range(low + 1, hint + 1) if read_version is not None else range(hint, low, -1)
    matches: list[int] = []
    for v in candidates:
        if claimed(v):
            continue  # claimed by an earlier write: two writes that read one version commit twice
        info = commit_info(carrier.storage.read(commit_name(v)))
        if str(info.get("operation", "")) not in operations or is_write_id(info.get("userMetadata")):
            continue  # another operation, or a stamped write's commit (never an unstamped one's)
        if read_version is not None and info.get("readVersion") not in (read_version, None):
            continue
        matches.append(v)
        if read_version is None:
            break
    return one_commit(matches, what, command)
