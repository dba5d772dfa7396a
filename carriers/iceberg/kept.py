"""Iceberg attestations that table maintenance keeps: a Puffin file registered in the table metadata's ``statistics``.

Iceberg's cleanup deletes what no table metadata references: ``remove_orphan_files`` removes every file under the table
location that is not reachable (measured with Spark's Iceberg 1.12 runtime: the sidecar under
``metadata/recipe_attest/`` went, ``sidecar_missing``), and ``expire_snapshots`` drops the follow-up snapshot whose
summary carried an attestation. Statistics files are reachable (Java's ``ReachableFileUtil.statisticsFilesLocations``),
and ``expire_snapshots`` removes a statistics entry only with the snapshot it is bound to, deleting its file only when
no remaining entry names it. So each attestation also writes ``<metadata dir>/recipe_attest/<sidecar blake3>.puffin``:

- blob ``recipe-attest-sidecar-v1``: the sidecar's bytes, its properties the attestation keys (the summary map);
- blob ``recipe-attest-envelope-v1`` (signed attestations): the DSSE envelope's bytes;
- blob ``recipe-attest-content-digests-v1``, one per content-digest companion file the sidecar names
  (carriers/content_store.py: each data file's content digest, which a rewrite is checked against), while they fit
  the file's bound;

and registers it, in the same commit as the attestation, for the attested snapshot (unless another producer's
statistics file is registered there: that one is kept) and for the snapshot that carries the summary (the follow-up,
or the data snapshot itself). While either snapshot lives, the file stays and the attestation can be read from it.

Nothing read from the file is trusted for where it came from: a sidecar or an envelope is taken from it only under
the BLAKE3 the metadata records, and keys taken from it must bind the exact snapshot the entry is registered for
(then checked like any carrier: sidecar, manifest identity, reader view, files, bytes).

The entry's ``blob-metadata`` list is empty: pyiceberg 0.12 refuses to load table metadata naming a blob type other
than ``apache-datasketches-theta-v1`` or ``deletion-vector-v1`` (its model is a closed ``Literal``), and readers that
use statistics (Spark's column statistics, Trino) look for theta sketches there, so an empty list tells them there is
nothing for them. The Puffin footer itself names our blobs (its blob types are open).
"""

from __future__ import annotations

import json
import posixpath
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attest.canonical import blake3_hex

__all__ = ["CONTENT_BLOB", "ENVELOPE_BLOB", "KEPT_SUFFIX", "SIDECAR_BLOB", "Kept", "build_puffin", "kept_name",
           "parse_puffin"]

MAGIC = b"PFA1"
SIDECAR_BLOB = "recipe-attest-sidecar-v1"
ENVELOPE_BLOB = "recipe-attest-envelope-v1"
CONTENT_BLOB = "recipe-attest-content-digests-v1"
KEPT_SUFFIX = ".puffin"
# The file is untrusted input when read, whole: bound it (a sidecar of up to ~2.2 million files; a larger one, which
# carriers/sidecar.py now reads in pieces, has no kept copy read back: only the sidecar at its own path).
MAX_KEPT_BYTES = (512 << 20) + (16 << 20)
MAX_FOOTER_BYTES = 1 << 20
# Companion files kept beside the sidecar, in all (the rest stay only at their own path).
MAX_CONTENT_BYTES = 256 << 20


def kept_name(sidecar_digest: str) -> str:
    return f"{sidecar_digest}{KEPT_SUFFIX}"


def build_puffin(*, sidecar: bytes, keys: Mapping[str, str], envelope: bytes | None, snapshot_id: int,
                 sequence_number: int, content: Sequence[bytes] = ()) -> tuple[bytes, int]:
    """(the Puffin file's bytes, its footer size): blobs uncompressed, footer uncompressed (Puffin spec)."""
    body = bytearray(MAGIC)
    blobs: list[dict[str, Any]] = []

    def blob(kind: str, payload: bytes, properties: Mapping[str, str]) -> None:
        blobs.append({"type": kind, "fields": [], "snapshot-id": snapshot_id, "sequence-number": sequence_number,
                      "offset": len(body), "length": len(payload), "properties": dict(properties)})
        body.extend(payload)

    blob(SIDECAR_BLOB, sidecar, {**keys, "recipe-attest-blake3": blake3_hex(sidecar)})
    if envelope is not None:
        blob(ENVELOPE_BLOB, envelope, {"recipe-attest-blake3": blake3_hex(envelope)})
    for companion in content:
        blob(CONTENT_BLOB, companion, {"recipe-attest-blake3": blake3_hex(companion)})
    payload = json.dumps({"blobs": blobs, "properties": {"created-by": "recipe-attest"}},
                         separators=(",", ":"), sort_keys=True).encode()
    footer = MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + MAGIC
    return bytes(body) + footer, len(footer)


@dataclass(frozen=True)
class Kept:
    """What a kept Puffin file holds: blobs by BLAKE3 of their bytes, and the keys of its sidecar blob."""

    blobs: Mapping[str, bytes]  # blake3 -> payload (only payloads whose bytes hash to their recorded digest)
    keys: Mapping[str, str]  # the sidecar blob's properties minus ours
    sidecar_digest: str | None
    snapshot_id: int | None  # the sidecar blob's snapshot-id


def parse_puffin(data: bytes) -> Kept | None:
    """The blobs of a Puffin file this project wrote; None when the bytes are not one (never raises)."""
    if len(data) < 16 or len(data) > MAX_KEPT_BYTES or data[:4] != MAGIC or data[-4:] != MAGIC:
        return None
    if data[-8] & 1:  # compressed footer: never written here
        return None
    (size,) = struct.unpack("<i", data[-12:-8])
    if size < 2 or size > MAX_FOOTER_BYTES or size + 16 > len(data) - 4 or data[-size - 16:-size - 12] != MAGIC:
        return None
    try:
        footer = json.loads(data[-size - 12:-12])
    except (ValueError, RecursionError):
        return None
    if not isinstance(footer, dict) or not isinstance(footer.get("blobs"), list):
        return None
    blobs: dict[str, bytes] = {}
    keys: dict[str, str] = {}
    sidecar_digest: str | None = None
    snapshot_id: int | None = None
    end = len(data) - size - 16
    for entry in footer["blobs"]:
        if not isinstance(entry, dict) or entry.get("type") not in (SIDECAR_BLOB, ENVELOPE_BLOB, CONTENT_BLOB) or \
                entry.get("compression-codec") is not None:
            continue
        offset, length, props = entry.get("offset"), entry.get("length"), entry.get("properties")
        if not (type(offset) is int and type(length) is int and offset >= 4 and length >= 0 and offset + length <= end
                and isinstance(props, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in props.items())):
            continue
        payload = data[offset:offset + length]
        digest = blake3_hex(payload)
        if props.get("recipe-attest-blake3") != digest:
            continue
        blobs[digest] = payload
        if entry["type"] == SIDECAR_BLOB and sidecar_digest is None:
            sidecar_digest = digest
            keys = {k: v for k, v in props.items() if k != "recipe-attest-blake3"}
            sid = entry.get("snapshot-id")
            snapshot_id = sid if type(sid) is int else None
    return Kept(blobs=blobs, keys=keys, sidecar_digest=sidecar_digest, snapshot_id=snapshot_id)


def is_kept_location(location: str, metadata_dir: str, sidecar_dir: str) -> bool:
    """Only ``<metadata dir>/<sidecar dir>/<blake3>.puffin`` is ever read: table metadata never sends a verifier to
    another file."""
    folder, name = posixpath.split(location)
    stem = name[:-len(KEPT_SUFFIX)] if name.endswith(KEPT_SUFFIX) else ""
    return folder == f"{metadata_dir.rstrip('/')}/{sidecar_dir}" and len(stem) == 64 and \
        all(c in "0123456789abcdef" for c in stem)
