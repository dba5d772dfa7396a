"""Round 21 (second pass) on the Spark read gate: the files a file-source read lists, not only its root paths.

The gate refused a file-source read (``spark.read.parquet(path)``) whose root path is at or inside a Delta / Iceberg
table's folder, but it looked only at the roots. A read whose root is *above* the table reached its files anyway:

- ``recursiveFileLookup`` (+ ``pathGlobFilter``) on a parent folder reads every Parquet file below it, an Iceberg
  table's replaced files (no snapshot references them) and a Delta table's removed ones (no version holds them);
- a symbolic link to a table's ``data/`` folder: the root (the link) is in no table's folder, its files are;
- a streaming file source (``spark.readStream.parquet``) on a table's folder, or recursively on a parent: the gate
  checked a stream's Delta / Iceberg sources only.

Each was let through, stale rows and all, by the code before this pass (carriers/spark/gate.py ``folder_reads``,
``stream_folder_reads``); the gate now looks at each folder Spark listed files in (once per folder), a stream's
paths and, recursively, the folders under them. tests/adversarial/test_spark_gate_held_round21.py pins the variants
that held.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_gate_round21 import overwritten_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _recursive(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet").parquet(path)


def _overwritten_delta(spark: SparkSession, hook: Hook, folder: Path) -> None:
    """An attested Delta table of one row whose folder still holds the four rows its overwrite removed."""
    spark.range(4).write.format("delta").save(str(folder))
    spark.range(100, 101).write.format("delta").mode("overwrite").save(str(folder))
    hook.flush()


def test_a_recursive_read_of_a_folder_above_an_iceberg_table_is_refused(spark: SparkSession, hook: Hook) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    table, location = overwritten_table(spark, hook, "r21l_ice")
    ns_dir = location.rsplit("/", 1)[0]
    spark.range(3).write.parquet(f"{ns_dir}/plain")  # no table's files, beside the table
    assert _recursive(spark, ns_dir).count() == 8  # the table's replaced rows (5 files' worth) and plain's 3
    with require_verified(spark) as gate:
        assert spark.table(table).count() == 1
        with pytest.raises(VerificationRefusedError) as refused:
            _recursive(spark, ns_dir).count()  # was: let through, 8 rows (the root is above the table)
        assert refused.value.code.value == "unattested", gate.refused
        assert "Iceberg table" in str(refused.value) and location.rsplit("/", 1)[1] in str(refused.value)
        # From two levels up; through spark.sql (the same file source).
        with pytest.raises(VerificationRefusedError):
            _recursive(spark, ns_dir.rsplit("/", 1)[0]).count()
        with pytest.raises(VerificationRefusedError):
            spark.sql(f"SELECT * FROM parquet.`{ns_dir}` WITH (recursiveFileLookup = true)").count()
        assert _recursive(spark, f"{ns_dir}/plain").count() == 3  # no table below: read


def test_a_recursive_read_of_a_folder_above_a_delta_table_is_refused(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    parent = spark_warehouse / f"r21l_delta_{uuid.uuid4().hex[:6]}"
    _overwritten_delta(spark, hook, parent / "t")
    spark.range(3).write.parquet(str(parent / "plain"))
    assert _recursive(spark, str(parent)).count() == 8  # the removed rows (4), the live one, plain's 3
    with require_verified(spark) as gate:
        assert spark.read.format("delta").load(str(parent / "t")).count() == 1
        with pytest.raises(VerificationRefusedError) as refused:
            _recursive(spark, str(parent)).count()  # was: let through, 8 rows
        assert refused.value.code.value == "unattested" and "Delta table" in str(refused.value), gate.refused
        # A list of paths, one of them the parent: the same.
        with pytest.raises(VerificationRefusedError):
            spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet").format(
                "parquet"
            ).load([str(parent / "plain"), str(parent)]).count()


def test_a_symbolic_link_to_a_tables_data_folder_is_refused(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    _, location = overwritten_table(spark, hook, "r21l_link")
    link = spark_warehouse / f"r21l_link_{uuid.uuid4().hex[:6]}"
    os.symlink(location.removeprefix("file:") + "/data", link)
    assert spark.read.parquet(str(link)).count() == 5  # through the link: the replaced rows too
    parent = spark_warehouse / f"r21l_above_{uuid.uuid4().hex[:6]}"
    parent.mkdir()
    os.symlink(location.removeprefix("file:"), parent / "t")  # a link to the table's folder, below a plain one
    with require_verified(spark) as gate:
        with pytest.raises(VerificationRefusedError) as refused:
            spark.read.parquet(str(link)).count()  # was: let through (the link is in no table's folder)
        assert "Iceberg table" in str(refused.value), gate.refused
        with pytest.raises(VerificationRefusedError):
            _recursive(spark, str(parent)).count()  # was: let through


def test_a_streaming_file_source_on_a_tables_files_is_refused(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    _, location = overwritten_table(spark, hook, "r21l_stream")
    ns_dir = location.rsplit("/", 1)[0]
    delta_parent = spark_warehouse / f"r21l_sdelta_{uuid.uuid4().hex[:6]}"
    _overwritten_delta(spark, hook, delta_parent / "t")
    schema = "id BIGINT"
    streams = {
        "iceberg data": spark.readStream.schema(f"{schema}, p BIGINT").parquet(f"{location}/data"),
        "delta folder": spark.readStream.schema(schema).parquet(str(delta_parent / "t")),
        "iceberg, recursive from above": spark.readStream.schema(f"{schema}, p BIGINT")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.parquet")
        .parquet(ns_dir),
        "delta, recursive from above": spark.readStream.schema(schema)
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.parquet")
        .parquet(str(delta_parent)),
    }
    with require_verified(spark) as gate:
        for what, stream in streams.items():
            name = f"r21l_{uuid.uuid4().hex[:6]}"
            with pytest.raises(VerificationRefusedError) as refused:  # was: started, the stale files read
                stream.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
            assert refused.value.code.value == "unattested" and "by path" in str(refused.value), (what, gate.refused)
        assert not spark.streams.active
