"""Signing keys: Ed25519 and ECDSA P-256 (SHA-256) from PEM, their key ids, and the ``Signer`` protocol.

Key id: the lowercase hex SHA-256 of the public key's DER SubjectPublicKeyInfo (``openssl pkey -pubin -outform
DER | sha256sum`` gives the same). It names a key, it is never trusted on its own: a signature counts only when
it verifies under a public key the verifier holds.

Signatures: Ed25519 is the 64-byte RFC 8032 signature; ECDSA P-256 is the ASN.1 DER ``(r, s)`` over SHA-256 of
the signed bytes (as securesystemslib's ``ecdsa-sha2-nistp256`` and cosign write it).

A private key is read from a PEM file or bytes. An encrypted one (PKCS#8) takes its password from the
environment variable ``ATTEST_SIGNING_KEY_PASSWORD`` (or another one the caller names) — never from an argument
on a command line, where ``ps`` and shell history would keep it. Key material is never logged, printed, pickled
or written anywhere but the file ``generate_keypair``'s caller chooses.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn, Protocol, runtime_checkable

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from attest.signing.errors import KeyInvalidError

KeyType = Literal["ed25519", "ecdsa-p256"]
KEY_TYPES: tuple[KeyType, ...] = ("ed25519", "ecdsa-p256")
PASSWORD_ENV = "ATTEST_SIGNING_KEY_PASSWORD"
# The private key file record / the Spark hook sign with when no key is given explicitly (a file name, never a key).
SIGNING_KEY_ENV = "ATTEST_SIGNING_KEY"

_PublicKeyObject = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey
_PrivateKeyObject = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey


def _ecdsa() -> ec.ECDSA:
    # RFC 6979 deterministic nonces where the OpenSSL build has them: the same key and bytes give the same
    # envelope (reproducible, content-addressable); randomised ECDSA otherwise, equally valid.
    try:
        return ec.ECDSA(hashes.SHA256(), deterministic_signing=True)
    except UnsupportedAlgorithm:
        return ec.ECDSA(hashes.SHA256())


def _type_of(key: _PublicKeyObject) -> KeyType:
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "ed25519"
    if isinstance(key.curve, ec.SECP256R1):
        return "ecdsa-p256"
    raise KeyInvalidError(f"unsupported key: ECDSA on {key.curve.name}; use Ed25519 or ECDSA P-256")


def key_id(public_key: _PublicKeyObject | PublicKey) -> str:
    """Lowercase hex SHA-256 of the public key's DER SubjectPublicKeyInfo."""
    raw = public_key.key if isinstance(public_key, PublicKey) else public_key
    der = raw.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _read(source: str | os.PathLike[str] | bytes, what: str) -> tuple[bytes, str]:
    """(PEM bytes, a label for messages); bytes are PEM data, a str or path is a file name."""
    if isinstance(source, bytes):
        return source, f"the {what} PEM"
    path = Path(source)
    try:
        return path.read_bytes(), str(path)
    except OSError as exc:
        raise KeyInvalidError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from exc


@dataclass(frozen=True, repr=False)
class PublicKey:
    """A verification key with its type and key id."""

    key: _PublicKeyObject
    type: KeyType
    key_id: str

    @classmethod
    def from_crypto(cls, key: _PublicKeyObject) -> PublicKey:
        return cls(key=key, type=_type_of(key), key_id=key_id(key))

    @classmethod
    def load(cls, source: str | os.PathLike[str] | bytes) -> PublicKey:
        """A public key from a PEM file (path) or PEM bytes (SubjectPublicKeyInfo, ``BEGIN PUBLIC KEY``)."""
        data, label = _read(source, "public key")
        blocks = data.count(b"-----BEGIN ")
        if blocks > 1:  # the PEM reader takes the first block and ignores the rest: never trust a key nobody chose
            raise KeyInvalidError(f"{label}: holds {blocks} PEM blocks; give one public key (one [[keys]] entry each)")
        try:
            key = serialization.load_pem_public_key(data)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            hint = " (this is a private key: give the .pub file)" if b"PRIVATE KEY" in data else ""
            raise KeyInvalidError(f"{label}: not a PEM public key{hint}") from exc
        if not isinstance(key, (ed25519.Ed25519PublicKey, ec.EllipticCurvePublicKey)):
            raise KeyInvalidError(f"{label}: unsupported key type {type(key).__name__}; use Ed25519 or ECDSA P-256")
        return cls.from_crypto(key)

    def pem(self) -> bytes:
        return self.key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def verify(self, signature: bytes, data: bytes) -> bool:
        """Whether ``signature`` is this key's signature over ``data``; never raises on bad input."""
        try:
            if isinstance(self.key, ed25519.Ed25519PublicKey):
                self.key.verify(signature, data)
            else:
                self.key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError):  # ValueError: a DER signature that does not even parse
            return False
        return True

    def __repr__(self) -> str:
        return f"PublicKey(type={self.type!r}, key_id={self.key_id!r})"


@runtime_checkable
class Signer(Protocol):
    """What signs an attestation: a key id and a signature over bytes (a PEM file, a KMS, an HSM...)."""

    @property
    def key_id(self) -> str: ...

    def sign(self, data: bytes) -> bytes: ...


class PemSigner:
    """A ``Signer`` over a private key read from PEM. Its repr and str show the key id and type, never the key."""

    __slots__ = ("_key", "_source", "key_id", "type")

    def __init__(self, private_key: _PrivateKeyObject, *, source: str = "<memory>") -> None:
        public = private_key.public_key()
        self.type: KeyType = _type_of(public)
        self.key_id: str = key_id(public)
        self._key = private_key
        self._source = source

    @classmethod
    def load(cls, source: str | os.PathLike[str] | bytes, *, password_env: str = PASSWORD_ENV,
             environ: Mapping[str, str] | None = None) -> PemSigner:
        """Read a PKCS#8 / traditional PEM private key; an encrypted one is opened with ``$password_env``."""
        data, label = _read(source, "private key")
        env = os.environ if environ is None else environ
        password: bytes | None = None
        if b"ENCRYPTED" in data:
            value = env.get(password_env)
            if not value:
                raise KeyInvalidError(f"{label} is encrypted: set {password_env} to its password")
            password = value.encode("utf-8")
        try:
            key = serialization.load_pem_private_key(data, password=password)
        except TypeError as exc:  # encrypted without the ENCRYPTED marker (rare legacy formats)
            raise KeyInvalidError(f"{label}: cannot open the private key (encrypted? set {password_env})") from exc
        except (ValueError, UnsupportedAlgorithm) as exc:
            why = "wrong password or not a PEM private key" if password else "not a PEM private key"
            raise KeyInvalidError(f"{label}: {why}") from exc
        if not isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey)):
            raise KeyInvalidError(f"{label}: unsupported key type {type(key).__name__}; use Ed25519 or ECDSA P-256")
        return cls(key, source=label if not isinstance(source, bytes) else "<PEM bytes>")

    def public_key(self) -> PublicKey:
        return PublicKey.from_crypto(self._key.public_key())

    def sign(self, data: bytes) -> bytes:
        if isinstance(self._key, ed25519.Ed25519PrivateKey):
            return self._key.sign(data)
        return self._key.sign(data, _ecdsa())

    def __repr__(self) -> str:
        return f"PemSigner(type={self.type!r}, key_id={self.key_id!r}, source={self._source!r})"

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:
        # Pickling would write the private key into whatever stores the pickle (a Spark task, a cache file).
        raise TypeError("a PemSigner is not picklable: load the key where it is used")


def signer_from_env(environ: Mapping[str, str] | None = None) -> PemSigner | None:
    """The signer ``$ATTEST_SIGNING_KEY`` names (a private key file; its password, if any, in
    ``$ATTEST_SIGNING_KEY_PASSWORD``), or None when the variable is unset or empty."""
    env = os.environ if environ is None else environ
    path = env.get(SIGNING_KEY_ENV)
    return PemSigner.load(path, environ=env) if path else None


@dataclass(frozen=True, repr=False)
class KeyPair:
    """A new key pair as PEM bytes (the private one PKCS#8, encrypted when a password was given)."""

    type: KeyType
    key_id: str
    private_pem: bytes
    public_pem: bytes
    encrypted: bool

    def __repr__(self) -> str:
        return f"KeyPair(type={self.type!r}, key_id={self.key_id!r}, encrypted={self.encrypted})"


def generate_keypair(key_type: KeyType = "ed25519", *, password: bytes | None = None) -> KeyPair:
    """A fresh Ed25519 or ECDSA P-256 key pair."""
    private: _PrivateKeyObject
    if key_type == "ed25519":
        private = ed25519.Ed25519PrivateKey.generate()
    elif key_type == "ecdsa-p256":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        raise KeyInvalidError(f"unknown key type {key_type!r}; use one of {', '.join(KEY_TYPES)}")
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption())
    private_pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    public = private.public_key()
    public_pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return KeyPair(type=key_type, key_id=key_id(public), private_pem=private_pem, public_pem=public_pem,
                   encrypted=bool(password))
