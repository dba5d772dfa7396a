"""The Iceberg carrier: an attestation travels in a snapshot summary (docs/iceberg.md).

Summaries are immutable and written at commit, so an attestation is either

- carried by the data snapshot itself (content-addressed write: the manifest is fully known before the commit),
  binding ``recipe_manifest._binding.version`` = that snapshot's own id; or
- carried by a *follow-up* snapshot: an append that adds no file, committed right after the data snapshot, whose
  binding names its parent (attest-after-write, ``record()``).

Every attestation writes a content-addressed sidecar ``<metadata dir>/recipe_attest/<blake3>.json`` (file triples
and observed inputs); above ``INLINE_OUTPUTS_MAX`` files the output list lives only there, so one attestation adds
a bounded number of summary bytes however many files the table has.
"""

from __future__ import annotations

import io
import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, cast
from urllib.parse import urlparse

from attest import __version__
from attest.build import PRODUCER_NAME, build_manifest, new_run_id
from attest.errors import (
    CarrierError,
    Code,
    Problem,
    TableNotFoundError,
    TableReferenceError,
    UnsupportedTableError,
    VersionNotFoundError,
)
from attest.hashing import hash_bytes, hash_stream
from attest.identity.env import env_identity
from attest.identity.inputs import ObservedInput, content_identity, inputs_identity
from attest.identity.program import program_identity_sql
from attest.model import Manifest
from carriers.base import Attestation, DataFile, FileIdentity, Progress, TableState, WriteResult, triples_for
from carriers.properties import (
    INLINE_OUTPUTS_MAX,
    KEY_OUTPUTS_COUNT,
    KEY_OUTPUTS_WHERE,
    KEY_SIDECAR_HASH,
    KEY_SIDECAR_PATH,
    KEY_VERSION,
    KeyMappingError,
    from_properties,
    manifest_keys,
    to_properties,
)
from carriers.sidecar import Sidecar, SidecarError, sidecar_name
from carriers.sidecar import build as build_sidecar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = [
    "SIDECAR_DIR",
    "SUMMARY_BUDGET",
    "IcebergCarrier",
    "attest_after_write",
    "classify_changes",
    "tag_attested",
    "write_content_addressed",
]

SIDECAR_DIR = "recipe_attest"
# Every summary is copied into every later metadata.json: one attestation may add at most this many bytes.
SUMMARY_BUDGET = 8 * 1024
REMOTE_WORKERS = 16
# Summary counters Iceberg computes; a snapshot whose counters are all zero/absent changed no file.
_CHANGE_COUNTERS = (
    "added-data-files", "deleted-data-files", "added-delete-files", "removed-delete-files",
    "added-position-delete-files", "removed-position-delete-files", "added-equality-delete-files",
    "removed-equality-delete-files", "added-dvs", "removed-dvs", "added-records", "deleted-records",
)
_DATA_OPERATIONS = ("append", "overwrite", "delete")
# Operations that read the table they write into (Spark MERGE/UPDATE commit `overwrite`, DELETE `delete`).
_READS_PREVIOUS = ("overwrite", "delete")


def _pyiceberg_version() -> str:
    import pyiceberg

    return str(pyiceberg.__version__)


# ---- hashing (through attest.hashing for local files, the table's FileIO otherwise) -----------------------------

def _hash_local(paths: list[str], progress: Progress | None) -> dict[str, str]:
    """BLAKE3 of local files, concurrently; a file that cannot be read is left out (the verifier reports it)."""
    import os

    from attest.hashing import hash_file, hash_files

    present = [p for p in paths if os.path.isfile(p)]
    try:
        return hash_files(present, progress=progress)
    except OSError:
        # One unreadable file (permissions, removed meanwhile) must not hide the others: go file by file.
        out: dict[str, str] = {}
        for p in present:
            try:
                out[p] = hash_file(p)
            except OSError:
                continue
        return out


def _local_path(uri: str) -> str | None:
    """The local filesystem path of ``uri``, or None for an object-store URI (mirrors pyiceberg's parsing)."""
    if uri.startswith("/"):
        return uri
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        # pyiceberg reads file URIs as netloc + path, without percent-decoding: do the same.
        return f"{parsed.netloc}{parsed.path}"
    return None


def _comparable(uri: str) -> str:
    local = _local_path(uri)
    return (local if local is not None else uri).rstrip("/")


# ---- snapshot summaries -------------------------------------------------------------------------------------------

def _summary(snapshot: Snapshot) -> dict[str, Any]:
    return {} if snapshot.summary is None else dict(snapshot.summary.additional_properties)


def _operation(snapshot: Snapshot) -> str:
    if snapshot.summary is None:
        return "unknown"
    op = snapshot.summary.operation
    return str(getattr(op, "value", op))


def _changed_no_file(snapshot: Snapshot) -> bool:
    summary = _summary(snapshot)
    return all(str(summary.get(k, "0")) in ("0", "") for k in _CHANGE_COUNTERS)


@dataclass(frozen=True)
class _Carried:
    """An attestation found in a snapshot summary, before the sidecar is read."""

    carrier: Snapshot  # the snapshot whose summary holds it
    attested: int | None  # the snapshot it describes (None when the binding is unusable)
    follow_up: bool  # carried by a follow-up snapshot for its parent
    keys: dict[str, str]
    problems: tuple[Problem, ...] = ()


def _carried(snapshot: Snapshot, exists: Callable[[int], bool] | None = None) -> _Carried | None:
    """The attestation ``snapshot``'s summary holds, if any. ``exists`` tells whether a snapshot id is still in
    the table (pyiceberg's expiry clears the parent id of the expired snapshot's children)."""
    keys = {k: v for k, v in manifest_keys(_summary(snapshot)).items() if v != ""}
    if not keys:
        return None
    binding = keys.get(KEY_VERSION)
    own, parent = snapshot.snapshot_id, snapshot.parent_snapshot_id
    if binding == str(own):
        return _Carried(snapshot, own, False, keys)
    if parent is None and binding is not None and binding.isdigit() and exists is not None \
            and not exists(int(binding)) and _changed_no_file(snapshot):
        # A follow-up whose data snapshot expired: the file-set check against its own live files still holds.
        parent = int(binding)
    if parent is not None and binding == str(parent):
        problems: tuple[Problem, ...] = ()
        if not _changed_no_file(snapshot):
            problems = (Problem(Code.CARRIER_TAMPERED,
                                f"snapshot {own} carries a follow-up attestation for {parent} but its summary "
                                "says it changed files"),)
        return _Carried(snapshot, parent, True, keys, problems)
    message = (f"snapshot {own} carries recipe_manifest keys without the binding key {KEY_VERSION}"
               if binding is None else
               f"snapshot {own} carries an attestation bound to snapshot {binding}, which is neither itself nor "
               "its parent")
    attested = int(binding) if binding is not None and binding.lstrip("-").isdigit() else None
    return _Carried(snapshot, attested, False, keys, (Problem(Code.CARRIER_TAMPERED, message),))


def classify_changes(snapshots: Sequence[Snapshot]) -> tuple[Literal["none", "data", "compaction"], str]:
    """What the snapshots committed after an attested one did: ("none" | "data" | "compaction", detail).

    ``replace`` is a rewrite without data change (compaction); append/overwrite/delete change data unless their
    summary says no file was added or removed (an empty commit; the file-set check still guards it).
    """
    data: list[str] = []
    compaction: list[str] = []
    for snap in snapshots:
        op = _operation(snap)
        if op == "replace":
            compaction.append(f"replace@{snap.snapshot_id}")
        elif op in _DATA_OPERATIONS and _changed_no_file(snap):
            continue
        else:
            data.append(f"{op}@{snap.snapshot_id}")
    if data:
        shown = ", ".join(data[:5]) + (f" (+{len(data) - 5} more)" if len(data) > 5 else "")
        return "data", f"{len(data)} data-changing snapshot(s) since: {shown}"
    if compaction:
        return "compaction", f"{len(compaction)} replace snapshot(s): {', '.join(compaction[:5])}"
    return "none", ""


# ---- the carrier --------------------------------------------------------------------------------------------------

class IcebergCarrier:
    """An Iceberg table (pyiceberg ``Table``) as an attestation carrier. See docs/iceberg.md."""

    kind = "iceberg"

    def __init__(self, table: Table, *, catalog_name: str | None = None) -> None:
        self.table = table
        catalog = getattr(table, "catalog", None)
        self.catalog_name = catalog_name or getattr(catalog, "name", None) or "default"
        self._files_cache: dict[tuple[int, str], list[DataFile]] = {}

    @classmethod
    def from_reference(cls, catalog: str, identifier: str) -> IcebergCarrier:
        """Open ``<namespace>.<table>`` in the catalog pyiceberg's own configuration names ``catalog``
        (.pyiceberg.yaml, PYICEBERG_CATALOG__<NAME>__* variables)."""
        from pyiceberg.catalog import load_catalog
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            cat = load_catalog(catalog)
        except (ValueError, KeyError, NotImplementedError) as exc:
            raise TableReferenceError(
                f"Iceberg catalog {catalog!r} is not configured for pyiceberg (.pyiceberg.yaml or "
                f"PYICEBERG_CATALOG__{catalog.upper()}__* variables): {exc}") from exc
        try:
            table = cat.load_table(identifier)
        except (NoSuchTableError, NoSuchNamespaceError) as exc:
            raise TableNotFoundError(f"no Iceberg table {identifier!r} in catalog {catalog!r}") from exc
        return cls(table, catalog_name=catalog)

    # ---- naming -------------------------------------------------------------------------------------------------
    @property
    def reference(self) -> str:
        ident = self.table.name()
        # Older pyiceberg versions prefix the identifier with the catalog name.
        if len(ident) > 2 and ident[0] == self.catalog_name:
            ident = ident[1:]
        return f"iceberg://{self.catalog_name}/{'.'.join(ident)}"

    @property
    def table_identity(self) -> str:
        return f"iceberg:{self.table.metadata.table_uuid}"

    def _metadata_dir(self) -> str:
        location = self.table.metadata_location
        if location:
            return posixpath.dirname(location)
        return self.table.location_provider().new_metadata_location("").rstrip("/")

    def _sidecar_uri(self, relative: str) -> str:
        return f"{self._metadata_dir()}/{relative}"

    def _relative(self, uri: str) -> str:
        root = _comparable(self.table.location())
        candidate = _comparable(uri)
        if candidate.startswith(root + "/"):
            return candidate[len(root) + 1:]
        return uri

    def _absolute(self, path: str) -> str:
        if "://" in path or path.startswith("/") or path.startswith("file:"):
            return path
        return f"{self.table.location().rstrip('/')}/{path}"

    # ---- snapshots ----------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        self.table.refresh()

    def _snapshot(self, version: str | int | None) -> Snapshot | None:
        """The snapshot ``version`` names (id, or a tag/branch name); None = current (None if the table has none)."""
        if version is None:
            return self.table.current_snapshot()
        text = str(version)
        if text.lstrip("-").isdigit():
            snap = self.table.snapshot_by_id(int(text))
            if snap is None:
                self._raise_missing(int(text))
            return snap
        snap = self.table.snapshot_by_name(text)
        if snap is None:
            raise VersionNotFoundError(f"{self.reference} has no snapshot, tag or branch named {text!r}")
        return snap

    def _raise_missing(self, snapshot_id: int) -> None:
        meta = self.table.metadata
        expired = any(s.parent_snapshot_id == snapshot_id for s in meta.snapshots)
        if not expired:
            expired = self._in_previous_metadata(snapshot_id)
        if expired:
            raise VersionNotFoundError(
                f"snapshot {snapshot_id} of {self.reference} has expired (snapshot expiry removed it from the "
                "table metadata); its attestation can no longer be checked against the table. Tag attested "
                "snapshots (attest tag / tag_attested) to keep them", code=Code.SNAPSHOT_EXPIRED)
        raise VersionNotFoundError(
            f"snapshot {snapshot_id} is not in {self.reference}: it expired or never existed")

    def _in_previous_metadata(self, snapshot_id: int) -> bool:
        """Whether an older metadata.json in the metadata log knew ``snapshot_id`` (explains an expiry)."""
        needle = str(snapshot_id).encode()
        for entry in reversed(self.table.metadata.metadata_log):
            try:
                with self.table.io.new_input(entry.metadata_file).open() as stream:
                    data = stream.read()
            except (OSError, FileNotFoundError):
                continue
            if needle not in data:
                continue
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if any(s.get("snapshot-id") == snapshot_id for s in doc.get("snapshots", [])):
                return True
        return False

    def _carried(self, snapshot: Snapshot) -> _Carried | None:
        return _carried(snapshot, lambda sid: self.table.snapshot_by_id(sid) is not None)

    def _parent(self, snapshot: Snapshot) -> Snapshot | None:
        pid = snapshot.parent_snapshot_id
        return None if pid is None else self.table.snapshot_by_id(pid)

    def _follow_up_child(self, snapshot: Snapshot) -> _Carried | None:
        """The latest follow-up attestation whose parent is ``snapshot``."""
        found: _Carried | None = None
        for snap in self.table.metadata.snapshots:
            if snap.parent_snapshot_id != snapshot.snapshot_id:
                continue
            carried = self._carried(snap)
            if carried is not None and carried.follow_up and carried.attested == snapshot.snapshot_id and (
                    found is None or (snap.sequence_number or 0) >= (found.carrier.sequence_number or 0)):
                found = carried
        return found

    def _find(self, target: Snapshot) -> tuple[_Carried | None, list[Snapshot], list[str]]:
        """The attestation in force at ``target``: (carried attestation, snapshots after it up to target, notes)."""
        own = self._carried(target)
        if own is not None:
            return own, [], []
        child = self._follow_up_child(target)
        if child is not None:
            return child, [], []
        between = [target]
        current = target
        seen = {target.snapshot_id}
        while current.parent_snapshot_id is not None:
            parent = self._parent(current)
            if parent is None or parent.snapshot_id in seen:
                return None, between, [
                    f"the ancestry of snapshot {target.snapshot_id} ends at expired snapshot "
                    f"{current.parent_snapshot_id}: an attestation carried before it cannot be found"]
            seen.add(parent.snapshot_id)
            carried = self._carried(parent)
            if carried is not None:
                return carried, between, []
            between.append(parent)
            current = parent
        notes: list[str] = []
        if (current.sequence_number or 0) > 1:
            # v2+: the first snapshot of a table has sequence number 1, so older snapshots were expired.
            notes.append(f"the ancestry of snapshot {target.snapshot_id} ends at snapshot {current.snapshot_id} "
                         "because older snapshots have expired: an attestation carried by them cannot be found")
        return None, between, notes

    # ---- reading ------------------------------------------------------------------------------------------------
    def _read_bytes(self, uri: str) -> bytes:
        with self.table.io.new_input(uri).open() as stream:
            return bytes(stream.read())

    def _attestation(self, carried: _Carried) -> Attestation:
        problems: list[Problem] = list(carried.problems)
        try:
            document, binding = from_properties(carried.keys)
        except KeyMappingError as exc:
            problems.append(Problem(Code.CARRIER_TAMPERED, f"snapshot summary keys do not form a manifest: {exc}"))
            document, binding = {}, {}
        attested = None if carried.attested is None else str(carried.attested)
        where = binding.get(KEY_OUTPUTS_WHERE, "inline")
        sidecar: Sidecar | None = None
        digest = binding.get(KEY_SIDECAR_HASH)
        if digest is not None:
            expected_rel = f"{SIDECAR_DIR}/{sidecar_name(digest)}"
            rel = binding.get(KEY_SIDECAR_PATH, expected_rel)
            if rel != expected_rel:
                problems.append(Problem(Code.CARRIER_TAMPERED,
                                        f"sidecar path {rel!r} is not the content address {expected_rel!r}"))
            else:
                uri = self._sidecar_uri(rel)
                try:
                    sidecar = Sidecar.decode(self._read_bytes(uri), digest)
                except FileNotFoundError:
                    problems.append(Problem(Code.SIDECAR_MISSING, "the attestation's sidecar is missing", uri))
                except OSError as exc:
                    problems.append(Problem(Code.SIDECAR_MISSING, f"the sidecar cannot be read: {exc}", uri))
                except SidecarError as exc:
                    problems.append(Problem(Code.SIDECAR_MISMATCH, str(exc), uri))
        elif where == "sidecar":
            problems.append(Problem(Code.SIDECAR_MISSING,
                                    "the summary says the outputs are in a sidecar but names none"))
        files: tuple[FileIdentity, ...] | None = None
        inputs: tuple[ObservedInput, ...] | None = None
        if sidecar is not None:
            files, inputs = sidecar.files, sidecar.inputs
            if sidecar.attested_version != attested:
                problems.append(Problem(Code.CARRIER_TAMPERED,
                                        f"the sidecar describes snapshot {sidecar.attested_version}, the summary "
                                        f"binds snapshot {attested}"))
            if where == "sidecar":
                if "output_hashes" in document:
                    problems.append(Problem(Code.CARRIER_TAMPERED,
                                            "output hashes are both inline and declared to be in the sidecar"))
                document["output_hashes"] = [{"hash": f.hash, "path": f.path}
                                             for f in sorted(files, key=lambda f: f.path)]
            # Both absent when the sidecar observed nothing (docs/carrier-properties.md, "The sidecar").
            pair = inputs_identity(inputs) or (None, None)
            if (document.get("inputs_hash"), document.get("inputs_proof_class")) != pair:
                problems.append(Problem(Code.CARRIER_TAMPERED,
                                        "inputs_hash in the summary is not the hash of the sidecar's observed inputs"))
        count = binding.get(KEY_OUTPUTS_COUNT)
        if where == "inline" and count == "0" and "output_hashes" not in document:
            document["output_hashes"] = []  # an empty list has no keys
        outputs = document.get("output_hashes")
        reconstituted = where == "inline" or sidecar is not None
        if count is not None and reconstituted and (not isinstance(outputs, list) or str(len(outputs)) != count):
            problems.append(Problem(Code.CARRIER_TAMPERED,
                                    f"the summary records {count} output files, the attestation lists "
                                    f"{len(outputs) if isinstance(outputs, list) else 0}"))
        return Attestation(document=document, attested_version=attested, location=self.reference,
                           files=files, inputs=inputs, problems=tuple(problems),
                           manifest_identity=None if sidecar is None else sidecar.manifest)

    def read(self, version: str | int | None = None) -> Attestation | None:
        snap = self._snapshot(version)
        if snap is None:
            return None
        carried, _, _ = self._find(snap)
        return None if carried is None else self._attestation(carried)

    def _files_of(self, snapshot: Snapshot) -> list[DataFile]:
        # A snapshot's file set is immutable; keyed by its manifest list too, so a rewritten metadata.json that
        # reuses a snapshot id with other manifests is not served from the cache.
        key = (snapshot.snapshot_id, snapshot.manifest_list)
        cached = self._files_cache.get(key)
        if cached is None:
            cached = self._list_manifest_files(snapshot)
            self._files_cache[key] = cached
        return list(cached)

    def _list_manifest_files(self, snapshot: Snapshot) -> list[DataFile]:
        from pyiceberg.manifest import DataFileContent, FileFormat

        io_ = self.table.io
        seen: dict[str, DataFile] = {}
        for manifest in snapshot.manifests(io_):
            for entry in manifest.fetch_manifest_entry(io_, discard_deleted=True):
                df = entry.data_file
                if df.content == DataFileContent.DATA:
                    kind: Literal["data", "deletion_vector", "delete"] = "data"
                elif df.content == DataFileContent.POSITION_DELETES and df.file_format == FileFormat.PUFFIN:
                    kind = "deletion_vector"
                else:
                    kind = "delete"
                path = self._relative(df.file_path)
                # Several deletion vectors share one Puffin file: it is one file to attest.
                seen.setdefault(path, DataFile(path=path, size=int(df.file_size_in_bytes), kind=kind))
        return sorted(seen.values(), key=lambda f: f.path)

    def list_files(self, version: str | int | None = None) -> list[DataFile]:
        snap = self._snapshot(version)
        return [] if snap is None else self._files_of(snap)

    def state(self, version: str | int | None = None) -> TableState:
        snap = self._snapshot(version)
        if snap is None:
            return TableState(table=self.reference, table_format="iceberg", version="(no snapshot)",
                              attestation=None, live_files=(), notes=("the table has no snapshot yet",))
        carried, between, notes = self._find(snap)
        attestation = None if carried is None else self._attestation(carried)
        changes, detail = classify_changes(between) if carried is not None else ("none", "")
        if carried is not None and carried.follow_up and carried.carrier.snapshot_id != snap.snapshot_id \
                and not between:
            notes.append(f"attested by follow-up snapshot {carried.carrier.snapshot_id}")
        if carried is not None and carried.attested is not None and \
                self.table.snapshot_by_id(carried.attested) is None:
            notes.append(f"the attested snapshot {carried.attested} has expired; its follow-up attestation "
                         f"snapshot {carried.carrier.snapshot_id} still holds the same files")
        return TableState(table=self.reference, table_format="iceberg", version=str(snap.snapshot_id),
                          attestation=attestation, live_files=tuple(self._files_of(snap)), changes=changes,
                          change_detail=detail, notes=tuple(notes))

    # ---- bytes --------------------------------------------------------------------------------------------------
    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        local: dict[str, str] = {}
        remote: list[DataFile] = []
        for f in files:
            path = _local_path(self._absolute(f.path))
            if path is None:
                remote.append(f)
            else:
                local[path] = f.path
        out: dict[str, str] = {}
        if local:
            hashed = _hash_local(list(local), progress if not remote else None)
            out.update({local[p]: h for p, h in hashed.items()})
        done = len(local)
        done_bytes = sum(f.size for f in files if f.path in out)

        def one(f: DataFile) -> str | None:
            try:
                with self.table.io.new_input(self._absolute(f.path)).open(seekable=False) as stream:
                    # pyiceberg's InputStream has the read() that hash_stream needs.
                    return hash_stream(cast("BinaryIO", stream))
            except (OSError, FileNotFoundError):
                return None  # unreadable: the verifier reports it as missing

        if not remote:
            return out
        # Object-store reads are latency-bound: overlap them.
        with ThreadPoolExecutor(max_workers=min(REMOTE_WORKERS, max(1, len(remote)))) as pool:
            for f, digest in zip(remote, pool.map(one, remote), strict=True):
                if digest is not None:
                    out[f.path] = digest
                done += 1
                done_bytes += f.size
                if progress is not None:
                    progress(done, len(files), done_bytes)
        return out

    # ---- writing ------------------------------------------------------------------------------------------------
    def _summary_keys(self, manifest: Manifest, sidecar_digest: str, attested: int) -> dict[str, str]:
        document = manifest.to_dict()
        outputs = document.get("output_hashes")
        props: dict[str, str] = {}
        inline = outputs is not None and len(outputs) <= INLINE_OUTPUTS_MAX
        if outputs is not None and not inline:
            del document["output_hashes"]
        props.update(to_properties(document))
        props[KEY_VERSION] = str(attested)
        props[KEY_SIDECAR_PATH] = f"{SIDECAR_DIR}/{sidecar_name(sidecar_digest)}"
        props[KEY_SIDECAR_HASH] = sidecar_digest
        if outputs is not None:
            props[KEY_OUTPUTS_COUNT] = str(len(outputs))
            props[KEY_OUTPUTS_WHERE] = "inline" if inline else "sidecar"
        size = _summary_size(props)
        if size > SUMMARY_BUDGET and inline:
            # Long absolute paths can push even a few inline outputs over the budget: move them out.
            del document["output_hashes"]
            props = {k: v for k, v in props.items() if not k.startswith("recipe_manifest.output_hashes.")}
            props[KEY_OUTPUTS_WHERE] = "sidecar"
            size = _summary_size(props)
        if size > SUMMARY_BUDGET:
            raise CarrierError(f"the attestation would add {size} bytes to the snapshot summary (budget "
                               f"{SUMMARY_BUDGET}); shorten subject fields")
        return props

    def _write_sidecar(self, sidecar: Sidecar) -> tuple[str, str]:
        data, digest = sidecar.encode()
        uri = self._sidecar_uri(f"{SIDECAR_DIR}/{sidecar_name(digest)}")
        _put_once(self.table, uri, data)
        return uri, digest

    def write(
        self,
        manifest: Manifest,
        *,
        files: Sequence[FileIdentity] | None = None,
        inputs: Sequence[ObservedInput] = (),
        version: str | int | None = None,
    ) -> WriteResult:
        """Attest the current snapshot with a follow-up snapshot (an append of no file) carrying the manifest."""
        current = self.table.current_snapshot()
        if current is None:
            raise UnsupportedTableError(f"{self.reference} has no snapshot to attest")
        if version is not None and str(version) != str(current.snapshot_id):
            raise UnsupportedTableError(
                f"Iceberg summaries are written at commit: only the current snapshot {current.snapshot_id} can be "
                f"attested after the fact, not snapshot {version}")
        triples = list(files) if files is not None else triples_for(
            manifest.output_hashes or (), self._files_of(current), f"snapshot {current.snapshot_id}")
        sidecar = build_sidecar(triples, inputs, str(current.snapshot_id), manifest)
        sidecar_uri, digest = self._write_sidecar(sidecar)
        props = self._summary_keys(manifest, digest, current.snapshot_id)
        with self.table.transaction() as tx:
            producer = tx.update_snapshot(snapshot_properties=props).fast_append()
            new_id = producer.snapshot_id
            producer.commit()
        committed = self.table.snapshot_by_id(new_id)
        if committed is None or committed.parent_snapshot_id != current.snapshot_id:
            # pyiceberg retried the commit onto a newer head: the attestation no longer follows its snapshot.
            raise CarrierError(
                f"a concurrent commit landed before the attestation of snapshot {current.snapshot_id}; the follow-up "
                f"snapshot {new_id} does not follow it and will read as tampered. Run record again")
        return WriteResult(location=self.reference, attested_version=str(current.snapshot_id), sidecar=sidecar_uri,
                           manifest=manifest)

    def env_hash(self, *, dialect: str | None = None, engines: Mapping[str, str] | None = None) -> str:
        return env_identity(producer_name=PRODUCER_NAME, producer_version=__version__,
                            engines={"pyiceberg": _pyiceberg_version(), **dict(engines or {})}, dialect=dialect,
                            table_format="iceberg",
                            protocol={"format-version": int(self.table.metadata.format_version)})

    def _reusable(self, snapshot: Snapshot) -> dict[tuple[str, int], str]:
        """(path, size) -> BLAKE3 from the nearest earlier attestation whose sidecar matched its summary."""
        carried, _, _ = self._find(snapshot)
        if carried is None:
            return {}
        att = self._attestation(carried)
        # Reuse needs only what binds the hashes: the sidecar matched the BLAKE3 in the summary, nothing disagreed.
        if att.problems or att.files is None:
            return {}
        return {(f.path, f.size): f.hash for f in att.files}

    def _hash_live(self, files: Sequence[DataFile], reuse: Mapping[tuple[str, int], str],
                   progress: Progress | None) -> list[FileIdentity]:
        todo = [f for f in files if (f.path, f.size) not in reuse]
        hashed = self.hash_files(todo, progress=progress) if todo else {}
        missing = [f.path for f in todo if f.path not in hashed]
        if missing:
            raise CarrierError(f"cannot read {len(missing)} live file(s) of {self.reference}, e.g. {missing[0]}",
                               code=Code.FILE_MISSING, path=missing[0])
        return [FileIdentity(path=f.path, size=f.size, kind=f.kind,
                             hash=reuse.get((f.path, f.size)) or hashed[f.path]) for f in files]

    def _previous_input(self, snapshot: Snapshot) -> ObservedInput | None:
        """The table's previous snapshot as an input, when the last data commit read or built on it."""
        data = snapshot
        while True:
            carried = self._carried(data)
            if carried is None or not carried.follow_up:
                break
            parent = self._parent(data)
            if parent is None:
                return None
            data = parent
        if data.parent_snapshot_id is None or not self._reads_previous(data):
            return None
        try:
            return self.observe(data.parent_snapshot_id)
        except VersionNotFoundError:
            return ObservedInput(table=self.table_identity, snapshot_id=str(data.parent_snapshot_id),
                                 location=self.reference)

    def _reads_previous(self, data: Snapshot) -> bool:
        """Did ``data`` merge into / delete from / append to its parent (as the Delta carrier decides)?"""
        op = _operation(data)
        if op in _READS_PREVIOUS:
            return True
        if op != "append":
            return False  # replace rewrites files without reading anything new
        # An append builds on the previous snapshot when files live before it stay live (not after a full delete).
        parent = self._parent(data)
        if parent is None:
            summary = _summary(data)
            return str(summary.get("total-data-files", "0")) != str(summary.get("added-data-files", "0"))
        before = {f.path for f in self._files_of(parent) if f.kind == "data"}
        return any(f.kind == "data" and f.path in before for f in self._files_of(data))

    def record(
        self,
        *,
        model: str,
        program_hash: str,
        inputs: Sequence[ObservedInput] = (),
        run_id: str | None = None,
        dialect: str | None = None,
        engines: Mapping[str, str] | None = None,
        progress: Progress | None = None,
    ) -> WriteResult:
        """Attest the current snapshot after the fact: hash its live files (reusing attested hashes), add the
        previous snapshot as an input after an append/overwrite, and commit a follow-up attestation snapshot."""
        self.table.refresh()
        current = self.table.current_snapshot()
        if current is None:
            raise UnsupportedTableError(f"{self.reference} has no snapshot to attest")
        triples = self._hash_live(self._files_of(current), self._reusable(current), progress)
        observed = list(inputs)
        previous = self._previous_input(current)
        if previous is not None:
            observed.append(previous)
        manifest = build_manifest(model=model, program_hash=program_hash,
                                  env_hash=self.env_hash(dialect=dialect, engines=engines), inputs=observed,
                                  outputs=[(t.path, t.hash) for t in triples], run_id=run_id or new_run_id())
        return self.write(manifest, files=triples, inputs=observed, version=current.snapshot_id)

    def observe(self, version: str | int | None = None) -> ObservedInput:
        from attest.verify.table import verify_state

        snap = self._snapshot(version)
        if snap is None:
            raise VersionNotFoundError(f"{self.reference} has no snapshot to observe")
        state = self.state(snap.snapshot_id)
        att = state.attestation
        if att is not None and verify_state(state, None, level="files").passed:
            hashes = [f.hash for f in att.files] if att.files else [
                o["hash"] for o in att.document.get("output_hashes") or []]
            if hashes:
                return ObservedInput(table=self.table_identity, content=content_identity(hashes),
                                     snapshot_id=str(snap.snapshot_id), location=self.reference)
        return ObservedInput(table=self.table_identity, snapshot_id=str(snap.snapshot_id), location=self.reference)


def _put_once(table: Table, uri: str, data: bytes) -> None:
    """Write content-addressed bytes: never over an existing file (same name = same bytes), and atomically
    (local: temp + fsync + rename; object stores: one write through the table's FileIO)."""
    local = _local_path(uri)
    if local is not None:
        from pathlib import Path

        from carriers.atomic import write_once_local

        write_once_local(Path(local), data)
        return
    out = table.io.new_output(uri)
    if not out.exists():
        with out.create(overwrite=True) as stream:
            stream.write(data)


def _summary_size(props: Mapping[str, str]) -> int:
    return len(json.dumps(dict(props), separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


# ---- the two write paths ------------------------------------------------------------------------------------------

def _carrier(table: Table | IcebergCarrier) -> IcebergCarrier:
    return table if isinstance(table, IcebergCarrier) else IcebergCarrier(table)


def attest_after_write(
    table: Table | IcebergCarrier,
    *,
    model: str,
    program_hash: str | None = None,
    sql: str | None = None,
    dialect: str | None = None,
    inputs: Sequence[ObservedInput] = (),
    run_id: str | None = None,
    progress: Progress | None = None,
) -> WriteResult:
    """Attest the table's current snapshot after an ordinary commit (pyiceberg append/overwrite, Spark, ...)."""
    if program_hash is None:
        if sql is None:
            raise ValueError("attest_after_write needs program_hash or sql")
        program_hash = program_identity_sql(sql, dialect)
    return _carrier(table).record(model=model, program_hash=program_hash, inputs=inputs, run_id=run_id,
                                  dialect=dialect, progress=progress)


def _parquet_bytes(data: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(data, buffer)
    return buffer.getvalue()


def _chunks(data: pa.Table, rows_per_file: int | None) -> Iterable[pa.Table]:
    if rows_per_file is None or data.num_rows <= rows_per_file:
        yield data
        return
    for start in range(0, data.num_rows, rows_per_file):
        yield data.slice(start, rows_per_file)


def write_content_addressed(
    table: Table | IcebergCarrier,
    data: pa.Table,
    *,
    model: str,
    program_hash: str,
    inputs: Sequence[ObservedInput] = (),
    run_id: str | None = None,
    mode: Literal["append", "overwrite"] = "append",
    rows_per_file: int | None = None,
    dialect: str | None = None,
    progress: Progress | None = None,
) -> WriteResult:
    """Write ``data`` as Parquet files named ``<blake3>.parquet`` and commit them in ONE snapshot whose summary
    carries the full attestation (the sidecar is written before the commit): no window without an attestation."""
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.table import TableProperties

    carrier = _carrier(table)
    tbl = carrier.table
    tbl.refresh()
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if not tbl.spec().is_unpartitioned():
        raise UnsupportedTableError("write_content_addressed supports unpartitioned tables only; use a normal "
                                    "write followed by attest_after_write for a partitioned table")
    current = tbl.current_snapshot()
    previous_files = [] if current is None else carrier._files_of(current)
    if mode == "overwrite" and any(f.kind != "data" for f in previous_files):
        raise UnsupportedTableError("a content-addressed overwrite of a table with delete files is not supported")

    # 1. Content-addressed Parquet files (name = BLAKE3 of the bytes), written before anything is committed.
    written: list[tuple[str, str, int]] = []  # (uri, hash, size)
    names: set[str] = set()
    live_paths = {f.path for f in previous_files}
    provider = tbl.location_provider()
    for chunk in _chunks(data, rows_per_file):
        payload = _parquet_bytes(chunk)
        digest = hash_bytes(payload)
        uri = provider.new_data_location(f"{digest}.parquet")
        # One name per content: the same bytes twice would reference one file twice (rows read twice).
        if digest in names or (mode == "append" and carrier._relative(uri) in live_paths):
            raise CarrierError(f"the table would hold the Parquet bytes {digest} twice; a content-addressed write "
                               "cannot add identical files (vary rows_per_file or deduplicate the rows)")
        names.add(digest)
        _put_once(tbl, uri, payload)
        written.append((uri, digest, len(payload)))

    with tbl.transaction() as tx:
        if tx.table_metadata.name_mapping() is None:
            # add_files does the same: files written without field ids are read through the name mapping.
            tx.set_properties({TableProperties.DEFAULT_NAME_MAPPING:
                               tx.table_metadata.schema().name_mapping.model_dump_json()})
        update = tx.update_snapshot()
        producer: Any = update.overwrite() if mode == "overwrite" and current is not None else update.fast_append()
        snapshot_id: int = producer.snapshot_id
        new_files = [parquet_file_to_data_file(tbl.io, tx.table_metadata, uri) for uri, _, _ in written]

        # 2. The manifest: every live file of the new snapshot (kept files' hashes reused when attested).
        triples = [FileIdentity(path=carrier._relative(uri), size=int(df.file_size_in_bytes), hash=digest)
                   for (uri, digest, _), df in zip(written, new_files, strict=True)]
        if mode == "append" and current is not None:
            triples += carrier._hash_live(previous_files, carrier._reusable(current), progress)
        observed = list(inputs)
        if mode == "append" and current is not None:
            observed.append(carrier.observe(current.snapshot_id))
        manifest = build_manifest(model=model, program_hash=program_hash,
                                  env_hash=carrier.env_hash(dialect=dialect), inputs=observed,
                                  outputs=[(t.path, t.hash) for t in triples], run_id=run_id or new_run_id())
        sidecar = build_sidecar(triples, observed, str(snapshot_id), manifest)
        sidecar_uri, sidecar_digest = carrier._write_sidecar(sidecar)  # before the commit
        # The snapshot id is fixed when the producer is created; the summary is built at commit from this attribute.
        producer.snapshot_properties = carrier._summary_keys(manifest, sidecar_digest, snapshot_id)

        if mode == "overwrite" and current is not None:
            for manifest_file in current.manifests(tbl.io):  # every live file of the current snapshot goes
                for entry in manifest_file.fetch_manifest_entry(tbl.io, discard_deleted=True):
                    producer.delete_data_file(entry.data_file)
        for df in new_files:
            producer.append_data_file(df)
        producer.commit()
    committed = tbl.snapshot_by_id(snapshot_id)
    expected_parent = None if current is None else current.snapshot_id
    if committed is None or committed.parent_snapshot_id != expected_parent:
        raise CarrierError(f"a concurrent commit landed during the content-addressed write; snapshot {snapshot_id} "
                           "does not hold the attested file set and will not verify")
    return WriteResult(location=carrier.reference, attested_version=str(snapshot_id), sidecar=sidecar_uri,
                       manifest=manifest)


# ---- tags ---------------------------------------------------------------------------------------------------------

def tag_attested(carrier: IcebergCarrier | Table, snapshot_id: int | str, name: str | None = None) -> list[str]:
    """Tag an attested snapshot (and the follow-up snapshot carrying its attestation) so expiry keeps them.

    Returns the tag names created. Raises CarrierError when no attestation covers exactly that snapshot.
    """
    c = _carrier(carrier)
    snap = c._snapshot(snapshot_id)
    assert snap is not None
    carried, between, _ = c._find(snap)
    if carried is None or between or carried.attested != snap.snapshot_id:
        raise CarrierError(f"snapshot {snap.snapshot_id} of {c.reference} is not itself attested; tag the "
                           "attested snapshot instead")
    base = name or f"attested-{snap.snapshot_id}"
    tags = [(snap.snapshot_id, base)]
    if carried.follow_up:
        tags.append((carried.carrier.snapshot_id, f"{base}-attestation"))
    manage = c.table.manage_snapshots()
    for sid, tag in tags:
        manage = manage.create_tag(sid, tag)
    manage.commit()
    return [tag for _, tag in tags]

