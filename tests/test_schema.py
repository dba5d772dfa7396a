"""The v0.1 schema: every rule of the spec, each tamper class with its stable code."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from attest.errors import Code, ManifestInvalidError, UnsupportedVersionError
from attest.model import Manifest
from attest.schema import schema, schema_problems, schema_text, validate
from attest.schema.semantics import semantic_problems
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
                                  ["subject", "run_id"], ["subject", "status"], ["hash_scheme"],
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


def test_the_shipped_schema_is_the_published_one() -> None:
    # The reference's own file (tests/conformance compares the bytes): its $id, a free-form hash_scheme, and
    # produced_at as an annotated date-time.
    s = schema()
    assert s["$id"] == "https://rocky-data.dev/spec/rocky-manifest-v0.1.schema.json"
    assert s["properties"]["hash_scheme"] == {**s["properties"]["hash_scheme"], "type": "string", "minLength": 1}
    assert s["properties"]["subject"]["properties"]["produced_at"]["format"] == "date-time"
    assert "$defs" not in s and schema_text().endswith("}\n")
    from importlib import resources
    notice = resources.files("attest.schema").joinpath("NOTICE").read_text(encoding="utf-8")
    assert "Apache License" in notice and "rocky-data/rocky" in notice


@pytest.mark.parametrize(("path", "value", "code"), [
    (["hash_scheme"], "v2", Code.MANIFEST_UNSUPPORTED_HASH_SCHEME),
    (["hash_scheme"], "V1", Code.MANIFEST_UNSUPPORTED_HASH_SCHEME),
    (["subject", "produced_at"], "", Code.MANIFEST_PRODUCED_AT_EMPTY),
])
def test_semantic_checks_go_beyond_the_schema_with_their_own_codes(path: list[Any], value: Any, code: Code) -> None:
    doc = mutate(path, value)
    assert schema_problems(doc) == []  # the published schema accepts it, as the reference's verifier does
    assert [p.code for p in semantic_problems(doc)] == [code]
    assert [p.code for p in validate(doc)] == [code]
    with pytest.raises(ManifestInvalidError):
        Manifest.from_dict(doc)


@pytest.mark.parametrize("value", ["yesterday", "2026-13-45", "2026-07-08T01:52:41Z"])
def test_produced_at_format_is_an_annotation_as_published(value: str) -> None:
    assert validate(mutate(["subject", "produced_at"], value)) == []


@pytest.mark.parametrize("value", [None, 1, "", ["v1"]])
def test_a_hash_scheme_that_is_no_string_is_a_schema_violation_not_a_semantic_one(value: Any) -> None:
    doc = mutate(["hash_scheme"], value)
    assert codes(doc) == {Code.MANIFEST_INVALID_FIELD.value}
    assert semantic_problems(doc) == []


def test_not_an_object() -> None:
    assert codes([1, 2]) == {Code.MANIFEST_INVALID_FIELD.value}


def test_model_raises_with_every_problem() -> None:
    doc = mutate(["program_hash"], "x")
    doc["bogus"] = 1
    with pytest.raises(ManifestInvalidError) as info:
        Manifest.from_dict(doc)
    assert {p.code for p in info.value.problems} == {Code.MANIFEST_INVALID_FIELD, Code.MANIFEST_UNKNOWN_FIELD}


def test_a_trailing_newline_is_not_a_hash() -> None:
    # Python's `$` matches before a final newline; the schema's pattern is read as ECMA-262 (end of input only),
    # as the reference reads it, so the published pattern alone bounds a hash.
    assert codes(mutate(["program_hash"], HEX_A + "\n")) == {Code.MANIFEST_INVALID_FIELD.value}
    assert codes(mutate(["env_hash"], "\n" + HEX_A)) == {Code.MANIFEST_INVALID_FIELD.value}
    assert codes(mutate(["output_hashes", 0, "hash"], HEX_A + "\n")) == {Code.MANIFEST_INVALID_FIELD.value}
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


def test_a_lone_surrogate_in_a_document_from_elsewhere_is_refused() -> None:
    # JSON text is refused when parsed; a document built from table metadata reaches validate() directly.
    for path in (["subject", "model"], ["producer", "version"], ["output_hashes", 0, "path"]):
        doc = mutate(path, "a\ud800b")
        assert [(p.code, p.path) for p in validate(doc)] == [
            (Code.MANIFEST_MALFORMED_JSON, "$." + ".".join(map(str, path)).replace(".0.", "[0]."))]
    many = mutate(["output_hashes"], [{"hash": HEX_A, "path": f"p{i}"} for i in range(200)])
    many["output_hashes"][150]["path"] = "\udfff"
    assert [p.path for p in validate(many)] == ["$.output_hashes[150].path"]
    # A list the schema refuses (an item that is no object, a path that is no string) still has its surrogate found
    # and placed: the paths are then picked item by item.
    many["output_hashes"][10] = "not an object"
    many["output_hashes"][20]["path"] = 5
    assert (Code.MANIFEST_MALFORMED_JSON, "$.output_hashes[150].path") in {(p.code, p.path) for p in validate(many)}
    assert validate(mutate(["subject", "model"], "\U0001f600")) == []
