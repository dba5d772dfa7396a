"""Round 21 on the Spark read gate: the files of an Iceberg table read by path as a file source.

``spark.read.parquet("<iceberg table>/data")`` (or a partition folder, a glob or one data file under the table's
location) lists the folder, not the table's metadata: every Parquet file there is read, the files no live snapshot
references too (an overwrite's replaced files, which stay until ``expire_snapshots`` / ``remove_orphan_files``), and
no delete file is applied. Round 20 refused such a read of a Delta table's files (``folder_reads``); for an Iceberg
table the gate let it through without a check, stale rows and all, while the hook recorded it as a ``path:`` input
(heuristic, never the table's content). Failed on the code before this round (carriers/spark/gate.py
``folder_reads``); tests/adversarial/test_spark_gate_held_round21.py pins the variants that held.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_hook_round14 import _recorded

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def iceberg_location(spark: SparkSession, table: str) -> str:
    """An Iceberg table's location as its metadata holds it (``file:/…``)."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return str(next(r.data_type for r in rows if r.col_name == "Location"))


def overwritten_table(spark: SparkSession, hook: Hook, prefix: str) -> tuple[str, str]:
    """An attested Iceberg table (one row, ``id`` 100, partitioned by ``p``) whose ``data/`` still holds the four rows
    its overwrite replaced (no snapshot of it references them): its name and location."""
    ns = f"iceberg.{prefix}_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.t (id BIGINT, p BIGINT) USING iceberg PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {ns}.t SELECT id, id % 2 FROM range(4)")
    spark.sql(f"INSERT OVERWRITE {ns}.t SELECT 100L, 0L")  # dynamic overwrite: both partitions' files replaced
    hook.flush()
    return f"{ns}.t", iceberg_location(spark, f"{ns}.t")


def test_the_read_gate_refuses_a_file_source_read_of_an_iceberg_tables_files(spark: SparkSession, hook: Hook) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    table, location = overwritten_table(spark, hook, "r21_ice")
    assert sorted(r[0] for r in spark.read.parquet(f"{location}/data").select("id").collect()) == [0, 1, 2, 3, 100]
    first = spark.read.parquet(f"{location}/data").inputFiles()[0]
    with require_verified(spark) as gate:
        assert spark.table(table).count() == 1  # the table: attested, one row
        reader = spark.read
        # Its data folder, a partition folder, a glob, one data file.
        reads = [(reader, f"{location}/data{under}") for under in ("", "/p=0", "/*/*.parquet")] + [(reader, first)]
        # Its root, every Parquet file under it (a plain read of the root fails in Spark: metadata/ is no partition).
        reads.append((reader.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet"), location))
        for source, path in reads:
            with pytest.raises(VerificationRefusedError) as refused:
                source.parquet(path).count()  # was: let through unchecked, the replaced rows and all (5 rows)
            message = str(refused.value)
            assert refused.value.code.value == "unattested" and "Iceberg table" in message, (path, gate.refused)
            assert "by path" in message, message
        # Its metadata read as JSON files is no read of its data: let through.
        assert spark.read.json(f"{location}/metadata/*.metadata.json").count() > 0

    # The hook records such a read as a file source (``path:``, heuristic), never the table's content.
    ns = table.rsplit(".", 1)[0]
    spark.read.parquet(f"{location}/data").writeTo(f"{ns}.dst").create()
    hook.flush()
    assert hook.results[-1].location.endswith(f"{ns}.dst".split(".", 1)[1]), hook.results[-1].location
    doc, inputs = _recorded(hook.results[-1])
    (read,) = inputs
    assert read["table"].startswith("path:") and read["table"].endswith("/data"), inputs
    assert read["proof_class"] == "heuristic" and "content" not in read, inputs
    assert doc["inputs_proof_class"] == "heuristic", inputs


def test_the_optional_gate_reports_a_file_source_read_of_an_iceberg_tables_files(
    spark: SparkSession, hook: Hook
) -> None:
    from attest.spark import require_verified

    _, location = overwritten_table(spark, hook, "r21_opt")
    with require_verified(spark, mode="optional") as gate:
        assert spark.read.parquet(f"{location}/data").count() == 5  # read, past the metadata: reported
    assert len(gate.warnings) == 1 and "Iceberg table" in gate.warnings[0] and "by path" in gate.warnings[0], (
        gate.warnings
    )
