"""Keys and helpers shared by the signing tests: fresh key pairs, a manifest, an envelope's parts."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from attest.signing.keys import KeyPair, PemSigner, PublicKey, generate_keypair
from tests.conftest import VALID


@pytest.fixture(params=["ed25519", "ecdsa-p256"])
def pair(request: pytest.FixtureRequest) -> KeyPair:
    """A fresh key pair of each supported type (tests using it run once per type)."""
    return generate_keypair(request.param)


@pytest.fixture
def signer(pair: KeyPair) -> PemSigner:
    return PemSigner.load(pair.private_pem)


@pytest.fixture
def public(pair: KeyPair) -> PublicKey:
    return PublicKey.load(pair.public_pem)


@pytest.fixture
def other() -> KeyPair:
    """A second key nobody trusts."""
    return generate_keypair("ed25519")


@pytest.fixture
def doc() -> dict[str, Any]:
    return copy.deepcopy(VALID)


def decode(envelope: bytes) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(envelope)
    return document


def payload_of(envelope: bytes) -> dict[str, Any]:
    """The statement inside an envelope (no verification: for inspecting what was signed)."""
    statement: dict[str, Any] = json.loads(base64.b64decode(decode(envelope)["payload"]))
    return statement


def encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-8")
