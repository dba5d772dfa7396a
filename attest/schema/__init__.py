"""The rocky-manifest v0.1 JSON Schema (draft 2020-12), shipped as package data, and validation to problems."""

from __future__ import annotations

import json
import re
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
    if validator in ("minLength", "maxLength") and path.endswith("hash"):
        return Problem(Code.MANIFEST_INVALID_FIELD,
                       f"{path} must be 64 lowercase hex characters (BLAKE3-256), got {error.instance!r}", path)
    if validator == "minLength":
        return Problem(Code.MANIFEST_INVALID_FIELD, f"{path} must be a non-empty string", path)
    return Problem(Code.MANIFEST_INVALID_FIELD, f"{path}: {error.message}", path)


_HASH = re.compile(r"[0-9a-f]{64}")
_OUTPUT_KEYS = frozenset({"hash", "path"})
# Above this many output hashes the items are checked by hand: jsonschema costs ~50 µs per item, and a table
# with 10,000 files would spend half a second per validation on rules this simple.
_FAST_OUTPUTS_MIN = 64


def _output_problems(outputs: list[Any]) -> list[Problem]:
    """The schema's rules for output_hashes items, with the same codes and paths jsonschema would give."""
    problems: list[Problem] = []
    for index, item in enumerate(outputs):
        where = f"$.output_hashes[{index}]"
        if not isinstance(item, dict):
            problems.append(Problem(Code.MANIFEST_INVALID_FIELD, f"{where}: {item!r} is not of type 'object'", where))
            continue
        extra = sorted(set(item) - _OUTPUT_KEYS)
        if extra:
            problems.append(Problem(Code.MANIFEST_UNKNOWN_FIELD, f"unknown field(s) {', '.join(extra)} at {where}",
                                    f"{where}.{extra[0]}"))
        if "hash" not in item:
            problems.append(Problem(Code.MANIFEST_MISSING_REQUIRED_FIELD, "required field 'hash' is absent",
                                    f"{where}.hash"))
        else:
            value = item["hash"]
            if not isinstance(value, str):
                problems.append(Problem(Code.MANIFEST_INVALID_FIELD,
                                        f"{where}.hash: {value!r} is not of type 'string'", f"{where}.hash"))
            elif not _HASH.fullmatch(value):
                problems.append(Problem(Code.MANIFEST_INVALID_FIELD, f"{where}.hash must be 64 lowercase hex "
                                        f"characters (BLAKE3-256), got {value!r}", f"{where}.hash"))
        if "path" in item:
            value = item["path"]
            if not isinstance(value, str):
                problems.append(Problem(Code.MANIFEST_INVALID_FIELD,
                                        f"{where}.path: {value!r} is not of type 'string'", f"{where}.path"))
            elif value == "":
                problems.append(Problem(Code.MANIFEST_INVALID_FIELD, f"{where}.path must be a non-empty string",
                                        f"{where}.path"))
    return problems


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
    outputs = document.get("output_hashes")
    fast = isinstance(outputs, list) and len(outputs) >= _FAST_OUTPUTS_MIN
    checked = {**document, "output_hashes": []} if fast else document
    errors = sorted(_validator().iter_errors(checked), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    problems = [_problem(e) for e in errors]
    if isinstance(outputs, list) and fast:
        problems += _output_problems(outputs)
    unique: dict[tuple[str, str, str], Problem] = {}
    for p in problems:
        unique.setdefault((p.code, p.message, p.path), p)
    return list(unique.values())
