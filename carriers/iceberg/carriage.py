"""Where an Iceberg snapshot's attestation is carried (docs/iceberg.md): its own summary, the summary of a follow-up
snapshot (an append of no file binding its parent, or after re-records the data snapshot under a chain of them), a
detached pointer, or the copy kept in a Puffin statistics file (carriers/iceberg/kept.py) once the snapshot whose
summary carried it expired.

``Carriage`` is a part of ``IcebergCarrier``: it reads the carrier's snapshot index (``snapshot_index``) and storage,
and answers ``carried_by`` (one snapshot) and ``_find`` (the attestation in force at a snapshot, walking ancestry).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from attest.canonical import blake3_hex
from attest.errors import AttestError, Code, Problem
from attest.numbers import is_digits, is_signed_digits
from carriers import properties as props
from carriers.core import Carried, KeptCopyMismatch, Version
from carriers.iceberg.kept import (
    MAX_WHOLE_BLOB_BYTES,
    BlobRef,
    PuffinIndex,
    blob_chunks,
    blob_digest,
    is_kept_location,
    read_footer,
    sidecar_keys,
)
from carriers.iceberg.summaries import built_on_earlier as _built_on_earlier
from carriers.iceberg.summaries import changed_no_file as _changed_no_file
from carriers.iceberg.summaries import operation as _operation
from carriers.iceberg.summaries import summary as _summary
from carriers.storage.base import Ranged, local_path_of
from carriers.storage.errors import StoreReadError

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from carriers.core import LiveVersion
    from carriers.iceberg.carrier import SnapshotIndex
    from carriers.storage.base import Storage

__all__ = ["RETAIN_TAG", "Carriage", "retain_tag_name"]

_T = TypeVar("_T")

SIDECAR_DIR = "recipe_attest"
POINTER_DIR = f"{SIDECAR_DIR}/snapshots"
# The moving tag every attestation commit of main sets on the snapshot carrying the attestation (docs/iceberg.md
# "Expiry and tags"): expiry keeps that snapshot and its files, so a later version whose history expired is judged by
# content. An attestation of another branch moves that branch's own tag (retain_tag_name).
RETAIN_TAG = "recipe-attest"
# Between RETAIN_TAG and a branch's name. Iceberg ref names are free strings (the spec, Java's SnapshotManager and
# pyiceberg's ManageSnapshots constrain nothing but uniqueness); Spark's VERSION AS OF 'x' takes x as a snapshot id
# only when it parses as a long, else as a ref name, and "recipe-attest@…" never parses as one; "@" is not among
# the characters Iceberg's Spark catalog gives a meaning in a table identifier ("." between its parts, "#" before a
# metadata table, the branch_/tag_/snapshot_id_/at_timestamp_ selectors), nor does it occur in RETAIN_TAG, so no
# branch's tag is main's and two branches never share one (measured with Spark's Iceberg 1.12 runtime:
# tests/spark/test_maintenance_iceberg.py).
BRANCH_TAG_SEPARATOR = "@"


def retain_tag_name(branch: str | None) -> str:
    """The retention tag of ``branch`` (None or "main": main's, RETAIN_TAG; another: ``recipe-attest@<branch>``)."""
    return RETAIN_TAG if branch in (None, "main") else f"{RETAIN_TAG}{BRANCH_TAG_SEPARATOR}{branch}"


def is_retain_tag(name: str) -> bool:
    """Whether ``name`` is a retention tag's (``retain_tag_name``): recipe-attest's own, moved with each attestation."""
    return name == RETAIN_TAG or name.startswith(RETAIN_TAG + BRANCH_TAG_SEPARATOR)


def _binding_key(keys: Mapping[str, str]) -> str | None:
    return keys.get(props.KEY_VERSION) or keys.get(props.LEGACY_KEY_VERSION)


@dataclass(frozen=True)
class _Found:
    """The attestation in force at a snapshot: where it is, which snapshots lie between it and the target."""

    carried: Carried | None
    attested: int | None
    carrier_snapshot: int | None
    follow_up: bool
    between: tuple[Snapshot, ...]
    complete: bool
    notes: tuple[str, ...] = ()
    # Found through the RETAIN_TAG after the ancestry of the target ended at expired snapshots: judged by content.
    retained: bool = False


def _attestation_only(snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` is a follow-up attestation snapshot: an append of no file whose summary binds another
    snapshot (its parent, or after a re-record the data snapshot under a chain of them)."""
    if _operation(snapshot) != "append" or not _changed_no_file(snapshot):
        return False
    binding = _binding_key(props.attestation_keys(_summary(snapshot)))
    return binding is not None and binding != str(snapshot.snapshot_id)


class Carriage:
    """Where ``IcebergCarrier``'s attestations are carried (its ``table``, ``storage`` and snapshot index)."""

    table: Table
    storage: Storage
    branch: str | None  # IcebergCarrier's: the branch it reads (None: main)
    _kept_cache: dict[str, PuffinIndex | None]
    _kept_verified: dict[tuple[str, int, int, str], bool]

    if TYPE_CHECKING:
        def snapshot_index(self) -> SnapshotIndex: ...
        def _data_snapshot(self, snapshot: Snapshot) -> Snapshot: ...
        def _parent(self, snapshot: Snapshot) -> Snapshot | None: ...
        def _metadata_dir(self) -> str: ...
        def _read_pointer(self, version_id: str) -> Carried | None: ...
        def _live(self, v: Version) -> LiveVersion: ...
        def _in_previous_metadata(self, snapshot_id: int) -> bool: ...

    # ---- the attestation in force ------------------------------------------------------------------------------
    def _summary_keys(self, snapshot: Snapshot) -> dict[str, str]:
        return props.attestation_keys(_summary(snapshot))

    def carried_by(self, snapshot: Snapshot) -> tuple[Carried, int | None, bool] | None:
        """The attestation ``snapshot``'s summary holds (or its detached pointer): (carried, attested id, follow-up).
        Read once per snapshot and table metadata."""
        index = self.snapshot_index()
        if snapshot.snapshot_id not in index.carried:
            index.carried[snapshot.snapshot_id] = self._read_carried_by(snapshot)
        return index.carried[snapshot.snapshot_id]

    def _pointer_of(self, snapshot_id: int) -> Carried | None:
        """The detached pointer of a snapshot. The pointer folder is listed once per table metadata where the listing
        is authoritative (a local folder), so walking thousands of snapshots reads only the pointers that exist."""
        index = self.snapshot_index()
        if not index.pointers_listed:
            index.pointers_listed = True
            if self.storage.local_root is not None:
                try:
                    index.pointers = frozenset(self.storage.list_names(POINTER_DIR))
                except OSError:  # unlistable (permissions): each pointer is read, and reported, as before
                    index.pointers = None
        name = f"{snapshot_id}.json"
        if index.pointers is not None and name not in index.pointers:
            return None
        return self._read_pointer(str(snapshot_id))

    def _read_carried_by(self, snapshot: Snapshot) -> tuple[Carried, int | None, bool] | None:
        pointer = self._pointer_of(snapshot.snapshot_id)
        if pointer is not None:
            return pointer, snapshot.snapshot_id, False
        keys = self._summary_keys(snapshot)
        if not keys:
            # A detached attestation whose pointer orphan removal deleted is kept by the statistics file registered
            # for its snapshot (commit.py _keep_detached): found there on any walk, as the pointer was (was: only for
            # the snapshot verified, so a later snapshot's walk passed it and the attestation was lost).
            kept = None
            if snapshot.snapshot_id in self.snapshot_index().with_statistics:
                kept = self._kept_carried(snapshot)
            return None if kept is None else (kept, snapshot.snapshot_id, False)
        own, parent = snapshot.snapshot_id, snapshot.parent_snapshot_id
        binding = _binding_key(keys)
        if binding is None and not any(k.startswith(props.CARRIER_PREFIX) for k in keys):
            # Another producer's summary keys: bound to the snapshot that carries them.
            return Carried(keys=keys, where=f"summary of snapshot {own}", foreign_binding=str(own),
                           foreign_note=f"bound to the snapshot that carries it, {own}"), own, False
        if binding == str(own):
            return Carried(keys=keys, where=f"summary of snapshot {own}"), own, False
        index = self.snapshot_index()
        if parent is None and binding is not None and is_digits(binding) and \
                index.get(int(binding)) is None and _changed_no_file(snapshot):
            # A follow-up whose data snapshot expired: the reader view check against its own files still holds.
            parent = int(binding)
        elif binding is not None and is_signed_digits(binding) and binding != str(parent) \
                and _changed_no_file(snapshot) and _operation(snapshot) == "append" \
                and (parent is None or (parent not in index.by_id and self._in_previous_metadata(parent))) \
                and self._same_files(snapshot, index.get(int(binding))):
            # A re-record's follow-up whose parent, an earlier follow-up of the same data snapshot, expired: pyiceberg's
            # expiry clears the parent of the snapshots it keeps, Java's leaves its id (measured with Spark,
            # tests/spark/test_maintenance_iceberg.py), naming a snapshot an older metadata file of the log lists. It
            # still holds exactly the files of the snapshot it binds, so nothing the expired snapshots did is visible.
            # Was carrier_tampered. (A parent id naming a snapshot the table never had is still refused:
            # test_iceberg_ancestry_attacks.)
            parent = int(binding)
        below = None if parent is None or binding == str(parent) else index.get(parent)
        if below is not None and binding is not None and is_signed_digits(binding) and _attestation_only(below) and \
                binding in self._chain_data(below):
            # A re-record: a follow-up on top of earlier follow-ups of the same data snapshot, which it binds.
            parent = int(binding)
        if parent is not None and binding == str(parent):
            problems: tuple[Problem, ...] = ()
            if not _changed_no_file(snapshot) or _operation(snapshot) != "append":
                problems = (Problem(Code.CARRIER_TAMPERED, f"snapshot {own} carries a follow-up attestation for "
                                    f"{parent} but is not an append of no file"),)
            return Carried(keys=keys, where=f"follow-up snapshot {own}", problems=problems,
                           note=f"attested by follow-up snapshot {own}"), parent, True
        message = (f"snapshot {own} carries attestation keys without a binding" if binding is None else
                   f"snapshot {own} carries an attestation bound to snapshot {binding}, which is neither itself nor "
                   "its parent")
        attested = int(binding) if binding is not None and is_signed_digits(binding) else None
        return Carried(keys=keys, where=f"summary of snapshot {own}",
                       problems=(Problem(Code.CARRIER_TAMPERED, message),)), attested, False

    def _same_files(self, snapshot: Snapshot, other: Snapshot | None) -> bool:
        """Do two snapshots hold the same live files (path, size and kind, delete files included)?"""
        if other is None:
            return False

        def files(snap: Snapshot) -> set[tuple[str, int, str]]:
            live = self._live(Version(id=str(snap.snapshot_id), number=snap.snapshot_id, handle=snap))
            return {(f.path, f.size, f.kind) for f in live.files}

        return files(snapshot) == files(other)

    def _chain_data(self, snapshot: Snapshot) -> tuple[str, ...]:
        """What a follow-up on top of ``snapshot`` (one of our follow-ups) may bind: the data snapshot under the chain;
        when that one expired, the chain's oldest follow-up left (what a re-record then attests) or the expired
        snapshot that follow-up binds."""
        bottom = self._data_snapshot(snapshot)
        if not _attestation_only(bottom):
            return (str(bottom.snapshot_id),)
        return (str(bottom.snapshot_id), _binding_key(props.attestation_keys(_summary(bottom))) or "")

    def _follow_up_child(self, snapshot: Snapshot) -> tuple[Carried, int | None, bool, Snapshot] | None:
        """The latest follow-up attestation of ``snapshot``: among its children, and after re-records the chain of
        follow-up snapshots above it, the last committed one that binds it (the one in force, as on Delta)."""
        index = self.snapshot_index()
        found: tuple[Carried, int | None, bool, Snapshot] | None = None
        todo = list(index.children.get(snapshot.snapshot_id, ()))
        seen = {snapshot.snapshot_id}
        while todo:
            snap = todo.pop()
            if snap.snapshot_id in seen:  # a parent cycle
                continue
            seen.add(snap.snapshot_id)
            carried = self.carried_by(snap)
            if carried is not None and carried[2] and carried[1] == snapshot.snapshot_id and (
                    found is None or index.order(snap) >= index.order(found[3])):
                found = (*carried, snap)
            if _attestation_only(snap):
                todo.extend(index.children.get(snap.snapshot_id, ()))
        return found

    def _find(self, target: Snapshot) -> _Found:
        """The attestation in force at ``target`` (once per snapshot and table metadata): a follow-up of it (the
        latest, so a re-record supersedes what it carries itself), its own, else the nearest ancestor's."""
        index = self.snapshot_index()
        found = index.found.get(target.snapshot_id)
        if found is None:
            found = index.found[target.snapshot_id] = self._walk(target)
        return found

    def _walk(self, target: Snapshot) -> _Found:
        child = self._follow_up_child(target)
        if child is not None:
            return _Found(child[0], child[1], child[3].snapshot_id, True, (), True,
                          (f"attested by follow-up snapshot {child[3].snapshot_id}",))
        own = self.carried_by(target)
        if own is not None:
            return _Found(own[0], own[1], target.snapshot_id, own[2], (), True)
        kept = self._kept_carried(target)  # the snapshot whose summary carried it expired; statistics keep it
        if kept is not None:
            return _Found(kept, target.snapshot_id, target.snapshot_id, False, (), True)
        between = [target]
        current = target
        seen = {target.snapshot_id}
        # Each step visits a new snapshot: at most as many steps as the metadata lists snapshots.
        while current.parent_snapshot_id is not None:
            parent = self._parent(current)
            if parent is None:
                return self._retained(target, between) or _Found(None, None, None, False, tuple(between), False, (
                    f"the ancestry of snapshot {target.snapshot_id} ends at expired snapshot "
                    f"{current.parent_snapshot_id}: an attestation carried before it cannot be found",))
            if parent.snapshot_id in seen:  # forged metadata: _metadata_problems makes it table_inconsistent
                return _Found(None, None, None, False, tuple(between), False, (
                    f"the ancestry of snapshot {target.snapshot_id} loops back to snapshot {parent.snapshot_id} "
                    "(a parent cycle): no attestation was found before the loop",))
            seen.add(parent.snapshot_id)
            carried = self.carried_by(parent)
            if carried is not None:
                return _Found(carried[0], carried[1], parent.snapshot_id, carried[2], tuple(between), True)
            between.append(parent)
            current = parent
        notes: tuple[str, ...] = ()
        if self._expired_below(current):
            retained = self._retained(target, between)
            if retained is not None:
                return retained
            notes = (f"the ancestry of snapshot {target.snapshot_id} ends at snapshot {current.snapshot_id} because "
                     "older snapshots have expired: an attestation carried by them cannot be found",)
        return _Found(None, None, None, False, tuple(between), True, notes)

    def _expired_below(self, root: Snapshot) -> bool:
        """Whether snapshots older than ``root``, where an ancestry ends (it names no parent), have expired. v2+: the
        first snapshot of a table has sequence number 1, a later one more. Format v1 records no sequence number
        (pyiceberg reads 0), and pyiceberg's expiry clears the parent of the snapshots it keeps (Java's keeps the id,
        so its walk ends at an expired parent instead): the root's own summary tells, when it says the table held data
        before it (``built_on_earlier``: files or records deleted, more in total than added; pyiceberg writes these
        counters in every snapshot, measured, as Java's SnapshotSummary does). A first snapshot never says so, so a
        table set back to it is not judged through the tag. Was: a v1 table's cut history never consulted the tag.
        Either way, what the tag names is judged by content, never taken on this evidence alone."""
        if (root.sequence_number or 0) > 1:
            return True
        return int(self.table.metadata.format_version) == 1 and _built_on_earlier(root)

    def _retain_tags(self, target: Snapshot) -> list[str]:
        """The retention tags followed for ``target``, in order: the tag of the branch it is read through. A carrier
        opened on a branch reads that branch; otherwise main's tag when ``target`` is main's head, then the tags of
        the other branches whose head it is (a branch verified by its name, ``--snapshot-id audit``); main's last (a
        snapshot no branch heads, or a branch attested before branches had tags of their own). The first tag naming
        an attestation is followed: its rows are judged by content, so another tag can never make other rows pass."""
        from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType

        refs = self.table.metadata.refs
        heads = [name for name, ref in sorted(refs.items()) if ref.snapshot_ref_type == SnapshotRefType.BRANCH
                 and ref.snapshot_id == target.snapshot_id]
        order: list[str | None] = [self.branch] if self.branch is not None else []
        order += [None] if MAIN_BRANCH in heads else []
        order += [name for name in heads if name != MAIN_BRANCH]
        return list(dict.fromkeys([*map(retain_tag_name, order), RETAIN_TAG]))

    def _retained(self, target: Snapshot, between: list[Snapshot]) -> _Found | None:
        """The attestation carried by the snapshot a retention tag names (``_retain_tags``: main's RETAIN_TAG, or the
        tag of the branch read), for a ``target`` whose ancestry ended at expired snapshots before an attestation was
        found. Only a *tag* of that name counts (a branch of that name is the user's), and only a snapshot carrying an
        attestation itself (its summary, a follow-up's binding, its detached pointer or its kept statistics copy).
        What it attests is never taken for ``target``'s: the history between them is gone, so the carrier judges
        ``target``'s rows against the attested version's whole-version content digest
        (``IcebergCarrier._content_check``); a problem of what the tag names (forged keys, another table's sidecar) is
        the verdict's, as anywhere."""
        for name in self._retain_tags(target):
            found = self._retained_by(name, target, between)
            if found is not None:
                return found
        return None

    def _retained_by(self, name: str, target: Snapshot, between: list[Snapshot]) -> _Found | None:
        from pyiceberg.table.refs import SnapshotRefType

        ref = self.table.metadata.refs.get(name)
        if ref is None or ref.snapshot_ref_type != SnapshotRefType.TAG:
            return None
        index = self.snapshot_index()
        tagged = index.get(ref.snapshot_id)
        if tagged is None or any(s.snapshot_id == tagged.snapshot_id for s in between):
            return None  # a tag naming no snapshot, or one the walk passed (it carries nothing)
        carried = self.carried_by(tagged)
        if carried is None:
            kept = self._kept_carried(tagged)
            if kept is None:
                return None
            carried = (kept, tagged.snapshot_id, False)
        what, attested, follow_up = carried
        note = (f"the history between snapshot {target.snapshot_id} and the attestation of snapshot {attested} "
                f"(carried by snapshot {tagged.snapshot_id}, kept by the tag {name!r}) has expired: the "
                "current rows are judged against the attested version's content digest, not by the commits between")
        return _Found(what, attested, tagged.snapshot_id, follow_up, tuple(between), False, (note,), retained=True)

    def _carried(self, v: Version) -> Carried | None:
        found = self._find(v.handle)
        if found.carried is None:
            return None
        carried = found.carried
        if found.attested is not None and self.snapshot_index().get(found.attested) is None:
            from dataclasses import replace

            carried = replace(carried, note=f"the attested snapshot {found.attested} has expired; its follow-up "
                              f"snapshot {found.carrier_snapshot} still holds the same files")
        return carried

    # ---- attestations table maintenance keeps (carriers/iceberg/kept.py) ----------------------------------------
    # Read by ranges, never whole: the footer once (cached), then only the blob wanted, in pieces.
    def _kept_files(self, snapshot_id: int | None = None) -> list[tuple[Any, str, PuffinIndex | None]]:
        """(statistics entry, its name under the root, what its footer names) for every entry naming one of our kept
        Puffin files (of ``snapshot_id`` only, when given). Only ``<metadata dir>/recipe_attest/<blake3>.puffin`` is
        ever read."""
        found: list[tuple[Any, str, PuffinIndex | None]] = []
        for entry in self.table.metadata.statistics:
            if snapshot_id is not None and entry.snapshot_id != snapshot_id:
                continue
            path = str(entry.statistics_path)
            if not self._is_kept(path):
                continue
            rel = f"{SIDECAR_DIR}/{path.rsplit('/', 1)[1]}"
            if path not in self._kept_cache:
                self._kept_cache[path] = self._read_kept(rel, lambda opened: read_footer(opened.size, opened.read))
            found.append((entry, rel, self._kept_cache[path]))
        return found

    def _read_kept(self, rel: str, how: Callable[[Ranged], _T]) -> _T | None:
        """``how`` applied to the kept file ``rel`` opened for ranged reads; None when it is absent or cannot be
        read (a store's coded failure is raised as it is)."""
        try:
            opened = self.storage.open_ranged(rel)
            if opened is None:
                return None
            with opened:
                return how(opened)
        except StoreReadError as exc:
            raise exc.error from None
        except (OSError, ValueError):
            return None

    def _is_kept(self, location: str) -> bool:
        # Spark writes file:/x, a catalog may give pyiceberg file:///x: the same local file.
        return is_kept_location(_comparable(location), _comparable(self._metadata_dir()), SIDECAR_DIR)

    def _kept_copy(self, digest: str) -> bytes | None:
        """The bytes of the first of our blobs recorded under ``digest`` that hash to it (an envelope, a companion
        file: their readers take bytes), read by range."""
        for _entry, rel, index in self._kept_files():
            for blob in [] if index is None else index.with_digest(digest):
                if blob.length > MAX_WHOLE_BLOB_BYTES:
                    continue
                data = self._read_kept(rel, functools.partial(_whole_blob, blob=blob))
                if data is not None and blake3_hex(data) == digest:
                    return data
        return None

    def _kept_chunks(self, digest: str) -> Iterator[Iterator[bytes]]:
        """Each of our blobs recorded under ``digest``, as pieces read by range while they are taken; a blob whose
        bytes do not hash to it ends in KeptCopyMismatch (the caller takes the next)."""
        for _entry, rel, index in self._kept_files():
            if index is None:
                continue
            for blob in index.with_digest(digest):
                yield self._verified_blob(rel, blob, index.size)

    def _verified_blob(self, rel: str, blob: BlobRef, size: int) -> Iterator[bytes]:
        from blake3 import blake3

        try:
            opened = self.storage.open_ranged(rel)
        except AttestError as exc:  # the store's coded failure, passed through the parser as a read failure
            raise StoreReadError(exc) from None
        if opened is None:
            raise KeptCopyMismatch(f"{rel} is gone")
        with opened:
            if opened.size != size:
                raise KeptCopyMismatch(f"{rel} changed since its footer was read")
            hasher = blake3()
            for chunk in blob_chunks(opened.read, blob):
                hasher.update(chunk)
                yield chunk
        if hasher.hexdigest() != blob.digest:
            raise KeptCopyMismatch(f"a blob of {rel} does not hash to the BLAKE3 recorded for it")

    def _kept_sidecar(self, rel: str, index: PuffinIndex) -> BlobRef | None:
        """The first sidecar blob of a kept file whose bytes hash to the BLAKE3 recorded for it (hashed by range, in
        pieces; each blob once)."""
        for blob in index.sidecars():
            key = (rel, blob.offset, blob.length, blob.digest)
            if key not in self._kept_verified:
                got = self._read_kept(rel, functools.partial(_blob_digest, blob=blob))
                self._kept_verified[key] = got == blob.digest
            if self._kept_verified[key]:
                return blob
        return None

    def _kept_carried(self, snapshot: Snapshot) -> Carried | None:
        """The attestation of ``snapshot`` kept in a statistics file registered for it: it must bind that very
        snapshot (copied to another snapshot's entry, or re-pointed, it is tampered)."""
        own = snapshot.snapshot_id
        kept: list[tuple[Any, BlobRef]] = []
        for entry, rel, index in self._kept_files(own):
            blob = None if index is None else self._kept_sidecar(rel, index)
            if blob is not None and sidecar_keys(blob):
                kept.append((entry, blob))
        if not kept:
            return None
        where = f"statistics file of snapshot {own}"
        if len(kept) > 1:
            return Carried(keys=sidecar_keys(kept[0][1]), where=where, problems=(Problem(
                Code.CARRIER_TAMPERED, f"snapshot {own} has {len(kept)} statistics files (the spec allows one)"),))
        keys = sidecar_keys(kept[0][1])
        binding = _binding_key(keys)
        problems: tuple[Problem, ...] = ()
        if binding != str(own) or kept[0][1].snapshot_id != own or \
                keys.get(props.KEY_SIDECAR_HASH) != kept[0][1].digest:
            problems = (Problem(Code.CARRIER_TAMPERED, f"the statistics file registered for snapshot {own} holds an "
                                f"attestation bound to {binding if binding is not None else 'nothing'}, not to {own}"),)
        return Carried(keys=keys, where=where, problems=problems,
                       note=f"attestation kept in the statistics file of snapshot {own} (the snapshot whose summary "
                       "carried it has expired, or its detached pointer is gone)")


def _whole_blob(opened: Ranged, blob: BlobRef) -> bytes:
    return opened.read(blob.offset, blob.length)


def _blob_digest(opened: Ranged, blob: BlobRef) -> str:
    return blob_digest(opened.read, blob)


def _comparable(uri: str) -> str:
    local = local_path_of(uri, decode=False)  # Iceberg locations are literal strings (see FileIOStorage)
    return (local if local is not None else uri).rstrip("/")
