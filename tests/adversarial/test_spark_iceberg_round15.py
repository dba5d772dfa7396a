"""Round 15, Java's side: honest Spark deletes in a partition whose value is NaN (a table partitioned by a float or
double column). pyiceberg 0.12 looks a partition-scoped delete file up by a Record of its partition values compared
with ``==``, and NaN equals nothing: it applies the delete to no data file, while Iceberg Java (``Double.compare``)
applies it. Spark's v3 deletion vectors carry no ``file_path`` bounds (pyiceberg scopes them by partition) and its v2
position deletes of ``write.delete.granularity=partition`` span files: both returned the deleted rows to pyiceberg.
``record`` attested them and ``verify`` said VERIFIED before (carriers/iceberg/deletes.py now models the lookup).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import pyiceberg_ids, spark_ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

KEPT = [1, 2, 3, 4, 5, 11, 12, 13, 14, 15]  # ids 0 and 10 deleted (one in each of two data files)
# table properties -> (Spark's rows, pyiceberg's rows, refused): the v2 default (file-scoped deletes, with file_path
# bounds pyiceberg scopes by location) is read alike and attested.
CASES = {
    "v3 deletion vectors": ("'format-version'='3', 'write.delete.mode'='merge-on-read'", KEPT, [0, *KEPT[:5], 10,
                                                                                              *KEPT[5:]], True),
    "v2 partition granularity": ("'format-version'='2', 'write.delete.mode'='merge-on-read', "
                                 "'write.delete.granularity'='partition'", KEPT, [0, *KEPT[:5], 10, *KEPT[5:]], True),
    "v2 file granularity": ("'format-version'='2', 'write.delete.mode'='merge-on-read'", KEPT, KEPT, False),
}


def test_deletes_in_a_nan_partition(spark: SparkSession, spark_warehouse: Path) -> None:
    """Each table: two data files in partition ``x = NaN``, a Spark DELETE of a row of each. Where pyiceberg reads
    the deleted rows and Spark does not, ``record`` and ``verify`` say ``table_inconsistent``; else it verifies."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.nan15")
    for case, (props, by_spark, by_pyiceberg, refused) in CASES.items():
        table = f"t{uuid.uuid4().hex[:8]}"
        name, ident, ref = f"iceberg.nan15.{table}", f"nan15.{table}", f"iceberg://iceberg/nan15.{table}"
        spark.sql(f"CREATE TABLE {name} (id BIGINT, x FLOAT) USING iceberg PARTITIONED BY (x) TBLPROPERTIES ({props})")
        for lo in (0, 10):
            spark.sql(f"INSERT INTO {name} SELECT id, CAST('NaN' AS FLOAT) FROM range({lo}, {lo + 6})")
        spark.sql(f"DELETE FROM {name} WHERE id IN (0, 10)")
        assert (spark_ids(spark, name), pyiceberg_ids(spark_warehouse, ident)) == (by_spark, by_pyiceberg), case
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        if not refused:
            assert rc == 0, (case, doc)
            rc, doc = _cli(spark_warehouse, "verify", ref)
            assert rc == 0 and doc["passed"], (case, doc)
            continue
        assert rc != 0 and "table_inconsistent" in codes(doc), (case, doc)
        assert "holds NaN" in str(doc), (case, doc)
        rc, doc = _cli(spark_warehouse, "verify", ref)
        assert rc != 0 and "table_inconsistent" in codes(doc), (case, doc)


def test_a_signed_zero_under_the_other_zeros_partition(spark: SparkSession, spark_warehouse: Path) -> None:
    """pyiceberg's append of x 0.0 and -0.0 into a table partitioned by x: a file for each zero holding both rows.
    Spark reads x from the partition tuple (each file's rows get its zero), pyiceberg from the file: ``record``
    refuses (tests/adversarial/test_iceberg_round15.py holds pyiceberg's side)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from tests.adversarial.test_iceberg_round15 import bits, signed_zero_table

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.zero15")
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}",
                         warehouse=(spark_warehouse / "iceberg").as_uri())
    table = f"t{uuid.uuid4().hex[:8]}"
    signed_zero_table(catalog, f"zero15.{table}")
    name = f"iceberg.zero15.{table}"
    spark.sql(f"REFRESH TABLE {name}")
    read = sorted((int(r[0]), int(r[1]) & (2**64 - 1)) for r in spark.sql(
        f"SELECT id, java_method('java.lang.Double', 'doubleToRawLongBits', x) FROM {name}").collect())
    assert read == [(1, 0), (1, bits(-0.0)), (2, 0), (2, bits(-0.0)), (3, bits(1.0))]  # Java: the tuple's x
    rc, doc = _cli(spark_warehouse, "record", f"iceberg://iceberg/zero15.{table}", "--model", "orders",
                   "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


def test_a_nested_identity_source_other_than_its_tuple(spark: SparkSession, spark_warehouse: Path) -> None:
    """A file holding s.a 10 under the partition tuple 11 of identity(s.a): Spark reads the tuple's 11, pyiceberg the
    file's 10 (a filtered read for the file's value skips the file in Spark); ``record`` refuses."""
    from pyiceberg.catalog.sql import SqlCatalog

    from tests.adversarial.test_iceberg_round15 import nested_partition_table

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.nest15")
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}",
                         warehouse=(spark_warehouse / "iceberg").as_uri())
    table = f"t{uuid.uuid4().hex[:8]}"
    nested_partition_table(catalog, f"nest15.{table}", tuple_value=11)
    name = f"iceberg.nest15.{table}"
    spark.sql(f"REFRESH TABLE {name}")
    assert [(int(r[0]), int(r[1])) for r in spark.sql(f"SELECT id, s.a FROM {name}").collect()] == [(1, 11)]
    assert spark.sql(f"SELECT id FROM {name} WHERE s.a = 10").collect() == []
    assert pyiceberg_ids(spark_warehouse, f"nest15.{table}") == [1]
    rc, doc = _cli(spark_warehouse, "record", f"iceberg://iceberg/nest15.{table}", "--model", "orders",
                   "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


def test_an_equality_delete_of_a_spec_of_void_fields_only(spark: SparkSession, spark_warehouse: Path) -> None:
    """A v1 table partitioned by p, its partition field dropped (Java's v1 spec keeps it as ``void``), upgraded to v2,
    then an equality delete of id 3 committed under that spec (Java's RowDelta): Java takes a spec of void fields only
    for unpartitioned and applies the delete to every file (Spark returned no id 3); the model took it for partitioned
    (pyiceberg's ``is_unpartitioned``: no field at all) and scoped it to files of its own spec, of which there are none:
    ``record`` attested 6 rows, VERIFIED before. Now the attested rows are Spark's."""
    import json

    import pyarrow as pa

    from tests.adversarial.spark_iceberg import equality_delete

    table = f"t{uuid.uuid4().hex[:8]}"
    name, ref = f"iceberg.void15.{table}", f"iceberg://iceberg/void15.{table}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.void15")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p BIGINT) USING iceberg PARTITIONED BY (p) "
              "TBLPROPERTIES ('format-version'='1')")
    spark.sql(f"INSERT INTO {name} SELECT id, id % 2 FROM range(0, 6)")
    spark.sql(f"ALTER TABLE {name} DROP PARTITION FIELD p")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('format-version'='2')")
    folder = Path(str(spark.sql(f"DESCRIBE TABLE EXTENDED {name}").where("col_name = 'Location'").collect()[0][1])
                  .removeprefix("file:")) / "data"
    rows = pa.table({"id": pa.array([3], pa.int64())}, schema=pa.schema(
        [pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})]))
    equality_delete(spark, name, folder / "eq.parquet", 1, rows)
    transforms = spark.sql(f"SELECT spec_id FROM {name}.delete_files").collect()
    assert [r[0] for r in transforms] == [1]  # the void-only spec
    assert spark_ids(spark, name) == [0, 1, 2, 4, 5]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    assert json.loads(Path(doc["sidecar"]).read_text())["content"]["rows"] == 5, doc  # Spark's rows, not 6
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
