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
from typing import Any

from attest import __version__
from attest.errors import CommitConflictError, SupersededError, UnsupportedTableError
from carriers.delta.log import LOG_DIR, commit_name, log_versions, read_commit, replay
from carriers.retry import retry
from carriers.storage.base import Storage

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
    replayed: Callable[[int], tuple[dict[str, Any] | None, dict[str, Any] | None] | None] | None = None,
) -> int:
    """Commit one metadata-only version that sets ``set_keys`` and removes ``remove_keys`` from the table's
    configuration; returns the committed version. ``is_data_version(latest) -> bool`` tells whether ``binding`` is
    still the newest data version when the commit is attempted (else SupersededError: a later data commit would hide
    the attestation)."""
    if not storage.conditional_puts:
        raise UnsupportedTableError(f"{where}: the store offers no conditional PUT for these options")

    def attempt() -> int:
        latest = _latest_version(storage)
        if not is_data_version(latest):
            raise SupersededError(f"a data commit landed on {where} after version {binding}; an attestation of "
                                  f"version {binding} would not be in force. Attest the new version (or use detached "
                                  "mode to attest every version)")
        # The metaData and protocol in force at ``latest``: those the caller's own replay of that version read
        # (``replayed``: the carrier replayed it to list the version it attests), else replayed here.
        known = None if replayed is None else replayed(latest)
        if known is None:
            state, _problems = replay(storage, latest)
            known = state.metadata, state.protocol
        current, protocol = known
        if current is None:
            raise UnsupportedTableError(f"{where} version {latest} has no metadata action")
        check_writable(protocol, where)
        configuration = {str(k): str(v) for k, v in (current.get("configuration") or {}).items()}
        for key in remove_keys:
            configuration.pop(key, None)
        configuration.update(set_keys)
        metadata = dict(current)
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
