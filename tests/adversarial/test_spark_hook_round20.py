"""Round 20 on the Spark hook and the read gate: does what they check match what Spark read?

- A Delta table in a folder whose name holds a percent escape (``r20_<u>%41``): Spark prints a Hadoop ``Path``
  unescaped (``file:/w/r20_<u>%41``) and the carriers read that as a URI, percent-decoded (``r20_<u>A``, another
  folder). The hook recorded that other table's content as the job's input (``strong``) and the read gate verified
  that other table, then let Spark read the unattested one.
- The files of a Delta table read by path as a file source (``spark.read.parquet(table)``): the read lists the folder,
  not the log (files the log removed are read too), and the read gate, which checks Delta / Iceberg relations only,
  let it through without a check.

Each failed on the code before this round (carriers/spark/plan.py ``carrier_uri``, carriers/spark/gate.py
``folder_reads``); tests/adversarial/test_spark_hook_held_round20.py pins the variants that held.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_hook_round14 import _inputs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _table_id(folder: Path) -> str:
    """The Delta table id in a folder's first commit, read from the file itself (no carrier, no URI)."""
    first = (folder / "_delta_log" / ("0" * 20 + ".json")).read_text().splitlines()
    return next(json.loads(line)["metaData"]["id"] for line in first if '"metaData"' in line)


def test_a_folder_named_with_a_percent_escape_is_the_folder_spark_read(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    import deltalake
    import pyarrow as pa

    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    u = uuid.uuid4().hex[:6]
    decoded = spark_warehouse / f"r20_{u}A"  # attested: what the escape decodes to
    spark.range(3).write.format("delta").save(str(decoded))
    hook.flush()
    odd = spark_warehouse / f"r20_{u}%41"  # unattested, written outside Spark (a plain folder renamed: no URI)
    staging = spark_warehouse / f"r20_{u}_staging"
    deltalake.write_deltalake(str(staging), pa.table({"id": pa.array([100, 101, 102, 103, 104], pa.int64())}))
    shutil.move(str(staging), str(odd))
    assert _table_id(odd) != _table_id(decoded)  # two tables

    dst = spark_warehouse / f"r20_{u}_dst"
    spark.read.format("delta").load(str(odd)).write.format("delta").save(str(dst))
    hook.flush()
    assert sorted(r[0] for r in spark.read.format("delta").load(str(dst)).collect()) == [100, 101, 102, 103, 104]
    doc, inputs = _inputs(hook, str(dst))
    # was: the decoded folder as the input (its location, its attested content, strong): rows the job never read
    (read,) = inputs
    assert read["location"].endswith(f"/r20_{u}%2541") and "content" not in read, inputs
    assert doc["inputs_proof_class"] == "heuristic", inputs  # the folder read is unattested: not known by content

    with require_verified(spark) as gate:
        assert spark.read.format("delta").load(str(decoded)).count() == 3  # the attested one reads
        with pytest.raises(VerificationRefusedError) as refused:
            spark.read.format("delta").load(str(odd)).count()  # was: verified the decoded folder, read this one
        assert refused.value.code.value == "unattested", gate.refused
        # A raw "#" likewise: the carriers took "r20_<u>A#x" for "r20_<u>A" (the rest a URI fragment).
        hashed = spark_warehouse / f"{decoded.name}#x"
        shutil.copytree(odd, hashed)
        with pytest.raises(VerificationRefusedError):
            spark.read.format("delta").load(str(hashed)).count()  # was: verified the attested "r20_<u>A"


def test_the_read_gate_refuses_a_file_source_read_of_a_delta_tables_files(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    src = spark_warehouse / f"r20_folder_{uuid.uuid4().hex[:6]}"
    spark.range(4).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(str(src))
    spark.range(1).selectExpr("id", "0L AS p").write.format("delta").mode("overwrite").save(str(src))  # removes
    hook.flush()
    with require_verified(spark) as gate:
        assert spark.read.format("delta").load(str(src)).count() == 1  # the table: attested, one row
        for folder in (src, src / "p=0"):  # the table's folder, a partition folder of it
            with pytest.raises(VerificationRefusedError) as refused:
                spark.read.parquet(str(folder)).count()  # was: let through unchecked, removed files and all (3 rows)
            assert refused.value.code.value == "unattested" and "by path" in str(refused.value), gate.refused
        # Its log read as JSON files is no read of its data: let through.
        assert spark.read.json(str(src / "_delta_log" / "*.json")).count() > 0
