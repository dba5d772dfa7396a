"""Delta tables as Spark writes them — deletion vectors, v2 checkpoints, liquid clustering, column mapping,
special partition values — attested by the hook and verified without Spark (delta-rs reader)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import required_hook
from tests.spark.test_hook import _attest, _delta_path, _uid

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


hook = required_hook  # attest.spark.install(spark, policy="required") for the test (tests/conftest.py)


def _verify_json(ref: str) -> dict[str, object]:
    proc = _attest("verify", ref, "--level", "bytes", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return report  # type: ignore[no-any-return]


def test_deletion_vectors_are_part_of_the_bytes(spark: SparkSession, hook: Hook) -> None:
    name = f"dv_{_uid()}"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range(1000)")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")  # a DV, not a file rewrite
    hook.flush()
    assert hook.failed == 0, hook.errors
    path = Path(_delta_path(spark, name))
    dv_files = list(path.rglob("deletion_vector_*.bin"))
    assert dv_files, "Spark should have written a deletion vector file"
    report = _verify_json(str(path))
    assert report["passed"] and report["files_checked"] >= 2
    shown = json.loads(_attest("show", str(path)).stdout)
    assert any(o["path"].endswith(dv_files[0].name) for o in shown["output_hashes"])
    # The DV file is attested bytes: flipping one of its bytes fails verification.
    # A corrupt deletion vector (its checksum broken): the engine cannot read the table at all, never a pass; an
    # unreadable table exits 2, attested or not (docs/errors.md).
    data = bytearray(dv_files[0].read_bytes())
    data[-1] ^= 1
    dv_files[0].write_bytes(bytes(data))
    proc = _attest("verify", str(path), "--level", "bytes", "--json")
    assert proc.returncode == 2 and "table_unreadable" in proc.stdout


def test_v2_checkpoints_column_mapping_and_clustering(spark: SparkSession, hook: Hook) -> None:
    name = f"v2_{_uid()}"
    spark.sql(f"CREATE TABLE {name} (id INT, `odd name` STRING) USING delta CLUSTER BY (id) "
              "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2', "
              "'delta.columnMapping.mode' = 'name')")
    for i in range(5):
        spark.sql(f"INSERT INTO {name} VALUES ({i}, 'v{i}')")
    hook.flush()
    assert hook.failed == 0, hook.errors
    path = Path(_delta_path(spark, name))
    assert list((path / "_delta_log").glob("*.checkpoint*")), "expected a checkpoint"
    report = _verify_json(str(path))
    assert report["passed"]
    # Time travel to an attested older version works through checkpoints as well.
    assert _attest("verify", str(path), "--version", "2", "--level", "files").returncode in (0, 1)


def test_partitions_with_null_and_special_characters(spark: SparkSession, hook: Hook) -> None:
    name = f"pt_{_uid()}"
    spark.createDataFrame([(1, "a b"), (2, None), (3, "x/y=z%"), (4, "日本")], "id int, p string") \
        .write.format("delta").partitionBy("p").saveAsTable(name)
    hook.flush()
    assert hook.failed == 0, hook.errors
    report = _verify_json(_delta_path(spark, name))
    assert report["passed"] and report["files_checked"] == 4


def test_record_attests_what_delta_rs_cannot_write_to(spark: SparkSession, tmp_path: Path) -> None:
    """delta-rs 1.6 refuses to commit to row-tracking tables; the attestation commit is the carrier's own (a
    metadata-only commit honours row tracking), so the CLI records and verifies such a table without Spark."""
    name = f"nr_{_uid()}"
    spark.sql(f"CREATE TABLE {name} (id INT) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
              "'delta.enableRowTracking' = 'true')")
    spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
    path = _delta_path(spark, name)
    assert _attest("verify", path).returncode == 1  # unattested first
    proc = _attest("record", path, "--model", "m", "--program-hash", "a" * 64)
    assert proc.returncode == 0 and proc.stdout.startswith("RECORDED"), proc.stdout + proc.stderr
    report = _verify_json(path)
    assert report["passed"] and report["level"] == "bytes"
    # Spark still reads the table after the carrier's commit (the protocol was honoured).
    spark.sql(f"REFRESH TABLE {name}")
    assert spark.sql(f"SELECT count(*) AS n FROM {name}").collect()[0]["n"] == 2


def test_typed_statistics_in_spark_checkpoints_agree_and_a_forged_json_twin_is_refused(spark: SparkSession,
                                                                                       hook: Hook) -> None:
    """Spark's checkpoints hold each file's statistics twice (JSON and ``stats_parsed``) and partition values twice:
    for every column type here the two renderings are held to agree without a false alarm; a forged JSON maximum
    (what Spark's file skipping reads, while delta-rs reads the typed one) is ``table_inconsistent``."""
    import pyarrow.parquet as pq

    name = f"st_{_uid()}"
    spark.sql(f"CREATE TABLE {name} (i INT, b BIGINT, f FLOAT, d DOUBLE, m DECIMAL(12, 3), dt DATE, ts TIMESTAMP, "
              "tn TIMESTAMP_NTZ, s STRING, ok BOOLEAN, st STRUCT<x: INT, y: STRING>, p DATE) USING delta "
              "PARTITIONED BY (p) TBLPROPERTIES ('delta.checkpointInterval' = '2', "
              "'delta.checkpoint.writeStatsAsStruct' = 'true', 'delta.checkpoint.writeStatsAsJson' = 'true')")
    for k in range(3):
        spark.sql(f"INSERT INTO {name} VALUES ({k}, {k} * 10000000000, 1.1 + {k}, 2.2 / 3 + {k}, 123.456 + {k}, "
                  f"DATE '2026-01-0{k + 1}', TIMESTAMP '2026-01-01 10:00:00.123456' + INTERVAL {k} HOURS, "
                  f"TIMESTAMP_NTZ '2026-01-01 10:00:00.5', 'café {k}', {k % 2 == 0}, named_struct('x', {k}, 'y', 'z'), "
                  f"DATE '2026-02-0{k + 1}')")
    hook.flush()
    assert hook.failed == 0, hook.errors
    path = Path(_delta_path(spark, name))
    checkpoints = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints, "expected a checkpoint"
    add_type = pq.read_schema(checkpoints[-1]).field("add").type
    assert add_type.get_field_index("stats_parsed") >= 0, add_type
    assert _verify_json(str(path))["passed"]

    cp = checkpoints[-1]
    table = pq.read_table(cp)
    rows = table.to_pylist()
    add = next(r["add"] for r in rows if r.get("add") and r["add"].get("stats"))
    stats = json.loads(add["stats"])
    stats["maxValues"]["i"] = -1
    add["stats"] = json.dumps(stats)
    pq.write_table(table.from_pylist(rows, schema=table.schema), cp)
    proc = _attest("verify", str(path), "--level", "schema", "--json")
    assert proc.returncode == 1 and "as typed values differ" in proc.stdout, proc.stdout
