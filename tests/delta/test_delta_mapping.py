"""Pure tests of the Delta carrier's key mapping, deletion-vector paths and partition directory names."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from attest.model import Manifest
from carriers import properties as props
from carriers.delta import decode_properties, encode_properties, hive_partition_dir
from carriers.delta_log import deletion_vector_path, z85_decode, z85_encode

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


def _decode(properties: dict[str, str], sidecar_outputs: list[dict[str, str]] | None) -> dict[str, Any]:
    document, binding = decode_properties(properties)
    if binding.get(props.KEY_OUTPUTS_WHERE) == "sidecar":
        assert "output_hashes" not in document
        document["output_hashes"] = sidecar_outputs
    return document


@settings(max_examples=200, deadline=None)
@given(manifests())
def test_manifest_to_properties_and_back_is_exact(doc: dict[str, Any]) -> None:
    encoded = encode_properties(doc, version=7, sidecar_path="_recipe_attest/x.json", sidecar_hash="x")
    assert all(k.startswith(props.PREFIX) and isinstance(v, str) and v for k, v in encoded.items())
    assert _decode(encoded, doc.get("output_hashes")) == doc
    outputs = doc.get("output_hashes")
    if outputs is not None and len(outputs) > props.INLINE_OUTPUTS_MAX:
        assert encoded[props.KEY_OUTPUTS_WHERE] == "sidecar"
        assert not any(k.startswith(props.PREFIX + "output_hashes.") for k in encoded)


@settings(max_examples=200, deadline=None)
@given(st.lists(manifests(), min_size=2, max_size=4))
def test_reattestation_replaces_every_older_key(docs: list[dict[str, Any]]) -> None:
    table_properties = {"user.keep": "yes", "delta.appendOnly": "false"}
    for version, doc in enumerate(docs):
        new = encode_properties(doc, version=version, sidecar_path=f"_recipe_attest/{version}.json",
                                sidecar_hash=str(version))
        table_properties.update(props.replacement(table_properties, new))
        assert _decode(table_properties, doc.get("output_hashes")) == doc
        assert table_properties["user.keep"] == "yes" and table_properties["delta.appendOnly"] == "false"
        _, binding = props.from_properties(table_properties)
        assert binding[props.KEY_VERSION] == str(version)


def test_fewer_fields_leave_no_inputs_hash() -> None:
    full = Manifest.from_dict({"manifest_version": "0.1", "hash_scheme": "v1",
                               "producer": {"name": "p", "version": "1"}, "subject": {"model": "m"},
                               "program_hash": "a" * 64, "inputs_hash": "b" * 64,
                               "inputs_proof_class": "strong", "env_hash": "c" * 64}).to_dict()
    bare = {k: v for k, v in full.items() if k not in ("inputs_hash", "inputs_proof_class")}
    table_properties = dict(encode_properties(full, version=1, sidecar_path=None, sidecar_hash=None))
    table_properties.update(props.replacement(table_properties, encode_properties(bare, version=2, sidecar_path=None,
                                                                                  sidecar_hash=None)))
    assert table_properties[props.PREFIX + "inputs_hash"] == ""
    assert props.from_properties(table_properties)[0] == bare


def test_long_paths_move_outputs_to_the_sidecar_even_below_the_count_threshold() -> None:
    doc = {"manifest_version": "0.1", "hash_scheme": "v1", "producer": {"name": "p", "version": "1"},
           "subject": {"model": "m"}, "program_hash": "a" * 64, "env_hash": "c" * 64,
           "output_hashes": [{"hash": "d" * 64, "path": "x" * 800 + str(i)} for i in range(10)]}
    encoded = encode_properties(doc, version=0, sidecar_path="_recipe_attest/s.json", sidecar_hash="s")
    assert encoded[props.KEY_OUTPUTS_WHERE] == "sidecar"
    assert sum(len(k) + len(v) for k, v in encoded.items()) < 2048


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
