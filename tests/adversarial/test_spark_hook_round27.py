"""Round 27 on the Spark hook: a table's name bound to rows no attestation covers by registering an existing table.

Round 26 judged the statements that move a name onto other rows (``ALTER TABLE … RENAME TO``, ``SET LOCATION``) and
left one noted: ``CREATE TABLE sales USING delta LOCATION '/t'`` where ``/t`` already holds a Delta table. Spark
makes no new table there; it binds the name ``sales`` to ``/t``'s rows. Measured (Spark 4.1, delta-spark 4.4): the
job's attested ``sales`` dropped (``DROP TABLE`` of an external table keeps its files) and a table written before
the hook registered as ``sales``, ``SELECT … FROM sales`` returned its 666 row and ``policy="required"`` passed
``flush()``; the same through ``spark.catalog.createTable(name, path=…)`` and delta-spark's
``DeltaTable.createIfNotExists(spark).tableName(…).location(…)``, which Spark analyses as the same ``CreateTable``,
and ``CREATE TABLE sales LIKE src LOCATION '/t'`` (Delta's own ``CreateDeltaTableCommand``).

Now each is a skipped write unless the table there verifies (carriers/spark/hook.py ``_registered_event``). Held: a
new table made at an empty location (even when the listener reads it after the job's first write — the asynchronous
bus), a registered table that verifies, and ``CREATE TABLE IF NOT EXISTS`` of a name that was there before (it
changed nothing). Each refusal test failed on the code before this round.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.spark_iceberg import unattested_iceberg_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _u() -> str:
    return uuid.uuid4().hex[:8]


def _unattested(spark: SparkSession, folder: Path) -> Path:
    """A Delta table written before any hook: one 666 row, no attestation."""
    spark.range(666, 667).write.format("delta").save(str(folder))
    return folder


def _register(spark: SparkSession, how: str, name: str, folder: Path) -> None:
    if how == "sql":
        spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{folder}'")
    elif how == "like":  # Delta's own command (CreateDeltaTableCommand), not Spark's CreateTable
        spark.sql(f"CREATE TABLE {name} LIKE {name}_shape LOCATION '{folder}'")
    elif how == "catalog":
        spark.catalog.createTable(name, path=str(folder), source="delta")
    else:
        from delta.tables import DeltaTable

        DeltaTable.createIfNotExists(spark).tableName(name).location(str(folder)).execute()


@pytest.mark.parametrize("how", ["sql", "like", "catalog", "builder"])
def test_a_name_registered_to_an_unattested_table_fails_required(spark: SparkSession, spark_warehouse: Path,
                                                                 how: str) -> None:
    """The job attests ``sales``, drops the name, and registers a table written before the hook as ``sales``.
    Measured: readers of ``sales`` got the 666 row and ``flush()`` passed, by each of the four ways to register.
    Held: a new table made ``LIKE`` another (no location of a table)."""
    from attest.errors import PolicyError
    from attest.spark import install

    evil = _unattested(spark, spark_warehouse / f"r27_evil_{_u()}")
    name = f"r27_sales_{_u()}"
    hook = install(spark, policy="required")
    try:
        spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{spark_warehouse / name}'")
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        spark.sql(f"CREATE TABLE {name}_shape (id BIGINT) USING delta")
        spark.sql(f"CREATE TABLE {name}_copy LIKE {name}_shape")  # a new, empty table: no write, nothing to refuse
        hook.flush()
        assert hook.skipped == 0
        spark.sql(f"DROP TABLE {name}")
        _register(spark, how, name, evil)
        with pytest.raises(PolicyError, match="CREATE TABLE LOCATION"):
            hook.flush()  # was: passed
        assert [r[0] for r in spark.table(name).collect()] == [666]
        spark.sql(f"INSERT INTO {name} VALUES (2)")  # the job's own write of the table attests it: made good
        hook.flush()
    finally:
        hook.uninstall()
        for t in (name, f"{name}_shape", f"{name}_copy"):
            spark.sql(f"DROP TABLE IF EXISTS {t}")


def test_registering_a_table_that_verifies_is_nothing_to_refuse(spark: SparkSession, hook: Hook,
                                                                spark_warehouse: Path) -> None:
    """Held: a table the job attested (by path) registered under a name — its readers read attested rows."""
    folder = spark_warehouse / f"r27_attested_{_u()}"
    spark.range(5, 7).write.format("delta").save(str(folder))
    hook.flush()
    name = f"r27_named_{_u()}"
    try:
        spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{folder}'")
        hook.flush()
        assert hook.skipped == 0
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_a_new_table_is_not_a_registration_even_read_after_its_first_write(
        spark: SparkSession, spark_warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held: ``CREATE TABLE … LOCATION`` at an empty folder makes a new table. The listener bus is asynchronous, so
    the hook may read the statement after the job's first INSERT committed, when the table already has a row: its
    first commit is the statement's own, and the INSERT is attested by itself. Each statement's plan, as Spark gave
    it to the listener, is judged again here after the INSERT, as a late listener would: the new table's is nothing,
    a registration's is still a skipped write."""
    import carriers.spark.hook as hook_module
    from attest.spark import install

    plans: dict[str, object] = {}
    extract = hook_module.extract

    def keep(func_name: str, qe: object, jvm: object, jspark: object) -> object:
        plan = qe.analyzed()  # type: ignore[attr-defined]
        if plan.getClass().getSimpleName() == "CreateTable":
            plans[str(plan.name().identifier().name())] = qe
        return extract(func_name, qe, jvm, jspark)  # type: ignore[arg-type]

    monkeypatch.setattr(hook_module, "extract", keep)
    name, registered = f"r27_new_{_u()}", f"r27_reg_{_u()}"
    evil = _unattested(spark, spark_warehouse / f"r27_evil_{_u()}")
    hook = install(spark, policy="optional")
    try:
        spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{spark_warehouse / name}'")
        spark.sql(f"CREATE TABLE {registered} USING delta LOCATION '{evil}'")
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        hook.flush()
        jvm, jspark = spark._jvm, spark._jsparkSession
        late = {t: hook_module._registered_event(qe.analyzed(), qe, jvm, jspark)  # type: ignore[attr-defined]
                for t, qe in plans.items()}
        assert late[name] is None
        assert late[registered] is not None and late[registered].unattested == "CREATE TABLE LOCATION"
    finally:
        hook.uninstall()
        for t in (name, registered):
            spark.sql(f"DROP TABLE IF EXISTS {t}")


def test_if_not_exists_of_a_name_already_there_changes_nothing(spark: SparkSession, spark_warehouse: Path) -> None:
    """Held: ``CREATE TABLE IF NOT EXISTS`` — the common first statement of a job — of a name bound before the hook
    to a table no attestation covers: the statement bound nothing (the name's creation time is before it began).
    Refused: the same statement when the name was not there (it registered the table)."""
    import time

    from attest.errors import PolicyError
    from attest.spark import install

    legacy = _unattested(spark, spark_warehouse / f"r27_legacy_{_u()}")
    name, other = f"r27_legacy_{_u()}", f"r27_fresh_{_u()}"
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{legacy}'")
    time.sleep(1.5)  # past the second of slack a metastore's whole-second times need
    hook = install(spark, policy="required")
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION '{legacy}'")
        hook.flush()
        assert hook.skipped == 0
        spark.sql(f"CREATE TABLE IF NOT EXISTS {other} USING delta LOCATION '{legacy}'")
        with pytest.raises(PolicyError, match="CREATE TABLE LOCATION"):
            hook.flush()
    finally:
        hook.uninstall()
        for t in (name, other):
            spark.sql(f"DROP TABLE IF EXISTS {t}")


def test_a_copy_of_an_attested_table_is_attested_by_the_jobs_write(spark: SparkSession, hook: Hook,
                                                                   spark_warehouse: Path) -> None:
    """``CREATE TABLE copy LIKE src`` copies ``src``'s properties — its attestation keys, which
    bind its version 1 — and the copy's first INSERT is its version 1 too. Measured: the hook's attestation of that
    INSERT was written and then read back as not in force (the copied claim, its sidecar missing), and ``flush()``
    refused the job; ``attest record`` could never attest the copy (tests/delta/test_copied_attestation_keys.py).
    (A ``SHALLOW CLONE`` copies them too, but its files are the source's, by absolute path: not attestable.)"""
    from attest.api import verify

    u = _u()
    src, copy = f"r27_src_{u}", f"r27_copy_{u}"
    try:
        spark.sql(f"CREATE TABLE {src} (id BIGINT) USING delta LOCATION '{spark_warehouse / src}'")
        spark.sql(f"INSERT INTO {src} VALUES (1)")
        hook.flush()
        spark.sql(f"CREATE TABLE {copy} LIKE {src} LOCATION '{spark_warehouse / copy}'")
        copied = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {copy}").collect()}
        assert copied.get("recipe_attest.binding.version") == "1"  # the copied claim
        spark.sql(f"INSERT INTO {copy} VALUES (2)")
        hook.flush()  # was: PolicyError (the attestation of version 1 … is not in force)
        report = verify(str(spark_warehouse / copy))
        assert report.passed and report.attested_version == "1", report.verdict()
    finally:
        for t in (src, copy):
            spark.sql(f"DROP TABLE IF EXISTS {t}")


def test_an_alter_that_removes_the_attestation_fails_required(spark: SparkSession, hook: Hook,
                                                              spark_warehouse: Path) -> None:
    """``ALTER TABLE t UNSET TBLPROPERTIES`` of every attestation key, after the job's attested write. Measured: the
    table then read ``unattested``, which the hook took for "no attestation before it either" (round 26's rule for an
    ALTER of a table never attested), and ``flush()`` passed the job whose write it had just attested. Now the
    version the statement read is asked: an attestation was in force there, so it is a skipped write. Held (round 26's
    test): an ALTER of a table that never had one."""
    from attest.api import verify
    from attest.errors import PolicyError

    name = f"r27_unset_{_u()}"
    try:
        spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta LOCATION '{spark_warehouse / name}'")
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        hook.flush()
        keys = [r[0] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()
                if r[0].startswith(("recipe_attest.", "recipe_manifest."))]
        assert keys
        spark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES ({', '.join(repr(k) for k in keys)})")
        with pytest.raises(PolicyError, match="removed its attestation"):
            hook.flush()  # was: passed
        assert verify(str(spark_warehouse / name)).errors[0].code.value == "unattested"
        spark.sql(f"INSERT INTO {name} VALUES (2)")  # the job's write attests the table again: made good
        hook.flush()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_an_iceberg_branch_the_job_attested_replaced_by_ddl_fails_required(spark: SparkSession) -> None:
    """Round 26 judged ``REPLACE BRANCH main`` as a rollback and left other branches: their replacement changes no
    reader of ``t``. But readers of ``t.branch_audit`` — a write–audit–publish's auditors — read it. Measured: the
    job's attested write of branch ``audit``, then ``ALTER TABLE t REPLACE BRANCH audit AS OF VERSION s`` to a
    snapshot written before the hook: the branch read its 666 row and ``flush()`` passed. Now a branch this job
    attested a write of, replaced by rows no attestation covers, is a lost attestation. Held: the branch replaced by
    its own head (it verifies), and a branch the job never wrote replaced by anything (no attestation of this job's
    was lost)."""
    from attest.errors import PolicyError
    from attest.spark import install

    name, old = unattested_iceberg_table(spark, "r27_")  # its 666 row: no attestation covers it
    hook = install(spark, policy="required")
    try:
        spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
        spark.sql(f"INSERT INTO {name}.branch_audit VALUES (7)")
        hook.flush()
        head = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'audit'").collect()[0][0]
        spark.sql(f"ALTER TABLE {name} REPLACE BRANCH audit AS OF VERSION {head}")
        spark.sql(f"ALTER TABLE {name} CREATE BRANCH other")
        spark.sql(f"ALTER TABLE {name} REPLACE BRANCH other AS OF VERSION {old}")
        hook.flush()
        assert hook.skipped == 0
        spark.sql(f"ALTER TABLE {name} REPLACE BRANCH audit AS OF VERSION {old}")
        with pytest.raises(PolicyError, match="REPLACE BRANCH audit"):
            hook.flush()  # was: passed, the branch reading 666
        assert [r[0] for r in spark.sql(f"SELECT id FROM {name}.branch_audit").collect()] == [666]
    finally:
        hook.uninstall()
