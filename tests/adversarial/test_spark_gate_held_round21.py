"""Round 21 variants of file-source reads near an Iceberg table, under the read gate (the attack itself:
tests/adversarial/test_spark_gate_round21.py). Measured with Spark 4.1 / Iceberg 1.12:

- Parquet files that are no table's, in a folder beside an Iceberg table: read, no check (no table is read).
- A glob from a folder above the table that names its data files (``<ns>/*/data/*/*.parquet``): Spark expands it to
  the files, each under the table's folder: refused.
- A plain read of a folder holding an Iceberg table deeper (its namespace folder): Spark itself refuses it (the table's
  ``metadata/`` and ``data/`` are no partition folders: ``CONFLICTING_DIRECTORY_STRUCTURES``), nothing is read.
- The same folder read with ``recursiveFileLookup`` reads every Parquet file under it, the table's replaced files
  too: it was let through (the gate looked at the root paths only), and is refused since the gate looks at the
  folders Spark listed files in (tests/adversarial/test_spark_gate_round21_listed.py, with a Delta table too).
- Other spellings of a read of the table's files, each refused by its root path: a list of paths one of which is the
  table's ``data/``, ``spark.sql`` on ``parquet.`<data>```, a path with ``..`` (Hadoop's ``Path`` normalises it)
  or without its ``file:`` scheme, the files read as bytes (``binaryFile``) or lines (``text``), which are their
  content past the metadata as much as a Parquet read is.
- Reads that are no read of a table's data, let through: a Delta table's ``_delta_log`` read as JSON (its log, the
  same files a ``format("delta")`` read replays: no data file past the table's own view), Parquet files beside a
  table read recursively, a streaming file source on a folder beside a table.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_gate_round21 import overwritten_table

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame, SparkSession

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
        assert len(gate.refused) == 1, gate.refused


def test_other_spellings_of_a_read_of_a_tables_files(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    _, location = overwritten_table(spark, hook, "r21_spell")
    ns_dir = location.rsplit("/", 1)[0]
    spark.range(3).write.parquet(f"{ns_dir}/plain")
    delta = spark_warehouse / f"r21_spell_{uuid.uuid4().hex[:6]}"
    spark.range(4).write.format("delta").save(str(delta))
    spark.range(100, 101).write.format("delta").mode("overwrite").save(str(delta))
    hook.flush()
    data = f"{location}/data"
    reads: dict[str, Callable[[], DataFrame]] = {
        "a list of paths": lambda: spark.read.format("parquet").load([f"{ns_dir}/plain", f"{data}/p=0"]),
        "parquet.`path`": lambda: spark.sql(f"SELECT * FROM parquet.`{data}`"),
        "..": lambda: spark.read.parquet(f"{location}/metadata/../data"),
        "no scheme": lambda: spark.read.parquet(data.removeprefix("file:")),
        "binaryFile": lambda: spark.read.format("binaryFile").load(f"{data}/*/*.parquet"),
        "text": lambda: spark.read.text(data),
        "a Delta table's files as text": lambda: spark.read.option("pathGlobFilter", "*.parquet").text(str(delta)),
    }
    with require_verified(spark) as gate:
        for what, read in reads.items():
            with pytest.raises(VerificationRefusedError) as refused:
                read().count()
            assert "by path" in str(refused.value), (what, gate.refused)
        refused_before = len(gate.refused)
        # No read of a table's data: the Delta log as JSON, plain Parquet files beside the table, read recursively
        # or streamed.
        assert spark.read.json(f"{delta}/_delta_log/*.json").count() > 0
        recursive = spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet")
        assert recursive.parquet(f"{ns_dir}/plain").count() == 3
        name = f"r21_{uuid.uuid4().hex[:6]}"
        stream = spark.readStream.schema("id BIGINT").parquet(f"{ns_dir}/plain")
        query = stream.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
        query.awaitTermination(120)
        assert spark.table(name).count() == 3
        assert len(gate.refused) == refused_before, gate.refused
