"""The rocky-manifest v0.1 JSON Schema as published by the reference, and validation to coded problems.

``rocky-manifest-v0.1.schema.json`` is the reference's rocky-verify/spec file, byte for byte (Apache-2.0,
github.com/rocky-data/rocky at 98e7d385e5de; NOTICE and LICENSE beside it). ``validate`` applies it, then the
checks of ours that go further (attest.schema.semantics), each with its own code.

A document the plain-Python check ``conforms`` accepts is valid without jsonschema being imported (~40 ms of a
command's start-up, ~50 µs per output item): ``conforms`` accepts only what the schema accepts (tests/
test_schema_fast.py checks it against jsonschema on generated documents); anything it does not accept goes through
jsonschema, which finds every violation with its code and path.
"""

from __future__ import annotations

import json
import re
from functools import cache
from itertools import repeat

from attest.canonical import all_hex_digests
from attest.errors import Code, Problem
from attest.schema.semantics import _SURROGATE, semantic_problems

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from jsonschema.exceptions import ValidationError

SCHEMA_FILE = "rocky-manifest-v0.1.schema.json"
SUPPORTED_MANIFEST_VERSIONS = ("0.1",)


def schema_text() -> str:
    """The published schema, byte for byte as the reference ships it."""
    from importlib import resources  # only when the schema text is needed: it imports a dozen modules

    return resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text())
    return loaded


@cache
def _ecma_regex(pattern: str) -> re.Pattern[str]:
    """A schema pattern with ECMA-262 semantics where Python's differ: ``$`` matches only at the very end (Python's
    also matches before a final newline, which would let ``<64 hex>\\n`` pass as a hash)."""
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append(r"\Z")
            continue
        out.append(char)
    return re.compile("".join(out))


def _pattern(validator: Any, pattern: str, instance: Any, _schema: dict[str, Any]) -> Any:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _ecma_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator, validators

    # JSON Schema patterns are ECMA-262 regular expressions (as the reference's validator reads them).
    extended = validators.extend(Draft202012Validator, {"pattern": _pattern})
    Draft202012Validator.check_schema(schema())
    return extended(schema())


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
    if validator == "pattern":
        return Problem(Code.MANIFEST_INVALID_FIELD,
                       f"{path} must be 64 lowercase hex characters (BLAKE3-256), got {error.instance!r}", path)
    if validator == "minLength":
        return Problem(Code.MANIFEST_INVALID_FIELD, f"{path} must be a non-empty string", path)
    return Problem(Code.MANIFEST_INVALID_FIELD, f"{path}: {error.message}", path)


_HASH = re.compile(r"[0-9a-f]{64}")
_OUTPUT_KEYS = frozenset({"hash", "path"})
# Above this many output hashes the items are checked by hand (the published schema's item rules, same codes and
# paths): jsonschema costs ~50 µs per item, and a table with 10,000 files would spend half a second per validation
# on rules this simple.
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


_TOP_KEYS = frozenset({"manifest_version", "hash_scheme", "producer", "subject", "program_hash", "inputs_hash",
                       "inputs_proof_class", "env_hash", "output_hashes"})
_TOP_REQUIRED = ("manifest_version", "hash_scheme", "producer", "subject", "program_hash", "env_hash")
_PRODUCER_KEYS = frozenset({"name", "version"})
_SUBJECT_KEYS = frozenset({"model", "run_id", "produced_at", "status"})


def _nonempty(value: Any) -> bool:
    return type(value) is str and value != ""


def _hex(value: Any) -> bool:
    return type(value) is str and _HASH.fullmatch(value) is not None


def conforms(document: Any) -> bool:
    """True only when ``document`` is valid under the published schema, checked in plain Python (one pass, no
    per-item schema machinery). False means "not known to be valid": ``schema_problems`` then asks jsonschema.

    Exact types only (``type(x) is str``): a JSON document holds nothing else, and anything unusual is left to
    jsonschema. ``format: date-time`` is an annotation in the published schema (not asserted), as in jsonschema.
    """
    if type(document) is not dict or not document.keys() <= _TOP_KEYS:
        return False
    if any(k not in document for k in _TOP_REQUIRED):
        return False
    if document["manifest_version"] != "0.1" or type(document["manifest_version"]) is not str:
        return False
    if not _nonempty(document["hash_scheme"]):
        return False
    producer, subject = document["producer"], document["subject"]
    if type(producer) is not dict or producer.keys() != _PRODUCER_KEYS or not _nonempty(producer["name"]) \
            or not _nonempty(producer["version"]):
        return False
    if type(subject) is not dict or "model" not in subject or not subject.keys() <= _SUBJECT_KEYS:
        return False
    if not _nonempty(subject["model"]) or any(not _nonempty(subject[k]) for k in ("run_id", "status")
                                               if k in subject):
        return False
    if "produced_at" in subject and type(subject["produced_at"]) is not str:
        return False
    if not _hex(document["program_hash"]) or not _hex(document["env_hash"]):
        return False
    if ("inputs_hash" in document) != ("inputs_proof_class" in document):
        return False  # dependentRequired: both or neither
    if "inputs_hash" in document and (not _hex(document["inputs_hash"])
                                      or document["inputs_proof_class"] not in ("strong", "heuristic")
                                      or type(document["inputs_proof_class"]) is not str):
        return False
    if "output_hashes" in document:
        outputs = document["output_hashes"]
        if type(outputs) is not list:
            return False
        return _outputs_conform(outputs)
    return True


def _outputs_conform(outputs: list[Any]) -> bool:
    """The published schema's item rules for ``output_hashes``: an object holding a 64-hex ``hash`` and at most a
    non-empty string ``path`` besides. In the common shapes (every item with a path, or none) each rule is one pass
    in C over the whole list (``map``, ``set``, ``attest.canonical.all_hex_digests``); other shapes item by item."""
    if not outputs:
        return True
    if set(map(type, outputs)) != {dict}:
        return False
    if not all_hex_digests(list(map(dict.get, outputs, repeat("hash")))):
        return False
    sizes = set(map(len, outputs))
    if sizes == {1}:  # {"hash": ...} alone: the one key is the hash
        return True
    if sizes == {2}:  # "hash" and one more key, which must be "path", a non-empty string
        paths: list[Any] = list(map(dict.get, outputs, repeat("path")))
        return set(map(type, paths)) == {str} and "" not in paths
    return _outputs_conform_each(outputs)


def _outputs_conform_each(outputs: list[Any]) -> bool:
    fullmatch = _HASH.fullmatch
    for item in outputs:
        if type(item) is not dict:
            return False
        digest = item.get("hash")
        if type(digest) is not str or fullmatch(digest) is None:
            return False
        if len(item) != 1:  # hash and exactly one other key, which must be a non-empty string path
            path = item.get("path")
            if len(item) != 2 or type(path) is not str or path == "":
                return False
    return True


def validate(document: Any) -> list[Problem]:
    """Every problem of ``document`` with a stable code, empty when valid: the published schema's violations,
    then the semantic checks of ours (attest.schema.semantics)."""
    problems = schema_problems(document)
    if problems and problems[0].code == Code.MANIFEST_UNSUPPORTED_VERSION:
        return problems
    return problems + semantic_problems(document)


def validate_outputs(document: dict[str, Any], hashes: list[Any], paths: list[Any]) -> list[Problem] | None:
    """``validate({**document, "output_hashes": [{"hash": h, "path": p}, ...]})`` told without the list, when
    ``document`` holds no ``output_hashes``, conforms to the schema, and every hash is 64 lower-case hex digits and
    every path a non-empty exact string with no lone surrogate (a manifest made from a sidecar's files): then the list
    conforms too (``conforms``' item rules) and adds no problem of ours (a lone surrogate is the only one
    ``semantic_problems`` finds in a path), so the problems are the document's alone. None otherwise: the caller
    validates the whole document (tests/test_outputs_of.py)."""
    if type(document) is not dict or "output_hashes" in document or len(hashes) != len(paths) \
            or not conforms(document) or not all_hex_digests(hashes) or set(map(type, paths)) - {str} \
            or "" in paths or _SURROGATE.search("".join(paths)):
        return None
    return semantic_problems(document)


def schema_problems(document: Any) -> list[Problem]:
    """Every violation of the published v0.1 schema, as the reference's verifier judges it."""
    if not isinstance(document, dict):
        return [Problem(Code.MANIFEST_INVALID_FIELD,
                        f"a manifest is a JSON object, got {type(document).__name__}", "$")]
    # The version is read first: a consumer refuses a version it does not understand before anything else.
    version = document.get("manifest_version")
    if "manifest_version" in document and version not in SUPPORTED_MANIFEST_VERSIONS:
        return [Problem(Code.MANIFEST_UNSUPPORTED_VERSION,
                        f"manifest_version {version!r} is not supported (this consumer understands "
                        f"{', '.join(SUPPORTED_MANIFEST_VERSIONS)})", "$.manifest_version")]
    if conforms(document):
        return []
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
