"""Round 22 on the Spark read gate: a catalog table whose partitions are listed at execution.

A partitioned file-source table of Spark's own catalog (``CREATE TABLE h … USING parquet PARTITIONED BY (p)``) keeps
its partitions' locations in the catalog, and ``ALTER TABLE h ADD PARTITION (p=1) LOCATION '<folder>'`` puts one
anywhere: at a Delta table's folder, or an Iceberg table's ``data/``. Reading ``h`` then reads every Parquet file
there — the Delta files its log removed, the Iceberg files no snapshot references — past the table's log or metadata.
Its relation's file index is a ``CatalogFileIndex``: no folder is listed at analysis, and the gate, which looked at the
roots (``h``'s own location) and at the folders an ``InMemoryFileIndex`` listed, let it through (failing before this
round; carriers/spark/gate.py ``folder_reads``). The gate now asks the catalog for the partitions' locations (one call
per table, no file listed) and looks for a table at and above each, as for listed folders.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_gate_round21 import overwritten_table
from tests.adversarial.test_spark_gate_round21_listed import _overwritten_delta

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _partitioned(spark: SparkSession, folder: Path) -> str:
    """A partitioned Parquet table of Spark's catalog, at ``folder``, with one partition of its own (``p = 0``)."""
    name = f"default.r22_h_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p INT) USING parquet PARTITIONED BY (p) LOCATION '{folder}'")
    spark.sql(f"INSERT INTO {name} VALUES (7, 0)")
    return name


def test_a_catalog_partition_at_a_delta_tables_folder_is_refused(spark: SparkSession, hook: Hook,
                                                                 tmp_path: Path) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    delta = tmp_path / "delta"
    _overwritten_delta(spark, hook, delta)  # attested: one row; its folder holds the four removed rows too
    name = _partitioned(spark, tmp_path / "h")
    spark.sql(f"ALTER TABLE {name} ADD PARTITION (p=1) LOCATION '{delta}'")
    assert spark.table(name).count() == 6  # its own row and the Delta folder's five files' rows
    with require_verified(spark) as gate:
        assert spark.read.format("delta").load(str(delta)).count() == 1  # the Delta table: attested, one row
        with pytest.raises(VerificationRefusedError) as refused:
            spark.table(name).count()  # was: let through, 6 rows
        assert refused.value.code.value == "unattested" and "Delta table" in str(refused.value), gate.refused
        with pytest.raises(VerificationRefusedError):
            spark.sql(f"SELECT * FROM {name} WHERE p = 1").count()


def test_a_catalog_partition_at_an_iceberg_tables_data_is_refused(spark: SparkSession, hook: Hook,
                                                                  tmp_path: Path) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    table, location = overwritten_table(spark, hook, "r22_hp")
    name = _partitioned(spark, tmp_path / "h")
    spark.sql(f"ALTER TABLE {name} ADD PARTITION (p=1) LOCATION '{location}/data/p=0'")
    with require_verified(spark) as gate:
        assert spark.table(table).count() == 1
        with pytest.raises(VerificationRefusedError) as refused:
            spark.table(name).count()  # was: let through, the replaced rows of p=0 too
        assert refused.value.code.value == "unattested" and "Iceberg table" in str(refused.value), gate.refused


def test_a_catalog_table_of_its_own_partitions_is_let_through(spark: SparkSession, tmp_path: Path) -> None:
    """The control: partitions at their default locations and one elsewhere, no table's folder: read as ever."""
    from attest.spark import require_verified

    name = _partitioned(spark, tmp_path / "h")
    spark.sql(f"INSERT INTO {name} VALUES (8, 2)")
    spark.range(2).selectExpr("id", "3 AS p").write.parquet(str(tmp_path / "elsewhere" / "p=3"))
    spark.sql(f"ALTER TABLE {name} ADD PARTITION (p=3) LOCATION '{tmp_path / 'elsewhere' / 'p=3'}'")
    with require_verified(spark):
        assert spark.table(name).count() == 4


def test_a_partition_that_cannot_be_listed_hides_no_other(spark: SparkSession, hook: Hook, tmp_path: Path) -> None:
    """A second partition on a file system no listing reaches (``foo://``): the unpruned listing of the whole table
    fails (and so does Spark's unpruned read), but ``WHERE p = 1`` prunes it away and reads the Delta table's folder.
    The gate's listing failed and it let that read through (failing before this fix); each partition's location, from
    the catalog, is now looked at alone."""
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    delta = tmp_path / "delta"
    _overwritten_delta(spark, hook, delta)
    name = _partitioned(spark, tmp_path / "h")
    spark.sql(f"ALTER TABLE {name} ADD PARTITION (p=1) LOCATION '{delta}'")
    spark.sql(f"INSERT INTO {name} VALUES (8, 9)")
    spark.sql(f"ALTER TABLE {name} PARTITION (p=9) SET LOCATION 'foo://nowhere/p9'")
    assert spark.sql(f"SELECT * FROM {name} WHERE p = 1").count() == 5  # the Delta folder's five files' rows
    with require_verified(spark) as gate:
        with pytest.raises(VerificationRefusedError) as refused:
            spark.sql(f"SELECT * FROM {name} WHERE p = 1").count()  # was: let through, 5 rows
        assert refused.value.code.value == "unattested" and "Delta table" in str(refused.value), gate.refused


def test_a_partition_that_cannot_be_listed_beside_plain_ones_is_let_through(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    """The control: the same unreachable partition beside the table's own: a pruned read of its own is let through."""
    from attest.spark import require_verified

    name = _partitioned(spark, tmp_path / "h")
    spark.sql(f"INSERT INTO {name} VALUES (8, 9)")
    spark.sql(f"ALTER TABLE {name} PARTITION (p=9) SET LOCATION 'foo://nowhere/p9'")
    with require_verified(spark):
        assert spark.sql(f"SELECT * FROM {name} WHERE p = 0").count() == 1
