"""Round 20b (Delta), Spark's side (delta-spark 4.4 / Spark 4.1):

- dates and timestamps in the *rows* outside Python's years 1 to 9999 (``test_delta_round20b.py``): Spark reads the
  same values as delta-rs (years -249, 11476; a date in -221, 10183) and prunes by delta-rs's bounds of them
  (``-0249-10-15T19:33:20Z``, ``+10183-09-21``) as the rows say — the table the tool now records and verifies; a
  bound past them that misstates the rows skips the file (which is why such bounds are held, exactly);
- a ``timestamp_ntz`` column's bounds spelled with a zone (``…Z``, ``… UTC``): Spark reads none of them — a bound
  shifted five hours skipped no file, in a UTC or a New York session (held: ``test_delta_held_round20b.py``; delta-rs
  reads the wall-clock time, which the check holds to the rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.log import commit_name
from tests.adversarial.conftest import edit_adds
from tests.adversarial.test_delta_held_round20b import ZONED_ALIKE, ntz_table
from tests.adversarial.test_delta_round20b import FAR

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _ids(spark: SparkSession, path: Path, where: str) -> list[int]:
    return sorted(r["id"] for r in spark.sql(f"select id from delta.`{path}` where {where}").collect())


@pytest.fixture(autouse=True)
def _zone_restored(spark: SparkSession) -> Iterator[None]:
    """The shared session's time zone put back after each test: a later module (generated partitions) computes
    dates in the session zone and failed after this one left it at America/New_York."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    yield
    spark.conf.set("spark.sql.session.timeZone", previous)


def _fresh(spark: SparkSession, zone: str) -> None:
    spark.conf.set("spark.sql.session.timeZone", zone)
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]


def test_spark_reads_and_prunes_rows_past_pythons_years_as_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(
        str(path),
        pa.table(
            {"id": pa.array([1, 2, 3], pa.int64()), "v": FAR["timestamp"], "n": FAR["timestamp_ntz"], "d": FAR["date"]}
        ),
    )
    _fresh(spark, "UTC")
    years = spark.sql(f"select id, year(v) y, year(n) yn, year(d) yd from delta.`{path}` order by id").collect()
    assert [(r["y"], r["yn"], r["yd"]) for r in years] == [
        (-249, -249, -221),
        (1970, 1970, 1970),
        (11476, 11476, 10183),
    ]
    assert _ids(spark, path, "v < timestamp'1000-01-01 00:00:00Z'") == [1]
    assert _ids(spark, path, "d > date'9999-01-01'") == [3]
    assert _ids(spark, path, "n > timestamp_ntz'9999-12-31 00:00:00'") == [3]
    # A maximum past Python's years, below a row (what test_delta_round20b refuses): Spark skips the file by it.
    forged = tmp_path / "forged"
    write_deltalake(str(forged), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": FAR["timestamp"]}))

    def forge(add: dict[str, Any]) -> None:
        stats = json.loads(add["stats"])
        stats["maxValues"]["v"] = "-0100-01-01T00:00:00.000Z"
        add["stats"] = json.dumps(stats)

    edit_adds(forged / commit_name(0), forge)
    _fresh(spark, "UTC")
    assert _ids(spark, forged, "v > timestamp'1960-01-01 00:00:00Z'") == []  # a full read holds 2 and 3
    assert len(spark.read.format("delta").load(str(forged)).select("id").collect()) == 3


def test_spark_reads_no_ntz_bound_spelled_with_a_zone(spark: SparkSession, tmp_path: Path) -> None:
    cases = [*ZONED_ALIKE, ("2024-01-05T15:00:00.000Z", "2024-01-05T16:00:00.000Z")]
    for i, (lo, hi) in enumerate(cases):
        path = ntz_table(tmp_path / f"t{i}", lo, hi)
        for zone in ("UTC", "America/New_York"):
            _fresh(spark, zone)
            assert _ids(spark, path, "t = timestamp_ntz'2024-01-05 10:00:00'") == [1], (lo, zone)
            assert _ids(spark, path, "t < timestamp_ntz'2024-01-05 10:30:00'") == [1], (lo, zone)
            assert _ids(spark, path, "t > timestamp_ntz'2024-01-05 10:30:00'") == [2], (lo, zone)
