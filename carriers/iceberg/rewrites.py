"""Which Iceberg snapshots after an attested one only rewrote files (issue 32, docs/iceberg.md "Maintenance").

A snapshot may be carried over when its operation is ``replace`` — what ``rewrite_data_files``,
``rewrite_position_delete_files`` and ``rewrite_manifests`` commit — or when it changed no live file at all (our
follow-up attestation snapshots, an empty append). Nothing else is taken on the snapshot's word: the files it removed
and added are the difference of the live files of its parent and of itself, read from the manifests (never from the
summary, whose counts must agree with them), and a data file kept by the rewrite whose applied delete files changed
(a position delete file rewritten, or dropped) is listed as both removed and added, so the judge re-reads its rows.
Whether the rows are the same is the judge's check on the content digests (carriers/iceberg/content.py), never this
module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attest.numbers import is_digits
from attest.verify.report import EXPIRED_HISTORY
from carriers.base import Rewrite
from carriers.core import Version
from carriers.iceberg.summaries import summary

if TYPE_CHECKING:
    from pyiceberg.table.snapshots import Snapshot

    from attest.tables import DataFile
    from carriers.iceberg.carrier import IcebergCarrier

__all__ = ["EXPIRED_HISTORY", "rewrites_between", "whole_version"]


# pyiceberg and Spark write these counters in every replace snapshot; absent means 0.
_COUNTERS = ("added-data-files", "deleted-data-files")


def _version(snapshot: Snapshot) -> Version:
    return Version(id=str(snapshot.snapshot_id), number=snapshot.snapshot_id, handle=snapshot)


def _applied_deletes(carrier: IcebergCarrier, snapshot: Snapshot) -> dict[str, tuple[tuple[str, ...], ...]]:
    """For each live data file of ``snapshot`` (by DataFile.path): the delete files each reader applies to it."""
    from carriers.iceberg.content import _applied, _plans

    data, _deletes, plans, differ = _plans(carrier, snapshot)
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for path, df in data.items():
        try:
            out[path] = tuple(tuple(_applied(plans[reader], df["_key"])) for reader in ("pyiceberg", "java"))
        except Exception:  # a read a reader refuses: never equal to anything, so the file is re-read (and fails)
            out[path] = (("!refused",),)
    if differ:
        out = {path: (("!readers differ",),) for path in out}
    return out


def _summary_counts(snapshot: Snapshot) -> dict[str, int] | None:
    found = summary(snapshot)
    counts: dict[str, int] = {}
    for key in _COUNTERS:
        text = found.get(key, "0")
        if not is_digits(text):  # ASCII: '²'.isdigit() holds and int() refuses it
            return None
        counts[key] = int(text)
    return counts


def _files(carrier: IcebergCarrier, snapshot: Snapshot) -> tuple[dict[str, DataFile], Mapping[str, str]]:
    """The live files of ``snapshot`` by path, and each one's reader-view entry."""
    live = carrier._live(_version(snapshot))
    return {f.path: f for f in live.files}, live.view.files


def _java_hidden(carrier: IcebergCarrier, snapshot: Snapshot) -> frozenset[str]:
    """The locations of the data files of ``snapshot`` whose uuid partition value the manifest list's summary of
    their manifest hides from Iceberg Java (the table view's ``java_uuid_summary_hides``). A kept file newly so hidden
    is re-read as a rewrite's, and the judge says content_changed: pyiceberg's ``replace`` of one file of three
    rewrote the manifest keeping the other two with a bytewise summary across ``0x80…``, which hid them from Spark's
    ``u = …`` while the rows were the same (tests/adversarial/test_iceberg_round16b.py)."""
    return frozenset(carrier._live(_version(snapshot)).view.table.get("java_uuid_summary_hides") or ())


def rewrites_between(carrier: IcebergCarrier, attested: Version, version: Version) -> list[Rewrite] | None:
    """The snapshots after ``attested`` up to ``version`` that touched files, oldest first, when each is a
    ``replace`` whose summary's file counts are its manifests'; None when any is not, or when ``version`` does not
    descend from ``attested`` through snapshots still in the metadata. An empty list: no snapshot touched a file."""
    from carriers.iceberg.summaries import operation as _operation

    index = carrier.snapshot_index()
    target = version.handle if version.handle is not None else carrier._snapshot(version.id)
    start = attested.handle if attested.handle is not None else index.get(int(attested.id))
    if target is None or start is None:
        return None
    chain: list[Any] = []
    seen: set[int] = set()
    current = target
    while current.snapshot_id != start.snapshot_id:
        if current.snapshot_id in seen or len(chain) > len(index.by_id):
            return None  # a parent cycle
        seen.add(current.snapshot_id)
        chain.append(current)
        parent = index.get(current.parent_snapshot_id)
        if parent is None:
            return None  # the history between them is gone, or another lineage
        current = parent
    chain.reverse()
    out: list[Rewrite] = []
    before, entries_before = _files(carrier, start)
    hidden_before = _java_hidden(carrier, start)
    applied_before: dict[str, tuple[tuple[str, ...], ...]] | None = None
    previous = start
    for snap in chain:
        after, entries_after = _files(carrier, snap)
        if any(before[p].location != after[p].location for p in set(before) & set(after)):
            return None  # a kept file's location respelled: readers' _file changes, the view's locations bind it
        removed = sorted(set(before) - set(after))
        added = sorted(set(after) - set(before))
        # Which deletes apply can change without a file changing (entries rewritten with other sequence numbers):
        # every snapshot's plans are compared, not only those of snapshots that changed files.
        kept = [p for p in set(before) & set(after) if after[p].kind == "data"]
        applied_before = applied_before if applied_before is not None else _applied_deletes(carrier, previous)
        applied_after = _applied_deletes(carrier, snap)
        # A kept file is re-read when the deletes applied to it changed, or its reader-view entry did (its data
        # sequence number; in v1/v2 the entries gain or lose it when the table gains or loses its last delete file).
        hidden_after = _java_hidden(carrier, snap)
        reread = sorted(p for p in kept if applied_before.get(p) != applied_after.get(p)
                        or entries_before.get(p) != entries_after.get(p)
                        or (after[p].location in hidden_after and before[p].location not in hidden_before))
        if removed or added or reread:
            if _operation(snap) != "replace":
                return None
            counts = _summary_counts(snap)
            data_removed = [p for p in removed if before[p].kind == "data"]
            data_added = [p for p in added if after[p].kind == "data"]
            # A data file removed and added again under its own path (a new entry) is counted by the summary and
            # kept by the file diff: the counts may include some of the files re-read.
            if counts is None or not (
                    len(data_added) <= counts["added-data-files"] <= len(data_added) + len(reread)
                    and len(data_removed) <= counts["deleted-data-files"] <= len(data_removed) + len(reread)):
                return None  # a summary that says otherwise than its manifests
            out.append(Rewrite(version=str(snap.snapshot_id),
                               removed=tuple(before[p] for p in [*data_removed, *reread]),
                               added=tuple(after[p] for p in [*data_added, *reread]), operation="replace"))
        before, entries_before, applied_before, previous = after, entries_after, applied_after, snap
        hidden_before = hidden_after
    return out


def whole_version(carrier: IcebergCarrier, attested: Version, version: Version, since: str) -> list[Rewrite]:
    """Every data file of ``attested`` removed and every data file of ``version`` added, as one rewrite: what the judge
    checks when the history between them expired (found through the retention tag, carriers/iceberg/carriage.py). The
    judge then compares the rows of the whole version, delete files applied, with the attested content digests: the
    same rows verify, other rows never do (whatever the expired snapshots did). ``since``: the attested snapshot's id,
    which the verdict names (attest/verify/report.py ``carried_words``)."""
    before, _ = _files(carrier, _snapshot_of(carrier, attested))
    after, _ = _files(carrier, _snapshot_of(carrier, version))
    return [Rewrite(version=since, removed=tuple(f for f in before.values() if f.kind == "data"),
                    added=tuple(f for f in after.values() if f.kind == "data"), operation=EXPIRED_HISTORY)]


def _snapshot_of(carrier: IcebergCarrier, v: Version) -> Snapshot:
    snap = v.handle if v.handle is not None else carrier.snapshot_index().get(int(v.id))
    if snap is None:
        from attest.errors import VersionNotFoundError

        raise VersionNotFoundError(f"snapshot {v.id} of {carrier.reference} is not in the table metadata")
    return snap
