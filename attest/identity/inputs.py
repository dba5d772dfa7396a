"""Inputs identity: BLAKE3 over the upstream table versions a run really read.

Each observed input is keyed by a stable table identity and carries either a content identity (strong) or
freshness signals (heuristic). The list is a set: its order never changes the hash. docs/identities.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from attest.canonical import canonical_bytes, digest
from attest.errors import AttestError, Code

_HEX = frozenset("0123456789abcdef")


def _is_hash(value: str) -> bool:
    return len(value) == 64 and set(value) <= _HEX


@dataclass(frozen=True)
class ObservedInput:
    """One upstream table version as the run observed it.

    Hashed: ``table`` plus ``content`` (strong) or the freshness fields (heuristic).
    Not hashed: ``location`` and ``name``, which help a person walk lineage but are not identity.
    """

    table: str
    content: str | None = None
    version: str | None = None
    snapshot_id: str | None = None
    row_count: int | None = None
    watermark: str | None = None
    location: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not self.table:
            raise AttestError("an observed input needs a non-empty table identity", code=Code.MANIFEST_INVALID_FIELD)
        if self.content is not None and not _is_hash(self.content):
            raise AttestError(f"content identity of {self.table!r} must be 64 lowercase hex",
                              code=Code.MANIFEST_INVALID_FIELD)
        if self.content is None and not self._freshness():
            raise AttestError(f"input {self.table!r} has neither a content identity nor a freshness signal",
                              code=Code.MANIFEST_INVALID_FIELD)

    def _freshness(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("version", "snapshot_id", "row_count", "watermark"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @property
    def proof_class(self) -> Literal["strong", "heuristic"]:
        return "strong" if self.content is not None else "heuristic"

    def identity_document(self) -> dict[str, Any]:
        """The part of the input that enters inputs_hash."""
        if self.content is not None:
            return {"table": self.table, "content": self.content}
        return {"table": self.table, "freshness": self._freshness()}

    def to_dict(self) -> dict[str, Any]:
        """The full record kept beside the attestation (identity fields plus location/name)."""
        out: dict[str, Any] = {"table": self.table}
        if self.content is not None:
            out["content"] = self.content
        out.update(self._freshness())
        if self.location is not None:
            out["location"] = self.location
        if self.name is not None:
            out["name"] = self.name
        out["proof_class"] = self.proof_class
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ObservedInput:
        row = data.get("row_count")
        return cls(
            table=str(data["table"]),
            content=data.get("content"),
            version=None if data.get("version") is None else str(data["version"]),
            snapshot_id=None if data.get("snapshot_id") is None else str(data["snapshot_id"]),
            row_count=None if row is None else int(row),
            watermark=data.get("watermark"),
            location=data.get("location"),
            name=data.get("name"),
        )


def inputs_identity(inputs: Iterable[ObservedInput]) -> tuple[str, Literal["strong", "heuristic"]] | None:
    """(inputs_hash, proof_class) over the observed inputs, or None when nothing was observed.

    The proof class is the weakest input's: one heuristic input makes the whole side heuristic.
    """
    observed = list(inputs)
    if not observed:
        return None
    proof: Literal["strong", "heuristic"] = (
        "strong" if all(i.proof_class == "strong" for i in observed) else "heuristic"
    )
    docs = [i.identity_document() for i in observed]
    # Sorting by canonical bytes makes the list a set; duplicates collapse (reading a table twice is one input).
    unique = {canonical_bytes(d): d for d in docs}
    ordered = [unique[k] for k in sorted(unique)]
    return digest({"inputs": ordered}), proof


def content_identity(output_hashes: Iterable[str]) -> str:
    """Content identity of a table version: BLAKE3 over the sorted set of its files' BLAKE3 hashes."""
    return digest({"content": sorted(set(output_hashes))})
