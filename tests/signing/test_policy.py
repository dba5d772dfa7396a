"""Trust policies: the TOML format (including the example in docs/signing.md), and every verdict code."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from attest.errors import Code
from attest.signing.attestation import (
    check_manifest_signature,
    check_table_signature,
    sign_manifest_attestation,
    sign_table_attestation,
)
from attest.signing.dsse import INTOTO_PAYLOAD_TYPE, sign_envelope
from attest.signing.errors import PolicyInvalidError
from attest.signing.keys import KeyPair, PemSigner, PublicKey, generate_keypair
from attest.signing.policy import SignatureResult, TrustedKey, TrustPolicy
from tests.signing.conftest import decode

ROOT = Path(__file__).resolve().parents[2]
TABLE = "s3://lake/finance/orders"
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
BINDING = {"sidecar_digest": "1" * 64, "reader_view_digest": "2" * 64}


def _policy(tmp_path: Path, text: str, **keys: KeyPair) -> TrustPolicy:
    for name, pair in keys.items():
        (tmp_path / f"{name}.pub").write_bytes(pair.public_pem)
    (tmp_path / "trust.toml").write_text(text, encoding="utf-8")
    return TrustPolicy.load(tmp_path / "trust.toml")


def _check(envelope: bytes | None, policy: TrustPolicy, doc: dict[str, Any], table: str = TABLE,
           version: int = 7, now: dt.datetime = NOW) -> SignatureResult:
    return check_table_signature(envelope, policy, table, version, None, doc, BINDING, now=now)


def _signed(pair: KeyPair, doc: dict[str, Any], table: str = TABLE, version: int = 7) -> bytes:
    return sign_table_attestation(PemSigner.load(pair.private_pem), table, version, doc, BINDING)


def test_the_example_in_docs_signing_md_loads_and_judges(tmp_path: Path, doc: dict[str, Any]) -> None:
    text = (ROOT / "docs" / "signing.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(.*?)```", text, re.S)
    assert example is not None
    ci, old = generate_keypair("ed25519"), generate_keypair("ecdsa-p256")
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "ci.pub").write_bytes(ci.public_pem)
    (tmp_path / "keys" / "old.pub").write_bytes(old.public_pem)
    toml = re.sub(r'id = "[0-9a-f]{64}"', f'id = "{ci.key_id}"', example.group(1))
    (tmp_path / "trust.toml").write_text(toml, encoding="utf-8")
    policy = TrustPolicy.load(tmp_path / "trust.toml")
    assert [k.revoked for k in policy.keys] == [False, True, False]
    assert policy.keys[0].tables == ("s3://lake/finance/*", "iceberg://prod/finance.*", "manifest:*")
    doc["subject"]["model"] = "finance_orders"
    assert _check(_signed(ci, doc), policy, doc).signer == ci.key_id
    assert _check(_signed(ci, doc, "s3://lake/hr/people"), policy, doc, "s3://lake/hr/people").code == \
        Code.SIGNER_NOT_ALLOWED
    assert _check(_signed(ci, doc), policy, doc, now=dt.datetime(2027, 6, 1, tzinfo=dt.UTC)).code == Code.KEY_EXPIRED
    assert _check(_signed(old, doc), policy, doc).code == Code.KEY_REVOKED
    assert _check(None, policy, doc).code == Code.SIGNATURE_MISSING


def test_from_one_public_key_trusts_it_everywhere_and_requires_signatures(pair: KeyPair, other: KeyPair,
                                                                         doc: dict[str, Any]) -> None:
    policy = TrustPolicy.from_public_key(pair.public_pem)
    result = _check(_signed(pair, doc), policy, doc)
    assert result == SignatureResult(passed=True, code=None, message=f"signed by {pair.key_id}", signer=pair.key_id,
                                     signed=True, required=True, verified_keys=(pair.key_id,))
    assert result.problem() is None and json.loads(json.dumps(result.to_json()))["signer"] == pair.key_id
    wrong = _check(_signed(other, doc), policy, doc)
    assert (wrong.passed, wrong.code, wrong.signer) == (False, Code.SIGNATURE_INVALID, None)
    missing = _check(None, policy, doc)
    assert (missing.passed, missing.code, missing.signed) == (False, Code.SIGNATURE_MISSING, False)
    assert missing.problem() is not None and missing.problem().code == Code.SIGNATURE_MISSING  # type: ignore[union-attr]


def test_empty_signature_list_is_signature_missing(pair: KeyPair, doc: dict[str, Any]) -> None:
    envelope = decode(_signed(pair, doc))
    envelope["signatures"] = []
    assert _check(json.dumps(envelope).encode(), TrustPolicy.from_public_key(pair.public_pem), doc).code == \
        Code.SIGNATURE_MISSING


def test_garbage_envelope_is_signature_invalid_not_a_crash(pair: KeyPair, doc: dict[str, Any]) -> None:
    policy = TrustPolicy.from_public_key(pair.public_pem)
    for envelope in (b"", b"\x00\xff", b"{}", b'{"payload": "%%%", "payloadType": "x", "signatures": []}'):
        result = _check(envelope, policy, doc)
        assert (result.passed, result.code) == (False, Code.SIGNATURE_INVALID)


def test_replayed_envelope_is_statement_mismatch(pair: KeyPair, doc: dict[str, Any]) -> None:
    policy = TrustPolicy.from_public_key(pair.public_pem)
    envelope = _signed(pair, doc, version=7)
    assert _check(envelope, policy, doc, version=8).code == Code.STATEMENT_MISMATCH
    assert _check(envelope, policy, doc, table="s3://lake/finance/other").code == Code.STATEMENT_MISMATCH
    changed = dict(doc, env_hash="f" * 64)
    assert _check(envelope, policy, changed).code == Code.STATEMENT_MISMATCH
    rebound = check_table_signature(envelope, policy, TABLE, 7, None, doc, {"sidecar_digest": "9" * 64}, now=NOW)
    assert rebound.code == Code.STATEMENT_MISMATCH and "sidecar_digest" in rebound.message
    # A standalone manifest's envelope is not a table's, nor the reverse.
    standalone = sign_manifest_attestation(PemSigner.load(pair.private_pem), doc)
    assert _check(standalone, policy, doc).code == Code.STATEMENT_MISMATCH
    assert check_manifest_signature(envelope, policy, doc, now=NOW).code == Code.STATEMENT_MISMATCH
    assert check_manifest_signature(standalone, policy, doc, now=NOW).passed


def test_a_trusted_signature_over_another_payload_type_is_refused(pair: KeyPair, doc: dict[str, Any]) -> None:
    signer = PemSigner.load(pair.private_pem)
    policy = TrustPolicy.from_public_key(pair.public_pem)
    not_intoto = json.dumps(sign_envelope(b"{}", "application/json", signer)).encode()
    assert _check(not_intoto, policy, doc).code == Code.SIGNATURE_INVALID
    not_a_statement = json.dumps(sign_envelope(b'{"_type": "x"}', INTOTO_PAYLOAD_TYPE, signer)).encode()
    assert _check(not_a_statement, policy, doc).code == Code.STATEMENT_MISMATCH


def test_globs_allow_and_deny(tmp_path: Path, doc: dict[str, Any]) -> None:
    ci = generate_keypair()
    policy = _policy(tmp_path, '[[keys]]\npublic_key = "ci.pub"\ntables = ["s3://lake/finance/*"]\n'
                     'models = ["orders_*"]\n', ci=ci)
    assert _check(_signed(ci, doc), policy, doc).passed  # model orders_clean, table under finance/
    other_table = "s3://lake/marketing/orders"
    denied = _check(_signed(ci, doc, other_table), policy, doc, other_table)
    assert (denied.code, denied.verified_keys) == (Code.SIGNER_NOT_ALLOWED, (ci.key_id,))
    assert "s3://lake/marketing/orders" in denied.message
    doc["subject"]["model"] = "customers"
    denied = _check(_signed(ci, doc), policy, doc)
    assert denied.code == Code.SIGNER_NOT_ALLOWED and "customers" in denied.message
    # Globs are case-sensitive.
    upper = "S3://lake/finance/orders"
    doc["subject"]["model"] = "orders_x"
    assert _check(_signed(ci, doc, upper), policy, doc, upper).code == Code.SIGNER_NOT_ALLOWED


def test_standalone_manifests_match_tables_globs_as_manifest_model(tmp_path: Path, doc: dict[str, Any]) -> None:
    ci = generate_keypair()
    standalone = sign_manifest_attestation(PemSigner.load(ci.private_pem), doc)
    tables_only = _policy(tmp_path, '[[keys]]\npublic_key = "ci.pub"\ntables = ["s3://*"]\n', ci=ci)
    assert check_manifest_signature(standalone, tables_only, doc, now=NOW).code == Code.SIGNER_NOT_ALLOWED
    manifests = _policy(tmp_path, '[[keys]]\npublic_key = "ci.pub"\ntables = ["manifest:orders_*"]\n', ci=ci)
    assert check_manifest_signature(standalone, manifests, doc, now=NOW).signer == ci.key_id
    # A standalone manifest needs a signature under any policy, whatever require_signed says.
    lax = _policy(tmp_path, 'require_signed = []\n[[keys]]\npublic_key = "ci.pub"\n', ci=ci)
    assert check_manifest_signature(None, lax, doc, now=NOW).code == Code.SIGNATURE_MISSING


def test_require_signed_globs(tmp_path: Path, doc: dict[str, Any]) -> None:
    ci = generate_keypair()
    policy = _policy(tmp_path, 'require_signed = ["s3://lake/finance/*"]\n[[keys]]\npublic_key = "ci.pub"\n', ci=ci)
    assert _check(None, policy, doc).code == Code.SIGNATURE_MISSING
    unsigned = _check(None, policy, doc, table="s3://lake/scratch/t")
    assert (unsigned.passed, unsigned.signer, unsigned.required, unsigned.signed) == (True, None, False, False)
    # An envelope that is present is judged even where none is required: a bad one never passes.
    other = generate_keypair()
    assert _check(_signed(other, doc, "s3://lake/scratch/t"), policy, doc, "s3://lake/scratch/t").code == \
        Code.SIGNATURE_INVALID


def test_revoked_key(tmp_path: Path, doc: dict[str, Any]) -> None:
    old = generate_keypair()
    policy = _policy(tmp_path, '[[keys]]\npublic_key = "old.pub"\nrevoked = true\n', old=old)
    result = _check(_signed(old, doc), policy, doc)
    assert (result.passed, result.code, result.signer) == (False, Code.KEY_REVOKED, None)


def test_validity_window(tmp_path: Path, doc: dict[str, Any]) -> None:
    ci = generate_keypair()
    policy = _policy(tmp_path, '[[keys]]\npublic_key = "ci.pub"\nnot_before = 2026-01-01T00:00:00Z\n'
                     'not_after = 2026-12-31T23:59:59+01:00\n', ci=ci)
    envelope = _signed(ci, doc)
    assert _check(envelope, policy, doc, now=NOW).passed
    assert _check(envelope, policy, doc, now=dt.datetime(2025, 12, 31, 23, tzinfo=dt.UTC)).code == Code.KEY_EXPIRED
    expired = _check(envelope, policy, doc, now=dt.datetime(2026, 12, 31, 23, 30, tzinfo=dt.UTC))
    assert expired.code == Code.KEY_EXPIRED and "expired" in expired.message
    assert _check(envelope, policy, doc, now=dt.datetime(2026, 12, 31, 22, 30)).passed  # naive = UTC


def test_any_allowed_signature_suffices_and_failures_name_the_furthest_key(tmp_path: Path,
                                                                          doc: dict[str, Any]) -> None:
    good, revoked, scoped, expired = (generate_keypair() for _ in range(4))
    policy = _policy(tmp_path, '[[keys]]\npublic_key = "good.pub"\n'
                     '[[keys]]\npublic_key = "revoked.pub"\nrevoked = true\n'
                     '[[keys]]\npublic_key = "scoped.pub"\nmodels = ["nothing"]\n'
                     '[[keys]]\npublic_key = "expired.pub"\nnot_after = 2020-01-01T00:00:00Z\n',
                     good=good, revoked=revoked, scoped=scoped, expired=expired)
    signers = {name: PemSigner.load(p.private_pem) for name, p in
               (("good", good), ("revoked", revoked), ("scoped", scoped), ("expired", expired))}

    def envelope(*names: str) -> bytes:
        from attest.signing.dsse import envelope_bytes
        from attest.signing.statement import statement_payload, table_statement

        payload = statement_payload(table_statement(TABLE, 7, doc, BINDING))
        first, *rest = (signers[n] for n in names)
        return envelope_bytes(sign_envelope(payload, INTOTO_PAYLOAD_TYPE, first, *rest))

    assert _check(envelope("revoked", "scoped", "good"), policy, doc).signer == good.key_id
    assert _check(envelope("revoked", "expired"), policy, doc).code == Code.KEY_EXPIRED
    assert _check(envelope("expired", "scoped", "revoked"), policy, doc).code == Code.SIGNER_NOT_ALLOWED
    assert _check(envelope("revoked"), policy, doc).code == Code.KEY_REVOKED


def test_inline_pem_and_pinned_id(tmp_path: Path, doc: dict[str, Any]) -> None:
    ci = generate_keypair("ecdsa-p256")
    text = f'[[keys]]\nid = "{ci.key_id}"\npublic_key_pem = """\n{ci.public_pem.decode()}"""\n'
    policy = TrustPolicy.from_toml(text)
    assert policy.keys[0].key_id == ci.key_id and _check(_signed(ci, doc), policy, doc).passed


@pytest.mark.parametrize(("text", "fragment"), [
    ("not toml [", "not valid TOML"),
    ("[[keys]]\npublic_key = 'ci.pub'\nrevokd = true\n", "unknown field(s) revokd"),
    ("trusted = 1\n[[keys]]\npublic_key = 'ci.pub'\n", "unknown field(s) trusted"),
    ("version = 2\n[[keys]]\npublic_key = 'ci.pub'\n", "policy version"),
    ("version = true\n[[keys]]\npublic_key = 'ci.pub'\n", "policy version"),
    ("version = 1.0\n[[keys]]\npublic_key = 'ci.pub'\n", "policy version"),
    ("[[keys]]\npublic_key = 'two.pub'\n", "2 PEM blocks"),
    ("require_signed = '*'\n[[keys]]\npublic_key = 'ci.pub'\n", "list of non-empty glob"),
    ("keys = []\n", "at least one"),
    ("", "at least one"),
    ("[[keys]]\n", "exactly one of public_key"),
    ("[[keys]]\npublic_key = 'ci.pub'\npublic_key_pem = 'x'\n", "exactly one of public_key"),
    ("[[keys]]\npublic_key = 'absent.pub'\n", "cannot read"),
    ("[[keys]]\npublic_key_pem = 'not a pem'\n", "not a PEM public key"),
    ("[[keys]]\npublic_key = 'ci.pub'\nid = 'abc'\n", "is not the key id"),
    ("[[keys]]\npublic_key = 'ci.pub'\nrevoked = 'yes'\n", "true or false"),
    ("[[keys]]\npublic_key = 'ci.pub'\ntables = []\n", None),  # allowed: a key that may attest nothing
    ("[[keys]]\npublic_key = 'ci.pub'\ntables = ['']\n", "glob"),
    ("[[keys]]\npublic_key = 'ci.pub'\nnot_after = 2026-01-01\n", "offset"),
    ("[[keys]]\npublic_key = 'ci.pub'\nnot_after = 2026-01-01T00:00:00\n", "offset"),
    ("[[keys]]\npublic_key = 'ci.pub'\nnot_before = 2027-01-01T00:00:00Z\nnot_after = 2026-01-01T00:00:00Z\n",
     "before not_before"),
    ("[[keys]]\npublic_key = 'ci.pub'\n[[keys]]\npublic_key = 'ci.pub'\n", "listed twice"),
])
def test_invalid_policies_are_policy_invalid(tmp_path: Path, text: str, fragment: str | None) -> None:
    (tmp_path / "ci.pub").write_bytes(generate_keypair().public_pem)
    (tmp_path / "two.pub").write_bytes(generate_keypair().public_pem + generate_keypair().public_pem)
    (tmp_path / "trust.toml").write_text(text, encoding="utf-8")
    if fragment is None:
        assert TrustPolicy.load(tmp_path / "trust.toml").keys[0].tables == ()
        return
    with pytest.raises(PolicyInvalidError) as info:
        TrustPolicy.load(tmp_path / "trust.toml")
    assert info.value.code == Code.POLICY_INVALID and fragment in info.value.message


def test_unreadable_policy_file_is_policy_invalid(tmp_path: Path) -> None:
    with pytest.raises(PolicyInvalidError, match="cannot read"):
        TrustPolicy.load(tmp_path / "absent.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(PolicyInvalidError, match="not UTF-8"):
        TrustPolicy.load(tmp_path / "bin.toml")


def test_a_key_may_attest_nothing(doc: dict[str, Any]) -> None:
    ci = generate_keypair()
    policy = TrustPolicy(keys=(TrustedKey(PublicKey.load(ci.public_pem), tables=()),))
    assert _check(_signed(ci, doc), policy, doc).code == Code.SIGNER_NOT_ALLOWED


def test_a_manifest_without_a_model_cannot_be_attested(pair: KeyPair, doc: dict[str, Any]) -> None:
    del doc["subject"]["model"]
    result = check_manifest_signature(b"{}", TrustPolicy.from_public_key(pair.public_pem), doc)
    assert (result.passed, result.code) == (False, Code.STATEMENT_MISMATCH)
