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

The file is written in pieces, never whole (``PuffinStream``: each blob copied from storage a piece at a time and
hashed on the way, the footer last), with the bytes ``build_puffin`` gives for the same blobs.

The file is read by ranges, never whole (``read_footer``: the last 12 bytes, then the footer; then only the blob
wanted, in pieces): every offset and length its footer claims is checked against the file's size first.

Nothing read from the file is trusted for where it came from: a sidecar or an envelope is taken from it only under
the BLAKE3 the metadata records, and keys taken from it must bind the exact snapshot the entry is registered for
(then checked like any carrier: sidecar, manifest identity, reader view, files, bytes).

The entry's ``blob-metadata`` list is empty: pyiceberg 0.12 refuses to load table metadata naming a blob type other
than ``apache-datasketches-theta-v1`` or ``deletion-vector-v1`` (its model is a closed ``Literal``), and readers that
use statistics (Spark's column statistics, Trino) look for theta sketches there, so an empty list tells them there is
nothing for them. The Puffin footer itself names our blobs (its blob types are open).
"""

from __future__ import annotations

import itertools
import json
import posixpath
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attest.canonical import blake3_hex
from carriers.sidecar import MAX_SIDECAR_BYTES

__all__ = ["CONTENT_BLOB", "ENVELOPE_BLOB", "KEPT_SUFFIX", "SIDECAR_BLOB", "BlobRef", "Kept", "PendingBlob",
           "PuffinIndex", "PuffinStream", "blob_chunks", "blob_digest", "build_puffin", "kept_name", "parse_puffin",
           "read_footer", "sidecar_keys"]

MAGIC = b"PFA1"
SIDECAR_BLOB = "recipe-attest-sidecar-v1"
ENVELOPE_BLOB = "recipe-attest-envelope-v1"
CONTENT_BLOB = "recipe-attest-content-digests-v1"
OUR_BLOBS = (SIDECAR_BLOB, ENVELOPE_BLOB, CONTENT_BLOB)
KEPT_SUFFIX = ".puffin"
# The file is untrusted input. It is read by ranges (``read_footer``: the footer, then only the blob wanted, streamed),
# never whole, so what bounds it is what a reader keeps: a footer of at most MAX_FOOTER_BYTES, and a file no larger
# than the largest sidecar a reader reads (carriers/sidecar.py MAX_SIDECAR_BYTES) with its companions and an envelope.
# Until the ranged reader, a file of at most 528 MiB was read whole.
MAX_FOOTER_BYTES = 1 << 20
# Companion files kept beside the sidecar, in all (the rest stay only at their own path).
MAX_CONTENT_BYTES = 256 << 20
MAX_KEPT_BYTES = MAX_SIDECAR_BYTES + MAX_CONTENT_BYTES + (16 << 20)
# A blob read whole (an envelope, a companion file: their readers take bytes) is at most this long.
MAX_WHOLE_BLOB_BYTES = MAX_CONTENT_BYTES
# Puffin's fixed parts: the header magic, and after the footer payload its size (int32), flags (4 bytes), magic.
_HEAD = len(MAGIC)
_TAIL = 12


def kept_name(sidecar_digest: str) -> str:
    return f"{sidecar_digest}{KEPT_SUFFIX}"


def build_puffin(*, sidecar: bytes, keys: Mapping[str, str], envelope: bytes | None, snapshot_id: int,
                 sequence_number: int, content: Sequence[bytes] = ()) -> tuple[bytes, int]:
    """(the Puffin file's bytes, its footer size): blobs uncompressed, footer uncompressed (Puffin spec). Held whole:
    the writer streams the same bytes (``PuffinStream``)."""
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
class PendingBlob:
    """A blob to write in pieces (``PuffinStream``): its type, its bytes as ``chunks`` yields them (read as they are
    taken), the properties the footer gives it besides the BLAKE3 of its bytes."""

    kind: str
    chunks: Callable[[], Iterable[bytes]]
    properties: Mapping[str, str]


class PuffinStream:
    """The bytes ``build_puffin`` writes, in pieces: the magic, each blob's bytes copied a piece at a time as they are
    read (hashed on the way), then the footer, whose offsets, lengths and BLAKE3s are known by then. Iterated once;
    ``size``, ``footer_size`` and ``digests`` (each blob's BLAKE3, in order) are set once the last piece is taken.
    What is held is one piece and the footer, never a blob: an Iceberg ``record`` of a table of a million files no
    longer holds its sidecar (hundreds of MB) to keep it."""

    def __init__(self, blobs: Iterable[PendingBlob], *, snapshot_id: int, sequence_number: int) -> None:
        self._blobs = blobs
        self._snapshot_id = snapshot_id
        self._sequence_number = sequence_number
        self.size: int | None = None
        self.footer_size: int | None = None
        self.digests: list[str] = []

    def __iter__(self) -> Iterator[bytes]:
        from blake3 import blake3

        yield MAGIC
        offset = len(MAGIC)
        entries: list[dict[str, Any]] = []
        for pending in self._blobs:
            hasher = blake3()
            start = offset
            for piece in pending.chunks():
                if piece:
                    hasher.update(piece)
                    offset += len(piece)
                    yield piece
            digest = str(hasher.hexdigest())
            self.digests.append(digest)
            entries.append({"type": pending.kind, "fields": [], "snapshot-id": self._snapshot_id,
                            "sequence-number": self._sequence_number, "offset": start, "length": offset - start,
                            "properties": {**pending.properties, "recipe-attest-blake3": digest}})
        payload = json.dumps({"blobs": entries, "properties": {"created-by": "recipe-attest"}},
                             separators=(",", ":"), sort_keys=True).encode()
        footer = MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + MAGIC
        self.footer_size = len(footer)
        self.size = offset + len(footer)
        yield footer


@dataclass(frozen=True)
class BlobRef:
    """One of our blobs as the footer names it: where its bytes are, and the BLAKE3 recorded for them (a claim until
    the bytes are read: every reader checks it)."""

    kind: str
    offset: int
    length: int
    digest: str
    properties: Mapping[str, str]
    snapshot_id: int | None


@dataclass(frozen=True)
class PuffinIndex:
    """What a kept Puffin file's footer says, checked against the file's size: our blobs, in footer order, each
    inside the file, before the footer, none overlapping another."""

    size: int
    blobs: tuple[BlobRef, ...]

    def with_digest(self, digest: str) -> list[BlobRef]:
        return [b for b in self.blobs if b.digest == digest]

    def sidecars(self) -> list[BlobRef]:
        return [b for b in self.blobs if b.kind == SIDECAR_BLOB]


def read_footer(size: int, read: Callable[[int, int], bytes]) -> PuffinIndex | None:
    """The index of a Puffin file of ``size`` bytes this project wrote, reading only its footer (``read(offset,
    length)``: exactly those bytes); None when the file is not one (never raises for what the bytes say, and never
    asks for a byte outside the file). Per the Puffin spec the file ends with the footer payload's size (int32,
    little-endian), 4 flag bytes and the magic; the payload is preceded by the magic. A footer that is compressed,
    larger than MAX_FOOTER_BYTES, of a negative size, not inside the file, or naming one of our blobs outside the
    bytes before the footer, or two of them overlapping, is not one this project wrote."""
    if size < _HEAD + len(MAGIC) + 2 + _TAIL or size > MAX_KEPT_BYTES:
        return None
    if read(0, _HEAD) != MAGIC:
        return None
    tail = read(size - _TAIL, _TAIL)
    if tail[-4:] != MAGIC or tail[4] & 1:  # compressed footer: never written here
        return None
    (length,) = struct.unpack("<i", tail[:4])
    if length < 2 or length > MAX_FOOTER_BYTES or length + len(MAGIC) + _TAIL > size - _HEAD:
        return None
    start = size - _TAIL - length - len(MAGIC)  # the footer's magic; our blobs end before it
    footer = read(start, length + len(MAGIC))
    if footer[:4] != MAGIC:
        return None
    try:
        doc = json.loads(footer[4:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("blobs"), list):
        return None
    blobs: list[BlobRef] = []
    for entry in doc["blobs"]:
        if not isinstance(entry, dict) or entry.get("type") not in OUR_BLOBS or \
                entry.get("compression-codec") is not None:
            continue
        offset, length, props = entry.get("offset"), entry.get("length"), entry.get("properties")
        if not (type(offset) is int and type(length) is int and offset >= _HEAD and length >= 0
                and offset + length <= start and isinstance(props, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in props.items())):
            continue
        digest = props.get("recipe-attest-blake3")
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            continue  # no bytes could hash to it
        sid = entry.get("snapshot-id")
        blobs.append(BlobRef(kind=entry["type"], offset=offset, length=length, digest=digest, properties=props,
                             snapshot_id=sid if type(sid) is int else None))
    ranges = sorted((b.offset, b.offset + b.length) for b in blobs if b.length)
    if any(later[0] < earlier[1] for earlier, later in itertools.pairwise(ranges)):
        return None  # we never write blobs that share bytes: bytes read twice for two claims are not ours
    return PuffinIndex(size=size, blobs=tuple(blobs))


def blob_chunks(read: Callable[[int, int], bytes], blob: BlobRef, piece: int = 1 << 20) -> Iterator[bytes]:
    """The blob's bytes in pieces of ``piece`` bytes, read as they are taken."""
    offset, end = blob.offset, blob.offset + blob.length
    while offset < end:
        step = min(piece, end - offset)
        yield read(offset, step)
        offset += step


def blob_digest(read: Callable[[int, int], bytes], blob: BlobRef) -> str:
    """The BLAKE3 of the blob's bytes, read in pieces (never held whole)."""
    from blake3 import blake3

    hasher = blake3()
    for chunk in blob_chunks(read, blob):
        hasher.update(chunk)
    return str(hasher.hexdigest())


@dataclass(frozen=True)
class Kept:
    """What a kept Puffin file holds, read whole (``parse_puffin``): blobs by BLAKE3 of their bytes, and the keys of
    its sidecar blob."""

    blobs: Mapping[str, bytes]  # blake3 -> payload (only payloads whose bytes hash to their recorded digest)
    keys: Mapping[str, str]  # the sidecar blob's properties minus ours
    sidecar_digest: str | None
    snapshot_id: int | None  # the sidecar blob's snapshot-id


def sidecar_keys(blob: BlobRef) -> dict[str, str]:
    """The attestation keys a sidecar blob carries (its properties minus ours)."""
    return {k: v for k, v in blob.properties.items() if k != "recipe-attest-blake3"}


def parse_puffin(data: bytes) -> Kept | None:
    """The blobs of a Puffin file this project wrote, given whole; None when the bytes are not one (never raises).
    Readers of the table read by ranges (``read_footer``); this is the same reading over bytes in memory."""

    def read(offset: int, length: int) -> bytes:
        return data[offset:offset + length]

    index = read_footer(len(data), read)
    if index is None:
        return None
    blobs: dict[str, bytes] = {}
    keys: dict[str, str] = {}
    sidecar_digest: str | None = None
    snapshot_id: int | None = None
    for blob in index.blobs:
        payload = read(blob.offset, blob.length)
        if blake3_hex(payload) != blob.digest:
            continue
        blobs[blob.digest] = payload
        if blob.kind == SIDECAR_BLOB and sidecar_digest is None:
            sidecar_digest = blob.digest
            keys = sidecar_keys(blob)
            snapshot_id = blob.snapshot_id
    return Kept(blobs=blobs, keys=keys, sidecar_digest=sidecar_digest, snapshot_id=snapshot_id)


def is_kept_location(location: str, metadata_dir: str, sidecar_dir: str) -> bool:
    """Only ``<metadata dir>/<sidecar dir>/<blake3>.puffin`` is ever read: table metadata never sends a verifier to
    another file."""
    folder, name = posixpath.split(location)
    stem = name[:-len(KEPT_SUFFIX)] if name.endswith(KEPT_SUFFIX) else ""
    return folder == f"{metadata_dir.rstrip('/')}/{sidecar_dir}" and len(stem) == 64 and \
        all(c in "0123456789abcdef" for c in stem)
