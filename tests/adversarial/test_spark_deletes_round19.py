"""Round 19, delete applicability, Iceberg Java's side (Spark 4.1 / Iceberg 1.12): what Spark reads of the forgeries
of tests/adversarial/test_deletes_round19.py."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial import test_delta_dv_cardinality as cardinality
from tests.adversarial.test_deletes_round19 import (
    delta,  # noqa: F401
    explicit_then_lowered,
    inline_vector,
    partitioned,
    renumbered_partition,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _catalog(warehouse: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                      warehouse=(warehouse / "iceberg").as_uri())


def _ids(spark: SparkSession, name: str, where: str = "true") -> list[int]:
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name} WHERE {where}").collect())


def _table(spark: SparkSession, warehouse: Path) -> tuple[Any, str, str]:
    ns = f"r19{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    catalog = _catalog(warehouse)
    partitioned(catalog, f"{ns}.t")
    return catalog, f"{ns}.t", f"iceberg.{ns}.t"


def test_spark_applies_a_delete_manifest_listed_below_its_entries(spark: SparkSession, spark_warehouse: Path) -> None:
    catalog, ident, name = _table(spark, spark_warehouse)
    assert _ids(spark, name) == [1, 2, 4]
    explicit_then_lowered(catalog.load_table(ident))
    assert _ids(spark, name) == [1, 2, 4] and _ids(spark, name, "p = 2") == [4]  # Java plans by the entry alone


@pytest.mark.parametrize("content", [1, 0], ids=["delete manifest", "data manifest"])
def test_spark_reads_a_renumbered_partition_field_as_null(spark: SparkSession, spark_warehouse: Path,
                                                         content: int) -> None:
    """The delete manifest's (or the p = 2 data manifest's) partition field numbered 1001, not the spec's 1000:
    Java projects the tuple by field id and reads p as null there, so the partition-scoped position delete file no
    longer meets the data file of p = 2 — Spark returns the deleted id 3, and ``p = 2`` prunes a null-partitioned
    data file — while pyiceberg, reading by position, still hides it. Refused by attest record and verify
    (test_deletes_round19.py)."""
    catalog, ident, name = _table(spark, spark_warehouse)
    renumbered_partition(catalog.load_table(ident), content=content)
    assert sorted(catalog.load_table(ident).scan().to_arrow().column("id").to_pylist()) == [1, 2, 4]
    assert _ids(spark, name) == [1, 2, 3, 4]
    # p = 2: the delete manifest's file is null-partitioned for Java (the row is back), or the data file is (pruned)
    assert _ids(spark, name, "p = 2") == ([3, 4] if content == 1 else [])


def test_spark_reads_an_inline_vector_by_its_stated_size(spark: SparkSession, delta: Path) -> None:  # noqa: F811
    """The attested vector (row 1) inline in a ``dataChange: false`` rewrite: Spark reads the attested rows; stated 2
    bytes short, Spark fails the read (the bitmap cut) while delta-rs still deletes row 1 (it reads every decoded
    byte)."""
    before = cardinality._delta_rs(delta)
    got: dict[int, Any] = {}
    for short in (0, 2):
        path = delta.parent / f"inline-{short}"
        shutil.copytree(delta, path)
        inline_vector(path, short=short)
        assert cardinality._delta_rs(path) == before
        try:
            got[short] = sorted(r["v"] for r in spark.read.format("delta").load(str(path)).select("v").collect())
        except Exception as exc:  # the read Spark refuses
            got[short] = type(exc).__name__
    assert got[0] == before and not isinstance(got[2], list), got
