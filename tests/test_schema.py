"""The v0.1 schema: every rule of the spec, each tamper class with its stable code."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from attest.errors import Code, ManifestInvalidError, UnsupportedVersionError
from attest.model import Manifest
from attest.schema import schema, validate
from tests.conftest import HEX_A, VALID


def codes(doc: Any) -> set[str]:
    return {p.code.value for p in validate(doc)}


def mutate(path: list[Any], value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    doc["output_hashes"] = [{"hash": HEX_A, "path": "x.parquet"}]
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


def test_valid_documents_pass() -> None:
    assert validate(VALID) == []
    minimal = {k: VALID[k] for k in ("manifest_version", "hash_scheme", "producer", "program_hash", "env_hash")}
    minimal["subject"] = {"model": "m"}
    assert validate(minimal) == []
    assert validate(mutate(["output_hashes"], [{"hash": HEX_A}])) == []
    assert validate(mutate(["output_hashes"], [])) == []


def test_schema_is_draft_2020_12_and_closed() -> None:
    s = schema()
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["additionalProperties"] is False
    assert s["properties"]["producer"]["additionalProperties"] is False
    assert s["properties"]["subject"]["additionalProperties"] is False
    assert s["properties"]["output_hashes"]["items"]["additionalProperties"] is False


@pytest.mark.parametrize("field", ["manifest_version", "hash_scheme", "producer", "subject", "program_hash",
                                   "env_hash"])
def test_missing_required_top_level(field: str) -> None:
    assert Code.MANIFEST_MISSING_REQUIRED_FIELD.value in codes(mutate([field], delete=True))


@pytest.mark.parametrize("path", [["producer", "name"], ["producer", "version"], ["subject", "model"],
                                  ["output_hashes", 0, "hash"]])
def test_missing_required_nested(path: list[Any]) -> None:
    assert codes(mutate(path, delete=True)) == {Code.MANIFEST_MISSING_REQUIRED_FIELD.value}


@pytest.mark.parametrize("path", [["extra"], ["producer", "host"], ["subject", "user"], ["output_hashes", 0, "size"]])
def test_unknown_fields_at_every_level(path: list[Any]) -> None:
    assert codes(mutate(path, "x")) == {Code.MANIFEST_UNKNOWN_FIELD.value}


@pytest.mark.parametrize("field", ["program_hash", "env_hash", "inputs_hash"])
@pytest.mark.parametrize("bad", ["A" * 64, "a" * 63, "a" * 65, "g" * 64, "", 7, None])
def test_hashes_are_lowercase_64_hex(field: str, bad: Any) -> None:
    assert codes(mutate([field], bad)) == {Code.MANIFEST_INVALID_FIELD.value}


def test_output_hash_is_64_hex() -> None:
    assert codes(mutate(["output_hashes", 0, "hash"], "F" * 64)) == {Code.MANIFEST_INVALID_FIELD.value}


@pytest.mark.parametrize("path", [["producer", "name"], ["producer", "version"], ["subject", "model"],
                                  ["subject", "run_id"], ["subject", "produced_at"], ["subject", "status"],
                                  ["output_hashes", 0, "path"]])
def test_strings_are_non_empty(path: list[Any]) -> None:
    assert codes(mutate(path, "")) == {Code.MANIFEST_INVALID_FIELD.value}


def test_proof_class_enum() -> None:
    assert codes(mutate(["inputs_proof_class"], "weak")) == {Code.MANIFEST_INVALID_FIELD.value}
    assert validate(mutate(["inputs_proof_class"], "strong")) == []


@pytest.mark.parametrize("field", ["inputs_hash", "inputs_proof_class"])
def test_inputs_pair_is_enforced_both_ways(field: str) -> None:
    assert codes(mutate([field], delete=True)) == {Code.INPUTS_PAIR_BROKEN.value}


def test_both_inputs_fields_absent_is_valid() -> None:
    doc = mutate(["inputs_hash"], delete=True)
    del doc["inputs_proof_class"]
    assert validate(doc) == []


@pytest.mark.parametrize("version", ["0.2", "1", "", 0.1, None])
def test_unsupported_manifest_version_is_refused_with_a_message(version: Any) -> None:
    problems = validate(mutate(["manifest_version"], version))
    assert [p.code for p in problems] == [Code.MANIFEST_UNSUPPORTED_VERSION]
    assert "not supported" in problems[0].message
    with pytest.raises(UnsupportedVersionError, match="not supported"):
        Manifest.from_dict(mutate(["manifest_version"], version))


def test_hash_scheme_must_be_v1() -> None:
    assert codes(mutate(["hash_scheme"], "v2")) == {Code.MANIFEST_UNSUPPORTED_HASH_SCHEME.value}


def test_not_an_object() -> None:
    assert codes([1, 2]) == {Code.MANIFEST_INVALID_FIELD.value}


def test_model_raises_with_every_problem() -> None:
    doc = mutate(["program_hash"], "x")
    doc["bogus"] = 1
    with pytest.raises(ManifestInvalidError) as info:
        Manifest.from_dict(doc)
    assert {p.code for p in info.value.problems} == {Code.MANIFEST_INVALID_FIELD, Code.MANIFEST_UNKNOWN_FIELD}


def test_a_trailing_newline_is_not_a_hash() -> None:
    # Python's `$` matches before a final newline; the length bounds close that gap in every validator.
    assert codes(mutate(["program_hash"], HEX_A + "\n")) == {Code.MANIFEST_INVALID_FIELD.value}
    big = mutate(["output_hashes"], [{"hash": HEX_A, "path": f"p{i}"} for i in range(100)])
    big["output_hashes"][7]["hash"] = HEX_A + "\n"
    assert [(p.code, p.path) for p in validate(big)] == [(Code.MANIFEST_INVALID_FIELD, "$.output_hashes[7].hash")]


BAD_ITEMS: list[Any] = [
    {"hash": "A" * 64}, {"hash": 5}, {"path": "x"}, {"hash": HEX_A, "path": ""}, {"hash": HEX_A, "path": 3},
    {"hash": HEX_A, "size": 1}, "not-an-object", {"hash": HEX_A, "path": "ok", "z": 1, "a": 2}, {},
]


@pytest.mark.parametrize("bad", BAD_ITEMS, ids=repr)
def test_fast_output_check_agrees_with_jsonschema(bad: Any) -> None:
    from attest.schema import _FAST_OUTPUTS_MIN

    few = mutate(["output_hashes"], [{"hash": HEX_A}, bad])
    many = mutate(["output_hashes"], [{"hash": HEX_A}, bad] + [{"hash": HEX_A}] * _FAST_OUTPUTS_MIN)
    slow = {(p.code, p.path) for p in validate(few)}
    fast = {(p.code, p.path) for p in validate(many)}
    assert slow and slow == fast
