"""What each Iceberg reader returns, for attacks that compare Java's rows (Spark) with pyiceberg's (ours), and the
merge-on-read table those attacks start from."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_ids(spark: SparkSession, name: str) -> list[int]:
    """The ``id`` column as Spark reads it now (refreshed: another writer may have committed since)."""
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())


def pyiceberg_ids(warehouse: Path, ident: str) -> list[int]:
    """The ``id`` column as pyiceberg reads it, through the Spark session's sqlite catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                         warehouse=(warehouse / "iceberg").as_uri())
    return sorted(catalog.load_table(ident).scan().to_arrow().column("id").to_pylist())


def merge_on_read_table(spark: SparkSession, prefix: str) -> tuple[str, str, str]:
    """A fresh v2 table ``(id BIGINT)`` whose deletes write delete files, ids 0–4 and 5–9 in one data file each:
    its Spark name, its catalog identifier and its ``iceberg://`` reference."""
    ns = f"{prefix}{uuid.uuid4().hex[:8]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(0, 5)")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(5, 10)")
    return name, ident, f"iceberg://iceberg/{ident}"
