"""DSSE v1: the pre-authentication encoding, and signing / verifying the JSON envelope.

Spec: secure-systems-lab/dsse protocol.md and envelope.md (v1.0). The envelope is
``{"payload": base64(body), "payloadType": type, "signatures": [{"keyid": id, "sig": base64(signature)}]}`` and every
signature is over ``PAE(UTF8(payloadType), body)``.

Verification rule (threshold 1): the envelope verifies when at least one of its signatures verifies under at
least one trusted key; every such key is reported. The ``keyid`` field is an unauthenticated hint (DSSE: "MUST NOT
be used for security decisions"), so it is ignored: each signature is tried against every trusted key.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from attest.canonical import canonical_bytes
from attest.errors import AttestError
from attest.model import load_json_document
from attest.signing.errors import (
    EnvelopeMalformedError,
    PayloadTypeError,
    SignatureInvalidError,
    SignatureMissingError,
)
from attest.signing.keys import PublicKey, Signer

INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
# A bound on untrusted input: each signature costs up to one verification per trusted key.
MAX_SIGNATURES = 32


def pae(payload_type: str, payload: bytes) -> bytes:
    """``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``; LEN is the decimal *byte* length, no leading zeros."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def _b64encode(data: bytes) -> str:
    return base64.standard_b64encode(data).decode("ascii")


def _b64decode(text: str, where: str) -> bytes:
    """Standard or URL-safe base64 (DSSE: verifiers MUST accept either); missing padding is tolerated.

    Only the canonical encoding is accepted (unused low bits zero), so no two strings decode to the same bytes:
    every change to a payload or sig string is a change to what is verified.
    """
    stripped = text.rstrip("=")
    padded = stripped + "=" * (-len(stripped) % 4)
    if text not in (stripped, padded):  # over-padding would be a second spelling of the same bytes
        raise EnvelopeMalformedError(f"{where} is not canonical base64 (padding)", path=where)
    for altchars in (None, b"-_"):
        try:
            data = base64.b64decode(padded.encode("ascii"), altchars=altchars, validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            continue
        if base64.b64encode(data, altchars=altchars).decode("ascii").rstrip("=") == stripped:
            return data
    raise EnvelopeMalformedError(f"{where} is not canonical base64", path=where)


@dataclass(frozen=True)
class EnvelopeSignature:
    sig: bytes
    keyid: str | None = None


@dataclass(frozen=True)
class Envelope:
    """A decoded DSSE envelope (nothing verified yet)."""

    payload: bytes
    payload_type: str
    signatures: tuple[EnvelopeSignature, ...]

    @classmethod
    def parse(cls, envelope: bytes | str | Mapping[str, Any]) -> Envelope:
        """Decode a JSON envelope (bytes, text or an already-parsed object); EnvelopeMalformedError if it is not one."""
        if isinstance(envelope, (bytes, str)):
            try:
                document = load_json_document(envelope)
            except AttestError as exc:
                raise EnvelopeMalformedError(f"the envelope is not JSON: {exc.message}") from exc
        else:
            document = envelope
        if not isinstance(document, Mapping):
            raise EnvelopeMalformedError("the envelope is not a JSON object")
        payload, payload_type, signatures = (document.get(k) for k in ("payload", "payloadType", "signatures"))
        if not isinstance(payload, str):
            raise EnvelopeMalformedError("the envelope has no payload string", path="$.payload")
        if not isinstance(payload_type, str):
            raise EnvelopeMalformedError("the envelope has no payloadType string", path="$.payloadType")
        if not isinstance(signatures, list):
            raise EnvelopeMalformedError("the envelope has no signatures list", path="$.signatures")
        if len(signatures) > MAX_SIGNATURES:
            raise EnvelopeMalformedError(f"the envelope carries {len(signatures)} signatures; at most "
                                         f"{MAX_SIGNATURES} are read", path="$.signatures")
        decoded: list[EnvelopeSignature] = []
        for index, entry in enumerate(signatures):
            where = f"$.signatures[{index}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("sig"), str):
                raise EnvelopeMalformedError(f"{where} has no sig string", path=where)
            keyid = entry.get("keyid")
            if keyid is not None and not isinstance(keyid, str):
                raise EnvelopeMalformedError(f"{where}.keyid is not a string", path=f"{where}.keyid")
            decoded.append(EnvelopeSignature(sig=_b64decode(entry["sig"], f"{where}.sig"), keyid=keyid or None))
        return cls(payload=_b64decode(payload, "$.payload"), payload_type=payload_type, signatures=tuple(decoded))

    def pae(self) -> bytes:
        return pae(self.payload_type, self.payload)

    def to_dict(self) -> dict[str, Any]:
        sigs: list[dict[str, str]] = []
        for s in self.signatures:
            sigs.append({"keyid": s.keyid, "sig": _b64encode(s.sig)} if s.keyid else {"sig": _b64encode(s.sig)})
        return {"payload": _b64encode(self.payload), "payloadType": self.payload_type, "signatures": sigs}


@dataclass(frozen=True)
class VerifiedPayload:
    """A payload whose signature verified: its type, its bytes, and the key ids of the trusted keys that signed."""

    payload_type: str
    payload: bytes
    signers: tuple[str, ...]


def sign_envelope(payload: bytes, payload_type: str, signer: Signer, *signers: Signer) -> dict[str, Any]:
    """A DSSE JSON envelope over ``payload`` with one signature per signer (keyid = the signer's key id)."""
    message = pae(payload_type, payload)
    signatures = tuple(EnvelopeSignature(sig=s.sign(message), keyid=s.key_id) for s in (signer, *signers))
    return Envelope(payload=payload, payload_type=payload_type, signatures=signatures).to_dict()


def envelope_bytes(envelope: Mapping[str, Any]) -> bytes:
    """The bytes an envelope is stored as: canonical JSON (hash scheme v1), so equal envelopes are equal files."""
    return canonical_bytes(dict(envelope))


def verify_envelope(
    envelope: bytes | str | Mapping[str, Any] | Envelope,
    trusted_keys: Iterable[PublicKey],
    *,
    payload_types: Iterable[str] = (INTOTO_PAYLOAD_TYPE,),
) -> VerifiedPayload:
    """Verify a DSSE envelope against ``trusted_keys`` (threshold 1, see the module doc).

    Raises EnvelopeMalformedError, SignatureMissingError (no signature at all), SignatureInvalidError (none
    verifies under a trusted key) or PayloadTypeError (signed, but a type outside ``payload_types``).
    """
    parsed = envelope if isinstance(envelope, Envelope) else Envelope.parse(envelope)
    if not parsed.signatures:
        raise SignatureMissingError("the envelope carries no signature", path="$.signatures")
    keys = list(trusted_keys)
    message = parsed.pae()
    signers: list[str] = []
    for signature in parsed.signatures:
        for key in keys:
            if key.key_id not in signers and key.verify(signature.sig, message):
                signers.append(key.key_id)
    if not signers:
        hints = sorted({s.keyid for s in parsed.signatures if s.keyid})
        named = f" (the envelope names key id(s) {', '.join(hints)})" if hints else ""
        raise SignatureInvalidError(f"no signature in the envelope verifies under the {len(keys)} trusted key(s): "
                                    "signed by another key, or altered since"
                                    + named, path="$.signatures")
    # DSSE: the type is checked after the signature, so an unauthenticated type never steers the parse.
    if parsed.payload_type not in set(payload_types):
        raise PayloadTypeError(f"payload type {parsed.payload_type!r} is not supported", path="$.payloadType")
    return VerifiedPayload(payload_type=parsed.payload_type, payload=parsed.payload, signers=tuple(signers))
