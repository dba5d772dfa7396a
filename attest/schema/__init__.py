"""The rocky-manifest v0.1 JSON Schema (draft 2020-12), shipped as package data, and validation to problems."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from attest.errors import Code, Problem

SCHEMA_FILE = "rocky-manifest-v0.1.schema.json"
SUPPORTED_MANIFEST_VERSIONS = ("0.1",)


def schema_text() -> str:
    """The embedded schema, byte for byte as shipped."""
    return resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text())
    return loaded


@cache
def _validator() -> Draft202012Validator:
    Draft202012Validator.check_schema(schema())
    return Draft202012Validator(schema())


def _json_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _problem(error: ValidationError) -> Problem:
    path = _json_path(error)
    validator = error.validator
    if validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return Problem(Code.MANIFEST_MISSING_REQUIRED_FIELD, f"required field {missing!r} is absent",
                       f"{path}.{missing}" if path != "$" else f"$.{missing}")
    if validator == "dependentRequired":
        # The honesty invariant: a hash without its strength, or a strength without its hash.
        return Problem(Code.INPUTS_PAIR_BROKEN,
                       "inputs_hash and inputs_proof_class must both be present or both absent", path)
    if validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        where = f"{path}.{extra[0]}" if extra else path
        return Problem(Code.MANIFEST_UNKNOWN_FIELD, f"unknown field(s) {', '.join(extra)} at {path}", where)
    if path == "$.manifest_version":
        return Problem(Code.MANIFEST_UNSUPPORTED_VERSION,
                       f"manifest_version {error.instance!r} is not supported (this consumer understands "
                       f"{', '.join(SUPPORTED_MANIFEST_VERSIONS)})", path)
    if path == "$.hash_scheme":
        return Problem(Code.MANIFEST_UNSUPPORTED_HASH_SCHEME,
                       f"hash_scheme {error.instance!r} is not supported (this consumer understands v1)", path)
    if validator == "pattern":
        return Problem(Code.MANIFEST_INVALID_FIELD,
                       f"{path} must be 64 lowercase hex characters (BLAKE3-256), got {error.instance!r}", path)
    if validator == "minLength":
        return Problem(Code.MANIFEST_INVALID_FIELD, f"{path} must be a non-empty string", path)
    return Problem(Code.MANIFEST_INVALID_FIELD, f"{path}: {error.message}", path)


def validate(document: Any) -> list[Problem]:
    """Every schema violation of ``document`` as a problem with a stable code; empty when valid."""
    if not isinstance(document, dict):
        return [Problem(Code.MANIFEST_INVALID_FIELD,
                        f"a manifest is a JSON object, got {type(document).__name__}", "$")]
    # The version is read first: a consumer refuses a version it does not understand before anything else.
    version = document.get("manifest_version")
    if "manifest_version" in document and version not in SUPPORTED_MANIFEST_VERSIONS:
        return [Problem(Code.MANIFEST_UNSUPPORTED_VERSION,
                        f"manifest_version {version!r} is not supported (this consumer understands "
                        f"{', '.join(SUPPORTED_MANIFEST_VERSIONS)})", "$.manifest_version")]
    errors = sorted(_validator().iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    problems = [_problem(e) for e in errors]
    unique: dict[tuple[str, str, str], Problem] = {}
    for p in problems:
        unique.setdefault((p.code, p.message, p.path), p)
    return list(unique.values())
