"""A rewrite's added Parquet file whose columns readers identify differently: field ids, physical names, a name
mapping — measured with Spark (Iceberg 1.12, delta-spark 4.4), pyiceberg 0.12 and delta-rs 1.6.

Iceberg readers resolve a data file's columns by Parquet field id, or — for a file without ids — by the table's
name mapping (``schema.name-mapping.default``). They differ on a file where **some** fields carry an id: pyiceberg
takes ids only when every field has one and otherwise reads every column by the name mapping (the attested rows),
Iceberg Java takes the ids whenever any field has one and reads a field without one as missing (nulls, measured with
Spark). The digest is computed as pyiceberg reads: ``VERIFIED (content; …, same rows)`` before. Such a file is now
``table_inconsistent``; a file with no ids at all (both read it by the name mapping) still verifies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.test_spark_attacks import _verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["a", "b", "c"]),
                 "w": pa.array([7, 8, 9], pa.int64())})


def _ids(table: pa.Table, ids: dict[str, int]) -> pa.Table:
    return table.cast(pa.schema([f.with_metadata({"PARQUET:field_id": str(ids[f.name])}) if f.name in ids
                                 else f.with_metadata(None) for f in table.schema]))


def _mapped(spark_warehouse: Path, namespace: str) -> tuple[Any, Any]:
    """An Iceberg table with a name mapping, two appends attested; its catalog and table (pyiceberg)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.t", schema=ROWS.schema)
    mapping = table.metadata.schema().name_mapping.model_dump_json()
    table.transaction().set_properties({"schema.name-mapping.default": mapping}).commit_transaction()
    table = catalog.load_table(f"{namespace}.t")
    table.append(ROWS.slice(0, 1))
    table.append(ROWS.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog, catalog.load_table(f"{namespace}.t")


def _spark_rows(spark: SparkSession, name: str) -> list[tuple[Any, ...]]:
    spark.sql(f"REFRESH TABLE iceberg.{name}")
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, v, w FROM iceberg.{name}").collect())


@pytest.mark.parametrize(("ids", "spark_reads_v"), [({"id": 1, "w": 3}, [None, None, None]),
                                                    ({}, ["a", "b", "c"])])
def test_a_rewrite_whose_file_has_field_ids_on_some_columns(spark: SparkSession, spark_warehouse: Path,
                                                            ids: dict[str, int], spark_reads_v: list[Any]) -> None:
    from tests.iceberg.rewrites import replace

    namespace = f"fid{len(ids)}"
    catalog, table = _mapped(spark_warehouse, namespace)
    name = f"{namespace}.t"
    assert _spark_rows(spark, name) == [(1, "a", 7), (2, "b", 8), (3, "c", 9)]
    table = replace(catalog, table, [_ids(ROWS, ids)])
    assert sorted(table.scan().to_arrow().column("v").to_pylist()) == ["a", "b", "c"]  # pyiceberg: by name
    assert [r[1] for r in _spark_rows(spark, name)] == spark_reads_v  # Spark: by the ids present
    rc, doc = _verify(f"iceberg://iceberg/{name}", spark_warehouse, "--level", "bytes")
    if ids:
        assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
        assert "name mapping" in json.dumps(doc), doc
    else:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
