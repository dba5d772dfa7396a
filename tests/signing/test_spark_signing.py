"""Signed attestations in Spark: the hook signs what it records, and the read gate refuses to read a table version
that does not verify under the trust policy (docs/spark.md, "The read gate")."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import VerificationRefusedError
from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.gate import ReadGate

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def ci() -> KeyPair:
    return generate_keypair("ed25519")


@pytest.fixture
def gates() -> Iterator[list[ReadGate]]:
    made: list[ReadGate] = []
    yield made
    for gate in made:
        gate.uninstall()


def _uid() -> str:
    return uuid.uuid4().hex[:8]


def _signed_delta(spark: SparkSession, tmp_path: Path, ci: KeyPair, rows: int = 3) -> str:
    """A Delta table written by Spark and attested, signed, by the hook."""
    from attest.spark import attested_write

    path = str(tmp_path / f"up_{_uid()}")
    with attested_write(spark, model="upstream", signer=PemSigner.load(ci.private_pem)) as results:
        spark.range(rows).write.format("delta").save(path)
    assert len(results) == 1 and results[0].signer == ci.key_id and results[0].envelope, results
    return path


def _gate(spark: SparkSession, gates: list[ReadGate], policy: Any, **kw: Any) -> ReadGate:
    from attest.spark import require_verified

    gate = require_verified(spark, policy, **kw)
    gates.append(gate)
    return gate


def test_hook_signs_and_the_gate_reads_an_intact_upstream(spark: SparkSession, tmp_path: Path, ci: KeyPair,
                                                          gates: list[ReadGate]) -> None:
    path = _signed_delta(spark, tmp_path, ci)
    gate = _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem))
    assert spark.read.format("delta").load(path).count() == 3
    assert gate.checked == 1 and not gate.refused
    # Cached per table version: a second action on the same version verifies nothing again.
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [0, 1, 2]
    assert gate.checked == 1


def test_gate_refuses_a_tampered_upstream_before_the_query_runs(spark: SparkSession, tmp_path: Path, ci: KeyPair,
                                                                gates: list[ReadGate]) -> None:
    from deltalake import DeltaTable

    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier, attest_after_write

    path = _signed_delta(spark, tmp_path, ci)
    # Someone with write access to the storage adds rows and re-attests the table with their own key: the
    # attestation is self-consistent (it verifies without a policy), but the CI key did not sign it.
    spark.range(100, 102).write.format("delta").mode("append").save(path)
    attacker = PemSigner.load(generate_keypair("ed25519").private_pem)
    attest_after_write(path, model="upstream", program_hash="f" * 64, signer=attacker)
    assert verify_table(DeltaCarrier(path), level="files").passed
    _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem))
    with pytest.raises(VerificationRefusedError) as refused:
        spark.read.format("delta").load(path).count()
    assert refused.value.code.value == "signature_invalid" and "upstream" not in refused.value.code.value
    assert Path(path).name in str(refused.value)
    # spark.sql statements are checked before they execute: an INSERT ... SELECT from it commits nothing.
    sink = str(tmp_path / f"sink_{_uid()}")
    spark.range(1).write.format("delta").save(sink)
    before = DeltaTable(sink).version()
    with pytest.raises(VerificationRefusedError):
        spark.sql(f"INSERT INTO delta.`{sink}` SELECT * FROM delta.`{path}`")
    assert DeltaTable(sink).version() == before
    # Parameterized statements too (analysed with the parameters unbound); one naming its table only through a
    # parameter is refused: which table it reads cannot be known before Spark binds it.
    with pytest.raises(VerificationRefusedError) as refused:
        spark.sql(f"INSERT INTO delta.`{sink}` SELECT * FROM delta.`{path}` WHERE id > :low", {"low": 0})
    assert refused.value.code.value == "signature_invalid"
    with pytest.raises(VerificationRefusedError) as refused:
        spark.sql(f"INSERT INTO delta.`{sink}` SELECT * FROM IDENTIFIER(:t)", {"t": f"delta.`{path}`"})
    assert refused.value.code.value == "invalid_argument"
    assert DeltaTable(sink).version() == before
    # A DataFrame writer whose source reads it: refused too, before anything is written.
    with pytest.raises(VerificationRefusedError):
        spark.read.format("delta").load(path).write.format("delta").mode("append").save(sink)
    assert DeltaTable(sink).version() == before


def test_gate_refuses_another_signer_and_unsigned(spark: SparkSession, tmp_path: Path, ci: KeyPair,
                                                  gates: list[ReadGate]) -> None:
    path = _signed_delta(spark, tmp_path, ci)
    other = generate_keypair("ecdsa-p256")
    _gate(spark, gates, TrustPolicy.from_public_key(other.public_pem))
    with pytest.raises(VerificationRefusedError) as refused:
        spark.read.format("delta").load(path).collect()
    assert refused.value.code.value == "signature_invalid"
    gates.pop().uninstall()
    # An attestation recorded without a key: refused where the policy requires signing.
    from attest.spark import attested_write

    unsigned = str(tmp_path / f"unsigned_{_uid()}")
    with attested_write(spark, model="upstream"):
        spark.range(2).write.format("delta").save(unsigned)
    _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem))
    with pytest.raises(VerificationRefusedError) as refused:
        spark.read.format("delta").load(unsigned).toPandas()
    assert refused.value.code.value == "signature_missing"


def test_optional_logs_and_goes_on_disabled_does_nothing(spark: SparkSession, tmp_path: Path, ci: KeyPair,
                                                         gates: list[ReadGate],
                                                         caplog: pytest.LogCaptureFixture) -> None:
    unattested = str(tmp_path / f"plain_{_uid()}")
    spark.range(4).write.format("delta").save(unattested)
    gate = _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem), mode="optional")
    with caplog.at_level(logging.WARNING, logger="attest.spark"):
        assert spark.read.format("delta").load(unattested).count() == 4
    assert gate.warnings and "unattested" in gate.warnings[0] and "unattested" in caplog.text
    gates.pop().uninstall()
    off = _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem), mode="disabled")
    assert spark.read.format("delta").load(unattested).count() == 4 and off.checked == 0


def test_gate_checks_iceberg_reads(spark: SparkSession, tmp_path: Path, ci: KeyPair, gates: list[ReadGate]) -> None:
    from attest.spark import attested_write

    name = f"iceberg.gate_{_uid()}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")
    spark.sql(f"CREATE TABLE {name} (id bigint) USING iceberg")
    with attested_write(spark, model="ice", signer=PemSigner.load(ci.private_pem)) as results:
        spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
    assert results and results[0].signer == ci.key_id
    gate = _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem))
    assert spark.table(name).count() == 2 and gate.checked == 1
    # A commit outside any attestation: the next read is refused, naming the table.
    spark.sql(f"INSERT INTO {name} VALUES (3)")
    with pytest.raises(VerificationRefusedError) as refused:
        spark.table(name).collect()
    assert refused.value.code.value == "stale" and name.split(".", 1)[1] in str(refused.value)


def test_spark_write_audit_publish(spark: SparkSession, ci: KeyPair, gates: list[ReadGate]) -> None:
    """A Spark job writes to an Iceberg branch, the hook attests (and signs) it on the branch, publish verifies the
    branch head and fast-forwards main; main then reads through the gate."""
    from attest.spark import attested_write
    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.iceberg.publish import publish
    from carriers.spark.hook import _pyiceberg_props_from_spark

    namespace = f"wap_{_uid()}"
    name = f"iceberg.{namespace}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{namespace}")
    spark.sql(f"CREATE TABLE {name} (id bigint) USING iceberg")
    signer = PemSigner.load(ci.private_pem)
    with attested_write(spark, model="wap", signer=signer):
        spark.sql(f"INSERT INTO {name} VALUES (1)")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    with attested_write(spark, model="wap", signer=signer) as results:
        spark.sql(f"INSERT INTO {name}.branch_audit VALUES (2), (3)")
    assert len(results) == 1 and results[0].signer == ci.key_id, results
    from pyiceberg.catalog import load_catalog

    props = _pyiceberg_props_from_spark(spark, "iceberg")
    assert props is not None
    table = load_catalog("iceberg", **props).load_table(f"{namespace}.t")
    main_before = table.current_snapshot()
    assert main_before is not None
    result = publish(IcebergCarrier(table, catalog_name="iceberg"), "audit", policy=TrustPolicy.from_public_key(
        ci.public_pem))
    assert result.published and result.previous_main == str(main_before.snapshot_id)
    # The hook moved the branch's own retention tag; publish moved main's onto the same attestation (docs/iceberg.md).
    from carriers.iceberg.carriage import RETAIN_TAG, retain_tag_name

    refs = load_catalog("iceberg", **props).load_table(f"{namespace}.t").metadata.refs
    assert refs[RETAIN_TAG].snapshot_id == refs[retain_tag_name("audit")].snapshot_id == refs["main"].snapshot_id
    spark.sql(f"REFRESH TABLE {name}")
    gate = _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem))
    assert sorted(r.id for r in spark.table(name).collect()) == [1, 2, 3] and gate.checked == 1


def test_a_job_with_the_hook_and_the_gate_reads_back_what_it_wrote(spark: SparkSession, tmp_path: Path,
                                                                  ci: KeyPair, gates: list[ReadGate]) -> None:
    """Both layers on one patch layer (carriers/spark/intercept.py): the gate checks, then the write is stamped; a
    table the job just wrote is read once its (signed) attestation landed; either layer leaving keeps the other."""
    from attest.spark import install

    hook = install(spark, "required", signer=PemSigner.load(ci.private_pem))
    try:
        gate = _gate(spark, gates, TrustPolicy.from_public_key(ci.public_pem))
        path = str(tmp_path / f"both_{_uid()}")
        spark.range(4).write.format("delta").save(path)
        # No flush: the gate itself waits for the hook's pending attestation before checking the read.
        assert spark.read.format("delta").load(path).count() == 4
        assert gate.checked == 1 and not gate.refused
        spark.range(2).write.format("delta").mode("append").save(path)
        assert spark.read.format("delta").load(path).count() == 6
        hook.flush()
        assert [r.signer for r in hook.results] == [ci.key_id, ci.key_id] and hook.failed == 0
    finally:
        hook.uninstall()
    # The hook is gone; the gate still gates: an unsigned attestation of a new version is refused.
    from carriers.delta.carrier import attest_after_write

    spark.range(1).write.format("delta").mode("append").save(path)
    attest_after_write(path, model="upstream", program_hash="e" * 64)
    with pytest.raises(VerificationRefusedError) as refused:
        spark.read.format("delta").load(path).count()
    assert refused.value.code.value == "signature_missing"
