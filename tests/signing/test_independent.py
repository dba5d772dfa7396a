"""Checked by others: our envelopes against securesystemslib's DSSE, our Statements against the in-toto
Attestation Framework's own v1 bindings, our key ids against openssl."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import STATEMENT_TYPE_URI
from in_toto_attestation.v1.statement import Statement as InTotoStatement
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import CryptoSigner, SSlibKey

from attest.canonical import canonical_bytes, digest
from attest.signing.attestation import sign_manifest_attestation, sign_table_attestation
from attest.signing.dsse import INTOTO_PAYLOAD_TYPE, verify_envelope
from attest.signing.keys import KeyPair, PemSigner, PublicKey
from attest.signing.statement import STATEMENT_TYPE, manifest_statement, table_statement
from tests.signing.conftest import payload_of

SCHEMES = {"ed25519": "ed25519", "ecdsa-p256": "ecdsa-sha2-nistp256"}


def _sslib_key(pair: KeyPair) -> SSlibKey:
    public = serialization.load_pem_public_key(pair.public_pem)
    return SSlibKey.from_crypto(public, keyid=pair.key_id, scheme=SCHEMES[pair.type])  # type: ignore[arg-type]


def test_securesystemslib_verifies_our_envelopes(pair: KeyPair, other: KeyPair, doc: dict[str, Any]) -> None:
    data = sign_table_attestation(PemSigner.load(pair.private_pem), "s3://lake/orders", 7, doc,
                                  {"sidecar_digest": "d" * 64})
    envelope = SslibEnvelope.from_dict(json.loads(data))
    assert envelope.payload_type == INTOTO_PAYLOAD_TYPE
    assert set(envelope.verify([_sslib_key(pair)], 1)) == {pair.key_id}
    assert json.loads(envelope.payload) == payload_of(data)
    # Their PAE is byte-identical to ours for the same envelope.
    from attest.signing.dsse import pae

    assert envelope.pae() == pae(INTOTO_PAYLOAD_TYPE, envelope.payload)
    # And they refuse it under another key, and once a payload byte changed.
    other_key = SSlibKey.from_crypto(serialization.load_pem_public_key(other.public_pem), keyid=pair.key_id,
                                     scheme="ed25519")  # type: ignore[arg-type]
    with pytest.raises(VerificationError):
        SslibEnvelope.from_dict(json.loads(data)).verify([other_key], 1)
    tampered = SslibEnvelope.from_dict(json.loads(data))
    tampered.payload = tampered.payload.replace(b"s3://lake/orders", b"s3://lake/ordert")
    with pytest.raises(VerificationError):
        tampered.verify([_sslib_key(pair)], 1)


def test_we_verify_envelopes_signed_by_securesystemslib(pair: KeyPair, doc: dict[str, Any]) -> None:
    private = serialization.load_pem_private_key(pair.private_pem, None)
    their_signer = CryptoSigner(private, _sslib_key(pair))  # type: ignore[arg-type]
    payload = canonical_bytes(manifest_statement(doc))
    envelope = SslibEnvelope(payload=payload, payload_type=INTOTO_PAYLOAD_TYPE, signatures={})
    envelope.sign(their_signer)
    verified = verify_envelope(envelope.to_dict(), [PublicKey.load(pair.public_pem)])
    assert verified.payload == payload and verified.signers == (pair.key_id,)


def _intoto_check(statement: dict[str, Any]) -> statement_pb2.Statement:  # type: ignore[name-defined]
    # json_format.Parse refuses fields the v1 proto does not define and values of the wrong type.
    proto = json_format.Parse(json.dumps(statement), statement_pb2.Statement())  # type: ignore[attr-defined]
    InTotoStatement.copy_from_pb(proto).validate()
    return proto


def test_table_statement_is_an_intoto_v1_statement(doc: dict[str, Any], signer: PemSigner) -> None:
    statement = payload_of(sign_table_attestation(signer, "iceberg://prod/sales.orders", "4815162342", doc,
                                                  {"sidecar_digest": "e" * 64, "reader_view_digest": "f" * 64}))
    assert STATEMENT_TYPE == STATEMENT_TYPE_URI
    proto = _intoto_check(statement)
    assert proto.subject[0].name == "iceberg://prod/sales.orders@4815162342"
    canonical = canonical_bytes(doc)
    assert dict(proto.subject[0].digest) == {"blake3": digest(doc), "sha256": hashlib.sha256(canonical).hexdigest()}
    assert json_format.MessageToDict(proto.predicate)["manifest"] == doc


def test_manifest_statement_is_an_intoto_v1_statement(doc: dict[str, Any], signer: PemSigner) -> None:
    proto = _intoto_check(payload_of(sign_manifest_attestation(signer, doc)))
    assert proto.subject[0].name == "manifest:orders_clean@run-1"


def test_the_intoto_bindings_would_catch_a_broken_statement(doc: dict[str, Any]) -> None:
    # The check above can fail: a statement without subject digests, or with a field v1 does not have, is refused.
    broken = table_statement("s3://x/t", 1, doc, None)
    broken["subject"][0]["digest"] = {}
    with pytest.raises(ValueError):
        _intoto_check(broken)
    extra = table_statement("s3://x/t", 1, doc, None)
    extra["subjects"] = extra["subject"]
    with pytest.raises(json_format.ParseError):
        _intoto_check(extra)


def test_key_ids_match_openssl(tmp_path: Path, pair: KeyPair) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not on the PATH (Debian: apt-get install openssl)")
    (tmp_path / "k.pub").write_bytes(pair.public_pem)
    der = subprocess.run([openssl, "pkey", "-pubin", "-in", str(tmp_path / "k.pub"), "-outform", "DER"],
                         capture_output=True, check=True).stdout
    assert hashlib.sha256(der).hexdigest() == pair.key_id
