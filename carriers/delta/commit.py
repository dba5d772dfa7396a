"""The write side of the Delta carrier: one metadata-only commit that sets and removes table properties.

delta-rs can set properties but not remove them, and the reference convention reads every ``recipe_manifest.*`` key:
a re-attestation that observed no inputs must make an older ``inputs_hash`` disappear, not blank it. So the carrier
commits the metadata action itself, the way every Delta writer does (protocol: "Delta Transaction Log Protocol",
atomic put-if-absent of ``_delta_log/<version>.json``):

- the new ``metaData`` action is the current one, byte for byte as the log holds it, with only ``configuration``
  changed; a ``commitInfo`` names the operation (with ``inCommitTimestamp`` first when the table enables it);
- publication is put-if-absent (a hard link, which refuses an existing name: the same primitive delta-rs uses on a
  local filesystem); losing the race to a metadata-only commit is retried on top of it with backoff; losing it to a
  data commit means the attestation would not be in force, which is reported, not papered over;
- writer features this commit cannot honour (catalog-managed commits, unknown features) are refused with a message
  that names detached mode, which writes no commit at all.

``MetadataCommit`` is a part of ``DeltaCarrier`` (its ``_commit`` is the core's hook, carriers/core.py): detached, a
pointer file and no commit; with a Spark hook's property writer, Spark's own transaction; else the commit below.

On object stores the same commit is one conditional PUT (``If-None-Match: *`` on S3 and Azure,
``ifGenerationMatch=0`` on GCS) through obstore, the Rust object_store delta-rs itself uses: exactly one writer of a
version wins, as the protocol requires. Only where no conditional PUT can be had for the store's options does the
carrier fall back to delta-rs's own ``set_table_properties``, which cannot remove keys and blanks them instead
(readers treat a blank value as absent).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attest import __version__
from attest.errors import CarrierError, CommitConflictError, SupersededError, UnsupportedTableError
from carriers import properties as props
from carriers.delta.log import LOG_DIR, LogState, commit_name, log_versions, read_commit, replay
from carriers.retry import retry
from carriers.storage.base import Storage

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from attest.model import Manifest
    from carriers.core import Version

__all__ = ["BACKOFF_S", "RETRIES", "MetadataCommit", "check_writable", "commit_error", "commit_properties"]

# Writer features a metadata-only commit honours without doing anything (they constrain data files, schemas or
# checkpoints, none of which this commit touches). inCommitTimestamp is honoured explicitly below.
_NEUTRAL_WRITER_FEATURES = frozenset({
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
    "identityColumns", "deletionVectors", "rowTracking", "timestampNtz", "typeWidening", "typeWidening-preview",
    "domainMetadata", "v2Checkpoint", "icebergCompatV1", "icebergCompatV2", "clustering", "vacuumProtocolCheck",
    "variantType", "variantType-preview", "allowColumnDefaults", "inCommitTimestamp",
})
RETRIES = 6
BACKOFF_S = 0.05


def check_writable(protocol: Mapping[str, Any] | None, where: str) -> None:
    """Refuse tables whose writer protocol a metadata-only commit of ours cannot honour."""
    if protocol is None:
        return
    version = int(protocol.get("minWriterVersion") or 0)
    features = set(protocol.get("writerFeatures") or ())
    unknown = sorted(features - _NEUTRAL_WRITER_FEATURES)
    if version > 7 or unknown:
        shown = ", ".join(unknown) or f"writer version {version}"
        raise UnsupportedTableError(
            f"{where} requires writer feature(s) {shown} that an attestation commit cannot honour; attest it "
            "without any Delta commit instead: attest record --detached (DeltaCarrier(detached=True))")


def _put_if_absent(storage: Storage, rel: str, data: bytes) -> bool:
    """Publish ``data`` at ``rel`` only if nothing is there: True when published, False when the name exists (a hard
    link locally, a conditional PUT on object stores: carriers/storage/)."""
    return storage.put_if_absent(rel, data)


def commit_properties(
    storage: Storage,
    *,
    binding: int,
    set_keys: Mapping[str, str],
    remove_keys: Sequence[str],
    is_data_version: Any,
    where: str,
    custom: Mapping[str, str] | None = None,
    replayed: Callable[[int], tuple[LogState, list[str]]] | None = None,
) -> int:
    """Commit one metadata-only version that sets ``set_keys`` and removes ``remove_keys`` from the table's
    configuration; returns the committed version. ``is_data_version(latest) -> bool`` tells whether ``binding`` is
    still the newest data version when the commit is attempted (else SupersededError: a later data commit would hide
    the attestation). ``replayed(version)``: the log's replay of a version (default ``replay``; the carrier passes
    the one it already made of the version it attests, so a record replays that version once)."""
    if not storage.conditional_puts:
        raise UnsupportedTableError(f"{where}: the store offers no conditional PUT for these options")

    def attempt() -> int:
        latest = _latest_version(storage)
        if not is_data_version(latest):
            raise SupersededError(f"a data commit landed on {where} after version {binding}; an attestation of "
                                  f"version {binding} would not be in force. Attest the new version (or use detached "
                                  "mode to attest every version)")
        state, _problems = replay(storage, latest) if replayed is None else replayed(latest)
        if state.metadata is None:
            raise UnsupportedTableError(f"{where} version {latest} has no metadata action")
        check_writable(state.protocol, where)
        configuration = {str(k): str(v) for k, v in (state.metadata.get("configuration") or {}).items()}
        for key in remove_keys:
            configuration.pop(key, None)
        configuration.update(set_keys)
        metadata = dict(state.metadata)
        metadata["configuration"] = configuration
        info: dict[str, Any] = {
            "timestamp": int(time.time() * 1000),
            "operation": "SET TBLPROPERTIES",
            "operationParameters": {"properties": json.dumps(dict(set_keys), sort_keys=True)},
            "readVersion": latest,
            "isBlindAppend": False,
            "engineInfo": f"recipe-attest/{__version__}",
            "operationMetrics": {},
        }
        if custom:
            info["userMetadata"] = json.dumps(dict(custom), sort_keys=True)
        if str(configuration.get("delta.enableInCommitTimestamps", "")).lower() == "true":
            info = {"inCommitTimestamp": _next_ict(storage, latest), **info}
        body = json.dumps({"commitInfo": info}, ensure_ascii=False) + "\n" + json.dumps(
            {"metaData": metadata}, ensure_ascii=False) + "\n"
        if _put_if_absent(storage, commit_name(latest + 1), body.encode("utf-8")):
            return latest + 1
        raise _Taken  # another writer took that version: re-read and retry on top

    try:
        return retry(attempt, retries=RETRIES, backoff_s=BACKOFF_S, retry_on=lambda exc: isinstance(exc, _Taken))
    except _Taken:
        raise CommitConflictError(f"the attestation commit to {where} lost {RETRIES + 1} races with concurrent "
                                  "writers") from None


class _Taken(Exception):
    """The version an attempt would commit was taken by another writer."""


def _next_ict(storage: Storage, latest: int) -> int:
    commit = read_commit(storage, latest)
    previous = None if commit is None else commit.info.get("inCommitTimestamp")
    if not isinstance(previous, int):
        raise UnsupportedTableError("the table enables in-commit timestamps but the latest commit's timestamp cannot "
                                    "be read; use detached mode")
    return max(int(time.time() * 1000), previous + 1)


def _latest_version(storage: Storage) -> int:
    versions = log_versions(storage.list_names(LOG_DIR))
    if not versions:
        raise UnsupportedTableError("no Delta log commits found")
    return max(versions)


class MetadataCommit:
    """The attestation commits of ``DeltaCarrier`` (its ``storage``, writing mode and loaded versions)."""

    storage: Storage
    detached: bool
    display: str
    property_writer: Callable[[dict[str, str], list[str]], None] | None

    if TYPE_CHECKING:
        def latest_version(self) -> int: ...
        def data_version(self, latest: int | None = None) -> int: ...
        def attestable_version(self, latest: int | None = None) -> int: ...
        def _load(self, version: int | None = None) -> DeltaTable: ...
        def _configuration(self, n: int) -> dict[str, str]: ...
        def _replay(self, n: int, *, whole: bool = True) -> tuple[LogState, list[str]]: ...
        def _write_pointer(self, version_id: str, keys: Mapping[str, str]) -> None: ...
        def _committed(self, version: int | None) -> None: ...

    def _commit(self, v: Version, keys: dict[str, str], manifest: Manifest) -> None:
        if self.detached:
            self._write_pointer(v.id, keys)
            return
        latest = self.latest_version()
        if v.number not in (self.data_version(latest), self.attestable_version(latest)):
            raise SupersededError(f"version {v.id} of {self.display} is not its latest data version (a later data "
                                  "commit would hide a property attestation of it); use detached mode to attest "
                                  "every version")
        old = self._configuration(latest)
        if self.property_writer is not None:
            # The whole older attestation goes and the new one is set; the Spark hook's writer does both in one
            # metadata commit (carriers/spark/hook.py), so no version holds neither or a mix of two.
            owned = sorted(k for k in old if k.startswith(props.PREFIX) or k.startswith(props.CARRIER_PREFIX))
            self.property_writer(dict(keys), owned)
            self._committed(None)
            return
        to_set, to_remove = props.replacement(old, keys)
        if self.storage.conditional_puts:  # local files, and object stores with a conditional PUT
            committed = commit_properties(self.storage, binding=v.number, set_keys=to_set, remove_keys=to_remove,
                              is_data_version=lambda latest: v.number in (self.data_version(latest),
                                                                          self.attestable_version(latest)),
                              where=str(self.display), custom={"recipe_attest.binding_version": v.id},
                              replayed=lambda n: self._replay(n, whole=False))
            # On top of the latest version loaded: that one is then the latest no more, and the table is not loaded
            # again to learn it. On top of a version some other writer committed meanwhile: read anew.
            self._committed(committed if committed == latest + 1 else None)
            return
        # Object stores without a conditional PUT: delta-rs's own commit (it cannot remove keys, so they are
        # blanked; readers skip blanks).
        from deltalake import CommitProperties

        updates = dict(to_set)
        updates.update({k: props.ABSENT for k in to_remove})

        def attempt() -> None:
            try:
                self._load().alter.set_table_properties(
                    updates, raise_if_not_exists=False,
                    commit_properties=CommitProperties(custom_metadata={"recipe_attest.binding_version": v.id}))
            except Exception as exc:
                raise commit_error(str(self.display), exc) from exc

        def still_in_force() -> None:
            if self.data_version() != v.number:
                raise SupersededError(f"a data commit landed on {self.display} after version {v.id}; its attestation "
                                      "would not be in force")

        retry(attempt, retries=RETRIES, backoff_s=BACKOFF_S, between=still_in_force,
              retry_on=lambda error: isinstance(error, CommitConflictError))
        self._committed(None)  # delta-rs moved the table it loaded to its own commit: read it anew


def commit_error(table: str, exc: Exception) -> CarrierError:
    """delta-rs's refusal of an attestation commit (or a content-addressed write's commit), coded."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "nsupported" in text or "not supported" in text or "not yet supported" in text:
        return UnsupportedTableError(f"delta-rs cannot write the attestation commit to {table}: {text}; attest it "
                                     "without a Delta commit: attest record --detached")
    if "conflict" in text.lower() or "concurrent" in text.lower() or "Metadata changed" in text:
        return CommitConflictError(f"the attestation commit to {table} conflicted with another writer: {text}")
    return CarrierError(f"the attestation commit to {table} failed: {text}")
