"""Pure tests of the Delta carrier's key mapping, deletion-vector paths and partition directory names."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from attest.model import Manifest
from carriers import properties as props
from carriers.core import encode_keys
from carriers.delta.log import deletion_vector_path, z85_decode, z85_encode
from carriers.delta.write import hive_partition_dir

HEX = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
TEXT = st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s)


@st.composite
def manifests(draw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "manifest_version": "0.1",
        "hash_scheme": "v1",
        "producer": {"name": draw(TEXT), "version": draw(TEXT)},
        "subject": {"model": draw(TEXT)},
        "program_hash": draw(HEX),
        "env_hash": draw(HEX),
    }
    for key in ("run_id", "produced_at", "status"):
        if draw(st.booleans()):
            doc["subject"][key] = draw(TEXT)
    if draw(st.booleans()):
        doc["inputs_hash"] = draw(HEX)
        doc["inputs_proof_class"] = draw(st.sampled_from(["strong", "heuristic"]))
    if draw(st.booleans()):
        n = draw(st.integers(min_value=0, max_value=40))
        outs = []
        for i in range(n):
            entry = {"hash": draw(HEX)}
            if draw(st.integers(0, 9)):
                entry["path"] = f"{draw(TEXT)}/{i}.parquet"
            outs.append(entry)
        doc["output_hashes"] = outs
    # Parse through the model so the strategy only yields valid v0.1 documents.
    return Manifest.from_dict(doc).to_dict()


def _keys(doc: dict[str, Any], version: int) -> dict[str, str]:
    return encode_keys(Manifest.from_dict(doc), version=str(version), sidecar_rel=f"_recipe_attest/{'a' * 64}.json",
                       sidecar_hash="a" * 64)


def naive_reader(properties: dict[str, str]) -> dict[str, Any]:
    """The reference convention: keys starting ``recipe_manifest.``, prefix stripped, split on ``.``, nested."""
    out: dict[str, Any] = {}
    for key, value in properties.items():
        if not key.startswith("recipe_manifest."):
            continue
        node = out
        *parents, leaf = key[len("recipe_manifest."):].split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


@settings(max_examples=200, deadline=None)
@given(manifests())
def test_manifest_keys_round_trip_and_the_naive_reader_gets_the_manifest(doc: dict[str, Any]) -> None:
    encoded = _keys(doc, 7)
    assert all(isinstance(v, str) and v for v in encoded.values())
    manifest_part = {k: v for k, v in encoded.items() if k.startswith(props.PREFIX)}
    carrier_part = {k: v for k, v in encoded.items() if not k.startswith(props.PREFIX)}
    assert set(carrier_part) <= props.CARRIER_KEYS and carrier_part[props.KEY_VERSION] == "7"
    document, legacy = props.from_properties(manifest_part)
    assert legacy == {}
    without_outputs = {k: v for k, v in doc.items() if k != "output_hashes"}
    # Only manifest fields under the prefix, never lists: the reference convention reads exactly the manifest.
    assert document == without_outputs == naive_reader(encoded)
    assert (props.KEY_OUTPUTS_COUNT in encoded) == ("output_hashes" in doc)


@settings(max_examples=200, deadline=None)
@given(st.lists(manifests(), min_size=2, max_size=4))
def test_reattestation_replaces_every_older_key(docs: list[dict[str, Any]]) -> None:
    table_properties = {"user.keep": "yes", "delta.appendOnly": "false"}
    for version, doc in enumerate(docs):
        new = _keys(doc, version)
        to_set, to_remove = props.replacement(table_properties, new)
        table_properties.update(to_set)
        for key in to_remove:
            del table_properties[key]
        assert props.attestation_keys(table_properties) == new
        assert table_properties["user.keep"] == "yes" and table_properties["delta.appendOnly"] == "false"
        assert naive_reader(table_properties) == {k: v for k, v in doc.items() if k != "output_hashes"}


def test_fewer_fields_remove_the_older_inputs_hash_and_first_wave_keys() -> None:
    full = {"manifest_version": "0.1", "hash_scheme": "v1", "producer": {"name": "p", "version": "1"},
            "subject": {"model": "m"}, "program_hash": "a" * 64, "inputs_hash": "b" * 64,
            "inputs_proof_class": "strong", "env_hash": "c" * 64}
    bare = {k: v for k, v in full.items() if k not in ("inputs_hash", "inputs_proof_class")}
    table_properties = dict(_keys(full, 1))
    table_properties[props.LEGACY_KEY_VERSION] = "0"  # a first-wave key left behind
    _, to_remove = props.replacement(table_properties, _keys(bare, 2))
    assert {props.PREFIX + "inputs_hash", props.PREFIX + "inputs_proof_class", props.LEGACY_KEY_VERSION} <= set(
        to_remove)


# ---- deletion vectors ------------------------------------------------------------------------------------------
def test_z85_uuid_matches_the_delta_protocol_example() -> None:
    # Delta PROTOCOL.md, "Deletion Vector Descriptor Schema" example.
    u = uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
    assert z85_encode(u.bytes) == "^-aqEH.-t@S}K{vb[*k^"
    assert z85_decode("^-aqEH.-t@S}K{vb[*k^") == u.bytes
    descriptor = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
                  "cardinality": 6}
    assert deletion_vector_path(descriptor) == "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"


def test_deletion_vector_storage_types() -> None:
    no_prefix = {"storageType": "u", "pathOrInlineDv": "^-aqEH.-t@S}K{vb[*k^"}
    assert deletion_vector_path(no_prefix) == "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert deletion_vector_path({"storageType": "p", "pathOrInlineDv": "s3://b/dv.bin"}) == "s3://b/dv.bin"
    inline = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}
    assert deletion_vector_path(inline) is None


@given(st.binary(min_size=16, max_size=16))
def test_z85_round_trip(data: bytes) -> None:
    assert z85_decode(z85_encode(data)) == data


# ---- partition directories -----------------------------------------------------------------------------------
def test_hive_partition_dirs_escape_like_spark() -> None:
    assert hive_partition_dir(["p"], [None]) == "p=__HIVE_DEFAULT_PARTITION__"
    assert hive_partition_dir(["p"], [""]) == "p=__HIVE_DEFAULT_PARTITION__"
    assert hive_partition_dir(["p"], ["x/y"]) == "p=x%2Fy"
    assert hive_partition_dir(["p"], ["k=v"]) == "p=k%3Dv"
    assert hive_partition_dir(["p"], ["50%"]) == "p=50%25"
    assert hive_partition_dir(["p"], ["a b"]) == "p=a b"  # Spark leaves spaces and non-ASCII as they are
    assert hive_partition_dir(["p", "q"], ["ünï", "1"]) == "p=ünï/q=1"
