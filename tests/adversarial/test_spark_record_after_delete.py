"""Spark's merge-on-read ``DELETE`` between two records of an Iceberg v2 table (tests/adversarial/
test_iceberg_record_after_delete.py has the pyiceberg-made case and the explanation).

Measured with Spark 4.1 / Iceberg 1.12: a table with a position delete file (``DELETE ... WHERE id = 2``), attested;
``DELETE ... WHERE id = 7`` (a position delete file for the other data file), attested again — the second record
reused the digest of the rows before the delete. Then a ``replace`` snapshot writing every row but id 2 into one file
(id 7 back, Spark reads it) was ``VERIFIED (content; …, same rows)``, and Spark's own ``rewrite_data_files`` of the
table (the rows Spark read) was ``content_changed``. Now: ``content_changed`` and ``VERIFIED``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import merge_on_read_table, spark_ids
from tests.iceberg.rewrites import replace, with_ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _deleted_twice(spark: SparkSession, warehouse: Path) -> tuple[str, str, str]:
    name, ident, ref = merge_on_read_table(spark, "rad")
    spark.sql(f"DELETE FROM {name} WHERE id = 2")
    rc, doc = _cli(warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    spark.sql(f"DELETE FROM {name} WHERE id = 7")
    rc, doc = _cli(warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    assert spark_ids(spark, name) == [0, 1, 3, 4, 5, 6, 8, 9]
    return name, ident, ref


def test_spark_delete_then_record_then_rewrites(spark: SparkSession, spark_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    # the attack: a replace snapshot bringing id 7 back
    name, ident, ref = _deleted_twice(spark, spark_warehouse)
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    back = [i for i in range(10) if i != 2]
    replace(catalog, catalog.load_table(ident), [with_ids(pa.table({"id": pa.array(back, pa.int64())}), [1])])
    assert spark_ids(spark, name) == back  # Spark reads id 7 again
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 1 and codes(doc) == ["content_changed"], json.dumps(doc)

    # the honest path: Spark's own rewrite_data_files of the rows it read
    name, ident, ref = _deleted_twice(spark, spark_warehouse)
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{ident}', options => map('rewrite-all', 'true'))")
    assert spark_ids(spark, name) == [0, 1, 3, 4, 5, 6, 8, 9]
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot"), json.dumps(doc)
