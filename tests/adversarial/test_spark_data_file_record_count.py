"""An Iceberg data file whose manifest entry says it holds no row (``record_count`` 0) while it holds rows.

pyiceberg 0.12 plans every scan, a full one too, through its inclusive-metrics evaluator, which skips a file of
``record_count`` 0 before looking at the filter (``_InclusiveMetricsEvaluator.eval``: "include_empty_files" is off by
default); Iceberg Java 1.12 evaluates a data file's metrics only when the scan has a row filter
(``ManifestReader.hasRowFilter``), so a full read reads the file. Measured (Spark 4.1 / Iceberg 1.12, pyiceberg 0.12):
a file holding id 100 appended through Iceberg Java's ``AppendFiles`` with a record count of 0 — Spark returned id
100, pyiceberg did not; ``attest record`` attested the digest's rows (the file read, id 100 in) and ``verify`` said
VERIFIED. Now a digested data file of record count 0 that holds rows is ``table_inconsistent`` (carriers/iceberg/
content.py), nothing recorded; the same append with its true count is attested.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import merge_on_read_table, pyiceberg_ids, spark_ids
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("count", [0, 1], ids=["record_count_0", "honest"])
def test_a_data_file_claiming_no_rows(spark: SparkSession, spark_warehouse: Path, count: int) -> None:
    name, ident, ref = merge_on_read_table(spark, "rc0")
    holder = str(spark.sql(f"SELECT _file FROM {name} LIMIT 1").collect()[0][0])
    path = local(holder).parent / f"claims-{count}-rows.parquet"
    field = pa.field("id", pa.int64(), nullable=True, metadata={b"PARQUET:field_id": b"1"})
    pq.write_table(pa.table({"id": pa.array([100], pa.int64())}, schema=pa.schema([field])), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    data = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withRecordCount(count).build()
    table.newAppend().appendFile(data).commit()
    every = [*range(10), 100]
    assert spark_ids(spark, name) == every  # Java reads the file on a full scan whatever its count says
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    if count:
        assert pyiceberg_ids(spark_warehouse, ident) == every
        assert rc == 0, doc
        rc, doc = _cli(spark_warehouse, "verify", ref)
        assert rc == 0 and doc["passed"], doc
        return
    assert pyiceberg_ids(spark_warehouse, ident) == list(range(10))  # pyiceberg skips a file of no records
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc  # nothing recorded: unattested
