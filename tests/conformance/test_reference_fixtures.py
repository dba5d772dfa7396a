"""(b) The reference's own fixtures and its tests' expectations get the same verdicts from us.

rocky-verify/tests/conformance.rs: every valid fixture passes the schema; the content-addressed golden
byte-verifies against fixtures/artifacts; every tampered fixture fails with the artifacts directory given.
rocky-verify/src/lib.rs unit tests: the mutations of its `valid_manifest()` and its artifact-resolution cases.
Each is run through `attest verify` and rocky-verify, and both must give the expectation.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.schema import schema_text
from tests.conformance import reference
from tests.conformance.test_verdicts import attest_verify, same_verdict, verdict
from tests.conftest import run_cli

pytestmark = pytest.mark.usefixtures("reference_built")

SCHEMA_ONLY = "VERIFIED (schema only — no byte-identity attested)"


def _fixtures(kind: str) -> list[Path]:
    if reference.reference_dir() is None:
        return []  # collected before the fixture can skip: the test then skips (or fails under CI) with the reason
    return sorted((reference.fixtures_dir() / kind).glob("*.json"))


def _id(path: Path) -> str:
    return path.stem


@pytest.mark.parametrize("fixture", _fixtures("valid"), ids=_id)
def test_valid_fixtures_pass_the_schema(fixture: Path) -> None:
    assert same_verdict(fixture) == 0
    assert verdict(attest_verify(fixture)[1]) == SCHEMA_ONLY


def test_there_are_fixtures_of_both_kinds() -> None:
    # Guards the parametrisations above and below against an empty (silently passing) fixture list.
    assert len(_fixtures("valid")) >= 2 and len(_fixtures("tampered")) >= 5


def test_the_content_addressed_golden_byte_verifies() -> None:
    fixtures = reference.fixtures_dir()
    code = same_verdict(fixtures / "valid" / "content-addressed.json", fixtures / "artifacts")
    assert code == 0
    assert verdict(attest_verify(fixtures / "valid" / "content-addressed.json", fixtures / "artifacts")[1]) == \
        "VERIFIED"


@pytest.mark.parametrize("fixture", _fixtures("tampered"), ids=_id)
def test_tampered_fixtures_fail(fixture: Path) -> None:
    assert same_verdict(fixture, reference.fixtures_dir() / "artifacts") == 1


def test_the_general_golden_is_heuristic() -> None:
    doc = json.loads((reference.fixtures_dir() / "valid" / "general-recipe-identity.json").read_text())
    assert doc["inputs_proof_class"] == "heuristic" and doc["hash_scheme"] == "v1"


# ---- rocky-verify/src/lib.rs: the mutations of valid_manifest() -------------------------------------------------
VALID_MANIFEST: dict[str, Any] = {
    "manifest_version": "0.1",
    "hash_scheme": "v1",
    "producer": {"name": "rocky", "version": "1.56.0"},
    "subject": {"model": "orders_clean", "status": "success"},
    "program_hash": "2148e619b51421f507453036000000000000000000000000000000000000abcd",
    "inputs_hash": "75ee2a328c52b236c21b9c60000000000000000000000000000000000000abcd",
    "inputs_proof_class": "heuristic",
    "env_hash": "bbf2c2045328f738683a6336df5fa61b5f00076aeaed7c495c04f9d6991d92bd",
}


def _without(*keys: str) -> Any:
    return lambda d: [d.pop(k) for k in keys]


MUTATIONS: dict[str, tuple[Any, int]] = {
    "a_valid_manifest_passes": (lambda d: None, 0),
    "missing_required_field_fails": (_without("program_hash"), 1),
    "tampered_nonhex_hash_fails": (lambda d: d.update(env_hash="TAMPERED"), 1),
    "inputs_hash_without_proof_class_fails": (_without("inputs_proof_class"), 1),
    "proof_class_without_inputs_hash_fails": (_without("inputs_hash"), 1),
    "bad_proof_class_enum_fails": (lambda d: d.update(inputs_proof_class="forged"), 1),
    "no_inputs_side_is_valid": (_without("inputs_hash", "inputs_proof_class"), 0),
    "wrong_manifest_version_fails": (lambda d: d.update(manifest_version="0.2"), 1),
    "unknown_top_level_field_fails": (lambda d: d.update(surprise=True), 1),
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_reference_unit_cases(tmp_path: Path, case: str) -> None:
    doc = copy.deepcopy(VALID_MANIFEST)
    mutate, expected = MUTATIONS[case]
    mutate(doc)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert same_verdict(path) == expected


def test_artifact_check_never_resolves_outside_artifacts_dir(tmp_path: Path) -> None:
    # The recorded absolute path points at an intact copy outside; the copy inside was tampered with.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "orders.parquet").write_bytes(b"intact bytes")
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    (artifacts / "orders.parquet").write_bytes(b"TAMPERED")
    doc = dict(VALID_MANIFEST, output_hashes=[{"hash": blake3.blake3(b"intact bytes").hexdigest(),
                                               "path": str(outside / "orders.parquet")}])
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert same_verdict(path, artifacts) == 1


def test_artifact_check_resolves_basename_and_hash_forms_in_dir(tmp_path: Path) -> None:
    data = b"the artifact bytes"
    h = blake3.blake3(data).hexdigest()
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    (artifacts / "orders.parquet").write_bytes(data)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(dict(VALID_MANIFEST, output_hashes=[
        {"hash": h, "path": "/produced/on/another/host/orders.parquet"}])), encoding="utf-8")
    assert same_verdict(path, artifacts) == 0
    (artifacts / "orders.parquet").rename(artifacts / f"{h}.parquet")
    path.write_text(json.dumps(dict(VALID_MANIFEST, output_hashes=[{"hash": h}])), encoding="utf-8")
    assert same_verdict(path, artifacts) == 0


# ---- the schema itself -----------------------------------------------------------------------------------------------
def test_attest_schema_prints_the_published_schema() -> None:
    published = reference.published_schema_path().read_text(encoding="utf-8")
    assert schema_text() == published  # byte for byte
    result = run_cli("schema")
    assert result.returncode == 0 and result.stdout == published
    assert json.loads(reference.rocky_verify_schema()) == json.loads(result.stdout)
