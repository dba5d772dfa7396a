"""What Spark (delta-spark 4.4 on Spark 4.1) reads of rt16e's Delta partition spellings (test_delta_round16b.py):
null for a timestamp partition value with a lower-case letter, and for a ``timestamp_ntz`` leap second, in a UTC and
a Los Angeles session, where delta-rs reads the instant the upper-case spelling names; and the held ones
(test_delta_held_round16b.py): the spellings both engines read as one instant, domainMetadata and tags."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.test_delta_held_round16b import ALIKE, STAMP, domain_metadata, tagged
from tests.adversarial.test_delta_partition_spellings import delta_rs
from tests.adversarial.test_delta_round16b import LOWER_CASE, NTZ_LEAP, forged
from tests.adversarial.test_spark_partition_spellings import spark_values

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ZONES = ("UTC", "America/Los_Angeles")


def test_spark_reads_a_lower_case_timestamp_partition_value_as_null(spark: SparkSession, tmp_path: Path) -> None:
    for i, (written, respelled, when) in enumerate(LOWER_CASE.values()):
        stamp = pa.array([when], pa.timestamp("us", "UTC"))
        instant = int(when.replace(tzinfo=datetime.UTC).timestamp())
        upper, lower = forged(tmp_path / f"u{i}", stamp, written), forged(tmp_path / f"l{i}", stamp, respelled)
        assert delta_rs(upper) == delta_rs(lower) == [when.replace(tzinfo=datetime.UTC)]  # one instant to delta-rs
        for zone in ZONES:
            assert spark_values(spark, upper, zone, True) == [instant], (written, zone)
            assert spark_values(spark, lower, zone, True) == [None], (respelled, zone)


def test_spark_reads_a_timestamp_ntz_leap_second_as_null(spark: SparkSession, tmp_path: Path) -> None:
    written, respelled, when = NTZ_LEAP
    stamp = pa.array([when], pa.timestamp("us"))
    upper, leap = forged(tmp_path / "w", stamp, written), forged(tmp_path / "l", stamp, respelled)
    assert delta_rs(upper) == delta_rs(leap) == [when]
    for zone in ZONES:
        assert [str(v) for v in spark_values(spark, upper, zone)] == [str(when)], zone
        assert spark_values(spark, leap, zone) == [None], zone


def test_spark_reads_the_held_spellings_domains_and_tags_as_delta_rs_does(spark: SparkSession, tmp_path: Path) -> None:
    for i, (spelling, when) in enumerate(ALIKE):
        path = forged(tmp_path / f"a{i}", STAMP, spelling)
        assert delta_rs(path) == [when]
        for zone in ZONES:
            assert spark_values(spark, path, zone, True) == [int(when.timestamp())], (spelling, zone)
    for make in (domain_metadata, tagged):
        path = make(tmp_path / make.__name__)
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
        table = f"delta.`{path}`"
        assert sorted(r[0] for r in spark.sql(f"SELECT v FROM {table}").collect()) == [1, 2, 3], make.__name__
        assert spark.sql(f"SELECT count(*), min(v), max(v) FROM {table} WHERE v >= 2").collect()[0][:] == (2, 2, 3)
