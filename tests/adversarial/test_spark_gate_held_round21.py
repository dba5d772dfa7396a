"""Round 21 variants of file-source reads near an Iceberg table, under the read gate (the attack itself:
tests/adversarial/test_spark_gate_round21.py). Measured with Spark 4.1 / Iceberg 1.12:

- Parquet files that are no table's, in a folder beside an Iceberg table: read, no check (no table is read).
- A glob from a folder above the table that names its data files (``<ns>/*/data/*/*.parquet``): Spark expands it to
  the files, each under the table's folder: refused.
- A plain read of a folder holding an Iceberg table deeper (its namespace folder): Spark itself refuses it (the table's
  ``metadata/`` and ``data/`` are no partition folders: ``CONFLICTING_DIRECTORY_STRUCTURES``), nothing is read.
- The same folder read with ``recursiveFileLookup``: every Parquet file under it is read, the table's replaced files
  too, and the gate, which looks for a table at and above each root path Spark lists (not below it), lets it through.
  A residual, pinned as it is (docs/spark.md, "The read gate"); a Delta table deeper is the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_gate_round21 import overwritten_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def test_file_source_reads_beside_and_above_an_iceberg_table(spark: SparkSession, hook: Hook) -> None:
    from pyspark.errors import PySparkException

    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    _, location = overwritten_table(spark, hook, "r21_held")
    ns_dir = location.rsplit("/", 1)[0]
    spark.range(3).write.parquet(f"{ns_dir}/plain")  # no table's files, beside the table
    with require_verified(spark) as gate:
        assert spark.read.parquet(f"{ns_dir}/plain").count() == 3
        assert gate.refused == [] and gate.warnings == []
        with pytest.raises(VerificationRefusedError):
            spark.read.parquet(f"{ns_dir}/*/data/*/*.parquet").count()  # the table's files, by a glob from above
        assert len(gate.refused) == 1 and "Iceberg table" in gate.refused[0], gate.refused
        with pytest.raises(PySparkException, match="CONFLICTING_DIRECTORY_STRUCTURES"):
            spark.read.parquet(ns_dir).count()  # Spark refuses it: metadata/ and data/ are no partitions
        # Residual: every Parquet file under the folder, the table's replaced ones too (5 rows) and plain's (3).
        recursive = spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet")
        assert recursive.parquet(ns_dir).count() == 8
        assert len(gate.refused) == 1, gate.refused
