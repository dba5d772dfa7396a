"""The signing failure family: one exception class per failure kind, each with its stable code.

Raised by the building blocks (envelope, statement, keys, policy files). A verification never lets them escape
as a traceback: ``TrustPolicy.evaluate`` turns the verification ones into a ``SignatureResult`` (exit 1), and the
CLI turns an unreadable key or policy file into a coded error (exit 2).
"""

from __future__ import annotations

from attest.errors import AttestError, Code


class SigningError(AttestError):
    """Base of the signature-verification failures (each one is "not verified", exit 1)."""

    code = Code.SIGNATURE_INVALID


class EnvelopeMalformedError(SigningError):
    """The envelope is not a DSSE JSON envelope: not JSON, a field missing or of the wrong type, bad base64."""

    code = Code.SIGNATURE_INVALID


class SignatureMissingError(SigningError):
    """There is no envelope, or the envelope carries no signature."""

    code = Code.SIGNATURE_MISSING


class SignatureInvalidError(SigningError):
    """No signature in the envelope verifies under any key the verifier was given."""

    code = Code.SIGNATURE_INVALID


class PayloadTypeError(SigningError):
    """The signed payload type is not one this verifier understands (checked after the signature)."""

    code = Code.SIGNATURE_INVALID


class StatementError(SigningError):
    """The signed in-toto Statement is malformed, or attests another subject than the one being verified."""

    code = Code.STATEMENT_MISMATCH


class KeyInvalidError(AttestError):
    """A key file or PEM cannot be read, decrypted or used (unsupported type): an input error, exit 2."""

    code = Code.KEY_INVALID


class PolicyInvalidError(AttestError):
    """A trust policy file cannot be read or breaks the policy format: an input error, exit 2."""

    code = Code.POLICY_INVALID
