"""The standalone carrier with a signer: envelopes beside the manifests, read back, never listed as artifacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attest.errors import Code
from attest.model import Manifest
from attest.signing.attestation import check_manifest_signature
from attest.signing.keys import KeyPair, PemSigner
from attest.signing.policy import TrustPolicy
from carriers.standalone import MANIFEST_NAME, StandaloneCarrier, envelope_name


def test_write_with_a_signer_puts_an_envelope_beside_each_manifest(tmp_path: Path, pair: KeyPair,
                                                                   doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier(tmp_path)
    carrier.write(Manifest.from_dict(doc), signer=PemSigner.load(pair.private_pem), marker=True)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["_SUCCESS", "manifest-run-1.json", "manifest-run-1.json.dsse.json", "manifest.json",
                     "manifest.json.dsse.json"]
    envelope = carrier.read_envelope()
    assert envelope == (tmp_path / envelope_name(MANIFEST_NAME)).read_bytes()
    assert carrier.read_envelope("run-1") == envelope
    policy = TrustPolicy.from_public_key(pair.public_pem)
    document = json.loads((tmp_path / MANIFEST_NAME).read_bytes())
    assert check_manifest_signature(envelope, policy, document).signer == pair.key_id
    assert carrier.list_files() == []  # envelopes are carrier files, not artifacts


def test_unsigned_rewrite_removes_the_stale_envelope(tmp_path: Path, pair: KeyPair, doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier(tmp_path)
    carrier.write(Manifest.from_dict(doc), signer=PemSigner.load(pair.private_pem))
    doc["subject"]["run_id"] = "run-2"
    carrier.write(Manifest.from_dict(doc))
    assert carrier.read_envelope() is None
    assert carrier.read_envelope("run-1") is not None  # a run's record is never amended
    assert carrier.read_envelope("run-2") is None


def test_a_new_signed_manifest_replaces_the_envelope(tmp_path: Path, pair: KeyPair, doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier(tmp_path)
    signer = PemSigner.load(pair.private_pem)
    carrier.write(Manifest.from_dict(doc), signer=signer)
    first = carrier.read_envelope()
    doc["subject"]["run_id"] = "run-2"
    carrier.write(Manifest.from_dict(doc), signer=signer)
    assert carrier.read_envelope() not in (None, first)
    policy = TrustPolicy.from_public_key(pair.public_pem)
    current = json.loads((tmp_path / MANIFEST_NAME).read_bytes())
    assert check_manifest_signature(carrier.read_envelope(), policy, current).passed
    # The old envelope beside the new manifest would be a replay.
    assert check_manifest_signature(first, policy, current).code == Code.STATEMENT_MISMATCH


def test_envelope_over_an_object_store(pair: KeyPair, doc: dict[str, Any]) -> None:
    fsspec = pytest.importorskip("fsspec", reason="fsspec comes with the [all] extra")
    fs = fsspec.filesystem("memory")
    carrier = StandaloneCarrier("memory://signed-out", filesystem=None)
    carrier.write(Manifest.from_dict(doc), signer=PemSigner.load(pair.private_pem))
    assert fs.exists("/signed-out/manifest.json.dsse.json")
    doc["subject"]["run_id"] = "run-2"
    carrier.write(Manifest.from_dict(doc))
    assert not fs.exists("/signed-out/manifest.json.dsse.json")
    fs.rm("/signed-out", recursive=True)
