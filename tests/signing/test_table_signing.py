"""Signed table attestations end to end (docs/signing.md): record with a key, verify under --key / a policy, and
every way a signed attestation must stop verifying."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import logging
import os
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.conftest import run_cli
from tests.signing.conftest import payload_of

PROGRAM = "a" * 64


def cli(*args: str) -> tuple[int, dict[str, Any]]:
    """``attest ARGS --json`` in-process: (exit code, the one JSON object printed)."""
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json"])
    return rc, json.loads(out.getvalue())


def codes(doc: dict[str, Any]) -> list[str]:
    return [e["code"] for e in doc.get("errors", [])]


def write_keys(tmp_path: Path, pair: KeyPair, name: str = "ci") -> tuple[Path, Path]:
    (tmp_path / f"{name}.key").write_bytes(pair.private_pem)
    (tmp_path / f"{name}.pub").write_bytes(pair.public_pem)
    return tmp_path / f"{name}.key", tmp_path / f"{name}.pub"


def table(path: Path, values: list[int] | None = None) -> Path:
    write_deltalake(str(path), pa.table({"p": ["a", "b", "a"], "v": values or [1, 2, 3]}), partition_by=["p"])
    return path


@pytest.fixture
def ci(tmp_path: Path) -> KeyPair:
    return generate_keypair("ed25519")


def signed_table(path: Path, ci: KeyPair) -> Path:
    """A table recorded with the CI key. Each case gets its own: a copy elsewhere is another table (it fails)."""
    table(path)
    result = attest_after_write(str(path), model="orders", program_hash=PROGRAM, signer=PemSigner.load(ci.private_pem))
    assert result.signer == ci.key_id and result.envelope is not None
    assert verify_table(DeltaCarrier(str(path)), policy=TrustPolicy.from_public_key(ci.public_pem)).passed
    return path


@pytest.fixture
def signed(tmp_path: Path, ci: KeyPair) -> Path:
    return signed_table(tmp_path / "orders", ci)


def envelope_of(path: Path) -> Path:
    digest = DeltaTable(str(path)).metadata().configuration[props.KEY_ENVELOPE]
    return path / "_recipe_attest" / f"{digest}.dsse.json"


# ---- recording ---------------------------------------------------------------------------------------------------
def test_record_sign_key_then_verify_key_as_a_user_would(tmp_path: Path, ci: KeyPair) -> None:
    """From a shell: keygen, record --sign-key, verify --key (VERIFIED, signed by), another key (exit 1)."""
    path = table(tmp_path / "t")
    out = run_cli("keygen", "--out", str(tmp_path / "ci"))
    assert out.returncode == 0, out.stderr
    key_id = out.stdout.split("key id: ")[1].strip()
    out = run_cli("record", str(path), "--model", "orders", "--program-hash", PROGRAM, "--sign-key",
                  str(tmp_path / "ci.key"))
    assert out.returncode == 0 and f"signed by {key_id}" in out.stdout, out.stdout + out.stderr
    out = run_cli("verify", str(path), "--key", str(tmp_path / "ci.pub"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith(f"VERIFIED (bytes, signed by {key_id})")
    other = write_keys(tmp_path, generate_keypair("ecdsa-p256"), "other")[1]
    out = run_cli("verify", str(path), "--key", str(other))
    assert out.returncode == 1 and "signature_invalid" in out.stdout + out.stderr


def test_record_signs_with_the_key_the_environment_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$ATTEST_SIGNING_KEY names the key file; an encrypted key opens with $ATTEST_SIGNING_KEY_PASSWORD."""
    pair = generate_keypair("ecdsa-p256", password=b"s3cret-pass")
    key, pub = write_keys(tmp_path, pair)
    path = table(tmp_path / "t")
    monkeypatch.setenv("ATTEST_SIGNING_KEY", str(key))
    monkeypatch.delenv("ATTEST_SIGNING_KEY_PASSWORD", raising=False)
    rc, doc = cli("record", str(path), "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 2 and codes(doc) == ["key_invalid"] and "ATTEST_SIGNING_KEY_PASSWORD" in doc["errors"][0]["message"]
    assert "recipe_attest.layout" not in DeltaTable(str(path)).metadata().configuration  # nothing recorded
    monkeypatch.setenv("ATTEST_SIGNING_KEY_PASSWORD", "s3cret-pass")
    rc, doc = cli("record", str(path), "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0 and doc["signer"] == pair.key_id and doc["envelope"].endswith(".dsse.json"), doc
    rc, doc = cli("verify", str(path), "--key", str(pub))
    assert rc == 0 and doc["signer"] == pair.key_id and doc["signature"]["passed"], doc


def test_the_envelope_is_content_addressed_beside_the_sidecar(signed: Path, ci: KeyPair) -> None:
    from attest.canonical import blake3_hex

    config = DeltaTable(str(signed)).metadata().configuration
    envelope = envelope_of(signed)
    assert envelope.parent == (signed / config[props.KEY_SIDECAR_PATH]).parent
    assert blake3_hex(envelope.read_bytes()) == config[props.KEY_ENVELOPE]
    statement = payload_of(envelope.read_bytes())
    uri = signed.resolve().as_uri()
    assert statement["subject"][0]["name"] == f"{uri}@0"
    binding = statement["predicate"]["binding"]
    report = verify_table(DeltaCarrier(str(signed)))
    assert binding == {"table": uri, "version": "0", "sidecar_digest": config[props.KEY_SIDECAR_HASH],
                       "reader_view_digest": DeltaCarrier(str(signed)).read().view.digest}  # type: ignore[union-attr]
    assert report.passed and any("not checked" in n for n in report.notes), report.human()


def test_relative_and_file_uri_spellings_name_one_table(signed: Path, ci: KeyPair, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The statement names the table by its absolute URI: ./orders, /abs/orders and file:/abs/orders all verify."""
    policy = TrustPolicy.from_public_key(ci.public_pem)
    monkeypatch.chdir(signed.parent)
    for spelling in ("orders", str(signed), f"file:{signed}", signed.as_uri()):
        assert verify_table(DeltaCarrier(spelling), policy=policy).passed, spelling


# ---- the verdicts -------------------------------------------------------------------------------------------------
def test_unsigned_attestation_fails_a_policy_that_requires_signing(tmp_path: Path, ci: KeyPair) -> None:
    path = table(tmp_path / "t")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    pub = write_keys(tmp_path, ci)[1]
    rc, doc = cli("verify", str(path), "--key", str(pub))
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    # A policy whose require_signed does not cover the table: passes, unsigned, and says so.
    policy = tmp_path / "trust.toml"
    policy.write_text(f'require_signed = ["s3://lake/*"]\n[[keys]]\npublic_key = "{pub.name}"\n')
    rc, doc = cli("verify", str(path), "--policy", str(policy))
    assert rc == 0 and "signer" not in doc and doc["signature"]["signed"] is False, doc
    assert any("does not require a signature" in n for n in doc["notes"])


def test_signer_outside_its_globs_revoked_or_expired(signed: Path, tmp_path: Path, ci: KeyPair) -> None:
    pub = write_keys(tmp_path, ci)[1]
    uri = signed.resolve().as_uri()
    cases = {
        'tables = ["s3://elsewhere/*"]': "signer_not_allowed",
        f'tables = ["{uri}"]\nmodels = ["finance_*"]': "signer_not_allowed",
        "revoked = true": "key_revoked",
        "not_after = 2001-01-01T00:00:00Z": "key_expired",
        f'tables = ["{uri[:-3]}*"]\nmodels = ["ord*"]': None,  # allowed: the control
    }
    for extra, code in cases.items():
        policy = tmp_path / "trust.toml"
        policy.write_text(f'[[keys]]\npublic_key = "{pub.name}"\n{extra}\n')
        rc, doc = cli("verify", str(signed), "--policy", str(policy))
        if code is None:
            assert rc == 0 and doc["signer"] == ci.key_id, (extra, doc)
        else:
            assert rc == 1 and codes(doc) == [code], (extra, doc)


def test_window_is_judged_at_verification_time(signed: Path, ci: KeyPair) -> None:
    policy = TrustPolicy.from_dict({"keys": [{"public_key_pem": ci.public_pem.decode(),
                                              "not_before": dt.datetime(2030, 1, 1, tzinfo=dt.UTC)}]})
    carrier = DeltaCarrier(str(signed))
    assert [e.code.value for e in verify_table(carrier, policy=policy).errors] == ["key_expired"]
    later = dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
    assert verify_table(carrier, policy=policy, now=later).passed


def test_without_a_policy_a_signed_table_verifies_as_before_with_a_note(signed: Path) -> None:
    rc, doc = cli("verify", str(signed))
    assert rc == 0 and "signer" not in doc and "signature" not in doc
    assert any("carries a signature" in n and "not checked" in n for n in doc["notes"]), doc


def test_envelope_option_is_refused_for_tables(signed: Path, tmp_path: Path, ci: KeyPair) -> None:
    pub = write_keys(tmp_path, ci)[1]
    rc, doc = cli("verify", str(signed), "--key", str(pub), "--envelope", str(envelope_of(signed)))
    assert rc == 2 and codes(doc) == ["invalid_argument"]


# ---- every byte ---------------------------------------------------------------------------------------------------
def test_a_byte_identical_copy_elsewhere_is_another_table(signed: Path, tmp_path: Path, ci: KeyPair) -> None:
    """Replay: the copy's files, sidecar and reader view are identical, only the table differs — and is signed."""
    copy = Path(shutil.copytree(signed, tmp_path / "copy"))
    assert verify_table(DeltaCarrier(str(copy))).passed
    report = verify_table(DeltaCarrier(str(copy)), policy=TrustPolicy.from_public_key(ci.public_pem))
    assert [e.code.value for e in report.errors] == ["statement_mismatch"] and "orders@0" in report.human()


def test_any_changed_byte_of_the_envelope_fails(tmp_path: Path, ci: KeyPair) -> None:
    policy = TrustPolicy.from_public_key(ci.public_pem)
    for n, where in enumerate((0.0, 0.001, 0.33, 0.5, 0.9, 0.999, 1.0)):  # first byte ... last byte
        path = signed_table(tmp_path / f"e{n}", ci)
        envelope = envelope_of(path)
        raw = bytearray(envelope.read_bytes())
        index = min(int(where * len(raw)), len(raw) - 1)
        raw[index] ^= 0x01
        envelope.write_bytes(bytes(raw))
        report = verify_table(DeltaCarrier(str(path)), policy=policy)
        assert [e.code.value for e in report.errors] == ["signature_invalid"], (index, report.human())


def test_a_consistently_rewritten_envelope_still_fails(tmp_path: Path, ci: KeyPair) -> None:
    """The attacker edits the statement, keeps the base64 canonical, re-addresses the file and the metadata key: the
    signature itself refuses it (the content address alone is not the protection)."""
    from attest.canonical import blake3_hex, canonical_bytes
    from tests.adversarial.conftest import metadata_commit

    path = signed_table(tmp_path / "rewritten", ci)
    envelope = json.loads(envelope_of(path).read_bytes())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["manifest"]["subject"]["model"] = "orders_forged"
    envelope["payload"] = base64.b64encode(canonical_bytes(statement)).decode()
    data = canonical_bytes(envelope)
    digest = blake3_hex(data)
    (path / "_recipe_attest" / f"{digest}.dsse.json").write_bytes(data)
    metadata_commit(path, lambda m: m["configuration"].update({props.KEY_ENVELOPE: digest}))
    report = verify_table(DeltaCarrier(str(path)), policy=TrustPolicy.from_public_key(ci.public_pem))
    assert [e.code.value for e in report.errors] == ["signature_invalid"], report.human()


def test_changed_sidecar_metadata_or_data_fail_under_the_policy(tmp_path: Path, ci: KeyPair) -> None:
    from tests.adversarial.conftest import metadata_commit

    policy = TrustPolicy.from_public_key(ci.public_pem)
    # Sidecar: one byte.
    path = signed_table(tmp_path / "sidecar", ci)
    sidecar = path / DeltaTable(str(path)).metadata().configuration[props.KEY_SIDECAR_PATH]
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"version":2', b'"version":3'))
    assert not verify_table(DeltaCarrier(str(path)), policy=policy).passed
    # Metadata: one manifest field.
    path = signed_table(tmp_path / "meta", ci)
    metadata_commit(path, lambda m: m["configuration"].update({"recipe_manifest.subject.model": "other"}))
    assert "carrier_tampered" in [e.code.value for e in verify_table(DeltaCarrier(str(path)), policy=policy).errors]
    # Data: one byte of a data file (bytes level), and new data re-attested by someone without the key.
    path = signed_table(tmp_path / "data", ci)
    data = sorted(path.rglob("*.parquet"))[0]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    data.write_bytes(bytes(raw))
    report = verify_table(DeltaCarrier(str(path)), policy=policy, level="bytes")
    assert [e.code.value for e in report.errors] == ["artifact_hash_mismatch"], report.human()
    path = signed_table(tmp_path / "reattested", ci)
    write_deltalake(str(path), pa.table({"p": ["c"], "v": [9]}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify_table(DeltaCarrier(str(path))).passed  # self-consistent...
    report = verify_table(DeltaCarrier(str(path)), policy=policy)
    assert [e.code.value for e in report.errors] == ["signature_missing"]  # ...but not signed by a trusted key
    attest_after_write(str(path), model="orders", program_hash=PROGRAM, replace=True,
                       signer=PemSigner.load(generate_keypair().private_pem))
    report = verify_table(DeltaCarrier(str(path)), policy=policy)
    assert [e.code.value for e in report.errors] == ["signature_invalid"]


# ---- audit / lineage take the policy ------------------------------------------------------------------------------
def test_audit_and_lineage_apply_the_policy_to_every_table(tmp_path: Path, ci: KeyPair) -> None:
    signer = PemSigner.load(ci.private_pem)
    lake = tmp_path / "lake"
    up = table(lake / "up")
    attest_after_write(str(up), model="up", program_hash=PROGRAM, signer=signer)
    down = table(lake / "down")
    upstream = DeltaCarrier(str(up)).observe()
    attest_after_write(str(down), model="down", program_hash=PROGRAM, inputs=[upstream], signer=signer)
    pub = write_keys(tmp_path, ci)[1]
    rc, doc = cli("audit", str(lake), "--key", str(pub))
    assert rc == 0 and doc["counts"]["VERIFIED"] == 2, doc
    assert all(t["report"]["signer"] == ci.key_id for t in doc["tables"])
    rc, doc = cli("lineage", str(down), "--key", str(pub))
    assert rc == 0 and doc["inputs"] and doc["inputs"][0]["passed"], doc
    # The upstream re-attested without the key: audit and lineage both refuse it, naming the code.
    write_deltalake(str(up), pa.table({"p": ["z"], "v": [0]}), mode="append")
    attest_after_write(str(up), model="up", program_hash=PROGRAM)
    rc, doc = cli("audit", str(lake), "--key", str(pub))
    assert rc == 1 and doc["counts"]["VERIFIED"] == 1 and doc["counts"]["NOT VERIFIED"] == 1, doc
    assert {t["code"] for t in doc["tables"]} == {None, "signature_missing"}
    rc, doc = cli("lineage", str(down), "--key", str(pub))  # the version down read is still the signed one
    assert rc == 0, doc
    rc, doc = cli("lineage", str(down), "--key", str(write_keys(tmp_path, generate_keypair(), "x")[1]))
    assert rc == 1 and not doc["node_passed"] and "signature_invalid" in doc["verdict"], doc


# ---- the Python reader ----------------------------------------------------------------------------------------
def test_open_verified_returns_the_engine_table_only_when_it_verifies(signed: Path, ci: KeyPair,
                                                                      tmp_path: Path) -> None:
    from attest.errors import VerificationRefusedError
    from attest.read import open_verified

    pub = write_keys(tmp_path, ci)[1]
    opened = open_verified(str(signed), policy=str(pub))
    assert isinstance(opened, DeltaTable) and opened.version() == 1
    assert opened.to_pyarrow_table().num_rows == 3
    write_deltalake(str(signed), pa.table({"p": ["q"], "v": [7]}), mode="append")
    with pytest.raises(VerificationRefusedError) as refused:
        open_verified(str(signed), policy=str(pub))
    assert refused.value.code.value == "stale" and refused.value.report is not None
    # The verified version itself still opens, at exactly that version.
    assert open_verified(str(signed), policy=TrustPolicy.from_public_key(ci.public_pem), version=1).version() == 1


# ---- the key never leaves the signer --------------------------------------------------------------------------
def test_the_private_key_is_never_printed_logged_or_written(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pair = generate_keypair("ed25519", password=b"pw-never-shown-42")
    key, _ = write_keys(tmp_path, pair)
    body = b"".join(pair.private_pem.splitlines()[1:-1]).decode()
    secrets = [body, body[:40], "pw-never-shown-42"]
    path = table(tmp_path / "t")
    env = {**os.environ, "ATTEST_SIGNING_KEY_PASSWORD": "pw-never-shown-42"}
    import subprocess
    import sys

    outputs = []
    for extra in ([], ["--json"]):
        proc = subprocess.run([sys.executable, "-m", "attest.cli", "record", str(path), "--model", "m",
                               "--program-hash", PROGRAM, "--sign-key", str(key), "--replace", *extra], env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    wrong = subprocess.run([sys.executable, "-m", "attest.cli", "record", str(path), "--model", "m",
                            "--program-hash", PROGRAM, "--sign-key", str(key), "--json"],
                           env={**env, "ATTEST_SIGNING_KEY_PASSWORD": "pw-never-shown-43"},
                           capture_output=True, text=True)
    assert wrong.returncode == 2 and json.loads(wrong.stdout)["errors"][0]["code"] == "key_invalid"
    outputs.append(wrong.stdout + wrong.stderr)
    with caplog.at_level(logging.DEBUG):
        signer = PemSigner.load(key, environ={"ATTEST_SIGNING_KEY_PASSWORD": "pw-never-shown-42"})
        result = attest_after_write(str(path), model="m", program_hash=PROGRAM, signer=signer, replace=True)
    outputs += [caplog.text, repr(signer), str(signer), repr(result)]
    files = [p.read_bytes().decode("utf-8", "replace") for p in path.rglob("*") if p.is_file() and p.suffix in
             (".json", ".crc", "")]
    for text in [*outputs, *files]:
        for secret in secrets:
            assert secret not in text


def test_content_addressed_write_signs_and_others_can_check_the_stored_envelope(tmp_path: Path, ci: KeyPair
                                                                                 ) -> None:
    """The Delta content-addressed writer signs too; the stored envelope verifies under securesystemslib's DSSE and
    its payload is an in-toto v1 Statement by the in-toto bindings (checked by others, not just by us)."""
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement as InTotoStatement
    from securesystemslib.dsse import Envelope as SslibEnvelope
    from securesystemslib.signer import SSlibKey

    from carriers.delta.write import write_content_addressed

    path = tmp_path / "ca"
    result = write_content_addressed(str(path), pa.table({"v": [1, 2, 3]}), model="orders", program_hash=PROGRAM,
                                     signer=PemSigner.load(ci.private_pem))
    assert result.signer == ci.key_id
    assert verify_table(DeltaCarrier(str(path)), policy=TrustPolicy.from_public_key(ci.public_pem)).passed
    from cryptography.hazmat.primitives import serialization

    key = SSlibKey.from_crypto(serialization.load_pem_public_key(ci.public_pem), keyid=ci.key_id,  # type: ignore[arg-type]
                               scheme="ed25519")
    envelope = SslibEnvelope.from_dict(json.loads(envelope_of(path).read_bytes()))
    assert set(envelope.verify([key], 1)) == {ci.key_id}
    proto = json_format.Parse(envelope.payload.decode(), statement_pb2.Statement())  # type: ignore[attr-defined]
    InTotoStatement.copy_from_pb(proto).validate()
    assert proto.subject[0].name == f"{path.resolve().as_uri()}@0"


def test_branch_and_publish_options_are_for_iceberg(signed: Path) -> None:
    rc, doc = cli("record", str(signed), "--branch", "audit", "--model", "m", "--program-hash", PROGRAM)
    assert rc == 2 and codes(doc) == ["invalid_argument"], doc
    rc, doc = cli("publish", str(signed), "--branch", "audit")
    assert rc == 2 and codes(doc) == ["invalid_argument"], doc
