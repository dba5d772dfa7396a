"""Signed attestations end to end: what a carrier calls to sign when recording and to check when verifying.

Signing: manifest (+ binding) → in-toto Statement → canonical JSON payload → DSSE envelope → canonical bytes.
Checking: envelope bytes (or None) + a trust policy + what is being verified → ``SignatureResult``.
Where an envelope is stored is the carrier's business; these functions see bytes only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from attest.signing.dsse import INTOTO_PAYLOAD_TYPE, envelope_bytes, sign_envelope
from attest.signing.errors import SigningError
from attest.signing.keys import Signer
from attest.signing.policy import SignatureResult, TrustPolicy
from attest.signing.statement import (
    Binding,
    Target,
    manifest_statement,
    statement_payload,
    table_statement,
)


def sign_table_attestation(signer: Signer, table_uri: str, version: str | int, manifest_doc: Mapping[str, Any],
                           binding: Binding | Mapping[str, Any] | None, *,
                           manifest_bytes: bytes | None = None) -> bytes:
    """The envelope bytes attesting ``manifest_doc`` for ``table_uri`` at ``version`` (binding: the sidecar and
    reader-view digests, see ``Binding``). ``manifest_bytes``: ``manifest_doc``'s canonical bytes when the caller made
    them already (``Manifest.attested``): the statement's digests and payload take them instead of encoding the
    document twice more (the same bytes either way: tests/test_attestation_document_once.py)."""
    statement = table_statement(table_uri, version, manifest_doc, binding, manifest_bytes=manifest_bytes)
    return envelope_bytes(sign_envelope(statement_payload(statement, manifest_bytes=manifest_bytes),
                                        INTOTO_PAYLOAD_TYPE, signer))


def sign_manifest_attestation(signer: Signer, manifest_doc: Mapping[str, Any]) -> bytes:
    """The envelope bytes attesting a standalone manifest."""
    return envelope_bytes(sign_envelope(statement_payload(manifest_statement(manifest_doc)), INTOTO_PAYLOAD_TYPE,
                                        signer))


def _check(envelope: bytes | None, policy: TrustPolicy, make_target: Any, now: dt.datetime | None) -> SignatureResult:
    try:
        target = make_target()
    except SigningError as err:  # the manifest itself has no model / no canonical form: nothing can be attested
        return SignatureResult.failure(err.code, err.message, signed=envelope is not None)
    return policy.evaluate(envelope, target, now=now)


def check_table_signature(envelope: bytes | None, policy: TrustPolicy, table_uri: str, version: str | int,
                          model: str | None, manifest_doc: Mapping[str, Any],
                          binding: Binding | Mapping[str, Any] | None, *,
                          now: dt.datetime | None = None, names: tuple[str, ...] = (),
                          locations: tuple[str, ...] = (),
                          more_locations: Callable[[], tuple[str, ...]] | None = None) -> SignatureResult:
    """Judge a table version's envelope (None when it has none) under ``policy``.

    ``model`` (default: the manifest's ``subject.model``) is matched against the keys' model globs; given, it must
    equal the manifest's. ``binding`` holds the digests the carrier computes now for this version. ``names``: the
    names the table was reached by (the reference the user gave); ``locations``: where it is stored — the policy is
    matched against every one of them as well as ``table_uri`` (docs/signing.md, "Which names a policy matches");
    ``more_locations``: more of them, asked for only when the policy matches names (``Target.all_locations``).
    """
    return _check(envelope, policy, lambda: Target.table(table_uri, version, manifest_doc, binding, model,
                                                         names=names, locations=locations,
                                                         more_locations=more_locations), now)


def check_manifest_signature(envelope: bytes | None, policy: TrustPolicy, manifest_doc: Mapping[str, Any], *,
                             now: dt.datetime | None = None) -> SignatureResult:
    """Judge a standalone manifest's envelope (None when it has none) under ``policy``."""
    return _check(envelope, policy, lambda: Target.manifest(manifest_doc), now)
