"""A signed carry-forward launders an unsigned (or untrusted) attestation (round 13c).

A carry-forward attestation keeps the continued attestation's program, inputs and producer and is signed by whoever
records it — the Spark hook after OPTIMIZE, a scheduled maintenance job holding the trusted key. It used to be written
without judging the continued attestation's signature: someone with write access to the table but no key attested
its rows unsigned under a trusted producer's program (under a policy: ``signature_missing``), waited for the next
OPTIMIZE, and the maintenance job's carry-forward signed that claim — ``VERIFIED (…, signed by <trusted key>)`` naming
the forged program. Now a signed carry-forward is written only when the continued attestation's own signature verifies
under the recorder's key (``carry_forward_unverified`` otherwise, nothing written); unsigned recording is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import CarrierError
from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.adversarial.conftest import PROGRAM

TRUSTED = generate_keypair("ed25519")  # the maintenance job's (and the producer's) key
OTHER = generate_keypair("ed25519")  # a key no policy trusts (the attacker's own)
FORGED_PROGRAM = "f" * 64  # the program the attacker claims for its rows


def _signer(pair: KeyPair) -> PemSigner:
    return PemSigner.load(pair.private_pem)


def _policy() -> TrustPolicy:
    return TrustPolicy.from_public_key(TRUSTED.public_pem)


def _table(path: Path) -> None:
    for i in range(3):
        write_deltalake(str(path), pa.table({"x": [i, i + 10], "y": [str(i), "z"]}), mode="append")


@pytest.mark.parametrize("forger", [None, OTHER], ids=["unsigned", "untrusted-key"])
def test_a_signed_carry_forward_does_not_launder_the_continued_attestation(tmp_path: Path,
                                                                           forger: KeyPair | None) -> None:
    path = tmp_path / "t"
    _table(path)
    # The attacker: write access, no trusted key; claims the trusted producer's program for its rows.
    attest_after_write(str(path), model="m", program_hash=FORGED_PROGRAM,
                       signer=None if forger is None else _signer(forger))
    before = verify_table(DeltaCarrier(str(path)), policy=_policy())
    assert not before.passed  # signature_missing / signer not trusted: the forgery alone does not verify
    DeltaTable(str(path)).optimize.compact()
    # The maintenance job (the hook after OPTIMIZE) holds the trusted key.
    version = DeltaTable(str(path)).version()
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).carry_forward(signer=_signer(TRUSTED))
    assert err.value.code.value == "carry_forward_unverified", err.value
    assert DeltaTable(str(path)).version() == version  # nothing written
    after = verify_table(DeltaCarrier(str(path)), policy=_policy())
    assert not after.passed, after.verdict()


def test_a_signed_continued_attestation_is_carried_and_signed(tmp_path: Path) -> None:
    """The honest case: the producer signed with the key the maintenance job holds."""
    path = tmp_path / "t"
    _table(path)
    attest_after_write(str(path), model="m", program_hash=PROGRAM, signer=_signer(TRUSTED))
    DeltaTable(str(path)).optimize.compact()
    result = DeltaCarrier(str(path)).carry_forward(signer=_signer(TRUSTED))
    assert result is not None and result.continues is not None
    report = verify_table(DeltaCarrier(str(path)), policy=_policy())
    assert report.passed and report.signer is not None, report.verdict()
    assert "content;" not in report.verdict()


def test_an_unsigned_carry_forward_of_an_unsigned_attestation_is_unchanged(tmp_path: Path) -> None:
    """No signer: the carry-forward claims no signature, so there is nothing to launder (policy: signature_missing)."""
    path = tmp_path / "t"
    _table(path)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    DeltaTable(str(path)).optimize.compact()
    assert DeltaCarrier(str(path)).carry_forward() is not None
    assert not verify_table(DeltaCarrier(str(path)), policy=_policy()).passed
    assert verify_table(DeltaCarrier(str(path))).passed


def test_record_with_a_key_attests_its_own_program_instead(tmp_path: Path) -> None:
    """`attest record --key` after the OPTIMIZE: no carry-forward of the unsigned claim, an ordinary attestation of
    the program the key holder gives (the recorder's own, signed claim)."""
    path = tmp_path / "t"
    _table(path)
    attest_after_write(str(path), model="m", program_hash=FORGED_PROGRAM)
    DeltaTable(str(path)).optimize.compact()
    result = DeltaCarrier(str(path)).record(model="m", program_hash=PROGRAM, signer=_signer(TRUSTED))
    assert result.continues is None and result.manifest is not None
    assert result.manifest.program_hash == PROGRAM
    report = verify_table(DeltaCarrier(str(path)), policy=_policy())
    assert report.passed, report.verdict()


@pytest.mark.parametrize("forger", [None, OTHER], ids=["unsigned", "untrusted-key"])
def test_iceberg_the_same(tmp_path: Path, forger: KeyPair | None) -> None:
    """Iceberg (pyiceberg, a `replace` as rewrite_data_files commits it): the same refusal; the honest signed chain
    still carries (the statement names the table by the catalog reference there, not a path)."""
    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.iceberg.carrier import attest_after_write as iceberg_attest
    from tests.iceberg.conftest import CATALOG, ns_catalog, rows
    from tests.iceberg.rewrites import replace

    catalog = ns_catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=rows(0).schema)
    table.append(rows(0))
    table.append(rows(3))
    iceberg_attest(table, model="m", program_hash=FORGED_PROGRAM, signer=None if forger is None else _signer(forger))
    table = replace(catalog, catalog.load_table("ns.t"))
    head = table.current_snapshot()
    with pytest.raises(CarrierError) as err:
        IcebergCarrier(table, catalog_name=CATALOG).carry_forward(signer=_signer(TRUSTED))
    assert err.value.code.value == "carry_forward_unverified", err.value
    table = catalog.load_table("ns.t")
    assert table.current_snapshot() == head  # nothing written
    assert not verify_table(IcebergCarrier(table, catalog_name=CATALOG), policy=_policy()).passed

    table = catalog.create_table("ns.h", schema=rows(0).schema)
    table.append(rows(0))
    table.append(rows(3))
    iceberg_attest(table, model="m", program_hash=PROGRAM, signer=_signer(TRUSTED))
    table = replace(catalog, catalog.load_table("ns.h"))
    assert IcebergCarrier(table, catalog_name=CATALOG).carry_forward(signer=_signer(TRUSTED)) is not None
    report = verify_table(IcebergCarrier(catalog.load_table("ns.h"), catalog_name=CATALOG), policy=_policy())
    assert report.passed and report.signer == TRUSTED.key_id and "content;" not in report.verdict(), report.verdict()


def test_iceberg_signed_carry_after_the_attested_snapshot_expired(tmp_path: Path) -> None:
    """The honest chain the hook runs: rewrite, the attested snapshot expired (its envelope then read from the kept
    Puffin file), a signed carry-forward, everything else expired: still carried and signed."""
    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.iceberg.carrier import attest_after_write as iceberg_attest
    from tests.iceberg.conftest import CATALOG, ns_catalog, rows
    from tests.iceberg.rewrites import replace

    catalog = ns_catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=rows(0).schema)
    table.append(rows(0))
    table.append(rows(3))
    attested = iceberg_attest(table, model="m", program_hash=PROGRAM, signer=_signer(TRUSTED)).attested_version
    assert attested is not None
    table = replace(catalog, catalog.load_table("ns.t"))
    table.maintenance.expire_snapshots().by_id(int(attested)).commit()
    table = catalog.load_table("ns.t")
    assert table.snapshot_by_id(int(attested)) is None
    result = IcebergCarrier(table, catalog_name=CATALOG).carry_forward(signer=_signer(TRUSTED))
    assert result is not None and result.continues is not None
    table = catalog.load_table("ns.t")
    current = table.current_snapshot()
    assert current is not None
    for old in [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current.snapshot_id]:
        table.maintenance.expire_snapshots().by_id(old).commit()
        table = catalog.load_table("ns.t")
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG), policy=_policy())
    assert report.passed and report.signer == TRUSTED.key_id and report.level == "bytes", report.verdict()
