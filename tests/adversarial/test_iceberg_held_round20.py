"""Round 20, tried on Iceberg delete applicability and held (measured with Spark 4.1 / Iceberg 1.12 and pyiceberg
0.12): what each reader applies, and the verdict, which must be VERIFIED only where both read the attested rows.

- A position delete file (committed through Iceberg Java's ``RowDelta``, its own metrics: equal ``file_path`` bounds)
  naming its data file by another spelling of its location than the manifest's — ``file:///t/x.parquet`` for the
  ``file:/t/x.parquet`` Spark writes, a ``%20`` escape in the name: Iceberg Java scopes the file by that string and
  reads the rows whose ``file_path`` is the data file's location as written, pyiceberg indexes it by the same string
  and matches rows by it too — neither applied it (all ten rows), and the spelling Spark wrote deleted id 5 in both.
- A v3 deletion vector beside a legacy (partition-scoped) position delete file for the same data file — Spark's own
  ``DELETE`` after upgrading a v2 table written with ``write.delete.granularity=partition``: Iceberg Java reads the
  vector only (it merged the legacy file's positions of that data file), pyiceberg both (the same positions).

Each is attested and VERIFIED, rightly: every reader gets the digest's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import (
    java_table,
    merge_on_read_table,
    position_delete,
    pyiceberg_ids,
    spark_ids,
)
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _position_delete(spark: SparkSession, name: str, file_path: str) -> None:
    """Commit (``RowDelta``, Java's own metrics) a position delete file naming position 0 of ``file_path``."""
    path = local(str(java_table(spark, name).location())) / "data" / "respelled.parquet"
    position_delete(spark, name, path, file_path, [0])


def _attested_and_verified(warehouse: Path, ref: str) -> None:
    rc, doc = _cli(warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(warehouse, "verify", ref, "--level", "bytes")
    assert rc == 0 and doc["passed"] and doc["content_digest_bound"] and not codes(doc), doc


@pytest.mark.spark
@pytest.mark.parametrize("spelling", ["as_written", "three_slashes", "escaped_space"])
def test_a_position_delete_naming_its_data_file_by_another_spelling(
    spark: SparkSession, spark_warehouse: Path, spelling: str
) -> None:
    name, ident, ref = merge_on_read_table(spark, "spl")
    located = {str(r[0]): int(r[1]) for r in spark.sql(f"SELECT _file, min(id) FROM {name} GROUP BY _file").collect()}
    holder = next(f for f, low in located.items() if low == 5)
    assert holder.startswith("file:/") and not holder.startswith("file://")  # the form Spark writes
    target = {
        "as_written": holder,
        "three_slashes": "file://" + holder[len("file:") :],
        "escaped_space": holder.replace("/data/", "/data/%20"),
    }[spelling]
    _position_delete(spark, name, target)
    expected = [0, 1, 2, 3, 4, 6, 7, 8, 9] if spelling == "as_written" else list(range(10))
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == expected
    _attested_and_verified(spark_warehouse, ref)


@pytest.mark.spark
def test_a_deletion_vector_beside_a_legacy_position_delete_file(spark: SparkSession, spark_warehouse: Path) -> None:
    name, ident, ref = merge_on_read_table(spark, "dvl")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.delete.granularity'='partition')")
    spark.sql(f"DELETE FROM {name} WHERE id IN (2, 7)")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"DELETE FROM {name} WHERE id = 3")
    formats = sorted(str(r[0]) for r in spark.sql(f"SELECT file_format FROM {name}.delete_files").collect())
    assert formats == ["PARQUET", "PUFFIN"], formats  # the legacy file kept, a vector for the file of id 3
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == [0, 1, 4, 5, 6, 8, 9]
    _attested_and_verified(spark_warehouse, ref)
