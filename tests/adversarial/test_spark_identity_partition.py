"""Tried and held: an identity-partitioned column whose value in a data file contradicts the file's partition tuple,
in the attested snapshot itself (an append, not a rewrite).

Iceberg Java (Spark) takes an identity partition column's value from the manifest's partition tuple
(``PartitionUtil.constantsMap``), pyiceberg from the file when the file has the column, and both prune a filtered read
by the tuple. Measured (Spark 4.1 / Iceberg 1.12, pyiceberg 0.12) on a file holding ``a = 99`` under the tuple
``a = 10``: pyiceberg read 99, Spark read 10, and ``WHERE a = 99`` returned no row in either. ``record`` refuses the
table (``table_inconsistent``, carriers/iceberg/content.py ``_partition_check``, run on every digest, not only on a
rewrite's files); the same append with the honest value is attested and verifies.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.iceberg.rewrites import live_data_files, replace, with_ids, write_file

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _appended(warehouse: Path, value: int) -> tuple[str, str]:
    """A table partitioned by identity(a): (1, a=10) appended by pyiceberg, then a file holding (2, a=``value``)
    appended under the first file's tuple (a=10)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
    ns = f"idp{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64())])
    table = catalog.create_table(f"{ns}.t", schema=schema)
    with table.update_spec() as update:
        update.add_identity("a")
    table = catalog.load_table(f"{ns}.t")
    table.append(pa.table({"id": [1], "a": [10]}, schema=schema))
    (first,) = live_data_files(table)
    added = write_file(table, with_ids(pa.table({"id": [2], "a": [value]}, schema=schema), [1, 2]),
                       partition=first.partition, spec_id=first.spec_id)
    table = replace(catalog, table, remove=[], data_files=[added], operation="append")
    assert sorted(table.scan().to_arrow().column("a").to_pylist()) == sorted([10, value])  # pyiceberg: the file's
    if value != 10:  # a filtered read prunes the file by its tuple
        assert table.scan(row_filter=f"a = {value}").to_arrow().num_rows == 0
    return f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"


def test_an_identity_partition_value_contradicted_by_the_file_is_not_attested(spark: SparkSession,
                                                                              spark_warehouse: Path) -> None:
    name, ref = _appended(spark_warehouse, 99)
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT id, a FROM {name}").collect()) == [(1, 10), (2, 10)]
    assert spark.sql(f"SELECT id FROM {name} WHERE a = 99").collect() == []
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and codes(doc) == ["table_inconsistent"] and "partition value" in json.dumps(doc), doc

    name, ref = _appended(spark_warehouse, 10)  # the control
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
