"""The typed model: strict parsing, exact round trips, absent optionals omitted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest.errors import ManifestMalformedError
from attest.model import Manifest, load_json_document

hexes = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
names = st.text(min_size=1, max_size=12)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "manifest_version": "0.1",
        "hash_scheme": "v1",
        "producer": {"name": draw(names), "version": draw(names)},
        "subject": {"model": draw(names)},
        "program_hash": draw(hexes),
        "env_hash": draw(hexes),
    }
    for key in ("run_id", "produced_at", "status"):
        if draw(st.booleans()):
            doc["subject"][key] = draw(names)
    if draw(st.booleans()):
        doc["inputs_hash"] = draw(hexes)
        doc["inputs_proof_class"] = draw(st.sampled_from(["strong", "heuristic"]))
    if draw(st.booleans()):
        doc["output_hashes"] = draw(st.lists(
            st.builds(lambda h, p: {"hash": h} if p is None else {"hash": h, "path": p}, hexes, st.none() | names),
            max_size=5))
    return doc


@given(documents())
@settings(max_examples=200)
def test_dict_model_dict_is_exact(doc: dict[str, Any]) -> None:
    manifest = Manifest.from_dict(doc)
    assert manifest.to_dict() == doc
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert Manifest.from_json(manifest.canonical_bytes()) == manifest


@given(documents())
@settings(max_examples=100)
def test_absent_optionals_are_omitted_not_null(doc: dict[str, Any]) -> None:
    text = Manifest.from_dict(doc).to_json()
    assert "null" not in text.replace(json.dumps(doc["producer"]["name"]), "")


def test_model_is_immutable(valid_doc: dict[str, Any]) -> None:
    manifest = Manifest.from_dict(valid_doc)
    with pytest.raises(AttributeError):
        manifest.program_hash = "b" * 64  # type: ignore[misc]


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', "{", "[1,]", '{"a": NaN}', b"\xff\xfe", ""])
def test_malformed_json_is_refused(text: str | bytes) -> None:
    with pytest.raises(ManifestMalformedError):
        load_json_document(text)
