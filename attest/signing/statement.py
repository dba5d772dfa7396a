"""The in-toto Statement v1 that a signed rocky-manifest attestation carries, and its strict parser.

Two predicate types, both ours (docs/signing.md):

- ``TABLE_PREDICATE_TYPE`` — a table version. Subject name ``<table uri>@<version or snapshot id>``; predicate
  ``{"manifest": <the manifest document>, "binding": {"table", "version", "sidecar_digest", "reader_view_digest"}}``.
- ``MANIFEST_PREDICATE_TYPE`` — a standalone manifest. Subject name ``manifest:<model>`` or
  ``manifest:<model>@<run_id>``; predicate ``{"manifest": <the manifest document>}``.

The subject digest set is ``{"blake3": <manifest identity>, "sha256": <SHA-256 of the same canonical bytes>}``
(in-toto consumers may not know BLAKE3). Two distinct types keep a standalone envelope from passing as a table's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from attest.canonical import CanonicalizationError, blake3_hex, canonical_bytes, object_chunks
from attest.errors import AttestError
from attest.model import load_json_document
from attest.signing.errors import StatementError

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TABLE_PREDICATE_TYPE = "https://recipe-attest.dev/rocky-manifest/v0.1/table-attestation"
MANIFEST_PREDICATE_TYPE = "https://recipe-attest.dev/rocky-manifest/v0.1/manifest-attestation"
MANIFEST_NAME_PREFIX = "manifest:"

Kind = Literal["table", "manifest"]
_PREDICATE_TYPES: dict[str, Kind] = {TABLE_PREDICATE_TYPE: "table", MANIFEST_PREDICATE_TYPE: "manifest"}
_BINDING_DIGESTS = ("sidecar_digest", "reader_view_digest")


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def manifest_digests(manifest_doc: Mapping[str, Any], manifest_bytes: bytes | None = None) -> dict[str, str]:
    """The subject digest set of a manifest: BLAKE3 (its v1 identity) and SHA-256 of its canonical bytes
    (``manifest_bytes`` when the caller has them)."""
    try:
        data = canonical_bytes(dict(manifest_doc)) if manifest_bytes is None else manifest_bytes
    except CanonicalizationError as exc:
        raise StatementError(f"the manifest has no canonical form: {exc}") from exc
    return {"blake3": blake3_hex(data), "sha256": hashlib.sha256(data).hexdigest()}


def _model_of(manifest_doc: Mapping[str, Any]) -> str:
    subject = manifest_doc.get("subject")
    model = subject.get("model") if isinstance(subject, Mapping) else None
    if not isinstance(model, str) or not model:
        raise StatementError("the manifest has no subject.model", path="$.subject.model")
    return model


def manifest_subject_name(manifest_doc: Mapping[str, Any]) -> str:
    """``manifest:<model>[@<run_id>]``: what a standalone manifest is called in its statement and in policies.

    The model, not the file's location: a standalone manifest is moved and handed on, and its name must not change.
    """
    run_id = manifest_doc["subject"].get("run_id") if isinstance(manifest_doc.get("subject"), Mapping) else None
    name = MANIFEST_NAME_PREFIX + _model_of(manifest_doc)
    return f"{name}@{run_id}" if isinstance(run_id, str) and run_id else name


def table_subject_name(table_uri: str, version: str | int) -> str:
    return f"{table_uri}@{version}"


@dataclass(frozen=True)
class Binding:
    """What ties a table attestation to one table version; the digests are the carrier core's (hex, or None)."""

    table: str
    version: str
    sidecar_digest: str | None = None
    reader_view_digest: str | None = None

    @classmethod
    def of(cls, table_uri: str, version: str | int, binding: Binding | Mapping[str, Any] | None) -> Binding:
        """A binding for ``table_uri@version`` from a Binding or a mapping of the two digests (which may repeat,
        but then must equal, ``table`` and ``version``)."""
        if isinstance(binding, Binding):
            fields: Mapping[str, Any] = binding.to_dict()
        else:
            fields = binding or {}
        unknown = set(fields) - {"table", "version", *_BINDING_DIGESTS}
        if unknown:
            raise ValueError(f"unknown binding field(s): {', '.join(sorted(unknown))}")
        for key, expected in (("table", table_uri), ("version", str(version))):
            if key in fields and str(fields[key]) != expected:
                raise ValueError(f"binding.{key} is {fields[key]!r}, not {expected!r}")
        digests = {k: fields.get(k) for k in _BINDING_DIGESTS}
        for key, value in digests.items():
            if value is not None and not isinstance(value, str):
                raise ValueError(f"binding.{key} must be a string or None")
        return cls(table=table_uri, version=str(version), **digests)

    def to_dict(self) -> dict[str, str]:
        """Absent digests are omitted, as absent optionals are everywhere in hash scheme v1."""
        out = {"table": self.table, "version": self.version}
        for key in _BINDING_DIGESTS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def table_statement(table_uri: str, version: str | int, manifest_doc: Mapping[str, Any],
                    binding: Binding | Mapping[str, Any] | None, *, manifest_bytes: bytes | None = None) \
        -> dict[str, Any]:
    """The Statement attesting ``manifest_doc`` for ``table_uri`` at ``version`` (``manifest_bytes``: its canonical
    bytes, when the caller has them)."""
    bound = Binding.of(table_uri, version, binding)
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": table_subject_name(table_uri, version),
                     "digest": manifest_digests(manifest_doc, manifest_bytes)}],
        "predicateType": TABLE_PREDICATE_TYPE,
        "predicate": {"manifest": dict(manifest_doc), "binding": bound.to_dict()},
    }


def manifest_statement(manifest_doc: Mapping[str, Any]) -> dict[str, Any]:
    """The Statement attesting a standalone manifest."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": manifest_subject_name(manifest_doc), "digest": manifest_digests(manifest_doc)}],
        "predicateType": MANIFEST_PREDICATE_TYPE,
        "predicate": {"manifest": dict(manifest_doc)},
    }


def statement_payload(statement: Mapping[str, Any], *, manifest_bytes: bytes | None = None) -> bytes:
    """The signed bytes: the Statement's canonical JSON (hash scheme v1). ``manifest_bytes``: the canonical bytes of
    its ``predicate.manifest``, made already: spliced in where that value goes (canonical JSON is written value by
    value with keys sorted at every level, so the statement's bytes are the same) instead of encoded again."""
    predicate = statement.get("predicate")
    if manifest_bytes is None or not isinstance(predicate, Mapping) or "manifest" not in predicate:
        return canonical_bytes(dict(statement))
    data, rest = manifest_bytes, {k: v for k, v in predicate.items() if k != "manifest"}
    return b"".join(object_chunks({k: v for k, v in statement.items() if k != "predicate"},
                                  {"predicate": lambda: object_chunks(rest, {"manifest": lambda: iter((data,))})}))


@dataclass(frozen=True)
class Statement:
    """A parsed, shape-checked statement: its subject, its predicate, and the manifest it carries."""

    kind: Kind
    subject_name: str
    digests: dict[str, str]
    manifest: dict[str, Any]
    binding: Binding | None
    document: dict[str, Any]


def _need(condition: bool, message: str, path: str) -> None:
    if not condition:
        raise StatementError(f"the signed statement is malformed: {message}", path=path)


def parse_statement(payload: bytes | str | Mapping[str, Any]) -> Statement:
    """Parse and check a Statement: in-toto v1 shape, one of our predicate types, exactly one subject whose
    blake3 and sha256 both equal the digests of the predicate's manifest, and (tables) a well-formed binding
    whose table and version spell the subject name. Unknown fields are ignored (in-toto parsing rules)."""
    if isinstance(payload, Mapping):
        document: Any = dict(payload)
    else:
        try:
            document = load_json_document(payload)
        except AttestError as exc:
            raise StatementError(f"the signed payload is not JSON: {exc.message}") from exc
    _need(isinstance(document, dict), "not a JSON object", "$")
    _need(document.get("_type") == STATEMENT_TYPE, f"_type is not {STATEMENT_TYPE}", "$._type")
    kind = _PREDICATE_TYPES.get(document.get("predicateType"))
    _need(kind is not None, f"predicateType {document.get('predicateType')!r} is not a rocky-manifest attestation",
          "$.predicateType")
    subjects = document.get("subject")
    _need(isinstance(subjects, list) and len(subjects) == 1, "subject must hold exactly one entry", "$.subject")
    entry = subjects[0]
    _need(isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"] != "",
          "subject[0].name must be a non-empty string", "$.subject[0].name")
    digests = entry.get("digest")
    _need(isinstance(digests, dict) and _is_hex64(digests.get("blake3")) and _is_hex64(digests.get("sha256")),
          "subject[0].digest must hold blake3 and sha256 as 64 lowercase hex", "$.subject[0].digest")
    predicate = document.get("predicate")
    _need(isinstance(predicate, dict) and isinstance(predicate.get("manifest"), dict),
          "predicate.manifest must be an object", "$.predicate.manifest")
    manifest = predicate["manifest"]
    expected = manifest_digests(manifest)
    for algorithm in ("blake3", "sha256"):
        _need(digests[algorithm] == expected[algorithm],
              f"subject[0].digest.{algorithm} is not the digest of predicate.manifest", "$.subject[0].digest")
    binding: Binding | None = None
    if kind == "table":
        raw = predicate.get("binding")
        _need(isinstance(raw, dict), "predicate.binding must be an object", "$.predicate.binding")
        _need(isinstance(raw.get("table"), str) and isinstance(raw.get("version"), str),
              "predicate.binding.table and .version must be strings", "$.predicate.binding")
        for key in _BINDING_DIGESTS:
            _need(raw.get(key) is None or isinstance(raw[key], str), f"predicate.binding.{key} must be a string",
                  f"$.predicate.binding.{key}")
        binding = Binding(table=raw["table"], version=raw["version"], sidecar_digest=raw.get("sidecar_digest"),
                          reader_view_digest=raw.get("reader_view_digest"))
        _need(entry["name"] == table_subject_name(binding.table, binding.version),
              "subject[0].name is not <binding.table>@<binding.version>", "$.subject[0].name")
    else:
        try:
            name = manifest_subject_name(manifest)
        except StatementError:
            name = None
        _need(entry["name"] == name, "subject[0].name is not manifest:<model>[@<run_id>] of the manifest",
              "$.subject[0].name")
    assert kind is not None
    return Statement(kind=kind, subject_name=entry["name"], digests={k: digests[k] for k in ("blake3", "sha256")},
                     manifest=manifest, binding=binding, document=document)


@dataclass(frozen=True)
class Target:
    """What a verifier expects a signature to cover: one table version or one standalone manifest.

    ``scope`` is what a policy's table globs are matched against: the table URI, or ``manifest:<model>``. A table is
    also known by ``names`` — the names a user reached it by (a path through a symlink, a relative path, ``file:`` or
    ``s3a://`` spellings) — and lives at ``locations`` (an Iceberg table's storage location): a policy's
    ``require_signed`` applies when any spelling of any of them matches, and a key must be allowed for the scope and
    for every name (attest/signing/policy.py).
    """

    kind: Kind
    scope: str
    model: str
    manifest_doc: Mapping[str, Any]
    binding: Binding | None = None
    names: tuple[str, ...] = ()
    locations: tuple[str, ...] = ()
    # More locations, asked for only when a policy matches names (``all_locations``): another configured Iceberg
    # catalog's name for the table is a catalog search, which a policy matching no name must not cost.
    more_locations: Callable[[], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def all_locations(self) -> tuple[str, ...]:
        """``locations`` and ``more_locations`` (asked once): every location a policy matches the table by."""
        more = () if self.more_locations is None else self.more_locations()
        return (*self.locations, *(loc for loc in more if loc))

    @classmethod
    def table(cls, table_uri: str, version: str | int, manifest_doc: Mapping[str, Any],
              binding: Binding | Mapping[str, Any] | None, model: str | None = None, *,
              names: tuple[str, ...] = (), locations: tuple[str, ...] = (),
              more_locations: Callable[[], tuple[str, ...]] | None = None) -> Target:
        actual = _model_of(manifest_doc)
        if model is not None and model != actual:
            raise StatementError(f"model {model!r} is not the manifest's subject.model {actual!r}")
        return cls(kind="table", scope=table_uri, model=actual, manifest_doc=manifest_doc,
                   binding=Binding.of(table_uri, version, binding), names=tuple(n for n in names if n),
                   locations=tuple(loc for loc in locations if loc), more_locations=more_locations)

    @classmethod
    def manifest(cls, manifest_doc: Mapping[str, Any]) -> Target:
        model = _model_of(manifest_doc)
        return cls(kind="manifest", scope=MANIFEST_NAME_PREFIX + model, model=model, manifest_doc=manifest_doc)

    @property
    def subject_name(self) -> str:
        if self.binding is not None:
            return table_subject_name(self.binding.table, self.binding.version)
        return manifest_subject_name(self.manifest_doc)

    def mismatch(self, statement: Statement) -> str | None:
        """Why ``statement`` does not attest this target (None when it does)."""
        if statement.kind != self.kind:
            return f"the signed statement attests a {statement.kind}, not a {self.kind}"
        if statement.subject_name != self.subject_name:
            return f"the signed statement is for {statement.subject_name!r}, not {self.subject_name!r}"
        if statement.digests != manifest_digests(self.manifest_doc):
            return "the signed statement attests another manifest (its digests differ from this manifest's)"
        if statement.binding != self.binding:
            assert statement.binding is not None and self.binding is not None
            for key in _BINDING_DIGESTS:
                signed, actual = getattr(statement.binding, key), getattr(self.binding, key)
                if signed != actual:
                    return f"binding.{key} was signed as {signed!r}; the table has {actual!r}"
            return "the signed binding differs from the table's"
        return None
