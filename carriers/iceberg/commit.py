"""The follow-up commit of an Iceberg attestation (docs/iceberg.md): an append of no file on top of the attested
snapshot (or on top of earlier follow-ups of it), whose summary carries the attestation, committed with the
carrier's own retries (carriers/retry.py), never pyiceberg's replay; or, detached, a pointer file and no commit.
The Puffin file keeping the attestation (carriers/iceberg/kept.py) is written and registered in the same commit.

``FollowUpCommit`` is a part of ``IcebergCarrier`` (its ``_commit`` is the core's hook, carriers/core.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from attest.errors import AttestError, CarrierError, Code, SupersededError, UnsupportedTableError
from attest.model import Manifest
from carriers import properties as props
from carriers.core import Version
from carriers.iceberg.carriage import BRANCH_TAG_SEPARATOR, RETAIN_TAG, SIDECAR_DIR, retain_tag_name
from carriers.iceberg.hive_keep import hive_keeper
from carriers.iceberg.json_keep import KeepRaced
from carriers.iceberg.kept import ENVELOPE_BLOB, KEPT_SUFFIX, SIDECAR_BLOB, PendingBlob, PuffinStream, kept_name
from carriers.iceberg.sql_keep import sql_keeper
from carriers.retry import retry

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from carriers.core import AttestedTable
    from carriers.iceberg.carrier import SnapshotIndex
    from carriers.storage.base import Storage


__all__ = ["COMMIT_BACKOFF_S", "COMMIT_RETRIES", "SUMMARY_BUDGET", "DetachedKeep", "FollowUpCommit", "rest_keeper",
           "summary_size"]

# Every summary is copied into every later metadata.json: one attestation may add at most this many bytes.
SUMMARY_BUDGET = 8 * 1024
# Follow-up commits a catalog refused (REST: 409 Conflict) are retried this often, with exponential backoff.
COMMIT_RETRIES = 5
COMMIT_BACKOFF_S = 0.1
# pyiceberg 0.12 refuses to write format-v3 table metadata (TableMetadataV3.model_dump_json raises NotImplementedError,
# after the catalog created the new metadata file: an empty file would be left in the metadata folder), so a v3
# table's metadata-only commit is never tried through pyiceberg's own metadata writing; a ``detached_keeper`` commits
# it: the Spark hook's, ``rest_keeper`` for a REST catalog (its server writes the metadata), ``sql_keeper`` for a
# SQL catalog or ``hive_keeper`` for a Hive Metastore (carriers/iceberg/json_keep.py: the JSON edited and the catalog's
# pointer swapped, no pyiceberg model written).


@dataclass(frozen=True)
class DetachedKeep:
    """The metadata-only commit keeping a detached attestation (docs/maintenance.md): register ``statistics`` (the
    entry naming its Puffin file, Iceberg's JSON form; None: another producer's statistics of that snapshot stay) for
    ``snapshot_id``, set the retention tag ``tag`` on it (None: not moved) and remove the tags ``stale``."""

    snapshot_id: int
    statistics: Mapping[str, Any] | None
    tag: str | None
    stale: tuple[str, ...]
    # The metadata location the request was planned on (None: not said). A keeper that commits at the JSON level
    # (carriers/iceberg/json_keep.py) commits only onto it: another one means the plan may be stale (retried).
    base: str | None = None


class FollowUpCommit:
    """The follow-up commits of ``IcebergCarrier`` (its ``table``, ``branch``, ``storage`` and snapshot index)."""

    table: Table
    branch: str | None
    storage: Storage
    _index: SnapshotIndex | None
    retain_tag: bool = True  # IcebergCarrier's retain_tag (docs/iceberg.md "Expiry and tags")
    detached: bool  # IcebergCarrier's: detached=True asked for (commits nothing to the table metadata)
    # Commits a detached attestation's keeping where pyiceberg cannot (format v3): the Spark hook's, through Java's
    # Iceberg API (carriers/spark/hook.py spark_iceberg_keeper). None: ``rest_keeper`` for a REST catalog,
    # ``sql_keeper`` for a SQL catalog, ``hive_keeper`` for a Hive Metastore, else not kept (``kept_note`` says).
    detached_keeper: Callable[[DetachedKeep], None] | None = None
    kept_note: str | None = None

    if TYPE_CHECKING:
        @property
        def reference(self) -> str: ...
        @property
        def writes_detached(self) -> bool: ...
        def head(self) -> Snapshot | None: ...
        def snapshot_index(self) -> SnapshotIndex: ...
        def _data_snapshot(self, snapshot: Snapshot) -> Snapshot: ...
        def _metadata_dir(self) -> str: ...
        def _is_kept(self, location: str) -> bool: ...
        def _envelope_rel(self, digest: str) -> str: ...
        def _write_pointer(self, version_id: str, keys: Mapping[str, str]) -> None: ...
        def _pointer_name(self, version_id: str) -> str: ...
        def carried_by(self, snapshot: Snapshot) -> tuple[Any, int | None, bool] | None: ...
        def _kept_carried(self, snapshot: Snapshot) -> Any: ...
        def _warn(self, code: Code, message: str, *, logger: str = ...) -> str: ...

    def _content_binding(self, sidecar_rel: str) -> Any:
        """The sidecar's ``content`` binding (None: none), read from the start of the document only: ``content``
        sorts before ``files`` in canonical JSON, so the file list is never read (carriers/sidecar.py
        ``leading_members``). A document that does not read so (never one written here) is read whole, as before."""
        from carriers.sidecar import leading_members

        pieces = self.storage.read_chunks(sidecar_rel, 64 << 10)
        if pieces is None:
            raise CarrierError(f"the sidecar {sidecar_rel} just written cannot be read back")
        try:
            head = leading_members(pieces, "content")
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()
        if head is not None:
            return head.get("content")
        data = self.storage.read(sidecar_rel)
        if data is None:
            raise CarrierError(f"the sidecar {sidecar_rel} just written cannot be read back")
        try:
            doc = json.loads(data)
        except ValueError:
            return None
        return doc.get("content") if isinstance(doc, dict) else None

    def _companions(self, sidecar_rel: str) -> list[PendingBlob]:
        """The content-digest companion files the sidecar names (carriers/content_store.py), to keep in its Puffin
        file: remove_orphan_files deletes them at their own path (no metadata references them). Up to the bound,
        each taken by its size (``open_ranged``) and copied in pieces when the Puffin file is written."""
        from carriers.content_store import companion_rel
        from carriers.iceberg.kept import CONTENT_BLOB, MAX_CONTENT_BYTES

        content = self._content_binding(sidecar_rel) or {}
        try:
            names = [d for d in content.get("digests") or [] if isinstance(d, str)]
        except AttributeError:
            return []
        out: list[PendingBlob] = []
        size = 0
        for digest in names:
            rel = companion_rel(cast("AttestedTable", self), digest)
            opened = self.storage.open_ranged(rel)
            if opened is None:
                continue
            with opened:
                length = opened.size
            if size + length > MAX_CONTENT_BYTES:
                continue
            size += length
            out.append(PendingBlob(CONTENT_BLOB, self._pieces(rel, length), {}))
        return out

    def _pieces(self, rel: str, length: int | None = None,
                digest: str | None = None) -> Callable[[], Iterator[bytes]]:
        """The bytes of ``rel`` in pieces, read when taken: ``length`` and ``digest`` (when given) are what they were
        when the Puffin file was planned; other bytes by then are refused (sidecar_mismatch), before it is
        published."""
        from blake3 import blake3

        def pieces() -> Iterator[bytes]:
            chunks = self.storage.read_chunks(rel)
            if chunks is None:
                raise CarrierError(f"{rel} disappeared while it was being kept", code=Code.SIDECAR_MISMATCH, path=rel)
            hasher = blake3()
            got = 0
            for chunk in chunks:
                got += len(chunk)
                if digest is not None:
                    hasher.update(chunk)
                yield chunk
            if (length is not None and got != length) or (digest is not None and hasher.hexdigest() != digest):
                raise CarrierError(f"{rel} changed while it was being kept", code=Code.SIDECAR_MISMATCH, path=rel)

        return pieces

    def kept_statistics(self, tx: Any, keys: Mapping[str, str], *, attested: int, carrier: int,
                        sequence_number: int) -> None:
        """Write the Puffin file keeping this attestation (before the commit) and register it in ``tx`` for the
        attested snapshot (unless another producer's statistics are registered there) and the carrier snapshot.

        The file is written in pieces (``PuffinStream``; published as sidecars are, ``Storage.write_once_stream``
        under ``<sidecar blake3>.puffin``): the sidecar and the companion files are copied a piece at a time, never
        held whole. Its bytes are the ones ``build_puffin`` gives for the same blobs."""
        from pyiceberg.table.statistics import StatisticsFile

        entry = self._write_kept(keys, attested=attested, sequence_number=sequence_number)
        meta = tx.table_metadata
        update = tx.update_statistics()
        for snapshot_id in dict.fromkeys((carrier, attested)):
            if not self._ours_to_set(meta.statistics, snapshot_id):
                continue  # another producer's statistics of that snapshot are not replaced
            update.set_statistics(StatisticsFile.model_validate({**entry, "snapshot-id": snapshot_id}))
        update.commit()

    def _ours_to_set(self, statistics: Iterable[Any], snapshot_id: int) -> bool:
        """Whether a statistics entry of ours may be set for ``snapshot_id``: none there, or only ours."""
        return all(self._is_kept(str(e.statistics_path)) for e in statistics if e.snapshot_id == snapshot_id)

    def _write_kept(self, keys: Mapping[str, str], *, attested: int, sequence_number: int) -> dict[str, Any]:
        """Write the Puffin file keeping this attestation; the statistics entry naming it (Iceberg's JSON form)."""
        sidecar_rel = keys[props.KEY_SIDECAR_PATH]
        content = self._companions(sidecar_rel)  # raises when the sidecar cannot be read back
        envelope = None
        if keys.get(props.KEY_ENVELOPE):
            envelope = self.storage.read(self._envelope_rel(keys[props.KEY_ENVELOPE]))
        blobs = [PendingBlob(SIDECAR_BLOB, self._pieces(sidecar_rel, digest=keys[props.KEY_SIDECAR_HASH]), keys)]
        if envelope is not None:
            blobs.append(PendingBlob(ENVELOPE_BLOB, lambda: (envelope,), {}))
        stream = PuffinStream([*blobs, *content], snapshot_id=attested, sequence_number=sequence_number)
        rel, _ = self.storage.write_once_stream(SIDECAR_DIR, KEPT_SUFFIX, stream,
                                                name=kept_name(keys[props.KEY_SIDECAR_HASH]))
        assert stream.size is not None and stream.footer_size is not None  # the stream was taken to its end
        return {"snapshot-id": attested, "statistics-path": f"{self._metadata_dir()}/{rel}",
                "file-size-in-bytes": stream.size, "file-footer-size-in-bytes": stream.footer_size,
                "blob-metadata": []}

    def retain(self, tx: Any, carrier: int, branch: str | None) -> None:
        """Move the retention tag of ``branch``, the branch attested (``retain_tag_name``: main's RETAIN_TAG, or
        ``recipe-attest@<branch>``) to ``carrier``, the snapshot carrying the attestation, in the same metadata commit
        as the attestation (docs/iceberg.md "Expiry and tags"): expiry then keeps that snapshot, its files and its kept
        copy until a later attestation of that branch moves the tag, so a version of it whose history expired is still
        judged by content. One tag per branch: an attestation of a branch no longer takes main's attested snapshot out
        of retention. Off with ``retain_tag=False``. A ref of that name that is not ours (a branch, or a tag on a
        snapshot carrying no attestation) is never moved: UnsupportedTableError, before anything is committed. The
        tags of branches no longer in the table are released in the same commit (``stale_tags``), with or without
        ``retain_tag``."""
        from pyiceberg.table.update.snapshot import ManageSnapshots

        stale = self.stale_tags(tx.table_metadata.refs)
        if stale:
            manage = ManageSnapshots(tx)
            for old in stale:
                manage = manage.remove_tag(old)
            manage.commit()
        if not self.retain_tag:
            return
        from pyiceberg.table.refs import SnapshotRefType

        name = retain_tag_name(branch)
        ref = tx.table_metadata.refs.get(name)
        if ref is not None and not self.our_tag(ref):
            what = "branch" if ref.snapshot_ref_type == SnapshotRefType.BRANCH else "tag"
            raise UnsupportedTableError(
                f"{self.reference} has a {what} named {name!r} that recipe-attest did not set (on snapshot "
                f"{ref.snapshot_id}); the attestation's retention tag would replace it. Rename that {what}, or "
                "attest without the retention tag (retain_tag=False, attest record --no-retain-tag); nothing "
                "was committed")
        ManageSnapshots(tx).create_tag(carrier, name).commit()

    def stale_tags(self, refs: Mapping[str, Any]) -> list[str]:
        """The retention tags of branches the table no longer has (``recipe-attest@<branch>`` with no branch of
        that name): a dropped branch's tag would keep its snapshot, and the files it names, from every expiry.
        Only tags recipe-attest set (``our_tag``); main's tag is never one."""
        from pyiceberg.table.refs import SnapshotRefType

        prefix = f"{RETAIN_TAG}{BRANCH_TAG_SEPARATOR}"
        branches = {n for n, r in refs.items() if r.snapshot_ref_type == SnapshotRefType.BRANCH}
        return sorted(n for n, r in refs.items() if n.startswith(prefix) and n[len(prefix):] not in branches
                      and self.our_tag(r))

    def our_tag(self, ref: Any) -> bool:
        """Whether ``ref`` (a retention tag's name in the table metadata) is one recipe-attest set: a *tag* on a
        snapshot carrying an attestation of ours (its summary, a follow-up's binding, its pointer or kept copy)."""
        from pyiceberg.table.refs import SnapshotRefType

        tagged = self.snapshot_index().get(ref.snapshot_id)
        carried = None if tagged is None else self.carried_by(tagged)
        return ref.snapshot_ref_type == SnapshotRefType.TAG and tagged is not None and (
            (carried is not None and carried[0].foreign_binding is None)
            or (carried is None and self._kept_carried(tagged) is not None))

    def _commit(self, v: Version, keys: dict[str, str], manifest: Manifest) -> None:
        self.kept_note = None  # this write's (a carrier records again: an earlier write's note is not this one's)
        if self.writes_detached:
            self._refuse_attested(v.id)
            self._write_pointer(v.id, keys)
            self._index = None  # the pointer folder was listed
            self._keep_detached(int(v.id), keys)
            return
        size = summary_size(keys)
        if size > SUMMARY_BUDGET:
            raise CarrierError(f"the attestation would add {size} bytes to the snapshot summary (budget "
                               f"{SUMMARY_BUDGET}); shorten subject fields")
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.table.refs import MAIN_BRANCH

        where = "the current snapshot" if self.branch is None else f"the head of branch {self.branch}"
        # A catalog that refuses the commit (a REST catalog's 409: another writer changed the table metadata) is
        # retried on the refreshed table while the attested snapshot is still the head (of main, or of the branch
        # attested); once another snapshot is, the attestation could no longer follow it: superseded, never
        # retried onto the new head.
        def attempt() -> tuple[int, int]:
            self.table.refresh()
            current = self.head()
            # The head is v, or our follow-up attestation snapshots on top of v (a re-record: the new follow-up goes on
            # top of them and binds v, superseding them).
            if current is None or str(self._data_snapshot(current).snapshot_id) != v.id:
                raise SupersededError(f"snapshot {v.id} of {self.reference} is no longer {where}; a follow-up "
                                      "attestation can only follow it (use detached mode to attest older snapshots)")
            follows = current.snapshot_id
            with _without_replay(self.table).transaction() as tx:
                # On a branch, the follow-up is committed on the branch (pyiceberg asserts its head is `follows`).
                producer = tx.update_snapshot(snapshot_properties=keys,
                                              branch=self.branch or MAIN_BRANCH).fast_append()
                new_id = producer.snapshot_id
                try:
                    producer.commit()
                except ValueError as exc:
                    # pyiceberg carries the parent's totals into the new summary and refuses one that is no number
                    # (``total-files-size`` of "19-1"; Java's SnapshotSummary skips such a total). Found fuzzing,
                    # round 32: an internal error; nothing is committed.
                    raise UnsupportedTableError(
                        f"pyiceberg cannot commit the follow-up attestation of snapshot {v.id} of {self.reference}: "
                        f"{' '.join(str(exc).split())[:200]}; nothing was committed") from exc
                attested = self.table.snapshot_by_id(int(v.id))
                self.kept_statistics(tx, keys, attested=int(v.id), carrier=new_id,
                                     sequence_number=int(getattr(attested, "sequence_number", 0) or 0))
                self.retain(tx, new_id, self.branch)
            self.table.refresh()
            return follows, new_id

        try:
            follows, new_id = retry(attempt, retries=COMMIT_RETRIES, backoff_s=COMMIT_BACKOFF_S,
                                    retry_on=lambda exc: isinstance(exc, CommitFailedException))
        except CommitFailedException as exc:
            from attest.errors import CommitConflictError

            raise CommitConflictError(f"the follow-up attestation of snapshot {v.id} of {self.reference} "
                                      f"lost {COMMIT_RETRIES + 1} commit races: {exc}") from exc
        self._index = None
        committed = self.snapshot_index().get(new_id)
        if committed is None or committed.parent_snapshot_id != follows:
            # pyiceberg retried the commit onto a newer head: the attestation no longer follows its snapshot.
            raise SupersededError(
                f"a concurrent commit landed before the attestation of snapshot {v.id}; the follow-up snapshot "
                f"{new_id} does not follow it and will read as tampered. Run record again")


    # ---- detached attestations kept by the table metadata (docs/maintenance.md) --------------------------------------
    def _refuse_attested(self, version_id: str) -> None:
        """A detached attestation is written once per snapshot: a second ``record`` of it says so (was a bare
        ``sidecar_mismatch`` from the write-once pointer)."""
        name = self._pointer_name(version_id)
        if self.storage.read(name) is not None:
            raise CarrierError(f"snapshot {version_id} of {self.reference} is already attested ({name}): a detached "
                               "attestation is written once per snapshot. Verify it (attest verify "
                               f"{self.reference}@{version_id}); to attest again, commit a new snapshot",
                               code=Code.ALREADY_ATTESTED, path=name)

    def _detached_tag(self, refs: Mapping[str, Any], snapshot_id: int) -> str | None:
        """The retention tag a detached attestation of ``snapshot_id`` moves (None: none). Never a ref recipe-attest
        did not set, and never back to an older snapshot than the one it names (a detached record may attest an old
        snapshot: moving the tag there would let expiry drop the newer attestation it keeps)."""
        if not self.retain_tag:
            return None
        name = retain_tag_name(self.branch)
        ref = refs.get(name)
        if ref is None:
            return name
        if ref.snapshot_id == snapshot_id or not self.our_tag(ref):
            return None
        index = self.snapshot_index()
        tagged, target = index.get(ref.snapshot_id), index.get(snapshot_id)
        if tagged is not None and target is not None and \
                (tagged.sequence_number or 0) > (target.sequence_number or 0):
            return None
        return name

    def _keep_detached(self, snapshot_id: int, keys: Mapping[str, str]) -> None:
        """Keep a format-v3 table's detached attestation as a follow-up's is kept, with no snapshot: its Puffin file
        registered as the attested snapshot's statistics file and the retention tag moved to that snapshot, in one
        metadata-only commit (Java's DeleteOrphanFiles keeps a registered statistics file; expiry keeps a tagged
        snapshot), through ``detached_keeper`` (pyiceberg 0.12 writes no v3 table metadata), else the REST, SQL or Hive
        catalog's keeper. The request is planned on a fresh read at each attempt; a SQL or Hive catalog's lost race
        (``KeepRaced``) is retried, bounded. Without a keeper (Glue…), or asked for ``detached=True`` (which
        commits nothing to the table metadata, by contract), it is not kept: ``kept_note`` says so."""
        if self.detached:
            return
        keeper = (self.detached_keeper or rest_keeper(self.table) or sql_keeper(self.table)
                  or hive_keeper(self.table))
        if keeper is None:
            self.kept_note = self._warn(Code.NOT_KEPT, (
                f"the detached attestation of snapshot {snapshot_id} is not registered in the table metadata: "
                "pyiceberg 0.12 cannot write format-v3 table metadata for this catalog "
                f"({type(self.table.catalog).__name__}), so orphan removal deletes it and expiry may drop the "
                "snapshot. To keep it, attest through the Spark hook, a REST catalog, a SQL catalog or a Hive "
                "Metastore (docs/maintenance.md)"))
            return
        snapshot = self.snapshot_index().get(snapshot_id)
        entry = self._write_kept(keys, attested=snapshot_id,
                                 sequence_number=int(getattr(snapshot, "sequence_number", 0) or 0))

        def attempt() -> None:
            # planned on a fresh read each time: a concurrent commit may have moved the tag or registered another
            # producer's statistics for the snapshot (a SQL catalog's keeper commits only onto this very metadata)
            self.table.refresh()
            self._index = None
            meta = self.table.metadata
            keeper(DetachedKeep(snapshot_id, entry if self._ours_to_set(meta.statistics, snapshot_id) else None,
                                self._detached_tag(meta.refs, snapshot_id), tuple(self.stale_tags(meta.refs)),
                                base=self.table.metadata_location))

        try:
            retry(attempt, retries=COMMIT_RETRIES, backoff_s=COMMIT_BACKOFF_S,
                  retry_on=lambda exc: isinstance(exc, KeepRaced))
        except KeepRaced as exc:
            self.kept_note = self._warn(exc.code, (
                f"the detached attestation of snapshot {snapshot_id} was written, but registering it in the table "
                f"metadata lost {COMMIT_RETRIES + 1} races with other writers ({exc.message}); nothing was deleted. "
                "Orphan removal deletes the attestation and expiry may drop the snapshot (docs/maintenance.md)"))
        except Exception as exc:  # the attestation (its pointer) stands; only its keeping failed (py4j errors vary)
            # ours carry their code; any other failure (a Java or catalog error) is the keeping's: not_kept
            code = exc.code if isinstance(exc, AttestError) else Code.NOT_KEPT
            self.kept_note = self._warn(code, (
                f"the detached attestation of snapshot {snapshot_id} was written, but registering it in the table "
                f"metadata failed ({type(exc).__name__}: {str(exc)[:300]}): orphan removal deletes it and expiry may "
                "drop the snapshot (docs/maintenance.md)"))
        finally:
            self.table.refresh()
            self._index = None


def rest_keeper(table: Table) -> Callable[[DetachedKeep], None] | None:
    """A ``detached_keeper`` for a table of a REST catalog (None: another catalog): pyiceberg's own transaction, its
    ``set-statistics`` and ``set-snapshot-ref`` updates sent to the server, which writes the format-v3 metadata
    (pyiceberg 0.12 only serialises the request and parses the answer; measured: tests/objectstore/
    test_rest_apache.py). Other catalogs write the metadata file in pyiceberg itself, which fails for v3 after
    creating it: never tried there."""
    from pyiceberg.catalog.rest import RestCatalog

    if not isinstance(table.catalog, RestCatalog):
        return None

    def keep(request: DetachedKeep) -> None:
        from pyiceberg.table.statistics import StatisticsFile
        from pyiceberg.table.update.snapshot import ManageSnapshots

        table.refresh()
        # no replay: a refused commit (409, the tag moved meanwhile) fails and warns; the pointer stands
        tx = _without_replay(table).transaction()
        if request.statistics is not None:
            tx.update_statistics().set_statistics(StatisticsFile.model_validate(dict(request.statistics))).commit()
        if request.stale or request.tag is not None:
            manage = ManageSnapshots(tx)
            for old in request.stale:
                manage = manage.remove_tag(old)
            if request.tag is not None:
                manage = manage.create_tag(request.snapshot_id, request.tag)  # set-snapshot-ref replaces ours
            manage.commit()
        tx.commit_transaction()

    return keep


def _without_replay(table: Table) -> Table:
    """The table with pyiceberg's own commit retries off: pyiceberg would re-apply a refused follow-up append onto
    whatever snapshot is current by then, which is not the one it attests. The carrier retries itself instead."""
    from pyiceberg.table import Table as _Table

    properties = {**table.metadata.properties, "commit.retry.num-retries": "0"}
    metadata = table.metadata.model_copy(update={"properties": properties})
    return _Table(table._identifier, metadata, table.metadata_location, table.io, table.catalog,
                  config=dict(getattr(table, "config", {}) or {}))


def summary_size(keys: Mapping[str, str]) -> int:
    return len(json.dumps(dict(keys), separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
