"""Round 31: an Iceberg stream that names a branch, a tag or a snapshot.

Spark reads ``spark.readStream.table("t.branch_audit")`` — and ``t.tag_x``, ``t.snapshot_id_N``, the ``branch`` read
option, ``format("iceberg").option("branch", b).load(t)`` — as a stream of main: Iceberg 1.12's micro-batch stream
plans from the table's current snapshot whatever the name selected (measured below: a branch's and a tag's rows are
never read). The read gate checked such a stream as a table *named* ``t.branch_audit`` and refused every one as
``table_unreadable``, main attested or not. It now checks main's current snapshot, the rows the stream reads; the
branch a stream names still brings a trust policy's glob naming it in scope (the stricter reading).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_spark_audit_branches import _attested_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _rows(spark: SparkSession, reader: Any) -> list[int]:
    """What a stream of ``reader`` reads when started now (a memory sink, run to the end of what is there)."""
    name = f"r31_{uuid.uuid4().hex[:8]}"
    query = reader.writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return sorted(r[0] for r in spark.sql(f"SELECT * FROM {name}").collect())


def _refs(spark: SparkSession, prefix: str) -> tuple[str, str, dict[str, Any]]:
    """An attested main (row 1); branch ``audit`` with an unattested 666; tag ``v2`` at an unattested snapshot main was
    rolled back from. Main still reads [1], attested. The streams that name each ref."""
    ns, name = _attested_main(spark, prefix)
    first = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots").collect()[-1][0]
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {name}.branch_audit VALUES (666)")  # no hook: no attestation
    spark.sql(f"INSERT INTO {name} VALUES (2)")
    second = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at").collect()[-1][0]
    spark.sql(f"ALTER TABLE {name} CREATE TAG v2")
    spark.sql(f"CALL iceberg.system.rollback_to_snapshot('{ns}.t', {first})")
    spark.sql(f"REFRESH TABLE {name}")
    streams = {
        "t.branch_audit": lambda: spark.readStream.table(f"{name}.branch_audit"),
        "t.tag_v2": lambda: spark.readStream.table(f"{name}.tag_v2"),
        f"t.snapshot_id_{second}": lambda: spark.readStream.table(f"{name}.snapshot_id_{second}"),
        "option branch": lambda: spark.readStream.option("branch", "audit").table(name),
        "format(iceberg) option branch": lambda: spark.readStream.format("iceberg").option("branch", "audit")
        .load(name),
    }
    return ns, name, streams


def test_a_stream_naming_a_ref_reads_main_and_is_checked_as_main(spark: SparkSession) -> None:
    from attest.spark import require_verified

    _, name, streams = _refs(spark, "r31")
    assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [1]
    for what, stream in streams.items():
        assert _rows(spark, stream()) == [1], what  # Spark's own reading: main's rows, not the ref's
    with require_verified(spark) as gate:
        for what, stream in streams.items():
            assert _rows(spark, stream()) == [1], what  # was: refused, table_unreadable (a table named t.branch_…)
        assert gate.checked == 2 and not gate.refused, gate.refused  # main; main with the branch named (its own key)


def test_a_stream_naming_a_ref_of_an_unattested_main_is_refused_as_stale(spark: SparkSession) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    _, name, streams = _refs(spark, "r31u")
    spark.sql(f"INSERT INTO {name} VALUES (3)")  # main now unattested
    with require_verified(spark):
        for what, stream in streams.items():
            with pytest.raises(VerificationRefusedError) as refused:
                _rows(spark, stream())
            assert refused.value.code.value == "stale", (what, str(refused.value))
            assert f"{name.split('.', 1)[1]} snapshot" in str(refused.value), (what, str(refused.value))


def test_a_policy_naming_a_branch_covers_a_stream_that_names_it(spark: SparkSession, tmp_path: Path) -> None:
    """The stricter reading: a stream written as a read of branch ``audit`` is in scope of a glob naming the
    branch's line, though Iceberg streams main; a stream of the table itself is not."""
    from attest.errors import VerificationRefusedError
    from attest.signing.keys import generate_keypair
    from attest.spark import require_verified

    ns, name, streams = _refs(spark, "r31p")
    (tmp_path / "ci.pub").write_bytes(generate_keypair("ecdsa-p256").public_pem)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'require_signed = ["iceberg://iceberg/{ns}.t.branch_*"]\n[[keys]]\npublic_key = "ci.pub"\n')
    with require_verified(spark, str(policy)):
        assert _rows(spark, spark.readStream.table(name)) == [1]  # main: not named
        for what in ("t.branch_audit", "option branch", "format(iceberg) option branch"):
            with pytest.raises(VerificationRefusedError) as refused:
                _rows(spark, streams[what]())
            assert refused.value.code.value == "signature_missing", (what, str(refused.value))


def test_a_policy_naming_a_tag_covers_spark_s_reads_of_it(spark: SparkSession, tmp_path: Path) -> None:
    """``require_signed`` naming a tag's line (``…/ns.t.tag_*``) covers ``SELECT … FROM t.tag_v1`` and ``VERSION AS
    OF 'v1'``: the plan holds only the snapshot id, and the tag naming that snapshot brings it in scope. Before, the
    glob covered nothing and the tag's unsigned attestation was let through. Main, at another snapshot, is not named."""
    from attest.errors import VerificationRefusedError
    from attest.signing.keys import generate_keypair
    from attest.spark import install, require_verified

    ns, name = _attested_main(spark, "r31t")
    spark.sql(f"ALTER TABLE {name} CREATE TAG v1")
    hook = install(spark, policy="required")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (2)")  # main moves on, attested
        hook.flush()
    finally:
        hook.uninstall()
    (tmp_path / "ci.pub").write_bytes(generate_keypair("ecdsa-p256").public_pem)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'require_signed = ["iceberg://iceberg/{ns}.t.tag_*"]\n[[keys]]\npublic_key = "ci.pub"\n')
    with require_verified(spark, str(policy)):
        # Main: no tag of a reader's names its head (the hook's retention tag, recipe-attest, is none).
        assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()) == [1, 2]
        for sql in (f"SELECT id FROM {name}.tag_v1", f"SELECT id FROM {name} VERSION AS OF 'v1'"):
            with pytest.raises(VerificationRefusedError) as refused:
                spark.sql(sql).collect()  # was: let through, [1]
            assert refused.value.code.value == "signature_missing", (sql, str(refused.value))


@pytest.mark.parametrize(("tag", "made"), [
    ("release", "CREATE TAG release"),
    # round 32: recipe-attest's own retention tag moved onto those rows by SQL; left out by its name alone before
    ("recipe-attest", "CREATE OR REPLACE TAG `recipe-attest`"),
])
def test_a_tag_spark_reads_is_audited(spark: SparkSession, spark_warehouse: Path, tag: str, made: str) -> None:
    """A tag at rows no attestation binds, main back at its attested snapshot: Spark's readers of ``t.tag_release``
    read the 666 row. ``attest audit`` and ``attest.spark.audit`` passed it (tags were left out as time travel, and a
    tag named as recipe-attest's retention tag by its name alone); the tag is now a line of its own, not verified (a
    retention tag is left out only on a snapshot carrying an attestation of ours)."""
    import attest.spark
    from carriers.spark.catalog_audit import shown
    from tests.adversarial.test_spark_audit_branches import audited_lines

    ns, name = _attested_main(spark, "r31a")
    attested = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").collect()[0][0]
    spark.sql(f"INSERT INTO {name} VALUES (666)")  # another job's write, no hook
    spark.sql(f"ALTER TABLE {name} {made}")
    spark.sql(f"CALL iceberg.system.rollback_to_snapshot('{ns}.t', {attested})")
    spark.sql(f"REFRESH TABLE {name}")
    read = shown([f"tag_{tag}"])
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}.{read}").collect()) == [1, 666]
    assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [1]

    assert audited_lines(spark_warehouse, ns) == (1, {f"iceberg://iceberg/{ns}.t": "VERIFIED",
                                                      f"iceberg://iceberg/{ns}.t.tag_{tag}": "STALE"})
    report = attest.spark.audit(spark, catalogs=[f"iceberg.{ns}"])
    rows = {r.table: (r.outcome, r.code) for r in report.rows}
    assert rows == {name: ("VERIFIED", None), f"{name}.{read}": ("STALE", "stale")}, rows
