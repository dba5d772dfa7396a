"""Held (pinned): DSSE envelope variants made by someone who holds no allowed key (docs/signing.md, docs/security.md).

Each envelope is judged under a policy the way ``attest verify --policy`` judges a table's: threshold 1 — a signature
counts when it verifies under a trusted key, and that key must be allowed for the table — and the payload type is
checked after the signature. None of these passes."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from attest.errors import Code
from attest.signing.attestation import check_table_signature, sign_table_attestation
from attest.signing.dsse import envelope_bytes, pae
from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from tests.conftest import VALID
from tests.signing.conftest import decode

TABLE = "s3://lake/finance/orders"
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
BINDING = {"sidecar_digest": "1" * 64, "reader_view_digest": "2" * 64}


def _policy(tmp_path: Path, trusted: KeyPair, hr: KeyPair) -> TrustPolicy:
    """``trusted`` may attest finance tables, ``hr`` only hr tables."""
    (tmp_path / "trusted.pub").write_bytes(trusted.public_pem)
    (tmp_path / "hr.pub").write_bytes(hr.public_pem)
    (tmp_path / "trust.toml").write_text(
        'version = 1\nrequire_signed = ["*"]\n'
        f'[[keys]]\nid = "{trusted.key_id}"\npublic_key = "trusted.pub"\ntables = ["s3://lake/finance/*"]\n'
        f'[[keys]]\nid = "{hr.key_id}"\npublic_key = "hr.pub"\ntables = ["s3://lake/hr/*"]\n', encoding="utf-8")
    return TrustPolicy.load(tmp_path / "trust.toml")


def _signed(pair: KeyPair, doc: dict[str, Any], table: str = TABLE) -> dict[str, Any]:
    return decode(sign_table_attestation(PemSigner.load(pair.private_pem), table, 7, doc, BINDING))


def _judge(envelope: dict[str, Any], policy: TrustPolicy, doc: dict[str, Any]) -> Code | None:
    return check_table_signature(envelope_bytes(envelope), policy, TABLE, 7, None, doc, BINDING, now=NOW).code


@pytest.fixture
def doc() -> dict[str, Any]:
    return copy.deepcopy(VALID)


@pytest.fixture
def keys() -> tuple[KeyPair, KeyPair, KeyPair]:
    return generate_keypair("ed25519"), generate_keypair("ecdsa-p256"), generate_keypair("ed25519")


def test_a_valid_untrusted_signature_beside_an_invalid_trusted_one(tmp_path: Path, doc: dict[str, Any],
                                                                    keys: tuple[KeyPair, KeyPair, KeyPair]) -> None:
    """Two signatures: one valid by a key the policy does not hold, one claiming the trusted key's id with bytes that
    do not verify (an edited copy of a real one). Neither counts: ``signature_invalid``."""
    trusted, hr, stranger = keys
    policy = _policy(tmp_path, trusted, hr)
    envelope = _signed(stranger, doc)
    real = _signed(trusted, doc)["signatures"][0]
    sig = bytearray(base64.b64decode(real["sig"]))
    sig[-1] ^= 1
    envelope["signatures"].append({"keyid": trusted.key_id, "sig": base64.b64encode(bytes(sig)).decode()})
    assert _judge(envelope, policy, doc) == Code.SIGNATURE_INVALID
    assert _judge(_signed(trusted, doc), policy, doc) is None  # control: the trusted key's own envelope passes


def test_a_trusted_key_not_allowed_for_the_table_beside_an_invalid_allowed_one(
        tmp_path: Path, doc: dict[str, Any], keys: tuple[KeyPair, KeyPair, KeyPair]) -> None:
    """The hr key's valid signature over this finance table's statement (a trusted key, not allowed here), and a
    broken signature naming the finance key: ``signer_not_allowed``, never a pass."""
    trusted, hr, _ = keys
    policy = _policy(tmp_path, trusted, hr)
    envelope = _signed(hr, doc)
    envelope["signatures"].append({"keyid": trusted.key_id, "sig": envelope["signatures"][0]["sig"]})
    assert _judge(envelope, policy, doc) == Code.SIGNER_NOT_ALLOWED


@pytest.mark.parametrize("payload_type", ["application/vnd.in-toto+json; charset=utf-8", "Application/vnd.in-toto+JSON",
                                          "application/vnd.in-toto+json ", "application/json", ""])
def test_payload_type_variants(tmp_path: Path, doc: dict[str, Any], keys: tuple[KeyPair, KeyPair, KeyPair],
                               payload_type: str) -> None:
    """The type swapped on a real envelope breaks its signature (PAE covers the type): ``signature_invalid``. The
    same statement properly signed by the trusted key under another type spelling is refused as unsupported (coded
    ``signature_invalid`` too: PayloadTypeError)."""
    trusted, hr, _ = keys
    policy = _policy(tmp_path, trusted, hr)
    swapped = {**_signed(trusted, doc), "payloadType": payload_type}
    assert _judge(swapped, policy, doc) == Code.SIGNATURE_INVALID
    payload = base64.b64decode(swapped["payload"])
    resigned = {**swapped, "signatures": [{"keyid": trusted.key_id, "sig": base64.b64encode(
        PemSigner.load(trusted.private_pem).sign(pae(payload_type, payload))).decode()}]}
    result = check_table_signature(envelope_bytes(resigned), policy, TABLE, 7, None, doc, BINDING, now=NOW)
    assert not result.passed and result.code == Code.SIGNATURE_INVALID and "is not supported" in result.message


def test_a_signature_over_another_tables_statement(tmp_path: Path, doc: dict[str, Any],
                                                   keys: tuple[KeyPair, KeyPair, KeyPair]) -> None:
    """The trusted key's genuine envelope for ``finance/payments`` (same manifest) put on ``finance/orders``, alone or
    beside the orders envelope's broken signature: ``statement_mismatch`` — the subject names the other table."""
    trusted, hr, _ = keys
    policy = _policy(tmp_path, trusted, hr)
    other = _signed(trusted, doc, "s3://lake/finance/payments")
    assert _judge(other, policy, doc) == Code.STATEMENT_MISMATCH
    statement = json.loads(base64.b64decode(other["payload"]))
    assert statement["subject"][0]["name"].startswith("s3://lake/finance/payments")
