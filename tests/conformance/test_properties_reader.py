"""The reference's property convention, as tests/conformance/reference.py implements it for carrier conformance.

The reader must behave exactly as rocky-databricks' `reconstitute_manifest` (sorted keys, split on `.`, nested
objects, string values, a key below a string dropped): these tests pin that, using the reference's own sample
property set, so carrier conformance tests built on it judge our tables the way another producer's tooling would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attest.schema import validate
from tests.conformance.reference import naive_properties_reader, rocky_verify

# The property set rocky writes on a default Databricks run (recipe_manifest_tblproperties_live.rs).
ROCKY_PROPS = {
    "recipe_manifest.manifest_version": "0.1",
    "recipe_manifest.hash_scheme": "v1",
    "recipe_manifest.program_hash": "2148e619b51421f51cfb3fac423145fe245bbe409b74f31c22d703ab07453036",
    "recipe_manifest.env_hash": "bbf2c2045328f738683a6336df5fa61b5f00076aeaed7c495c04f9d6991d92bd",
    "recipe_manifest.producer.name": "rocky",
    "recipe_manifest.producer.version": "1.58.0",
    "recipe_manifest.subject.model": "fct_events",
    "recipe_manifest.subject.run_id": "run-cov-0001",
    "recipe_manifest.subject.status": "success",
    "delta.minReaderVersion": "1",
    "owner": "someone",
}


def test_reconstitutes_rocky_properties() -> None:
    manifest = naive_properties_reader(ROCKY_PROPS)
    assert manifest == {
        "manifest_version": "0.1", "hash_scheme": "v1",
        "program_hash": ROCKY_PROPS["recipe_manifest.program_hash"],
        "env_hash": ROCKY_PROPS["recipe_manifest.env_hash"],
        "producer": {"name": "rocky", "version": "1.58.0"},
        "subject": {"model": "fct_events", "run_id": "run-cov-0001", "status": "success"},
    }
    assert validate(manifest) == []


@pytest.mark.usefixtures("reference_built")
def test_the_reference_verifier_accepts_what_it_reconstitutes(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(naive_properties_reader(ROCKY_PROPS)), encoding="utf-8")
    assert rocky_verify(path)[0] == 0
    tampered = dict(ROCKY_PROPS, **{"recipe_manifest.program_hash": "not-a-valid-hash"})
    path.write_text(json.dumps(naive_properties_reader(tampered)), encoding="utf-8")
    assert rocky_verify(path)[0] == 1


def test_lists_are_not_a_thing_in_the_convention() -> None:
    # Numbered segments become object keys, never arrays: an output list written as keys is no schema list.
    manifest = naive_properties_reader({"recipe_manifest.output_hashes.0.hash": "a" * 64,
                                        "recipe_manifest.output_hashes.1.hash": "b" * 64})
    assert manifest == {"output_hashes": {"0": {"hash": "a" * 64}, "1": {"hash": "b" * 64}}}


def test_values_stay_strings_and_other_keys_are_ignored() -> None:
    assert naive_properties_reader({"recipe_manifest.n": "1", "recipe_manifestx": "no", "x.recipe_manifest.y": "no",
                                    "RECIPE_MANIFEST.z": "no"}) == {"n": "1"}


def test_a_key_below_a_string_is_dropped_and_a_leaf_replaces_an_object() -> None:
    # Sorted order decides: "a" < "a.b", so "a" is a string first and "a.b" cannot descend into it.
    assert naive_properties_reader({"recipe_manifest.a.b": "inner", "recipe_manifest.a": "outer"}) == {"a": "outer"}
    # "x.y" < "x.y.z": y is a string first, so x.y.z is dropped.
    assert naive_properties_reader({"recipe_manifest.x.y.z": "1", "recipe_manifest.x.y": "2"}) == {"x": {"y": "2"}}


def test_empty_segments_are_keys() -> None:
    assert naive_properties_reader({"recipe_manifest.": "root", "recipe_manifest.a..b": "v"}) == \
        {"": "root", "a": {"": {"b": "v"}}}
