"""Spark's and delta-rs's own OPTIMIZE of Delta tables partitioned by a date or time column (docs/maintenance.md).

Measured before (delta-spark 4.4): every Spark OPTIMIZE, ZORDER BY of a table partitioned by a ``timestamp`` column
was ``content_changed`` — Spark stores the partition column in the data file too, as INT96, with footer bounds that
pyarrow disregards and no reader prunes by (tests/adversarial/test_spark_int96_statistics.py); ``date`` and
``timestamp_ntz`` partitions verified. delta-rs's OPTIMIZE of a Spark-written ``timestamp`` partition respells
``…T10:00:00.000000Z`` as ``2024-01-05 10:00:00.000000``, which Spark reads in its session time zone: other rows for
a Spark reader outside UTC, so that one stays refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

NEW_YORK = "America/New_York"
LITERALS = {"TIMESTAMP": "TIMESTAMP'2024-01-05 10:00:00'", "TIMESTAMP_NTZ": "TIMESTAMP_NTZ'2024-01-05 10:00:00'",
            "DATE": "DATE'2024-01-05'"}


def _in_zone(spark: SparkSession, zone: str, sql: str) -> list[Any]:
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
        return [tuple(r) for r in spark.sql(sql).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def _written(spark: SparkSession, path: Path, kind: str) -> None:
    """Three appends by Spark (UTC session) to a table partitioned by ``p`` of type ``kind``, attested."""
    _in_zone(spark, "UTC", f"CREATE TABLE delta.`{path}` (p {kind}, v INT) USING delta PARTITIONED BY (p)")
    for v in range(3):
        _in_zone(spark, "UTC", f"INSERT INTO delta.`{path}` VALUES ({LITERALS[kind]}, {v})")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)


def _rows(spark: SparkSession, path: Path) -> dict[str, list[Any]]:
    """Every row as Spark reads it in a UTC and a New York session (``p`` as text)."""
    sql = f"SELECT CAST(p AS STRING), v FROM delta.`{path}` ORDER BY v"
    return {zone: _in_zone(spark, zone, sql) for zone in ("UTC", NEW_YORK)}


def _added(path: Path) -> list[str]:
    actions = [json.loads(line) for line in (path / commit_name(latest(path))).read_text().splitlines()]
    return [a["add"]["partitionValues"]["p"] for a in actions if "add" in a]


@pytest.mark.parametrize(("kind", "zone", "command"), [
    ("TIMESTAMP", "UTC", "OPTIMIZE {t}"),
    ("TIMESTAMP", NEW_YORK, "OPTIMIZE {t}"),
    ("TIMESTAMP", NEW_YORK, "OPTIMIZE {t} ZORDER BY (v)"),
    ("TIMESTAMP_NTZ", NEW_YORK, "OPTIMIZE {t}"),
    ("DATE", NEW_YORK, "OPTIMIZE {t}"),
])
def test_spark_optimize_of_a_date_or_time_partitioned_table_verifies(spark: SparkSession, tmp_path: Path, kind: str,
                                                                    zone: str, command: str) -> None:
    path = tmp_path / "t"
    _written(spark, path, kind)
    before = _rows(spark, path)
    _in_zone(spark, zone, command.format(t=f"delta.`{path}`"))
    assert _rows(spark, path) == before  # every reader gets the same rows
    if kind == "TIMESTAMP":
        assert _added(path) == ["2024-01-05T10:00:00.000000Z"]  # the zone kept, in either session
        (added,) = [a for a in path.glob("p=*/*.parquet") if DeltaTable(str(path)).file_uris()[0].endswith(a.name)]
        schema = pq.ParquetFile(added).schema
        assert schema.column(schema.names.index("p")).physical_type == "INT96"  # what was refused
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith(f"VERIFIED (content; compacted at version {latest(path)}: 3 files "
                                                 "→ 1, same rows"), doc


@pytest.mark.parametrize("how", ["compact", "z_order"])
def test_delta_rs_optimize_respelling_a_spark_timestamp_partition_is_refused(spark: SparkSession, tmp_path: Path,
                                                                            how: str) -> None:
    """delta-rs writes the value without its zone: Spark in New York then reads 10:00 New York time, not 10:00 UTC
    (other rows), while date and timestamp_ntz partitions keep their rows and verify."""
    path = tmp_path / "t"
    _written(spark, path, "TIMESTAMP")
    before = _rows(spark, path)
    dt = DeltaTable(str(path))
    dt.optimize.compact() if how == "compact" else dt.optimize.z_order(["v"])
    assert _added(path) == ["2024-01-05 10:00:00.000000"]
    after = _rows(spark, path)
    assert after["UTC"] == before["UTC"] and after[NEW_YORK] != before[NEW_YORK], (before, after)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "without a time zone" in doc["errors"][0]["message"], doc
    for kind in ("TIMESTAMP_NTZ", "DATE"):
        other = tmp_path / kind
        _written(spark, other, kind)
        before = _rows(spark, other)
        DeltaTable(str(other)).optimize.compact()
        assert _rows(spark, other) == before
        rc, doc = verify(str(other), "--level", "bytes")
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), doc
