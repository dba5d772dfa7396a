"""Round 28 on the Spark hook: the scope of an Iceberg attestation is one branch.

Round 27 judged ``REPLACE BRANCH b`` at branch ``b``. Its notes left the skip keys by reading: a write of a branch
through ``spark.wap.branch`` names the table as a write of main does, so a skip of one was made good by an
attestation of the other. Measured (Spark 4.1, Iceberg 1.12's runtime): main rolled back to a snapshot written
before the hook (a skipped write), then ``INSERT INTO t`` under ``spark.wap.branch=audit`` (attested on ``audit``),
and ``policy="required"`` passed ``flush()`` while every reader of ``t`` read the 666 row; the other way, a write of
``audit`` superseded by another writer's commit on ``audit`` was made good by the job's next write of main. And
Iceberg's procedures name a branch: ``CALL fast_forward(t, 'audit', 'x')`` moves ``audit``, not main, and was
judged at main (which had not moved): the job's attested ``audit`` read another writer's unattested row and
``flush()`` passed. ``rewrite_data_files(branch => 'audit')`` was carried forward at main (nothing to carry) and
never at ``audit``.

Now a skip is keyed by the table and the branch (carriers/spark/hook.py ``_table_key``), and a procedure's branch
argument is the branch its event is about (``_maintenance_event``). Each refusal test failed on the code before this
round.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from tests.adversarial.spark_iceberg import java_table, unattested_iceberg_table, verify_iceberg
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _ids(spark: SparkSession, name: str) -> list[int]:
    spark.sql(f"REFRESH TABLE {name.removesuffix('.branch_audit')}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())


def _other_writer(spark: SparkSession, name: str, branch: str, value: int, folder: Path) -> None:
    """Another writer appends ``value`` to ``branch``: Iceberg's Java API in the job's JVM, which no listener of
    Spark's sees (pyiceberg's commit would wait on the sqlite catalog while the test holds the listener)."""
    import pyarrow.parquet as pq

    field = pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    path = folder / f"other-{uuid.uuid4().hex[:8]}.parquet"
    pq.write_table(pa.table({"id": pa.array([value], pa.int64())}, schema=pa.schema([field])), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    metrics = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
        table.io().newInputFile(f"file://{path}"), jvm.org.apache.iceberg.MetricsConfig.getDefault())
    data = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withMetrics(metrics).build()
    table.newAppend().appendFile(data).toBranch(branch).commit()


def _head(spark: SparkSession, name: str, branch: str) -> Any:
    return spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = '{branch}'").collect()[0][0]


def _main_and_audit(spark: SparkSession, hook: Hook, properties: str = "") -> tuple[str, str]:
    """A fresh table ``(id BIGINT)`` (with ``properties``): main's attested write of 1, then branch ``audit`` made
    from it: its Spark name and catalog identifier."""
    ns = f"r28_{uuid.uuid4().hex[:8]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg {properties}")
    spark.sql(f"INSERT INTO {name} VALUES (1)")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    hook.flush()
    return name, ident


def _three_writes_of_audit(spark: SparkSession, hook: Hook) -> tuple[str, str]:
    """``_main_and_audit``, then three attested writes of ``audit`` (a file each, for a rewrite to compact)."""
    name, ident = _main_and_audit(spark, hook)
    for i in range(3):
        spark.sql(f"INSERT INTO {name}.branch_audit VALUES ({10 + i})")
    hook.flush()
    return name, ident


def _verify_audit(warehouse: Path, ident: str) -> Any:
    """``attest.api.verify`` of branch ``audit``'s head at the files level."""
    from pyiceberg.catalog.sql import SqlCatalog

    from attest.api import verify
    from carriers.spark.session import pyiceberg_catalog_properties

    table = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse)).load_table(ident)
    return verify(table, snapshot_id="audit", level="files")


def test_a_write_of_a_branch_does_not_make_good_a_skipped_write_of_main(spark: SparkSession) -> None:
    """Main rolled back to rows no attestation covers (a skipped write), then the job's write of branch ``audit``
    through ``spark.wap.branch`` (its event names ``t``, as main's do): ``flush()`` passed while readers of ``t`` read
    666. Held: a later write of main makes the rollback good, as before."""
    from attest.errors import PolicyError
    from attest.spark import install

    name, old = unattested_iceberg_table(spark, "r28_")  # its 666 row: no attestation covers it
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.wap.enabled' = 'true')")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    hook = install(spark, policy="required")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        hook.flush()
        spark.sql(f"CALL iceberg.system.rollback_to_snapshot(table => '{name.split('.', 1)[1]}', "
                  f"snapshot_id => {old})")
        with session_conf(spark, "spark.wap.branch", "audit"):
            spark.sql(f"INSERT INTO {name} VALUES (7)")
        with pytest.raises(PolicyError, match="CALL rollback_to_snapshot"):
            hook.flush()  # was: passed
        assert _ids(spark, name) == [666] and _ids(spark, f"{name}.branch_audit") == [7, 666]
        assert hook.attested == 2  # main's write, then audit's
        spark.sql(f"INSERT INTO {name} VALUES (2)")  # the job writes main again: attested, the rollback made good
        hook.flush()
    finally:
        hook.uninstall()


def test_a_write_of_main_does_not_make_good_a_skipped_write_of_a_branch(spark: SparkSession, hook: Hook,
                                                                       spark_warehouse: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's write of ``audit`` (through ``spark.wap.branch``) superseded there by another writer's commit before
    the hook attested it (the hook's worker held until then): a skipped write, which the job's next write of main made
    good — ``audit`` read the job's 7 under no attestation and ``flush()`` passed."""
    import threading

    from attest.errors import PolicyError
    from carriers.spark.hook import Hook as HookClass

    go = threading.Event()
    go.set()
    attest = HookClass._attest_iceberg

    def held(self: Hook, event: Any) -> Any:
        go.wait(timeout=30)  # the worker, not the listener: the other writer's commit must not wait on it
        return attest(self, event)

    monkeypatch.setattr(HookClass, "_attest_iceberg", held)

    name, ident = _main_and_audit(spark, hook, "TBLPROPERTIES ('write.wap.enabled' = 'true')")
    go.clear()  # the hook attests the next write only once the other writer has committed
    with session_conf(spark, "spark.wap.branch", "audit"):
        spark.sql(f"INSERT INTO {name} VALUES (7)")
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()  # type: ignore[union-attr]  # the write is queued
    _other_writer(spark, name, "audit", 999, spark_warehouse)
    go.set()
    spark.sql(f"INSERT INTO {name} VALUES (2)")
    with pytest.raises(PolicyError, match="superseded"):
        hook.flush()  # was: passed
    assert _ids(spark, f"{name}.branch_audit") == [1, 7, 999]
    report = verify_iceberg(spark_warehouse, ident)
    assert report.passed, report.verdict()  # main: the job's own attested write


def test_fast_forward_of_a_branch_the_job_attested_to_unattested_rows_fails_required(
        spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    """``CALL fast_forward(t, 'audit', 'x')`` sets ``audit`` to ``x``'s head, which another writer appended 999 to:
    judged at main (attested, unmoved), it passed. Held: ``audit`` fast-forwarded to a head the job attested."""
    from attest.errors import PolicyError

    name, _ = unattested_iceberg_table(spark, "r28_")
    ident = name.split(".", 1)[1]
    spark.sql(f"INSERT INTO {name} VALUES (1)")  # main: attested
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {name}.branch_audit VALUES (7)")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH x AS OF VERSION {_head(spark, name, 'audit')}")
    spark.sql(f"INSERT INTO {name}.branch_x VALUES (8)")  # the job's: attested on x
    spark.sql(f"CALL iceberg.system.fast_forward('{ident}', 'audit', 'x')")
    hook.flush()
    assert hook.skipped == 0 and _ids(spark, f"{name}.branch_audit") == [1, 7, 8, 666]
    _other_writer(spark, name, "x", 999, spark_warehouse)
    spark.sql(f"CALL iceberg.system.fast_forward(table => '{ident}', branch => 'audit', to => 'x')")
    with pytest.raises(PolicyError, match=r"CALL fast_forward on \S+ \(branch audit\)"):
        hook.flush()  # was: passed
    assert _ids(spark, f"{name}.branch_audit") == [1, 7, 8, 666, 999]
    assert verify_iceberg(spark_warehouse, ident).passed  # main did not move


def test_a_rewrite_of_a_branch_is_carried_forward_on_that_branch(spark: SparkSession, hook: Hook,
                                                                 spark_warehouse: Path) -> None:
    """``rewrite_data_files(branch => 'audit')`` compacts ``audit`` only: its attestation is carried forward there
    (was: looked for at main, which had not changed, and nothing written)."""
    name, ident = _three_writes_of_audit(spark, hook)
    before = _head(spark, name, "audit")
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{ident}', branch => 'audit', "
              "options => map('min-input-files', '2'))")
    hook.flush()
    rewrite = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots WHERE operation = 'replace'").collect()[0][0]
    assert _head(spark, name, "audit") != before
    assert (hook.carried, hook.skipped) == (1, 0), hook.errors
    report = _verify_audit(spark_warehouse, ident)
    assert report.passed and report.attested_version == str(rewrite), report.verdict()  # was: the first write's
    assert "compacted" not in report.verdict()  # carried forward: no row read at verify


def test_a_java_rewrite_of_a_branch_is_carried_forward_on_that_branch(spark: SparkSession, hook: Hook,
                                                                      spark_warehouse: Path) -> None:
    """Iceberg's Java action ``rewriteDataFiles(table).toBranch("audit")`` (no statement names it; the hook sees its
    commit through Iceberg's listener): carried forward on ``audit``, whose head the commit is (was: looked for at
    main)."""
    name, ident = _three_writes_of_audit(spark, hook)
    jvm, jspark = spark._jvm, spark._jsparkSession  # type: ignore[attr-defined]
    result = jvm.org.apache.iceberg.spark.actions.SparkActions.get(jspark).rewriteDataFiles(
        java_table(spark, name)).toBranch("audit").option("min-input-files", "2").execute()
    assert result.addedDataFilesCount() == 1
    hook.flush()
    assert (hook.carried, hook.skipped) == (1, 0), hook.errors
    report = _verify_audit(spark_warehouse, ident)
    assert report.passed and "compacted" not in report.verdict(), report.verdict()
