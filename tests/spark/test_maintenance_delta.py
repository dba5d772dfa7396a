"""Spark SQL maintenance of attested Delta tables (Delta 4.x), measured (docs/maintenance.md): VACUUM at retention
0, OPTIMIZE, OPTIMIZE ZORDER BY, REORG TABLE ... APPLY (PURGE). The attestation is delta-rs's attest_after_write."""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PROGRAM = "d" * 64


def _table(spark: SparkSession, tmp_path: Path, properties: str = "") -> tuple[str, Path]:
    path = tmp_path / f"t{uuid.uuid4().hex[:6]}"
    extra = f" TBLPROPERTIES ({properties})" if properties else ""
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRING) USING delta{extra}")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO delta.`{path}` SELECT id + {start}, CAST(id AS STRING) FROM range(20)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    return f"delta.`{path}`", path


def test_spark_vacuum_retain_0_hours_keeps_the_attestation(spark: SparkSession, tmp_path: Path) -> None:
    name, path = _table(spark, tmp_path)
    attested = verify(str(path), "--level", "bytes")[1]["attested_version"]
    spark.sql(f"INSERT OVERWRITE {name} SELECT id, 'new' FROM range(5)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    sidecars = sorted((path / "_recipe_attest").iterdir())  # sidecars and content-digest companion files
    with session_conf(spark, "spark.databricks.delta.retentionDurationCheck.enabled", "false"):
        spark.sql(f"VACUUM {name} RETAIN 0 HOURS").collect()
    assert sorted((path / "_recipe_attest").iterdir()) == sidecars
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    rc, doc = verify(str(path), "--level", "bytes", "--version", attested)
    assert rc != 0 and set(codes(doc)) == {"file_missing"}, doc
    assert all("removed by the VACUUM the log records at version" in e["message"] for e in doc["errors"]), doc


@pytest.mark.parametrize("command", ["OPTIMIZE {name}", "OPTIMIZE {name} ZORDER BY (id)"])
def test_spark_optimize_is_carried_over_by_content(spark: SparkSession, tmp_path: Path, command: str) -> None:
    name, path = _table(spark, tmp_path)
    spark.sql(command.format(name=name)).collect()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    # Measured: CREATE, three INSERTs of two files each (local[2]), the attestation commit, then OPTIMIZE at 5.
    assert doc["verdict"].startswith("VERIFIED (content; compacted at version 5: 6 files → 1, same rows;"), doc
    assert doc["content"]["rewrites"][0]["operation"] == "OPTIMIZE" and doc["content"]["rows"] == 60, doc


def test_spark_reorg_purge(spark: SparkSession, tmp_path: Path) -> None:
    """A DELETE with deletion vectors, attested; REORG ... APPLY (PURGE) rewrites the files without the deleted rows
    (dataChange false): verified by content (the attested files' digests were recorded after their vectors)."""
    name, path = _table(spark, tmp_path, "'delta.enableDeletionVectors' = 'true'")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    spark.sql(f"REORG TABLE {name} APPLY (PURGE)").collect()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
    assert doc["content"]["rewrites"][0]["operation"] == "REORG" and doc["content"]["rows"] == 51, doc
    assert spark.read.format("delta").load(str(path)).count() == 51


def test_spark_optimize_of_a_float_column_is_carried_over_by_content(spark: SparkSession, tmp_path: Path) -> None:
    """Spark writes a FLOAT column's bounds as the float32's shortest text (219/7: ``31.285715``), read back as that
    float32; compared as a double they were refused (``content_changed``, measured before the fix)."""
    path = tmp_path / f"t{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, f FLOAT) USING delta")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO delta.`{path}` SELECT id + {start}, CAST(id + {start} AS FLOAT) / 7 FROM range(20)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
    stored = struct.unpack("<f", struct.pack("<f", 219 / 7))[0]
    adds = [json.loads(line)["add"] for line in (path / "_delta_log" / "00000000000000000005.json").read_text()
            .splitlines() if line.startswith('{"add"')]
    logged = json.loads(adds[0]["stats"])["maxValues"]["f"]
    assert logged != stored and struct.unpack("<f", struct.pack("<f", logged))[0] == stored, adds  # the case
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 5"), doc
