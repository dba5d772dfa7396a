"""Round 26 on the Spark hook: statements that change what readers read of a table without writing a row.

``policy="required"`` promises a job fails at ``flush()`` unless each of its writes is attested; round 25 made the
commands that change a table's rows outside a write (RESTORE, CLONE, a rollback, …) skipped writes. ``ALTER TABLE``
was still dropped without a word — and some ALTERs change the rows readers get as surely as a write does: a column
added (every row gains it), dropped or renamed (Delta with column mapping, Iceberg), a type widened (Delta type
widening, Iceberg's ``int`` to ``bigint``). Measured (Spark 4.1, delta-spark 4.4, Iceberg 1.12): after the job's
attested write, each left the table ``reader_view_changed`` (``attest verify``: NOT VERIFIED) and ``flush()`` passed.

Now each is checked after it runs: a table whose version no longer verifies against the attestation in force is a
skipped write (refused by ``required`` unless a later write of the job attests the table again); an ALTER that leaves
the reader view as it was (a property no reader reads, a constraint), or one on a table with no attestation at all,
is nothing to refuse. Each refusal test failed on the code before this round (carriers/spark/hook.py
``_VIEW_CHANGES``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.spark_iceberg import unattested_iceberg_table, verify_iceberg

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _u() -> str:
    return uuid.uuid4().hex[:8]


def _delta(spark: SparkSession, hook: Hook, folder: Path) -> str:
    """An attested Delta table at ``folder``: column mapping by name and type widening on, two rows."""
    table = f"delta.`{folder}`"
    spark.sql(f"CREATE TABLE {table} (id INT, v STRING) USING delta TBLPROPERTIES "
              "('delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    hook.flush()
    return table


def _iceberg(spark: SparkSession, hook: Hook) -> tuple[str, str]:
    """An attested Iceberg table of two rows: (its Spark name, its pyiceberg identifier)."""
    ns = f"r26_{_u()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, v STRING) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    hook.flush()
    return name, f"{ns}.t"


_ALTERS = {
    "add": "ADD COLUMNS (z BIGINT)",
    "drop": "DROP COLUMN v",
    "rename": "RENAME COLUMN v TO w",
    "widen": "ALTER COLUMN id TYPE BIGINT",
}


def _row(columns: list[str]) -> str:
    """A row for the table's columns after the ALTER: the table at its new view."""
    return ", ".join({"id": "3", "v": "'c'", "w": "'c'", "z": "9"}[c] for c in columns)


@pytest.mark.parametrize("alter", sorted(_ALTERS))
def test_a_delta_alter_that_changes_the_reader_view_fails_required(spark: SparkSession, hook: Hook,
                                                                   spark_warehouse: Path, alter: str) -> None:
    from attest.api import verify
    from attest.errors import PolicyError

    folder = spark_warehouse / f"r26_{alter}_{_u()}"
    table = _delta(spark, hook, folder)
    spark.sql(f"ALTER TABLE {table} {_ALTERS[alter]}")
    report = verify(str(folder))
    assert not report.passed and report.errors[0].code.value == "reader_view_changed", report.verdict()
    with pytest.raises(PolicyError, match="ALTER TABLE"):
        hook.flush()  # was: passed, the table no longer verifying
    spark.sql(f"INSERT INTO {table} VALUES ({_row(spark.table(table).columns)})")  # the job's own write attests
    hook.flush()
    assert verify(str(folder)).passed


@pytest.mark.parametrize("alter", sorted(_ALTERS))
def test_an_iceberg_alter_that_changes_the_reader_view_fails_required(spark: SparkSession, hook: Hook,
                                                                      spark_warehouse: Path, alter: str) -> None:
    from attest.errors import PolicyError

    name, ident = _iceberg(spark, hook)
    spark.sql(f"ALTER TABLE {name} {_ALTERS[alter]}")
    report = verify_iceberg(spark_warehouse, ident)
    assert not report.passed and report.errors[0].code.value == "reader_view_changed", report.verdict()
    with pytest.raises(PolicyError, match="ALTER TABLE"):
        hook.flush()  # was: passed
    spark.sql(f"INSERT INTO {name} VALUES ({_row(spark.table(name).columns)})")
    hook.flush()
    assert verify_iceberg(spark_warehouse, ident).passed


def test_alters_that_leave_the_reader_view_are_nothing_to_refuse(spark: SparkSession, hook: Hook,
                                                                  spark_warehouse: Path) -> None:
    """Held: a property no reader reads, a constraint, a comment — the table still verifies, no skipped write."""
    from attest.api import verify

    folder = spark_warehouse / f"r26_held_{_u()}"
    table = _delta(spark, hook, folder)
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('team.owner' = 'sales')")
    spark.sql(f"ALTER TABLE {table} ADD CONSTRAINT positive CHECK (id > 0)")
    name, _ = _iceberg(spark, hook)
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('team.owner' = 'sales')")
    hook.flush()
    assert hook.skipped == 0
    assert verify(str(folder)).passed


def test_an_alter_of_a_table_no_attestation_covers_is_nothing_to_refuse(spark: SparkSession,
                                                                        spark_warehouse: Path) -> None:
    """Held: a table written before the hook (no attestation in force) — the ALTER lost none."""
    from attest.spark import install

    folder = spark_warehouse / f"r26_legacy_{_u()}"
    spark.range(3).write.format("delta").save(str(folder))
    hook = install(spark, policy="required")
    try:
        spark.sql(f"ALTER TABLE delta.`{folder}` ADD COLUMNS (z BIGINT)")
        hook.flush()
        assert hook.skipped == 0
    finally:
        hook.uninstall()


def test_delta_sparks_protocol_calls_are_judged_as_alters(spark: SparkSession, hook: Hook,
                                                          spark_warehouse: Path) -> None:
    """``DeltaTable.dropFeatureSupport`` / ``addFeatureSupport`` change the protocol on the JVM with no query Spark
    reports. Measured: a drop of deletion vectors after the job's attested DELETE (the vectors purged, files
    rewritten, the feature gone) left the table ``reader_view_changed`` and ``flush()`` passed; so did adding column
    mapping's feature. ``upgradeTableProtocol`` to (3, 7) leaves the view as it was: held, nothing refused."""
    from delta.tables import DeltaTable

    from attest.api import verify
    from attest.errors import PolicyError

    folder = spark_warehouse / f"r26_dv_{_u()}"
    spark.sql(f"CREATE TABLE delta.`{folder}` (id INT, v STRING) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO delta.`{folder}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"DELETE FROM delta.`{folder}` WHERE id = 2")
    hook.flush()
    DeltaTable.forPath(spark, str(folder)).upgradeTableProtocol(3, 7)
    hook.flush()
    assert hook.skipped == 0 and verify(str(folder)).passed
    DeltaTable.forPath(spark, str(folder)).dropFeatureSupport("deletionVectors")
    assert not verify(str(folder)).passed
    with pytest.raises(PolicyError, match=r"DeltaTable\.dropFeatureSupport"):
        hook.flush()  # was: passed
    assert sorted(r.id for r in spark.read.format("delta").load(str(folder)).collect()) == [1, 3]
    spark.sql(f"INSERT INTO delta.`{folder}` VALUES (4, 'd')")
    hook.flush()  # the job's own write attests the table again
    DeltaTable.forPath(spark, str(folder)).addFeatureSupport("columnMapping")
    with pytest.raises(PolicyError, match=r"DeltaTable\.addFeatureSupport"):
        hook.flush()


def test_a_skip_is_made_good_by_a_later_write_of_the_table_however_it_is_spelt(spark: SparkSession, hook: Hook,
                                                                               spark_warehouse: Path) -> None:
    """A write by path (``INSERT INTO delta.`/t```) names its table ``/t``, a RESTORE (as DML and delta-spark's Python
    calls do) ``file:/t``: the skip was keyed by one spelling and the later write attested the other, so a RESTORE
    then a rerun of the job's INSERT still failed ``required`` (found in this round, by the protocol test)."""
    folder = spark_warehouse / f"r26_spelt_{_u()}"
    table = f"delta.`{folder}`"
    spark.sql(f"CREATE TABLE {table} (id INT) USING delta")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    hook.flush()
    spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF 1")
    spark.sql(f"INSERT INTO {table} VALUES (3)")  # the job's rerun attests the table again
    hook.flush()  # was: PolicyError, the RESTORE's skip never made good
    assert hook.skipped == 1


@pytest.mark.parametrize("how", ["REPLACE", "CREATE OR REPLACE"])
def test_an_iceberg_main_branch_replaced_by_ddl_is_a_rollback(spark: SparkSession, how: str) -> None:
    """``ALTER TABLE t REPLACE BRANCH main AS OF VERSION s`` sets what every reader of ``t`` reads, as
    ``rollback_to_snapshot`` does (round 25). Measured: to a snapshot written before the hook (no attestation covers
    it) the table read 666 and ``flush()`` passed. Held: the main branch replaced by the snapshot it is at, and a new
    branch made for write-audit-publish — nothing to refuse."""
    from attest.errors import PolicyError
    from attest.spark import install

    name, old = unattested_iceberg_table(spark, "r26_")  # its 666 row: no attestation covers it
    hook = install(spark, policy="required")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        hook.flush()
        now = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at DESC").collect()[0][0]
        spark.sql(f"ALTER TABLE {name} {how} BRANCH main AS OF VERSION {now}")
        spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
        hook.flush()
        assert hook.skipped == 0
        spark.sql(f"ALTER TABLE {name} {how} BRANCH main AS OF VERSION {old}")
        with pytest.raises(PolicyError, match="REPLACE BRANCH main"):
            hook.flush()  # was: passed, the table reading 666
        assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [666]
    finally:
        hook.uninstall()


def test_iceberg_partition_and_identifier_field_changes_are_judged_as_alters(spark: SparkSession, hook: Hook,
                                                                            spark_warehouse: Path) -> None:
    """Iceberg's SQL extensions — ``ADD`` / ``DROP PARTITION FIELD`` (and the identifier-field statements) — name their
    table by its parts, not as a resolved table, and leave an attested table ``reader_view_changed`` (the partition
    spec is in its view; so is the schema's identifier fields, measured with pyiceberg). Measured: ``flush()`` passed.
    Held: ``WRITE ORDERED BY`` (the sort order is no reader's) — nothing refused."""
    from attest.errors import PolicyError

    name, ident = _iceberg(spark, hook)
    spark.sql(f"ALTER TABLE {name} WRITE ORDERED BY id")
    hook.flush()
    assert hook.skipped == 0
    spark.sql(f"ALTER TABLE {name} ADD PARTITION FIELD bucket(4, id)")
    assert not verify_iceberg(spark_warehouse, ident).passed
    with pytest.raises(PolicyError, match="ADD PARTITION FIELD"):
        hook.flush()  # was: passed
    spark.sql(f"INSERT INTO {name} VALUES (3, 'c')")
    hook.flush()
    spark.sql(f"USE iceberg.{ident.split('.')[0]}")  # a name in the current catalog: no catalog part
    try:
        spark.sql("ALTER TABLE t DROP PARTITION FIELD bucket(4, id)")
        with pytest.raises(PolicyError, match="DROP PARTITION FIELD"):
            hook.flush()
    finally:
        spark.sql("USE spark_catalog.default")


def test_a_delta_table_name_set_to_another_location_is_judged_there(spark: SparkSession,
                                                                     spark_warehouse: Path) -> None:
    """``ALTER TABLE sales SET LOCATION '/other'`` makes every reader of ``sales`` read the table at ``/other``.
    Measured: to a table written before the hook (no attestation), ``SELECT … FROM sales`` returned its 666 row and
    ``flush()`` passed. Held: set to another table the job attested — nothing to refuse."""
    from attest.errors import PolicyError
    from attest.spark import install

    other = spark_warehouse / f"r26_other_{_u()}"
    spark.range(666, 667).write.format("delta").save(str(other))  # before the hook: unattested
    name = f"r26_sales_{_u()}"
    hook = install(spark, policy="required")
    try:
        spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{spark_warehouse / name}'")
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        attested = spark_warehouse / f"r26_attested_{_u()}"
        spark.range(5, 7).write.format("delta").save(str(attested))
        hook.flush()
        spark.sql(f"ALTER TABLE {name} SET LOCATION '{attested}'")
        hook.flush()
        assert hook.skipped == 0
        spark.sql(f"ALTER TABLE {name} SET LOCATION '{other}'")
        with pytest.raises(PolicyError, match="an ALTER TABLE SET LOCATION"):
            hook.flush()  # was: passed
        assert [r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()] == [666]
        spark.sql(f"INSERT INTO {name} VALUES (2)")  # the job's write of the table there makes the skip good
        hook.flush()
    finally:
        hook.uninstall()
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_name_swapped_to_an_unattested_table_fails_required(spark: SparkSession, spark_warehouse: Path,
                                                              fmt: str) -> None:
    """``ALTER TABLE sales RENAME TO sales_old`` then ``ALTER TABLE evil RENAME TO sales``: every reader of ``sales``
    reads ``evil``'s rows. Measured on both formats: the 666 row of a table written before the hook, and ``flush()``
    passed.
    Held: the job's attested table renamed (its attestation goes with it) — nothing to refuse."""
    from attest.errors import PolicyError
    from attest.spark import install

    u = _u()
    if fmt == "delta":
        db, where = "spark_catalog.default", lambda t: f" LOCATION '{spark_warehouse / (t + '_' + u)}'"
    else:
        db, where = f"iceberg.r26_{u}", lambda t: ""
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {db}")
    sales, evil = f"r26_sales_{u}", f"r26_evil_{u}"
    spark.sql(f"CREATE TABLE {db}.{evil} (id BIGINT) USING {fmt}{where(evil)}")
    spark.sql(f"INSERT INTO {db}.{evil} VALUES (666)")  # before the hook: unattested
    hook = install(spark, policy="required")
    try:
        spark.sql(f"CREATE TABLE {db}.{sales} (id BIGINT) USING {fmt}{where(sales)}")
        spark.sql(f"INSERT INTO {db}.{sales} VALUES (1)")
        hook.flush()
        spark.sql(f"ALTER TABLE {db}.{sales} RENAME TO {'' if fmt == 'delta' else db.split('.', 1)[1] + '.'}"
                  f"{sales}_old")
        hook.flush()
        assert hook.skipped == 0
        spark.sql(f"ALTER TABLE {db}.{evil} RENAME TO {'' if fmt == 'delta' else db.split('.', 1)[1] + '.'}{sales}")
        with pytest.raises(PolicyError, match="RENAME TO"):
            hook.flush()  # was: passed
        assert [r[0] for r in spark.sql(f"SELECT id FROM {db}.{sales}").collect()] == [666]
    finally:
        hook.uninstall()
        for t in (sales, f"{sales}_old", evil):
            spark.sql(f"DROP TABLE IF EXISTS {db}.{t}")
