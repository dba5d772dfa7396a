"""Keys: loading from PEM files and bytes, encrypted keys through the environment, key ids, no leaks."""

from __future__ import annotations

import base64
import hashlib
import pickle
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from attest.errors import Code
from attest.signing.errors import KeyInvalidError
from attest.signing.keys import PASSWORD_ENV, KeyPair, PemSigner, PublicKey, generate_keypair, key_id


def test_key_id_is_sha256_of_the_der_subject_public_key_info(pair: KeyPair) -> None:
    body = b"".join(line for line in pair.public_pem.splitlines() if not line.startswith(b"-----"))
    assert pair.key_id == hashlib.sha256(base64.b64decode(body)).hexdigest()
    assert PublicKey.load(pair.public_pem).key_id == pair.key_id == PemSigner.load(pair.private_pem).key_id
    assert key_id(PublicKey.load(pair.public_pem)) == pair.key_id


def test_load_from_files_and_bytes_sign_and_verify(tmp_path: Path, pair: KeyPair) -> None:
    (tmp_path / "k.key").write_bytes(pair.private_pem)
    (tmp_path / "k.pub").write_bytes(pair.public_pem)
    signer = PemSigner.load(tmp_path / "k.key")
    public = PublicKey.load(str(tmp_path / "k.pub"))
    assert (signer.type, public.type) == (pair.type, pair.type)
    signature = signer.sign(b"data")
    assert public.verify(signature, b"data")
    assert not public.verify(signature, b"datA")
    assert not public.verify(b"\x00" * len(signature), b"data")
    assert not public.verify(b"", b"data")
    assert signer.public_key().pem() == pair.public_pem


def test_ecdsa_signatures_are_der(pair: KeyPair) -> None:
    signature = PemSigner.load(pair.private_pem).sign(b"data")
    if pair.type == "ed25519":
        assert len(signature) == 64
    else:
        assert signature[0] == 0x30 and signature[1] == len(signature) - 2  # an ASN.1 SEQUENCE


def test_encrypted_key_needs_its_password_from_the_environment(pair: KeyPair) -> None:
    encrypted = generate_keypair(pair.type, password=b"s3cret pass")
    assert encrypted.encrypted and b"ENCRYPTED" in encrypted.private_pem
    with pytest.raises(KeyInvalidError) as info:
        PemSigner.load(encrypted.private_pem, environ={})
    assert PASSWORD_ENV in info.value.message and info.value.code == Code.KEY_INVALID
    with pytest.raises(KeyInvalidError) as info:
        PemSigner.load(encrypted.private_pem, environ={PASSWORD_ENV: "nope-pw-123"})
    assert "wrong password" in info.value.message and "nope-pw-123" not in info.value.message
    signer = PemSigner.load(encrypted.private_pem, environ={PASSWORD_ENV: "s3cret pass"})
    assert signer.key_id == encrypted.key_id
    other_env = PemSigner.load(encrypted.private_pem, password_env="MY_KEY_PW", environ={"MY_KEY_PW": "s3cret pass"})
    assert other_env.key_id == encrypted.key_id


def test_signer_repr_and_pickle_never_carry_the_key(pair: KeyPair) -> None:
    signer = PemSigner.load(pair.private_pem)
    body = b"".join(line for line in pair.private_pem.splitlines() if not line.startswith(b"-----")).decode()
    raw = serialization.load_pem_private_key(pair.private_pem, None).private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    for text in (repr(signer), str(signer), f"{signer}", repr(pair)):
        assert signer.key_id in text
        for chunk in (body[i:i + 16] for i in range(0, len(body) - 16, 8)):
            assert chunk not in text
        assert raw.hex()[-32:] not in text
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(signer)


def test_signer_satisfies_the_protocol(signer: PemSigner) -> None:
    from attest.signing.keys import Signer

    assert isinstance(signer, Signer)


@pytest.mark.parametrize("make", [
    lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    lambda: ec.generate_private_key(ec.SECP384R1()),
])
def test_unsupported_key_types_are_refused(make: object) -> None:
    private = make()  # type: ignore[operator]
    private_pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
    public_pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(KeyInvalidError, match="unsupported"):
        PemSigner.load(private_pem)
    with pytest.raises(KeyInvalidError, match="unsupported"):
        PublicKey.load(public_pem)


def test_unreadable_and_wrong_pem_are_key_invalid(tmp_path: Path, pair: KeyPair) -> None:
    with pytest.raises(KeyInvalidError, match="cannot read"):
        PublicKey.load(tmp_path / "absent.pub")
    with pytest.raises(KeyInvalidError, match="private key"):
        PublicKey.load(pair.private_pem)  # the private half given where the public one belongs
    with pytest.raises(KeyInvalidError, match="not a PEM private key"):
        PemSigner.load(pair.public_pem)
    with pytest.raises(KeyInvalidError):
        PemSigner.load(b"garbage")
    with pytest.raises(KeyInvalidError):
        generate_keypair("rsa")  # type: ignore[arg-type]
