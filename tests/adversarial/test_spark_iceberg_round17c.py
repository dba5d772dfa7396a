"""Round 17 (second pass), Iceberg Java's side (Spark 4.1 / Iceberg 1.12): a manifest list's partition summary of a
double partition ``[-0.0, -0.0]`` over files of ``x = 0.0`` (and ``[0.0, 0.0]`` over ``x = -0.0``). Java prunes
manifests by the summary in ``Double.compare``'s order (``-0.0 < 0.0``): Spark's ``WHERE x = 0.0`` returned no row
where its full read, and pyiceberg's filtered read, returned ids 0, 1, 2. ``record`` attested it and ``verify`` said
VERIFIED before (``tests/adversarial/test_iceberg_round17c.py`` holds pyiceberg's side). Likewise a data file's
metrics: an upper bound ``-0.0`` over a stored ``0.0``: Spark's ``x = 0.0D`` returned no row (the full read: the row);
a lower bound ``0.0`` over a stored ``-0.0``: ``x = -0.0D`` none. ``record`` attested both before.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import spark_ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _catalog(warehouse: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(
        "iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}", warehouse=(warehouse / "iceberg").as_uri()
    )


def test_a_float_partition_summary_of_the_other_zero_hides_rows_from_java(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_list
    from tests.adversarial.test_iceberg_round17c import summarize_as, zero_table

    ns = f"s17c{uuid.uuid4().hex[:6]}"
    catalog = _catalog(spark_warehouse)
    catalog.create_namespace(ns)
    for i, (stored, summarized, filtered) in enumerate(((0.0, -0.0, "0.0"), (-0.0, 0.0, "-0.0"))):
        ident, name, ref = f"{ns}.t{i}", f"iceberg.{ns}.t{i}", f"iceberg://iceberg/{ns}.t{i}"
        table = zero_table(catalog, ident, stored)
        assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name} WHERE x = {filtered}D").collect()) == [0, 1, 2]
        _rewrite_manifest_list(table, summarize_as(summarized))
        assert spark_ids(spark, name) == [0, 1, 2]
        got = sorted(r[0] for r in spark.sql(f"SELECT id FROM {name} WHERE x = {filtered}D").collect())
        print("MEASURED", stored, summarized, filtered, got)
        assert got == [], (stored, got)  # Java skipped the manifest by its summary
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        assert rc != 0 and "table_inconsistent" in codes(doc), doc
        rc, doc = _cli(spark_warehouse, "verify", ref)
        assert rc != 0 and "table_inconsistent" in codes(doc), doc


def test_float_bounds_of_the_other_zero_hide_rows_from_java(
    spark: SparkSession, spark_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.adversarial.test_iceberg_round17c import ZERO_BOUNDS, zero_bounds_table

    catalog = _catalog(spark_warehouse)
    catalog.create_namespace_if_not_exists("ns")
    for case, (_, _, query) in sorted(ZERO_BOUNDS.items()):
        if catalog.table_exists("ns.t"):
            catalog.drop_table("ns.t")
        zero_bounds_table(catalog, monkeypatch, case)
        spark.sql("REFRESH TABLE iceberg.ns.t")
        assert spark.sql("SELECT id FROM iceberg.ns.t").count() == 5, case
        got = spark.sql(f"SELECT id FROM iceberg.ns.t WHERE {query}D").count()
        print("MEASURED", case, got)
        assert got == 0, case  # Java skipped the file by its bounds
        rc, doc = _cli(
            spark_warehouse, "record", "iceberg://iceberg/ns.t", "--model", "orders", "--program-hash", PROGRAM
        )
        assert rc != 0 and "table_inconsistent" in codes(doc), doc
    catalog.drop_table("ns.t")
