"""The attestation sidecar: a content-addressed JSON document kept beside the table's metadata.

It holds what does not fit (or does not belong) in properties / summaries: every file's (path, size, hash)
triple and the observed inputs. Its file name is ``<blake3 of its bytes>.json`` and the carrier records the same
BLAKE3 in the table's metadata, so a swapped or edited sidecar fails verification. docs/carrier-properties.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attest.canonical import blake3_hex, canonical_bytes
from attest.identity.inputs import ObservedInput
from attest.model import Manifest, load_json_document
from attest.tables import attestation_identity
from carriers.base import FileIdentity

SIDECAR_FORMAT = "recipe-attest-sidecar"
SIDECAR_VERSION = 1


class SidecarError(ValueError):
    """The sidecar bytes do not match the recorded BLAKE3 or do not parse as a sidecar."""


@dataclass(frozen=True)
class Sidecar:
    attested_version: str | None
    files: tuple[FileIdentity, ...]
    inputs: tuple[ObservedInput, ...]
    # v1 identity of the full manifest the metadata must reconstitute to: an edit of any single field of the
    # table metadata (program_hash, env_hash, subject...) no longer matches it.
    manifest: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": SIDECAR_FORMAT,
            "version": SIDECAR_VERSION,
            "files": [f.to_dict() for f in sorted(self.files, key=lambda f: f.path)],
            "inputs": [i.to_dict() for i in self.inputs],
        }
        if self.attested_version is not None:
            doc["attested_version"] = self.attested_version
        if self.manifest is not None:
            doc["manifest"] = self.manifest
        return doc

    def encode(self) -> tuple[bytes, str]:
        """(canonical bytes, their BLAKE3): the bytes are deterministic, so the name is too."""
        data = canonical_bytes(self.to_dict())
        return data, blake3_hex(data)

    @classmethod
    def decode(cls, data: bytes, expected_hash: str | None) -> Sidecar:
        if expected_hash is not None and blake3_hex(data) != expected_hash:
            raise SidecarError("sidecar bytes do not match the BLAKE3 recorded in the table metadata")
        try:
            doc = load_json_document(data)
            if doc.get("format") != SIDECAR_FORMAT or doc.get("version") != SIDECAR_VERSION:
                raise SidecarError(f"not a {SIDECAR_FORMAT} v{SIDECAR_VERSION} document")
            return cls(
                attested_version=doc.get("attested_version"),
                files=tuple(FileIdentity.from_dict(f) for f in doc["files"]),
                inputs=tuple(ObservedInput.from_dict(i) for i in doc.get("inputs", [])),
                manifest=doc.get("manifest"),
            )
        except SidecarError:
            raise
        except Exception as exc:  # any shape error in untrusted bytes is one failure kind
            raise SidecarError(f"sidecar does not parse: {exc}") from exc


def sidecar_name(digest_hex: str) -> str:
    return f"{digest_hex}.json"


def build(files: Sequence[FileIdentity], inputs: Sequence[ObservedInput], attested_version: str | None,
          manifest: Manifest | None = None) -> Sidecar:
    return Sidecar(attested_version=attested_version, files=tuple(files), inputs=tuple(inputs),
                   manifest=None if manifest is None else attestation_identity(manifest.to_dict()))
