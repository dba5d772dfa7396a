"""Round 25 on the Spark hook: statements that change a table's rows outside the writes the hook knew.

The hook (``policy="required"``) promises a job fails at ``flush()`` unless each of its writes is attested. It knew
inserts, overwrites, CTAS / RTAS, MERGE / UPDATE / DELETE, and maintenance (OPTIMIZE, VACUUM, Iceberg's rewrite and
cleanup procedures); every other command was dropped without a word. Measured (Spark 4.1, delta-spark 4.4, Iceberg
1.12), each left its table's newest version unattested and ``flush()`` passed:

- Delta ``TRUNCATE TABLE`` (``attest verify``: stale), Iceberg ``TRUNCATE TABLE`` and an Iceberg ``DELETE`` answered
  from metadata alone (whole files: the table's newest snapshot carried no attestation) — now attested as writes, as a
  ``DELETE`` of every row always was;
- Delta ``RESTORE`` (SQL and ``DeltaTable.restoreToVersion``), ``CREATE TABLE … SHALLOW CLONE``, ``CONVERT TO DELTA``,
  ``CREATE OR REPLACE TABLE … (columns)`` (every row dropped), and Iceberg's ``rollback_to_snapshot``,
  ``set_current_snapshot``, ``add_files`` … procedures — their program is not a producer's, so they are never
  attested: each is now a skipped write, which ``required`` refuses unless the table's version then verifies against
  an attestation in force (a rollback to an attested snapshot) or a later write of the job attests the table again
  (a replace-and-load, a restore and a rerun pass).

Each test failed on the code before this round (carriers/spark/hook.py ``_TABLE_DELETES``, ``_DELTA_UNATTESTED``,
``_ICEBERG_UNATTESTED``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.spark_iceberg import verify_iceberg
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _u() -> str:
    return uuid.uuid4().hex[:8]


def _delta(spark: SparkSession, hook: Hook, folder: Path) -> str:
    """An attested Delta table of two versions at ``folder`` (ids 0-2, then 100-104)."""
    spark.range(3).write.format("delta").save(str(folder))
    spark.range(100, 105).write.format("delta").mode("append").save(str(folder))
    hook.flush()
    return str(folder)


def _iceberg(spark: SparkSession, hook: Hook, *, partitioned: bool = False) -> tuple[str, str]:
    """An attested Iceberg table (``iceberg.<ns>.t``) of two appends: (its Spark name, its pyiceberg identifier)."""
    ns = f"r25_{_u()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING) USING iceberg"
              + (" PARTITIONED BY (p)" if partitioned else ""))
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {name} VALUES (666, 'x')")
    hook.flush()
    return name, f"{ns}.t"


def test_a_delta_truncate_is_attested_as_the_jobs_write(spark: SparkSession, hook: Hook,
                                                        spark_warehouse: Path) -> None:
    from attest.api import verify

    table = _delta(spark, hook, spark_warehouse / f"r25_trunc_{_u()}")
    spark.sql(f"CREATE TABLE r25_t_{_u()} USING delta LOCATION '{table}'")  # TRUNCATE takes catalog tables only
    name = next(r.tableName for r in spark.sql("SHOW TABLES").collect() if r.tableName.startswith("r25_t_"))
    spark.sql(f"TRUNCATE TABLE {name}")
    hook.flush()  # was: passed, the truncated version unattested
    report = verify(table)
    assert report.passed, report.verdict()  # was: stale (data changed after the attested version: TRUNCATE)
    assert spark.read.format("delta").load(table).count() == 0
    spark.sql(f"DROP TABLE {name}")  # the catalog entry only (an external table: its folder stays)


def test_iceberg_truncate_and_a_metadata_only_delete_are_attested(spark: SparkSession, hook: Hook,
                                                                  spark_warehouse: Path) -> None:
    name, ident = _iceberg(spark, hook, partitioned=True)
    spark.sql(f"DELETE FROM {name} WHERE p = 'x'")  # whole files of one partition: Iceberg deletes them in metadata
    hook.flush()
    report = verify_iceberg(spark_warehouse, ident)
    assert report.passed, report.verdict()  # was: the delete snapshot unattested, flush() passed
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()) == [1, 2]
    spark.sql(f"TRUNCATE TABLE {name}")
    hook.flush()
    report = verify_iceberg(spark_warehouse, ident)
    assert report.passed, report.verdict()


@pytest.mark.parametrize("how", ["sql", "api"])
def test_a_restore_alone_fails_required_and_a_later_write_makes_it_good(
    spark: SparkSession, hook: Hook, spark_warehouse: Path, how: str
) -> None:
    from attest.errors import PolicyError

    table = _delta(spark, hook, spark_warehouse / f"r25_restore_{how}_{_u()}")
    if how == "sql":
        spark.sql(f"RESTORE TABLE delta.`{table}` TO VERSION AS OF 0")
    else:
        from delta.tables import DeltaTable

        DeltaTable.forPath(spark, table).restoreToVersion(0)
    with pytest.raises(PolicyError, match="RESTORE"):
        hook.flush()  # was: passed, the restored version unattested
    spark.range(7, 9).write.format("delta").mode("append").save(table)  # the job's own write attests the table
    hook.flush()


def test_a_shallow_clone_and_a_conversion_fail_required(spark: SparkSession, hook: Hook,
                                                         spark_warehouse: Path) -> None:
    from attest.errors import PolicyError

    source = _delta(spark, hook, spark_warehouse / f"r25_src_{_u()}")
    clone = spark_warehouse / f"r25_clone_{_u()}"
    spark.sql(f"CREATE TABLE delta.`{clone}` SHALLOW CLONE delta.`{source}`")
    with pytest.raises(PolicyError, match="CLONE"):
        hook.flush()
    hook.uninstall()
    from attest.spark import install

    fresh = install(spark, policy="required")
    try:
        folder = spark_warehouse / f"r25_parquet_{_u()}"
        spark.range(4).write.parquet(str(folder))
        spark.sql(f"CONVERT TO DELTA parquet.`{folder}`")
        with pytest.raises(PolicyError, match="CONVERT TO DELTA"):
            fresh.flush()
    finally:
        fresh.uninstall()


def test_a_conversion_through_delta_sparks_python_api_fails_required(spark: SparkSession,
                                                                      spark_warehouse: Path) -> None:
    """``DeltaTable.convertToDelta`` runs the conversion on the JVM: no query Spark reports names it, so the hook
    learns of it from the Python call (a classmethod, wrapped as one). The classmethod is the original again once the
    hook is uninstalled."""
    from delta.tables import DeltaTable

    from attest.errors import PolicyError
    from attest.spark import install

    before = vars(DeltaTable)["convertToDelta"]
    hook = install(spark, policy="required")
    try:
        folder = spark_warehouse / f"r25_parquet_api_{_u()}"
        spark.range(4).write.parquet(str(folder))
        converted = DeltaTable.convertToDelta(spark, f"parquet.`{folder}`")
        assert converted.toDF().count() == 4  # the call's own result, unchanged
        with pytest.raises(PolicyError, match=f"CONVERT TO DELTA on .*{folder.name}"):
            hook.flush()  # was: passed, the converted table unattested
    finally:
        hook.uninstall()
    assert vars(DeltaTable)["convertToDelta"] is before


def test_a_replace_table_alone_fails_required_and_a_load_after_it_passes(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    from attest.api import verify
    from attest.errors import PolicyError

    fresh = f"r25_fresh_{_u()}"
    spark.sql(f"CREATE OR REPLACE TABLE {fresh} (id BIGINT) USING delta LOCATION '{spark_warehouse / fresh}'")
    ice = f"iceberg.r25_{_u()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ice}")
    spark.sql(f"CREATE OR REPLACE TABLE {ice}.fresh (id BIGINT) USING iceberg")
    hook.flush()  # a table that did not exist: nothing replaced, nothing to refuse (a CREATE TABLE)
    spark.sql(f"INSERT INTO {ice}.fresh VALUES (5)")
    hook.flush()
    spark.sql(f"CREATE OR REPLACE TABLE {ice}.fresh (id BIGINT) USING iceberg")
    with pytest.raises(PolicyError, match="REPLACE TABLE"):
        hook.flush()  # its attested row dropped
    spark.sql(f"INSERT INTO {ice}.fresh VALUES (6)")
    hook.flush()  # the load after it attests the table: the skip is made good
    spark.sql(f"DROP TABLE {fresh}")
    folder = spark_warehouse / f"r25_replace_{_u()}"
    name = f"r25_replace_{_u()}"
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{folder}' AS SELECT id FROM range(4)")
    hook.flush()
    spark.sql(f"CREATE OR REPLACE TABLE {name} (id BIGINT) USING delta LOCATION '{folder}'")  # every row dropped
    spark.sql(f"INSERT INTO {name} VALUES (42)")
    hook.flush()  # REPLACE then a load: the load's attestation is the table's
    assert verify(str(folder)).passed
    spark.sql(f"CREATE OR REPLACE TABLE {name} (id BIGINT) USING delta LOCATION '{folder}'")
    with pytest.raises(PolicyError, match="REPLACE TABLE"):
        hook.flush()  # was: passed, the emptied version unattested
    spark.sql(f"DROP TABLE {name}")


@pytest.mark.parametrize("read_result", [False, True])
def test_iceberg_snapshot_procedures_fail_required(spark: SparkSession, read_result: bool) -> None:
    from attest.errors import PolicyError
    from attest.spark import install

    ns = f"r25_{_u()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (666, 'x')")  # before the hook: no attestation covers this snapshot
    (unattested,) = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {name}.snapshots").collect()]
    hook = install(spark, policy="required")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1, 'a')")
        hook.flush()
        # [unattested, the insert, its attestation (a follow-up snapshot)]
        inserted = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at")
                    .collect()][1]
        spark.sql(f"CALL iceberg.system.rollback_to_snapshot('{ns}.t', {inserted})")
        hook.flush()  # back to a snapshot an attestation names: it verifies, nothing to refuse
        assert hook.skipped == 0
        result = spark.sql(f"CALL iceberg.system.set_current_snapshot('{ns}.t', {unattested})")
        if read_result:
            result.collect()
        with pytest.raises(PolicyError, match="set_current_snapshot"):
            hook.flush()  # was: passed, the table's current snapshot one no attestation covers
        assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [666]
    finally:
        hook.uninstall()


def test_iceberg_add_files_fails_required(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    from attest.errors import PolicyError

    name, ident = _iceberg(spark, hook)
    folder = spark_warehouse / f"r25_files_{_u()}"
    spark.sql("SELECT CAST(7 AS BIGINT) AS id, 'z' AS p").write.parquet(str(folder))
    spark.sql(f"CALL iceberg.system.add_files(table => '{ident}', source_table => '`parquet`.`{folder}`')")
    with pytest.raises(PolicyError, match="add_files"):
        hook.flush()
    assert 7 in [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()]


def test_optional_policy_warns_and_goes_on(spark: SparkSession, spark_warehouse: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    from attest.spark import install

    h = install(spark, policy="optional")
    try:
        table = _delta(spark, h, spark_warehouse / f"r25_opt_{_u()}")
        spark.sql(f"RESTORE TABLE delta.`{table}` TO VERSION AS OF 0")
        with caplog.at_level("WARNING", logger="attest.spark"):
            h.flush()
        assert any("RESTORE" in r.getMessage() and "not attested" in r.getMessage() for r in caplog.records)
        assert h.skipped >= 1
    finally:
        h.uninstall()


def test_a_write_staged_for_write_audit_publish_is_named_so_and_refused(spark: SparkSession, hook: Hook,
                                                                       spark_warehouse: Path) -> None:
    """``spark.wap.id`` on a table with ``write.wap.enabled``: Iceberg stages the write's snapshot (no branch holds it)
    until a cherry-pick publishes it. The hook cannot attest it (it attests a branch's current snapshot): refused under
    ``required``, and said so — before, it was called "superseded by a later commit" when nothing had committed since.
    The cherry-pick that publishes it is a skipped write too (the table is then stale), never a verified version."""
    from attest.errors import PolicyError

    ns = f"r25_{_u()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('write.wap.enabled' = 'true')")
    spark.sql(f"INSERT INTO {name} VALUES (1)")
    hook.flush()
    with session_conf(spark, "spark.wap.id", "job42"):
        spark.sql(f"INSERT INTO {name} VALUES (666)")
    with pytest.raises(PolicyError, match="staged for write-audit-publish"):
        hook.flush()
    assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [1]  # main did not move
    (staged,) = [r[0] for r in spark.sql(f"SELECT snapshot_id, summary FROM {name}.snapshots").collect()
                 if r[1].get("wap.id") == "job42"]
    spark.sql(f"CALL iceberg.system.cherrypick_snapshot('{ns}.t', {staged})")
    with pytest.raises(PolicyError):
        hook.flush()
    report = verify_iceberg(spark_warehouse, f"{ns}.t")
    assert not report.passed and report.errors[0].code.value == "stale", report.verdict()


def test_a_fast_forward_publishing_an_attested_branch_passes_required(spark: SparkSession, hook: Hook,
                                                                     spark_warehouse: Path) -> None:
    """Write-audit-publish on a branch: the hook attests the write on the branch; ``fast_forward`` moves main to
    that attested head. The table then verifies, so the procedure is no skipped write (held, not a false refusal)."""
    name, ident = _iceberg(spark, hook)
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {name}.branch_audit VALUES (7, 'b')")
    hook.flush()
    spark.sql(f"CALL iceberg.system.fast_forward('{ident}', 'main', 'audit')")
    hook.flush()
    assert hook.skipped == 0
    report = verify_iceberg(spark_warehouse, ident)
    assert report.passed, report.verdict()
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()) == [1, 2, 7, 666]
