"""The attestation sidecar: a content-addressed JSON document kept beside the table's metadata.

Every attestation this project writes has one (docs/carrier-properties.md, "The sidecar"). It holds what the table's
metadata map cannot: every live file's (path, size, hash) triple, the observed inputs, the table it was written for,
the reader view it bound and the v1 identity of the full manifest. Its file name is ``<blake3 of its bytes>.json`` and
the carrier records the same BLAKE3 in the table's metadata, so a swapped or edited sidecar fails verification.

Version 2 (current) requires ``table``, ``manifest`` and ``reader_view``; version 1 (first wave) is still read and
labelled legacy: it binds no reader view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from attest.canonical import all_hex_digests, blake3_hex, canonical_bytes
from attest.errors import AttestError, Code
from attest.identity.inputs import ObservedInput
from attest.model import Manifest, load_json_document
from attest.record import many_records
from attest.tables import FileIdentity, attestation_identity
from attest.view import ReaderView

SIDECAR_FORMAT = "recipe-attest-sidecar"
SIDECAR_VERSION = 2
LEGACY_SIDECAR_VERSION = 1
# A sidecar is untrusted input: bound what a reader will parse (100,000 files take ~25 MB).
MAX_SIDECAR_BYTES = 512 << 20


class SidecarError(AttestError, ValueError):
    """The sidecar bytes do not match the recorded BLAKE3 or do not parse as a sidecar."""

    code = Code.SIDECAR_MISMATCH


@dataclass(frozen=True)
class Sidecar:
    attested_version: str | None
    files: tuple[FileIdentity, ...]
    inputs: tuple[ObservedInput, ...]
    # v1 identity of the full manifest the metadata must reconstitute to: an edit of any single field of the
    # table metadata (program_hash, env_hash, subject...) no longer matches it.
    manifest: str | None = None
    table: str | None = None
    view: ReaderView | None = None
    version: int = SIDECAR_VERSION
    # The content digest bound (carriers/content_store.py; docs/content-digest.md): scheme, the version's total, the
    # BLAKE3s of the companion files holding each data file's digest, the attestation it continues. None: none bound
    # (attestations written before content digests; readers that predate the key ignore it).
    content: dict[str, Any] | None = None

    @property
    def legacy(self) -> bool:
        return self.version == LEGACY_SIDECAR_VERSION

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": SIDECAR_FORMAT,
            "version": self.version,
            "files": [f.to_dict() for f in sorted(self.files, key=lambda f: f.path)],
            "inputs": [i.to_dict() for i in self.inputs],
        }
        if self.attested_version is not None:
            doc["attested_version"] = self.attested_version
        if self.manifest is not None:
            doc["manifest"] = self.manifest
        if self.table is not None:
            doc["table"] = self.table
        if self.view is not None:
            doc["reader_view"] = self.view.to_dict()
        if self.content is not None:
            doc["content"] = self.content
        return doc

    def encode(self) -> tuple[bytes, str]:
        """(canonical bytes, their BLAKE3): the bytes are deterministic, so the name is too."""
        data = canonical_bytes(self.to_dict())
        return data, blake3_hex(data)

    @classmethod
    def decode(cls, data: bytes, expected_hash: str | None) -> Sidecar:
        if len(data) > MAX_SIDECAR_BYTES:
            raise SidecarError(f"sidecar is larger than {MAX_SIDECAR_BYTES} bytes")
        if expected_hash is not None and blake3_hex(data) != expected_hash:
            raise SidecarError("sidecar bytes do not match the BLAKE3 recorded in the table metadata")
        try:
            doc = load_json_document(data)
            version = doc.get("version") if isinstance(doc, dict) else None
            if doc.get("format") != SIDECAR_FORMAT or version not in (SIDECAR_VERSION, LEGACY_SIDECAR_VERSION):
                raise SidecarError(f"not a {SIDECAR_FORMAT} v{SIDECAR_VERSION} (or v1) document")
            with many_records():  # one record per file of the table
                files = tuple(FileIdentity.from_dict(f) for f in doc["files"])
            if not all_hex_digests(list(map(attrgetter("hash"), files))) or \
                    min(map(attrgetter("size"), files), default=0) < 0:
                raise SidecarError("a file triple has a malformed hash or a negative size")
            if len({f.path for f in files}) != len(files):
                raise SidecarError("the file list names a path twice")
            sidecar = cls(
                attested_version=_opt_str(doc.get("attested_version")),
                files=files,
                inputs=tuple(ObservedInput.from_dict(i) for i in doc.get("inputs", [])),
                manifest=_opt_str(doc.get("manifest")),
                table=_opt_str(doc.get("table")),
                view=None if doc.get("reader_view") is None else ReaderView.from_dict(doc["reader_view"]),
                version=int(version),
                content=_opt_content(doc.get("content")),
            )
            if version == SIDECAR_VERSION and (sidecar.manifest is None or sidecar.table is None
                                               or sidecar.view is None or sidecar.attested_version is None):
                raise SidecarError("a version 2 sidecar must name the table, the attested version, the manifest "
                                   "identity and the reader view")
            return sidecar
        except SidecarError:
            raise
        except Exception as exc:  # any shape error in untrusted bytes is one failure kind
            raise SidecarError(f"sidecar does not parse: {type(exc).__name__}: {exc}") from exc


def _opt_content(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SidecarError(f"the content binding is a {type(value).__name__}, not an object")
    return value


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SidecarError(f"expected a string, got {type(value).__name__}")
    return value


def sidecar_name(digest_hex: str) -> str:
    return f"{digest_hex}.json"


def build(files: Sequence[FileIdentity], inputs: Sequence[ObservedInput], attested_version: str,
          manifest: Manifest, *, table: str, view: ReaderView, content: dict[str, Any] | None = None) -> Sidecar:
    return Sidecar(attested_version=attested_version, files=tuple(files), inputs=tuple(inputs),
                   manifest=attestation_identity(manifest.to_dict()), table=table, view=view, content=content)
