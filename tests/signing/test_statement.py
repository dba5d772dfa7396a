"""The in-toto Statement of a rocky-manifest attestation: builders, the strict parser, and subject matching."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from attest.canonical import canonical_bytes, digest
from attest.errors import Code
from attest.signing.errors import StatementError
from attest.signing.statement import (
    MANIFEST_PREDICATE_TYPE,
    STATEMENT_TYPE,
    TABLE_PREDICATE_TYPE,
    Binding,
    Target,
    manifest_statement,
    parse_statement,
    statement_payload,
    table_statement,
)

SIDE = "5" * 64
VIEW = "6" * 64


def test_table_statement_fields(doc: dict[str, Any]) -> None:
    statement = table_statement("s3://lake/orders", 12, doc, {"sidecar_digest": SIDE, "reader_view_digest": VIEW})
    assert statement == {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": "s3://lake/orders@12", "digest": {
            "blake3": digest(doc), "sha256": hashlib.sha256(canonical_bytes(doc)).hexdigest()}}],
        "predicateType": TABLE_PREDICATE_TYPE,
        "predicate": {"manifest": doc, "binding": {"table": "s3://lake/orders", "version": "12",
                                                   "sidecar_digest": SIDE, "reader_view_digest": VIEW}},
    }
    assert statement_payload(statement) == canonical_bytes(statement)


def test_absent_binding_digests_are_omitted(doc: dict[str, Any]) -> None:
    statement = table_statement("/lake/t", "3", doc, None)
    assert statement["predicate"]["binding"] == {"table": "/lake/t", "version": "3"}
    assert parse_statement(statement_payload(statement)).binding == Binding("/lake/t", "3")


def test_binding_may_repeat_but_not_contradict_table_and_version(doc: dict[str, Any]) -> None:
    assert Binding.of("/t", 3, {"table": "/t", "version": "3"}) == Binding("/t", "3")
    assert Binding.of("/t", 3, Binding("/t", "3", SIDE)) == Binding("/t", "3", SIDE)
    for bad in ({"table": "/u"}, {"version": 4}, {"sidecar": SIDE}, {"sidecar_digest": 5}):
        with pytest.raises(ValueError):
            Binding.of("/t", 3, bad)


def test_manifest_statement_names_the_model_and_run(doc: dict[str, Any]) -> None:
    statement = manifest_statement(doc)
    assert statement["subject"][0]["name"] == "manifest:orders_clean@run-1"
    assert statement["predicateType"] == MANIFEST_PREDICATE_TYPE
    assert statement["predicate"] == {"manifest": doc}
    del doc["subject"]["run_id"]
    assert manifest_statement(doc)["subject"][0]["name"] == "manifest:orders_clean"


def test_parse_round_trip(doc: dict[str, Any]) -> None:
    statement = table_statement("s3://lake/orders", 12, doc, {"sidecar_digest": SIDE})
    parsed = parse_statement(statement_payload(statement))
    assert (parsed.kind, parsed.subject_name, parsed.manifest, parsed.binding) == (
        "table", "s3://lake/orders@12", doc, Binding("s3://lake/orders", "12", SIDE))
    assert parse_statement(statement_payload(manifest_statement(doc))).kind == "manifest"


def test_unknown_fields_are_ignored(doc: dict[str, Any]) -> None:
    # in-toto parsing rules: consumers MUST ignore unrecognised fields (they are signed all the same).
    statement = table_statement("/t", 1, doc, None)
    statement["x-extension"] = {"a": 1}
    statement["subject"][0]["uri"] = "file:///t"
    statement["subject"][0]["digest"]["sha512"] = "0" * 128
    assert parse_statement(statement).subject_name == "/t@1"


def _breakers() -> list[tuple[str, Any]]:
    def set_(path: list[Any], value: Any) -> Any:
        def apply(s: dict[str, Any]) -> None:
            node: Any = s
            for key in path[:-1]:
                node = node[key]
            if value is KeyError:
                del node[path[-1]]
            else:
                node[path[-1]] = value
        return apply

    return [
        ("_type", set_(["_type"], "https://in-toto.io/Statement/v0.1")),
        ("predicateType", set_(["predicateType"], "https://slsa.dev/provenance/v1")),
        ("no subject", set_(["subject"], [])),
        ("two subjects", lambda s: s["subject"].append(copy.deepcopy(s["subject"][0]))),
        ("no name", set_(["subject", 0, "name"], KeyError)),
        ("no sha256", set_(["subject", 0, "digest", "sha256"], KeyError)),
        ("no blake3", set_(["subject", 0, "digest", "blake3"], KeyError)),
        ("uppercase digest", lambda s: s["subject"][0]["digest"].update(
            blake3=s["subject"][0]["digest"]["blake3"].upper())),
        ("digest of another manifest", set_(["subject", 0, "digest", "blake3"], "0" * 64)),
        ("sha256 of another manifest", set_(["subject", 0, "digest", "sha256"], "0" * 64)),
        ("manifest changed", set_(["predicate", "manifest", "program_hash"], "d" * 64)),
        ("no manifest", set_(["predicate", "manifest"], KeyError)),
        ("no binding", set_(["predicate", "binding"], KeyError)),
        ("numeric version", set_(["predicate", "binding", "version"], 12)),
        ("name not table@version", set_(["subject", 0, "name"], "s3://lake/orders@13")),
        ("binding digest type", set_(["predicate", "binding", "sidecar_digest"], 5)),
        ("not an object", lambda s: s.clear()),
    ]


@pytest.mark.parametrize(("label", "breaker"), _breakers(), ids=[b[0] for b in _breakers()])
def test_parser_refuses_broken_statements(doc: dict[str, Any], label: str, breaker: Any) -> None:
    statement = table_statement("s3://lake/orders", 12, doc, {"sidecar_digest": SIDE})
    breaker(statement)
    with pytest.raises(StatementError) as info:
        parse_statement(canonical_bytes(statement))
    assert info.value.code == Code.STATEMENT_MISMATCH


def test_parser_refuses_non_json_and_duplicate_keys() -> None:
    for payload in (b"\xff", b"[]", b'{"_type": 1, "_type": 2}'):
        with pytest.raises(StatementError):
            parse_statement(payload)


def test_standalone_name_must_follow_the_manifest(doc: dict[str, Any]) -> None:
    statement = manifest_statement(doc)
    statement["subject"][0]["name"] = "manifest:other@run-1"
    with pytest.raises(StatementError):
        parse_statement(statement)


def test_target_matching(doc: dict[str, Any]) -> None:
    signed = parse_statement(table_statement("s3://lake/orders", 12, doc, {"sidecar_digest": SIDE}))
    assert Target.table("s3://lake/orders", 12, doc, {"sidecar_digest": SIDE}).mismatch(signed) is None
    assert "s3://lake/orders@13" in str(Target.table("s3://lake/orders", 13, doc, {"sidecar_digest": SIDE})
                                        .mismatch(signed))
    assert "sidecar_digest" in str(Target.table("s3://lake/orders", 12, doc, {"sidecar_digest": VIEW})
                                   .mismatch(signed))
    assert "reader_view_digest" in str(Target.table("s3://lake/orders", 12, doc,
                                                    {"sidecar_digest": SIDE, "reader_view_digest": VIEW})
                                       .mismatch(signed))
    changed = copy.deepcopy(doc)
    changed["env_hash"] = "e" * 64
    assert "another manifest" in str(Target.table("s3://lake/orders", 12, changed, {"sidecar_digest": SIDE})
                                     .mismatch(signed))
    assert "attests a table" in str(Target.manifest(doc).mismatch(signed))
    with pytest.raises(StatementError):
        Target.table("s3://lake/orders", 12, doc, None, model="someone_else")
