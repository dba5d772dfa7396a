"""Round 29: an audit of an Iceberg catalog against what Spark reads of a branch.

A table written and attested through Spark (main), then ``ALTER TABLE … CREATE BRANCH audit`` and an ``INSERT INTO
t.branch_audit`` no attestation covers (another job, no hook): Spark's readers of ``t.branch_audit`` read the 666 row.
``attest audit`` of the catalog said VERIFIED, exit 0, naming the branch in a note only (round 28). Now the branch is
a line of its own, STALE (tests/iceberg/test_audit_branches.py holds the same with pyiceberg's writes).
"""

from __future__ import annotations

import io
import json
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _attested_main(spark: SparkSession, prefix: str, columns: str = "id BIGINT", row: str = "(1)") -> tuple[str, str]:
    """A fresh table ``(id BIGINT)`` of one row (1) (or ``columns`` and ``row``), written and attested through the hook
    (main): its namespace and Spark name. The hook is uninstalled after: later writes are another job's."""
    from attest.spark import install

    ns = f"{prefix}_{uuid.uuid4().hex[:8]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    hook = install(spark, policy="required")
    try:
        spark.sql(f"CREATE TABLE {name} ({columns}) USING iceberg")
        spark.sql(f"INSERT INTO {name} VALUES {row}")
        hook.flush()  # main attested by the job
    finally:
        hook.uninstall()
    return ns, name


def _cli(warehouse: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``attest <args> --json`` on the Spark session's sqlite catalog, in process: exit code and document."""
    from attest.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main([*args, "--json", "--uri", f"sqlite:///{warehouse / 'iceberg_catalog.db'}", "--warehouse",
                     (warehouse / "iceberg").as_uri()])
    return code, json.loads(out.getvalue())


def audited_lines(warehouse: Path, ns: str) -> tuple[int, dict[str, str]]:
    """``attest audit iceberg://iceberg/<ns>``'s exit code and each line's outcome, by the line's name."""
    code, out = _cli(warehouse, "audit", f"iceberg://iceberg/{ns}")
    return code, {r["table"]: r["outcome"] for r in out["tables"]}


def test_a_branch_spark_reads_is_audited(spark: SparkSession, spark_warehouse: Path) -> None:
    ns, name = _attested_main(spark, "r29")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {name}.branch_audit VALUES (666)")  # another job's write, no hook
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}.branch_audit").collect()) == [1, 666]
    assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [1]

    assert audited_lines(spark_warehouse, ns) == (1, {f"iceberg://iceberg/{ns}.t": "VERIFIED",
                                                      f"iceberg://iceberg/{ns}.t.branch_audit": "STALE"})


def test_a_stream_to_a_branch_s_name_makes_a_table_the_audit_names(spark: SparkSession, spark_warehouse: Path) -> None:
    """``toTable("iceberg.ns.t.branch_b")`` of a stream makes a table ``branch_b`` of namespace ``ns.t`` (Iceberg 1.12),
    which Spark then reads for that name instead of branch ``b``: the hook attests that table as a sink; the audit
    checks the table and the branch (at another snapshot), a line each, the branch's saying a table shares its name
    (docs/streaming.md "Iceberg branches")."""
    from attest.cli import main
    from attest.spark import install

    ns = f"r29s_{uuid.uuid4().hex[:8]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    src = spark_warehouse / f"in_{ns}"
    src.mkdir()
    for i in range(2):
        (src / f"part-{i}.json").write_text(json.dumps({"id": 100 + i}) + "\n")
    hook = install(spark, policy="required")
    try:
        spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        spark.sql(f"ALTER TABLE {name} CREATE BRANCH b")
        spark.sql(f"INSERT INTO {name}.branch_b VALUES (2)")  # the branch moves on, attested on b
        query = (spark.readStream.format("json").schema("id long").option("maxFilesPerTrigger", 1).load(str(src))
                 .writeStream.option("checkpointLocation", str(spark_warehouse / f"ck_{ns}"))
                 .trigger(availableNow=True).toTable(f"{name}.branch_b"))
        query.awaitTermination()
        hook.flush()
        assert (hook.failed, hook.skipped) == (0, 0), hook.errors
    finally:
        hook.uninstall()
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}.branch_b").collect()) == [100, 101]  # the table's
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name} VERSION AS OF 'b'").collect()) == [1, 2]
    flags = ["--uri", f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}", "--warehouse",
             (spark_warehouse / "iceberg").as_uri()]
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["audit", f"iceberg://iceberg/{ns}", "--json", *flags])
    lines = sorted((r["table"], r["outcome"], any("a table is named" in n for n in r["notes"]))
                   for r in json.loads(out.getvalue())["tables"])
    shown = f"iceberg://iceberg/{ns}.t.branch_b"
    assert (code, lines) == (0, sorted([(f"iceberg://iceberg/{ns}.t", "VERIFIED", False), (shown, "VERIFIED", False),
                                        (shown, "VERIFIED", True)])), out.getvalue()


def test_a_branch_named_as_the_attested_snapshot_is_read_and_audited_as_the_branch(spark: SparkSession,
                                                                                     spark_warehouse: Path) -> None:
    """Round 30 (tests/adversarial/test_iceberg_branch_names_round30.py): Spark reads ``t.branch_<digits>`` as the
    branch and ``VERSION AS OF '<digits>'`` as the snapshot, so a branch named with the attested snapshot's id holds
    rows the snapshot does not. The audit's line is the branch's (STALE) and its note's command checks the branch: it
    named ``--snapshot-id <digits>``, which checks the attested snapshot and printed VERIFIED."""
    import shlex

    ns, name = _attested_main(spark, "r30")
    data = int(spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at").collect()[0][0])
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH `{data}` AS OF VERSION {data}")
    spark.sql(f"INSERT INTO {name}.branch_{data} VALUES (666)")  # another job's write, no hook
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}.branch_{data}").collect()) == [1, 666]
    assert [r[0] for r in spark.sql(f"SELECT id FROM {name} VERSION AS OF '{data}'").collect()] == [1]

    def run(*args: str) -> tuple[int, dict[str, Any]]:
        return _cli(spark_warehouse, *args)

    code, out = run("audit", f"iceberg://iceberg/{ns}")
    line = {r["table"]: r for r in out["tables"]}[f"iceberg://iceberg/{ns}.t.branch_{data}"]
    assert (code, line["outcome"]) == (1, "STALE"), out
    [note] = [n for n in line["notes"] if "checks it alone" in n]
    command = shlex.split(note.split("`")[1])[1:]
    assert command[-2:] == ["--branch", str(data)], command
    code, checked = run(*command)
    assert code == 1 and [e["code"] for e in checked["errors"]] == ["stale"], checked
    code, snapshot = run("verify", f"iceberg://iceberg/{ns}.t", "--snapshot-id", str(data))
    assert code == 0 and snapshot["verdict"].startswith("VERIFIED"), snapshot  # the snapshot, as VERSION AS OF reads


def test_a_policy_naming_a_branch_covers_spark_s_reads_of_it(spark: SparkSession, spark_warehouse: Path,
                                                              tmp_path: Path) -> None:
    """Round 30: ``require_signed`` naming a branch's line (``iceberg://iceberg/<ns>.t.branch_*``) covers Spark's
    reads of ``t.branch_audit`` — the read gate checks the branch's snapshot by id, and matched the table's own names
    only: the branch's unsigned attestation was let through — and ``attest.spark.audit``'s row of the branch. Main,
    which the glob does not name, is read as before."""
    import attest.spark
    from attest.errors import VerificationRefusedError
    from attest.signing.keys import generate_keypair
    from attest.spark import install, require_verified

    ns, name = _attested_main(spark, "r30p")
    (tmp_path / "ci.pub").write_bytes(generate_keypair("ecdsa-p256").public_pem)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'require_signed = ["iceberg://iceberg/{ns}.t.branch_*"]\n[[keys]]\npublic_key = "ci.pub"\n')
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    hook = install(spark, policy="required")
    try:
        spark.sql(f"INSERT INTO {name}.branch_audit VALUES (2)")  # attested on the branch, unsigned
        hook.flush()
    finally:
        hook.uninstall()
    with require_verified(spark, str(policy)):
        assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [1]  # main: not named, unsigned ok
        with pytest.raises(VerificationRefusedError) as refused:
            spark.sql(f"SELECT id FROM {name}.branch_audit").collect()  # was: let through, [1, 2]
        assert refused.value.code.value == "signature_missing", refused.value
    report = attest.spark.audit(spark, str(policy), catalogs=[f"iceberg.{ns}"])
    rows = {r.table: (r.outcome, r.code) for r in report.rows}
    assert rows == {name: ("VERIFIED", None), f"{name}.branch_audit": ("NOT VERIFIED", "signature_missing")}, rows
