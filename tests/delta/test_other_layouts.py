"""Attestations this version did not write: another producer's ``recipe_manifest.*`` properties (the reference
producer writes scalar fields only, no binding) and first-wave (legacy layout) attestations, with their migration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from attest.canonical import blake3_hex, canonical_bytes, digest
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import SIDECAR_DIR, DeltaCarrier, attest_after_write
from tests.delta.conftest import PROGRAM

ROCKY = {
    "recipe_manifest.manifest_version": "0.1", "recipe_manifest.hash_scheme": "v1",
    "recipe_manifest.producer.name": "rocky", "recipe_manifest.producer.version": "1.58.0",
    "recipe_manifest.subject.model": "orders_clean", "recipe_manifest.subject.run_id": "run-1",
    "recipe_manifest.subject.status": "success", "recipe_manifest.program_hash": "a" * 64,
    "recipe_manifest.inputs_hash": "b" * 64, "recipe_manifest.inputs_proof_class": "heuristic",
    "recipe_manifest.env_hash": "c" * 64,
}


def _table(path: Path) -> Path:
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    return path


def test_reference_producer_properties_verify_at_schema_level_with_a_label(tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    DeltaTable(str(path)).alter.set_table_properties(ROCKY, raise_if_not_exists=False)  # version 1
    report = verify_table(DeltaCarrier(str(path)))
    assert report.passed and report.level == "schema", report.human()
    assert report.origin == "foreign" and report.attested_version == "0"
    assert "written by rocky 1.58.0, bound by the log to version 0" in report.verdict()
    assert not any(e.code.value == "carrier_tampered" for e in report.errors)
    # Nothing to check at files/bytes level: never a pass there.
    for level in ("files", "bytes"):
        deeper = verify_table(DeltaCarrier(str(path)), level=level)  # type: ignore[arg-type]
        assert not deeper.passed and [e.code.value for e in deeper.errors] == ["level_not_attested"]


def test_reference_producer_properties_are_stale_after_a_data_commit(tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    DeltaTable(str(path)).alter.set_table_properties(ROCKY, raise_if_not_exists=False)
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")
    report = verify_table(DeltaCarrier(str(path)))
    assert [e.code.value for e in report.errors] == ["stale"], report.human()
    assert verify_table(DeltaCarrier(str(path)), version=1).passed


def test_our_attestation_then_reference_properties_for_new_data(tmp_path: Path) -> None:
    """Mixed producers: ours for version 0, rocky's after a later rocky run (version 2): rocky's is in force."""
    path = _table(tmp_path / "t")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")  # version 2
    carrier = DeltaCarrier(str(path))
    keys = props.attestation_keys(DeltaTable(str(path)).metadata().configuration)
    from carriers.delta.commit import commit_properties

    commit_properties(carrier.storage, binding=2, set_keys=ROCKY, remove_keys=sorted(set(keys) - set(ROCKY)),
                      is_data_version=lambda latest: True, where="test")
    report = verify_table(DeltaCarrier(str(path)))
    assert report.passed and report.origin == "foreign" and report.attested_version == "2", report.human()


# ---- the first-wave layout ----------------------------------------------------------------------------------------
def _legacy_attest(path: Path) -> dict[str, Any]:
    """Write an attestation exactly as the first wave did: binding keys under recipe_manifest._*, outputs inline,
    a version-1 sidecar (files, inputs, manifest identity; no table, no reader view)."""
    from attest.build import build_manifest
    from attest.tables import attestation_identity

    carrier = DeltaCarrier(str(path))
    files = carrier.list_files()
    hashes = carrier.hash_files(files)
    manifest = build_manifest(model="orders", program_hash=PROGRAM, env_hash="e" * 64,
                              outputs=[(f.path, hashes[f.path]) for f in files], run_id="run-legacy")
    sidecar = {"format": "recipe-attest-sidecar", "version": 1, "attested_version": "0",
               "files": [{"path": f.path, "size": f.size, "hash": hashes[f.path], "kind": f.kind} for f in files],
               "inputs": [], "manifest": attestation_identity(manifest.to_dict())}
    data = canonical_bytes(sidecar)
    name = blake3_hex(data)
    (path / SIDECAR_DIR).mkdir(exist_ok=True)
    (path / SIDECAR_DIR / f"{name}.json").write_bytes(data)
    keys = props.to_properties(manifest.to_dict())
    keys.update({props.LEGACY_KEY_VERSION: "0", props.LEGACY_KEY_SIDECAR_PATH: f"{SIDECAR_DIR}/{name}.json",
                 props.LEGACY_KEY_SIDECAR_HASH: name, props.LEGACY_KEY_OUTPUTS_COUNT: str(len(files)),
                 props.LEGACY_KEY_OUTPUTS_WHERE: "inline"})
    DeltaTable(str(path)).alter.set_table_properties(keys, raise_if_not_exists=False)
    return manifest.to_dict()


def test_legacy_layout_still_verifies_labelled_and_migrates(tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    document = _legacy_attest(path)
    report = verify_table(DeltaCarrier(str(path)))
    assert report.passed and report.level == "bytes" and report.origin == "legacy", report.human()
    assert "reader view not bound" in report.verdict()
    att = DeltaCarrier(str(path)).read()
    assert att is not None and digest(att.document) == digest(document)
    # A flipped byte is still caught in the legacy layout.
    victim = path / DeltaCarrier(str(path)).list_files()[0].path
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 1
    victim.write_bytes(bytes(raw))
    assert [e.code.value for e in verify_table(DeltaCarrier(str(path))).errors] == ["artifact_hash_mismatch"]
    raw[len(raw) // 2] ^= 1
    victim.write_bytes(bytes(raw))
    # Migration: record writes layout 2 and removes every first-wave key.
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    config = DeltaTable(str(path)).metadata().configuration
    assert not any(k.startswith(props.PREFIX + "_") or k.startswith(props.PREFIX + "output_hashes") for k in config)
    assert config[props.KEY_LAYOUT] == props.LAYOUT
    migrated = verify_table(DeltaCarrier(str(path)))
    assert migrated.passed and migrated.origin == "recipe-attest" and migrated.view_bound, migrated.human()


def test_legacy_layout_edit_is_still_caught(tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    _legacy_attest(path)
    DeltaTable(str(path)).alter.set_table_properties({props.PREFIX + "program_hash": "f" * 64},
                                                     raise_if_not_exists=False)
    report = verify_table(DeltaCarrier(str(path)), level="schema")
    assert [e.code.value for e in report.errors] == ["carrier_tampered"], report.human()


def test_a_data_file_logged_with_size_zero_is_not_a_size_disagreement(tmp_path: Path) -> None:
    """A logged size of 0 is the file's size (an empty file), not a missing size: delta-rs and the log agree."""
    import json

    path = _table(tmp_path / "t")
    (path / "empty.bin").write_bytes(b"")
    add = {"add": {"path": "empty.bin", "size": 0, "partitionValues": {}, "modificationTime": 1, "dataChange": True}}
    (path / "_delta_log" / f"{1:020}.json").write_text(json.dumps(add) + "\n")
    assert DeltaTable(str(path)).version() == 1
    report = verify_table(DeltaCarrier(str(path)))
    codes = [e.code.value for e in report.errors]
    assert "table_inconsistent" not in codes and codes, report.human()
