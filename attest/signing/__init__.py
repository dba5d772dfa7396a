"""Signed attestations (docs/signing.md): keys, DSSE envelopes, in-toto Statements, trust policies.

Engine-free; needs ``cryptography``. Import it only where signing is used: ``attest digest`` and an unsigned
``attest verify`` never load it.
"""

from __future__ import annotations

from attest.signing.attestation import (
    check_manifest_signature,
    check_table_signature,
    sign_manifest_attestation,
    sign_table_attestation,
)
from attest.signing.dsse import INTOTO_PAYLOAD_TYPE, VerifiedPayload, pae, sign_envelope, verify_envelope
from attest.signing.keys import (
    PASSWORD_ENV,
    SIGNING_KEY_ENV,
    KeyPair,
    PemSigner,
    PublicKey,
    Signer,
    generate_keypair,
    key_id,
    signer_from_env,
)
from attest.signing.policy import SignatureResult, TrustedKey, TrustPolicy, load_policy
from attest.signing.statement import (
    MANIFEST_PREDICATE_TYPE,
    STATEMENT_TYPE,
    TABLE_PREDICATE_TYPE,
    Binding,
    Statement,
    Target,
    parse_statement,
)

__all__ = [
    "INTOTO_PAYLOAD_TYPE",
    "MANIFEST_PREDICATE_TYPE",
    "PASSWORD_ENV",
    "SIGNING_KEY_ENV",
    "STATEMENT_TYPE",
    "TABLE_PREDICATE_TYPE",
    "Binding",
    "KeyPair",
    "PemSigner",
    "PublicKey",
    "SignatureResult",
    "Signer",
    "Statement",
    "Target",
    "TrustPolicy",
    "TrustedKey",
    "VerifiedPayload",
    "check_manifest_signature",
    "check_table_signature",
    "generate_keypair",
    "key_id",
    "load_policy",
    "pae",
    "parse_statement",
    "sign_envelope",
    "sign_manifest_attestation",
    "sign_table_attestation",
    "signer_from_env",
    "verify_envelope",
]
