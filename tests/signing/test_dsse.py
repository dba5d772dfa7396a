"""DSSE: PAE per the spec (with its test vector), envelopes, one error class per failure, tampering."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from attest.errors import Code
from attest.signing.dsse import (
    INTOTO_PAYLOAD_TYPE,
    MAX_SIGNATURES,
    Envelope,
    envelope_bytes,
    pae,
    sign_envelope,
    verify_envelope,
)
from attest.signing.errors import (
    EnvelopeMalformedError,
    PayloadTypeError,
    SignatureInvalidError,
    SignatureMissingError,
    SigningError,
)
from attest.signing.keys import KeyPair, PemSigner, PublicKey, generate_keypair
from tests.signing.conftest import decode, encode

# The example in secure-systems-lab/dsse protocol.md ("Test Vectors"): ECDSA P-256, SHA-256, RFC 6979 nonces.
SPEC_TYPE = "http://example.com/HelloWorld"
SPEC_BODY = b"hello world"
SPEC_PAE = b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
SPEC_X = 46950820868899156662930047687818585632848591499744589407958293238635476079160
SPEC_Y = 5640078356564379163099075877009565129882514886557779369047442380624545832820
SPEC_D = 97358161215184420915383655311931858321456579547487070936769975997791359926199
SPEC_ENVELOPE = {"payload": "aGVsbG8gd29ybGQ=", "payloadType": SPEC_TYPE,
                 "signatures": [{"sig": "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGA"
                                        "HTVeCUjW2JIZA=="}]}


def _spec_raw_signature() -> tuple[int, int]:
    raw = base64.b64decode(SPEC_ENVELOPE["signatures"][0]["sig"])  # type: ignore[index]
    return int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")


def test_pae_is_the_spec_test_vector() -> None:
    assert pae(SPEC_TYPE, SPEC_BODY) == SPEC_PAE


def test_pae_lengths_are_byte_lengths_in_decimal() -> None:
    # "exämple" is 7 characters but 8 bytes: LEN is the byte length of UTF8(type).
    assert pae("application/vnd.exämple+json", b"{}") == "DSSEv1 29 application/vnd.exämple+json 2 {}".encode()
    assert pae(INTOTO_PAYLOAD_TYPE, b"") == b"DSSEv1 28 application/vnd.in-toto+json 0 "
    assert pae("t", b"x" * 1000).startswith(b"DSSEv1 1 t 1000 ")


def test_the_spec_envelope_verifies_with_its_signature_in_der() -> None:
    public = PublicKey.from_crypto(ec.EllipticCurvePublicNumbers(SPEC_X, SPEC_Y, ec.SECP256R1()).public_key())
    envelope = json.loads(json.dumps(SPEC_ENVELOPE))
    envelope["signatures"][0]["sig"] = base64.b64encode(encode_dss_signature(*_spec_raw_signature())).decode()
    verified = verify_envelope(envelope, [public], payload_types=[SPEC_TYPE])
    assert verified.payload == SPEC_BODY and verified.signers == (public.key_id,)


def test_a_raw_r_s_signature_is_not_accepted() -> None:
    # We read ECDSA signatures as DER only (docs/signing.md); the spec's raw r||s form does not verify.
    public = PublicKey.from_crypto(ec.EllipticCurvePublicNumbers(SPEC_X, SPEC_Y, ec.SECP256R1()).public_key())
    with pytest.raises(SignatureInvalidError):
        verify_envelope(SPEC_ENVELOPE, [public], payload_types=[SPEC_TYPE])


def test_our_ecdsa_signer_reproduces_the_spec_signature() -> None:
    # RFC 6979 deterministic nonces: the spec's key over the spec's PAE gives exactly the spec's (r, s).
    signer = PemSigner(ec.derive_private_key(SPEC_D, ec.SECP256R1()))
    envelope = sign_envelope(SPEC_BODY, SPEC_TYPE, signer)
    assert envelope["payload"] == SPEC_ENVELOPE["payload"]
    assert decode_dss_signature(base64.b64decode(envelope["signatures"][0]["sig"])) == _spec_raw_signature()


def test_round_trip(signer: PemSigner, public: PublicKey) -> None:
    envelope = sign_envelope(b'{"a":1}', INTOTO_PAYLOAD_TYPE, signer)
    assert set(envelope) == {"payload", "payloadType", "signatures"}
    assert envelope["signatures"] == [{"keyid": signer.key_id, "sig": envelope["signatures"][0]["sig"]}]
    for form in (envelope, envelope_bytes(envelope), envelope_bytes(envelope).decode()):
        verified = verify_envelope(form, [public])
        assert (verified.payload, verified.payload_type, verified.signers) == (
            b'{"a":1}', INTOTO_PAYLOAD_TYPE, (signer.key_id,))


def test_envelope_bytes_are_canonical_json(signer: PemSigner) -> None:
    data = envelope_bytes(sign_envelope(b"x", INTOTO_PAYLOAD_TYPE, signer))
    assert data == json.dumps(json.loads(data), sort_keys=True, separators=(",", ":")).encode()


def test_wrong_key_is_signature_invalid(signer: PemSigner, other: KeyPair) -> None:
    envelope = sign_envelope(b"x", INTOTO_PAYLOAD_TYPE, signer)
    with pytest.raises(SignatureInvalidError) as info:
        verify_envelope(envelope, [PublicKey.load(other.public_pem)])
    assert info.value.code == Code.SIGNATURE_INVALID and signer.key_id in info.value.message


def test_keyid_is_only_a_hint(signer: PemSigner, public: PublicKey) -> None:
    envelope = sign_envelope(b"x", INTOTO_PAYLOAD_TYPE, signer)
    envelope["signatures"][0]["keyid"] = "somebody-else"
    assert verify_envelope(envelope, [public]).signers == (public.key_id,)
    del envelope["signatures"][0]["keyid"]
    assert verify_envelope(envelope, [public]).signers == (public.key_id,)


def test_any_trusted_signature_suffices_and_every_trusted_signer_is_named(other: KeyPair) -> None:
    a, b = generate_keypair("ed25519"), generate_keypair("ecdsa-p256")
    sa, sb, sother = (PemSigner.load(p.private_pem) for p in (a, b, other))
    envelope = sign_envelope(b"x", INTOTO_PAYLOAD_TYPE, sother, sa, sb)
    pa, pb = PublicKey.load(a.public_pem), PublicKey.load(b.public_pem)
    assert verify_envelope(envelope, [pb]).signers == (pb.key_id,)
    assert set(verify_envelope(envelope, [pa, pb]).signers) == {pa.key_id, pb.key_id}
    # The same signature twice counts once.
    envelope["signatures"].append(envelope["signatures"][1])
    assert verify_envelope(envelope, [pa]).signers == (pa.key_id,)


def test_no_signature_is_signature_missing(public: PublicKey) -> None:
    with pytest.raises(SignatureMissingError) as info:
        verify_envelope({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": []}, [public])
    assert info.value.code == Code.SIGNATURE_MISSING


def test_an_unsupported_payload_type_is_refused_after_the_signature(signer: PemSigner, public: PublicKey) -> None:
    envelope = sign_envelope(b"x", "application/json", signer)
    with pytest.raises(PayloadTypeError):
        verify_envelope(envelope, [public])
    assert verify_envelope(envelope, [public], payload_types=["application/json"]).payload == b"x"


def test_a_swapped_payload_type_breaks_the_signature(signer: PemSigner, public: PublicKey) -> None:
    envelope = sign_envelope(b"x", INTOTO_PAYLOAD_TYPE, signer)
    envelope["payloadType"] = "application/vnd.other+json"
    with pytest.raises(SignatureInvalidError):
        verify_envelope(envelope, [public], payload_types=["application/vnd.other+json", INTOTO_PAYLOAD_TYPE])


def test_url_safe_base64_is_accepted(signer: PemSigner, public: PublicKey) -> None:
    payload = bytes([0xFB, 0xFF, 0xBF, 0x3E, 0x3F])  # encodes to characters that differ between the alphabets
    envelope = sign_envelope(payload, INTOTO_PAYLOAD_TYPE, signer)
    assert "+" in envelope["payload"] or "/" in envelope["payload"]
    envelope["payload"] = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    envelope["signatures"][0]["sig"] = base64.urlsafe_b64encode(
        base64.b64decode(envelope["signatures"][0]["sig"])).decode()
    assert verify_envelope(envelope, [public]).payload == payload


@pytest.mark.parametrize("envelope", [
    b"not json",
    b"[1, 2]",
    b'{"payload": "eA==", "payload": "eA==", "payloadType": "t", "signatures": []}',  # duplicate key
    encode({"payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"sig": "eA=="}]}),
    encode({"payload": 1, "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"sig": "eA=="}]}),
    encode({"payload": "eA==", "signatures": [{"sig": "eA=="}]}),
    encode({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE}),
    encode({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": {"sig": "eA=="}}),
    encode({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": ["eA=="]}),
    encode({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"keyid": "k"}]}),
    encode({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"sig": "eA==", "keyid": 3}]}),
    encode({"payload": "e!A=", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"sig": "eA=="}]}),
    encode({"payload": "eB==", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"sig": "eA=="}]}),  # bits set
    encode({"payload": "eA===", "payloadType": INTOTO_PAYLOAD_TYPE, "signatures": [{"sig": "eA=="}]}),
    encode({"payload": "eA==", "payloadType": INTOTO_PAYLOAD_TYPE,
            "signatures": [{"sig": "eA=="}] * (MAX_SIGNATURES + 1)}),
])
def test_malformed_envelopes_are_refused_with_one_class(envelope: bytes, public: PublicKey) -> None:
    with pytest.raises(EnvelopeMalformedError) as info:
        verify_envelope(envelope, [public])
    assert info.value.code == Code.SIGNATURE_INVALID


def test_base64_has_one_spelling_per_byte_string() -> None:
    assert Envelope.parse({"payload": "eA", "payloadType": "t", "signatures": []}).payload == b"x"
    assert Envelope.parse({"payload": "eA==", "payloadType": "t", "signatures": []}).payload == b"x"


def test_changing_any_byte_of_the_envelope_fails(signer: PemSigner, public: PublicKey) -> None:
    """Every single-byte change of the stored envelope is refused, except inside the keyid hint (its name and
    value: DSSE leaves it unauthenticated, and a renamed member is an ignored unknown one)."""
    data = envelope_bytes(sign_envelope(b'{"_type":"https://in-toto.io/Statement/v1"}', INTOTO_PAYLOAD_TYPE,
                                        signer))
    member = b'"keyid":"' + signer.key_id.encode() + b'"'
    hint_start = data.index(member)
    hint = range(hint_start + 1, hint_start + len(member) - 1)  # between the outer quotes
    for position in range(len(data)):
        for replacement in {data[position] ^ 0x01, data[position] ^ 0x20}:
            changed = data[:position] + bytes([replacement]) + data[position + 1:]
            if position in hint:  # still the same verified payload and signer, or not JSON any more
                try:
                    verified = verify_envelope(changed, [public])
                except EnvelopeMalformedError:
                    continue
                assert (verified.payload, verified.signers) == (b'{"_type":"https://in-toto.io/Statement/v1"}',
                                                                 (public.key_id,))
                continue
            with pytest.raises(SigningError):
                verify_envelope(changed, [public])


def test_changing_any_character_of_payload_or_signature_fails(signer: PemSigner, public: PublicKey) -> None:
    envelope = sign_envelope(b"a payload of some length " * 4, INTOTO_PAYLOAD_TYPE, signer)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for field in ("payload", "sig"):
        text = envelope["payload"] if field == "payload" else envelope["signatures"][0]["sig"]
        for position, char in enumerate(text):
            if char == "=":
                continue
            changed = text[:position] + alphabet[(alphabet.index(char) + 1) % 64] + text[position + 1:]
            tampered = decode(encode(envelope))
            if field == "payload":
                tampered["payload"] = changed
            else:
                tampered["signatures"][0]["sig"] = changed
            with pytest.raises(SigningError):
                verify_envelope(tampered, [public])
