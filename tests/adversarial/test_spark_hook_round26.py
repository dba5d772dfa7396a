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
from typing import TYPE_CHECKING, Any

import pytest

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


def _verify_iceberg(warehouse: Path, ident: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    from attest.api import verify
    from carriers.spark.session import pyiceberg_catalog_properties

    return verify(SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse)).load_table(ident))


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
    report = _verify_iceberg(spark_warehouse, ident)
    assert not report.passed and report.errors[0].code.value == "reader_view_changed", report.verdict()
    with pytest.raises(PolicyError, match="ALTER TABLE"):
        hook.flush()  # was: passed
    spark.sql(f"INSERT INTO {name} VALUES ({_row(spark.table(name).columns)})")
    hook.flush()
    assert _verify_iceberg(spark_warehouse, ident).passed


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
