"""Signed Iceberg attestations, attestations on branches, and write–audit–publish (docs/signing.md)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import Table

from attest.errors import NotFastForwardError, VerificationRefusedError
from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from carriers.iceberg.publish import publish
from carriers.iceberg.write import write_content_addressed
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog, iceberg_env, rows, summary_of, table  # noqa: F401

REF = f"iceberg://{CATALOG}/ns.t"


@pytest.fixture
def ci() -> KeyPair:
    return generate_keypair("ecdsa-p256")


def policy_of(pair: KeyPair) -> TrustPolicy:
    return TrustPolicy.from_public_key(pair.public_pem)


def cli(*args: str) -> tuple[int, dict[str, Any]]:
    from attest.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json"])
    return rc, json.loads(out.getvalue())


def fresh(table: Table) -> IcebergCarrier:  # noqa: F811
    table.refresh()
    return IcebergCarrier(table, catalog_name=CATALOG)


def main_head(table: Table) -> int | None:  # noqa: F811
    table.refresh()
    snap = table.current_snapshot()
    return None if snap is None else snap.snapshot_id


def test_signed_follow_up_and_content_addressed_snapshots_verify_with_the_key(table: Table, ci: KeyPair) -> None:  # noqa: F811
    signer = PemSigner.load(ci.private_pem)
    table.append(rows(0))
    result = attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash=PROGRAM,
                                signer=signer)
    assert result.signer == ci.key_id and result.envelope and "/recipe_attest/" in result.envelope
    report = verify_table(fresh(table), policy=policy_of(ci))
    assert report.passed and report.signer == ci.key_id and report.level == "bytes", report.human()
    assert not verify_table(fresh(table), policy=policy_of(generate_keypair())).passed
    # The content-addressed write path signs inside the data snapshot's own summary.
    written = write_content_addressed(IcebergCarrier(table, catalog_name=CATALOG), rows(10), model="m",
                                      program_hash=PROGRAM, signer=signer)
    assert written.signer == ci.key_id
    assert props.KEY_ENVELOPE in summary_of(table, written.attested_version or "")
    report = verify_table(fresh(table), policy=policy_of(ci))
    assert report.passed and report.signer == ci.key_id, report.human()


def test_cli_verifies_an_iceberg_table_with_key(table: Table, ci: KeyPair, iceberg_env: str,  # noqa: F811
                                                tmp_path: Path) -> None:
    table.append(rows(0))
    (tmp_path / "ci.key").write_bytes(ci.private_pem)
    (tmp_path / "ci.pub").write_bytes(ci.public_pem)
    rc, doc = cli("record", REF, "--model", "m", "--program-hash", PROGRAM, "--sign-key", str(tmp_path / "ci.key"))
    assert rc == 0 and doc["signer"] == ci.key_id, doc
    rc, doc = cli("verify", REF, "--key", str(tmp_path / "ci.pub"))
    assert rc == 0 and doc["verdict"].startswith(f"VERIFIED (bytes, signed by {ci.key_id})"), doc
    # A snapshot committed outside the attestation: stale, whatever the signature.
    table.append(rows(5))
    rc, doc = cli("verify", REF, "--key", str(tmp_path / "ci.pub"))
    assert rc == 1 and doc["errors"][0]["code"] == "stale", doc


def _audit_branch(table: Table, ci: KeyPair, *, signed: bool = True) -> int:  # noqa: F811
    """main: data + its signed attestation; branch audit forked from there, written and attested on the branch."""
    signer = PemSigner.load(ci.private_pem)
    table.append(rows(0))
    attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash=PROGRAM, signer=signer)
    fork = main_head(table)
    assert fork is not None
    table.manage_snapshots().create_branch(fork, "audit").commit()
    table.append(rows(3), branch="audit")
    result = attest_after_write(table, model="m", program_hash=PROGRAM, branch="audit",
                                signer=signer if signed else None)
    assert main_head(table) == fork, "attesting the branch must not move main"
    head = table.snapshot_by_name("audit")
    assert head is not None and head.parent_snapshot_id == int(result.attested_version or 0)
    return fork


def test_branch_attestation_verifies_on_the_branch(table: Table, ci: KeyPair) -> None:  # noqa: F811
    fork = _audit_branch(table, ci)
    branch = IcebergCarrier(table, catalog_name=CATALOG, branch="audit")
    report = verify_table(branch, policy=policy_of(ci))
    assert report.passed and report.signer == ci.key_id, report.human()
    # Named as a snapshot too (the CLI's --snapshot-id audit), and main is untouched and still verifies.
    assert verify_table(fresh(table), version="audit", policy=policy_of(ci)).passed
    main = verify_table(fresh(table), policy=policy_of(ci))
    assert main.passed and main.version == str(fork)


def test_publish_fast_forwards_main_to_a_verified_branch(table: Table, ci: KeyPair) -> None:  # noqa: F811
    fork = _audit_branch(table, ci)
    head = table.snapshot_by_name("audit")
    assert head is not None
    result = publish(IcebergCarrier(table, catalog_name=CATALOG), "audit", policy=policy_of(ci))
    assert result.published and result.previous_main == str(fork) and result.snapshot == str(head.snapshot_id)
    assert main_head(table) == head.snapshot_id
    report = verify_table(fresh(table), policy=policy_of(ci))
    assert report.passed and report.signer == ci.key_id, report.human()
    assert fresh(table).table.scan().to_arrow().num_rows == 6
    again = publish(IcebergCarrier(table, catalog_name=CATALOG), "audit", policy=policy_of(ci))
    assert not again.published and main_head(table) == head.snapshot_id


def test_publish_refuses_a_branch_that_does_not_verify(table: Table, ci: KeyPair) -> None:  # noqa: F811
    fork = _audit_branch(table, ci)
    table.append(rows(20), branch="audit")  # written after the audit's attestation: not attested
    with pytest.raises(VerificationRefusedError) as refused:
        publish(IcebergCarrier(table, catalog_name=CATALOG), "audit", policy=policy_of(ci))
    assert refused.value.code.value == "stale" and main_head(table) == fork
    # Another key's policy: the branch's signature does not count.
    other = generate_keypair()
    fork2 = _fresh_fork(table, ci)
    with pytest.raises(VerificationRefusedError) as refused:
        publish(IcebergCarrier(table, catalog_name=CATALOG), "audit2", policy=policy_of(other))
    assert refused.value.code.value == "signature_invalid" and main_head(table) == fork2


def _fresh_fork(table: Table, ci: KeyPair, *, signed: bool = True) -> int:  # noqa: F811
    fork = main_head(table)
    assert fork is not None
    table.manage_snapshots().create_branch(fork, "audit2").commit()
    table.append(rows(30), branch="audit2")
    attest_after_write(table, model="m", program_hash=PROGRAM, branch="audit2",
                       signer=PemSigner.load(ci.private_pem) if signed else None)
    return fork


def test_publish_refuses_an_unsigned_branch_under_a_signing_policy(table: Table, ci: KeyPair) -> None:  # noqa: F811
    fork = _audit_branch(table, ci, signed=False)
    with pytest.raises(VerificationRefusedError) as refused:
        publish(IcebergCarrier(table, catalog_name=CATALOG), "audit", policy=policy_of(ci))
    assert refused.value.code.value == "signature_missing" and main_head(table) == fork
    # Without a policy it verifies (unsigned) and publishes: the policy is what requires the signature.
    assert publish(IcebergCarrier(table, catalog_name=CATALOG), "audit").published


def test_publish_refuses_when_main_moved_since_the_fork(table: Table, ci: KeyPair) -> None:  # noqa: F811
    _audit_branch(table, ci)
    table.append(rows(40))  # a commit to main after the fork
    moved = main_head(table)
    with pytest.raises(NotFastForwardError) as refused:
        publish(IcebergCarrier(table, catalog_name=CATALOG), "audit", policy=policy_of(ci))
    assert refused.value.code.value == "not_fast_forward" and main_head(table) == moved


def test_publish_cli(table: Table, ci: KeyPair, iceberg_env: str, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "ci.pub").write_bytes(ci.public_pem)
    fork = _audit_branch(table, ci)
    table.append(rows(50), branch="audit")
    rc, doc = cli("publish", REF, "--branch", "audit", "--key", str(tmp_path / "ci.pub"))
    assert rc == 1 and doc["published"] is False and doc["errors"][0]["code"] == "stale", doc
    assert main_head(table) == fork
    rc, doc = cli("record", REF, "--branch", "audit", "--model", "m", "--program-hash", PROGRAM, "--sign-key",
                  _write(tmp_path / "ci.key", ci.private_pem))
    assert rc == 0 and doc["signer"] == ci.key_id, doc
    rc, doc = cli("publish", REF, "--branch", "audit", "--key", str(tmp_path / "ci.pub"))
    assert rc == 0 and doc["published"] and doc["previous_main"] == str(fork), doc
    assert doc["report"]["signer"] == ci.key_id
    table.append(rows(60))
    table.append(rows(70), branch="audit")
    rc, doc = cli("publish", REF, "--branch", "audit", "--key", str(tmp_path / "ci.pub"))
    assert rc == 1 and doc["errors"][0]["code"] == "not_fast_forward", doc
    rc, doc = cli("publish", REF, "--branch", "nope")
    assert rc == 2 and doc["errors"][0]["code"] == "version_not_found", doc
    rc, doc = cli("record", "/tmp/not-a-table-at-all", "--branch", "x", "--model", "m", "--program-hash", PROGRAM)
    assert rc == 2, doc


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_publish_passes_over_mains_own_attestation_snapshots(table: Table, ci: KeyPair) -> None:  # noqa: F811
    """Forked from the data snapshot before main's attestation landed (what Spark's cached metadata does): main's
    follow-up changed no file, so moving main to the branch drops no data — published; a data commit is not."""
    signer = PemSigner.load(ci.private_pem)
    table.append(rows(0))
    data = main_head(table)
    assert data is not None
    table.manage_snapshots().create_branch(data, "audit").commit()
    attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash=PROGRAM, signer=signer)
    follow_up = main_head(table)
    assert follow_up != data
    table.append(rows(3), branch="audit")
    attest_after_write(table, model="m", program_hash=PROGRAM, branch="audit", signer=signer)
    result = publish(IcebergCarrier(table, catalog_name=CATALOG), "audit", policy=policy_of(ci))
    assert result.published and result.previous_main == str(follow_up)
    assert verify_table(fresh(table), policy=policy_of(ci)).passed
    # The same shape with a data commit on main instead of an attestation: refused.
    table.manage_snapshots().create_branch(main_head(table) or 0, "audit3").commit()
    table.append(rows(9), branch="audit3")
    attest_after_write(table, model="m", program_hash=PROGRAM, branch="audit3", signer=signer)
    table.append(rows(90))
    with pytest.raises(NotFastForwardError):
        publish(IcebergCarrier(table, catalog_name=CATALOG), "audit3", policy=policy_of(ci))
