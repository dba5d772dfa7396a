"""``attest.spark.audit``: every table Spark's catalogs name, checked as the read gate checks a read of it (round 29).

A folder walk (``attest audit /warehouse``) misses an external Delta table registered in Spark's catalog at another
location, and no pyiceberg configuration names an Iceberg catalog configured in Spark alone: an audit of the
lakehouse said nothing of them while readers of ``db.ext`` read its rows. Here the session's catalogs are listed, a
row per table, view and Iceberg branch."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_every_table_spark_names_is_a_row(spark: SparkSession, spark_warehouse: Path) -> None:
    import attest.spark
    from attest.cli import main

    db = f"r29c_{uuid.uuid4().hex[:8]}"
    outside = spark_warehouse / f"elsewhere_{db}" / "ext"
    hook = attest.spark.install(spark, policy="required")
    try:
        spark.sql(f"CREATE DATABASE {db}")
        spark.sql(f"CREATE TABLE {db}.sales (id BIGINT) USING delta")
        spark.sql(f"INSERT INTO {db}.sales VALUES (1)")
        spark.sql(f"CREATE TABLE {db}.ext (id BIGINT) USING delta LOCATION '{outside}'")
        spark.sql(f"INSERT INTO {db}.ext VALUES (2)")
        spark.sql(f"CREATE NAMESPACE iceberg.{db}")
        spark.sql(f"CREATE TABLE iceberg.{db}.t (id BIGINT) USING iceberg")
        spark.sql(f"INSERT INTO iceberg.{db}.t VALUES (3)")
        spark.sql(f"ALTER TABLE iceberg.{db}.t CREATE BRANCH b")
        hook.flush()
    finally:
        hook.uninstall()
    spark.sql(f"INSERT INTO {db}.ext VALUES (666)")  # no hook: readers of db.ext read a row no attestation binds
    spark.sql(f"INSERT INTO iceberg.{db}.t.branch_b VALUES (666)")  # and readers of branch b
    spark.sql(f"CREATE TABLE {db}.pq (id BIGINT) USING parquet")
    spark.sql(f"CREATE VIEW {db}.v AS SELECT * FROM {db}.sales")
    spark.sql(f"CREATE TEMPORARY VIEW tv_{db} AS SELECT * FROM {db}.ext")  # the session's own: no catalog's

    # A walk of the warehouse folder finds the managed table and never the external one.
    assert main(["audit", str(spark_warehouse / "spark-warehouse" / f"{db}.db"), "--json"]) == 0

    report = attest.spark.audit(spark, catalogs=[f"spark_catalog.{db}", f"iceberg.{db}"])
    view_reads = f"file:{spark_warehouse.resolve()}/spark-warehouse/{db}.db/sales"  # the table the view's SQL reads
    rows = {r.table: (r.outcome, r.code) for r in report.rows}
    assert rows == {
        f"spark_catalog.{db}.sales": ("VERIFIED", None),
        f"spark_catalog.{db}.ext": ("STALE", "stale"),
        f"spark_catalog.{db}.v (a view: reads {view_reads})": ("VERIFIED", None),
        f"iceberg.{db}.t": ("VERIFIED", None),
        f"iceberg.{db}.t.branch_b": ("STALE", "stale"),
    }, rows
    assert [(p.path, p.code.value) for p in report.skipped] == [(f"spark_catalog.{db}.pq", "table_not_audited")]
    assert report.exit_code == 1


def test_a_write_audit_publish_into_a_new_table_has_its_branch_row(spark: SparkSession) -> None:
    """``spark.wap.branch`` writes into a new Iceberg table go to the branch alone: main has no snapshot (measured,
    Iceberg 1.12), and readers of the branch read its rows. Main's row is UNATTESTED, as any empty table's, and the
    branch has its own."""
    import attest.spark

    ns = f"r30w_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE iceberg.{ns}")
    spark.sql(f"CREATE TABLE iceberg.{ns}.t (id BIGINT) USING iceberg TBLPROPERTIES ('write.wap.enabled'='true')")
    spark.sql(f"ALTER TABLE iceberg.{ns}.t CREATE BRANCH audit")
    with session_conf(spark, "spark.wap.branch", "audit"):
        spark.sql(f"INSERT INTO iceberg.{ns}.t VALUES (666)")
    assert spark.sql(f"SELECT * FROM iceberg.{ns}.t").count() == 0
    assert [r.id for r in spark.sql(f"SELECT * FROM iceberg.{ns}.t.branch_audit").collect()] == [666]
    report = attest.spark.audit(spark, catalogs=[f"iceberg.{ns}"])
    rows = {r.table: r.outcome for r in report.rows}
    assert rows == {f"iceberg.{ns}.t": "UNATTESTED", f"iceberg.{ns}.t.branch_audit": "UNATTESTED"}, rows
    [main_row] = [r for r in report.rows if r.table == f"iceberg.{ns}.t"]  # its note: the branch has its own row
    assert any("are audited on lines of their own" in n for n in main_row.notes), main_row.notes
    assert not any("not the 1 other branch" in n for n in main_row.notes), main_row.notes


def test_names_reach_sql_quoted(spark: SparkSession) -> None:
    """A namespace and a table whose names hold a backtick and a dot are listed and read by their parts."""
    import attest.spark
    from carriers.spark.catalog_audit import quoted, shown

    ns = f"r29q_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE iceberg.{ns}")
    spark.sql(f"CREATE TABLE iceberg.{ns}.{quoted(['we`ird t'])} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO iceberg.{ns}.{quoted(['we`ird t'])} VALUES (1)")
    report = attest.spark.audit(spark, catalogs=[f"iceberg.{ns}"])
    assert [(r.table, r.outcome) for r in report.rows] == [(shown(["iceberg", ns, "we`ird t"]), "UNATTESTED")]
    assert shown(["iceberg", ns, "we`ird t"]) == f"iceberg.{ns}.`we``ird t`"
