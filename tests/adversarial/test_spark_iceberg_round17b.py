"""Round 17b, Iceberg Java's side (Spark 4.1 / Iceberg 1.12) of ``test_iceberg_round17b.py``: a data file storing
int32 values past its column's INT(8) / INT(16) annotation. Iceberg Java reads the stored values, vectorized and
not (300, 70000); pyiceberg reads them through pyarrow truncated (44, 4464), as the digest did: ``record`` bound the
truncated rows before, now it refuses the snapshot (``table_inconsistent``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import append_data_file, java_table
from tests.adversarial.test_iceberg_round17b import narrow_file
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("kind", "values", "truncated"), [(pa.int8(), [300, 1], [1, 44]), (pa.int16(), [70000, 1], [1, 4464])]
)
def test_java_reads_integers_past_their_annotation_as_stored(
    spark: SparkSession, spark_warehouse: Path, kind: pa.DataType, values: list[int], truncated: list[int]
) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    ns = f"nar17{uuid.uuid4().hex[:6]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (v INT) USING iceberg TBLPROPERTIES ('format-version'='2')")
    table = java_table(spark, name)
    folder = local(str(table.location())) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = narrow_file(folder / "narrow.parquet", values, kind, field_id=1)
    append_data_file(spark, table, path)  # with Java's own metrics of the file
    spark.sql(f"REFRESH TABLE {name}")
    got = {}
    for vectorized in ("true", "false"):
        with session_conf(spark, "spark.sql.iceberg.vectorization.enabled", vectorized):
            got[vectorized] = sorted(r[0] for r in spark.sql(f"SELECT v FROM {name}").collect())
    catalog = SqlCatalog(
        "iceberg",
        uri=f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}",
        warehouse=(spark_warehouse / "iceberg").as_uri(),
    )
    got["pyiceberg"] = sorted(catalog.load_table(ident).scan().to_arrow().column("v").to_pylist())
    assert got == {"true": sorted(values), "false": sorted(values), "pyiceberg": truncated}, got
    rc, doc = _cli(
        spark_warehouse, "record", f"iceberg://iceberg/{ident}", "--model", "orders", "--program-hash", PROGRAM
    )
    assert rc != 0 and codes(doc) == ["table_inconsistent"], doc
