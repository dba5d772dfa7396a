"""Spark's side of test_delta_partition_spellings: what delta-spark 4.4 reads from a Delta partition value respelled by
a ``dataChange: false`` rewrite, in a UTC and a New York session, against delta-rs's reading (the digest's).

- a ``timestamp`` value moved from delta-rs's zoneless spelling to Spark's ``…Z``: delta-rs reads the same instant
  (VERIFIED before), Spark in New York 10:00 UTC where it read the attested file's value as 15:00 UTC;
- held: the other spellings delta-rs reads as the attested value (``+1``, ``01.00``, ``TRUE``, ``2024-1-1``,
  `` 2024-01-01``, ``15e-1``, a zoned timestamp's offset, digits past the microsecond) are read alike by Spark in
  both sessions;
- a leap second (`:60`): delta-rs reads the next second, Spark null;
- Spark's own OPTIMIZE writes ``…T10:00:00.000000Z`` (UTC session) for a delta-rs table's zoneless ``10:00`` value,
  and ``…T15:00:00.000000Z`` in a New York session (the instant it read): neither keeps what every reader got.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_delta_partition_spellings import HELD, STAMP, attested, delta_rs, rewrite

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

TEN = int(datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC).timestamp())


def spark_values(spark: SparkSession, path: Path, zone: str, timestamp: bool = False) -> list[Any]:
    """``p`` of every row as Spark reads it in a session of ``zone`` (a timestamp as seconds since the epoch)."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
        column = "unix_timestamp(p)" if timestamp else "p"
        return sorted(r[0] for r in spark.sql(f"SELECT {column} FROM delta.`{path}`").collect())
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_spark_reads_a_timestamp_partition_value_moved_across_zones_as_another_instant(spark: SparkSession,
                                                                                      tmp_path: Path) -> None:
    path = attested(tmp_path / "t", STAMP)
    assert spark_values(spark, path, "UTC", True) == [TEN]
    assert spark_values(spark, path, "America/New_York", True) == [TEN + 5 * 3600]  # the attested rows, in New York
    rewrite(path, ["2024-01-05T10:00:00.000000Z"])
    assert delta_rs(path) == [datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC)]  # delta-rs: unchanged
    assert spark_values(spark, path, "UTC", True) == [TEN]
    assert spark_values(spark, path, "America/New_York", True) == [TEN]  # other rows in New York
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    # Back the other way: Spark's spelling attested, delta-rs's written by the rewrite.
    back = attested(tmp_path / "back", STAMP, "2024-01-05T10:00:00.000000Z")
    assert spark_values(spark, back, "America/New_York", True) == [TEN]
    rewrite(back, ["2024-01-05 10:00:00.000000"])
    assert spark_values(spark, back, "America/New_York", True) == [TEN + 5 * 3600]
    assert codes(verify(str(back), "--level", "schema")[1]) == ["content_changed"]


def test_spark_reads_the_other_spellings_as_delta_rs_does(spark: SparkSession, tmp_path: Path) -> None:
    """Held (test_delta_partition_spellings verifies them): each spelling read as the attested value by Spark in
    both sessions, and by delta-rs."""
    cases = [(v, s, r, False) for v, spellings, r in HELD for s in spellings]
    cases += [(STAMP, s, [TEN], True) for s in ("2024-01-05 10:00:00", "2024-01-05 10:00:00.0000009")]
    for i, (values, spelling, read, stamp) in enumerate(cases):
        path = attested(tmp_path / f"t{i}", values)
        before = {zone: spark_values(spark, path, zone, stamp) for zone in ("UTC", "America/New_York")}
        rewrite(path, [spelling])
        after = {zone: spark_values(spark, path, zone, stamp) for zone in ("UTC", "America/New_York")}
        assert after == before, (spelling, before, after)
        if not stamp:
            assert after["UTC"] == read, (spelling, after)
        assert verify(str(path), "--level", "schema")[0] == 0, spelling
    zoned = attested(tmp_path / "zoned", STAMP, "2024-01-05T10:00:00.000000Z")
    rewrite(zoned, ["2024-01-05T15:00:00+05:00"])
    assert [spark_values(spark, zoned, z, True) for z in ("UTC", "America/New_York")] == [[TEN], [TEN]]
    assert verify(str(zoned), "--level", "schema")[0] == 0


def test_spark_optimize_respells_a_zoneless_timestamp_partition_value(spark: SparkSession, tmp_path: Path) -> None:
    """Spark writes the instant it read, with 'Z': in a New York session another instant than delta-rs read. Not
    VERIFIED either way: refused by the zone check (Spark's file also holds the partition column as INT96, whose
    footer bounds no reader prunes by: no longer a refusal of its own, test_spark_int96_statistics)."""
    spelled = {}
    for zone in ("UTC", "America/New_York"):
        path = tmp_path / zone.replace("/", "_")
        for v in (0, 1):
            write_deltalake(str(path), pa.table({"p": STAMP, "v": [v]}), partition_by=["p"], mode="append")
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
        previous = spark.conf.get("spark.sql.session.timeZone")
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            spark.sql(f"OPTIMIZE delta.`{path}`").collect()
        finally:
            spark.conf.set("spark.sql.session.timeZone", previous)
        actions = [json.loads(line) for line in (path / commit_name(latest(path))).read_text().splitlines()]
        spelled[zone] = [a["add"]["partitionValues"]["p"] for a in actions if "add" in a]
        rc, doc = verify(str(path), "--level", "schema")
        assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert spelled == {"UTC": ["2024-01-05T10:00:00.000000Z"], "America/New_York": ["2024-01-05T15:00:00.000000Z"]}



def test_spark_reads_a_leap_second_partition_value_as_null(spark: SparkSession, tmp_path: Path) -> None:
    """Why ':60' is table_inconsistent (test_delta_partition_spellings): delta-rs reads the next second, the attested
    instant of a file moved there by a rewrite; Spark reads null."""
    one = datetime.datetime(2024, 1, 5, 10, 1)
    path = attested(tmp_path / "t", pa.array([one], pa.timestamp("us", "UTC")), "2024-01-05T10:01:00.000000Z")
    assert spark_values(spark, path, "UTC", True) == [TEN + 60]
    rewrite(path, ["2024-01-05T10:00:60Z"])
    assert delta_rs(path) == [one.replace(tzinfo=datetime.UTC)]
    assert spark_values(spark, path, "UTC", True) == [None]
    assert "table_inconsistent" in codes(verify(str(path), "--level", "schema")[1])


def test_a_leap_second_in_statistics_changes_no_answer(spark: SparkSession, tmp_path: Path) -> None:
    """Held: a timestamp bound respelled in place with a leap second (``10:01:00Z`` as ``10:00:60Z``, ``10:00:00Z`` as
    ``09:59:60Z``) is the same bound for delta-rs (its typed statistics, the view: VERIFIED), and Spark neither skips
    the file for either row nor answers MIN / MAX otherwise."""
    path = tmp_path / "t"
    stamps = [datetime.datetime(2024, 1, 5, 10, 0), datetime.datetime(2024, 1, 5, 10, 1)]
    write_deltalake(str(path), pa.table({"t": pa.array(stamps, pa.timestamp("us", "UTC")), "v": [1, 2]}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)

    def answers() -> list[Any]:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        counts = [spark.sql(f"SELECT count(*) FROM delta.`{path}` WHERE unix_timestamp(t) = {s}").collect()[0][0]
                  for s in (TEN, TEN + 60)]
        return [*counts, *spark.sql(f"SELECT unix_timestamp(min(t)), unix_timestamp(max(t)) FROM delta.`{path}`")
                .collect()[0]]

    assert answers() == [1, 1, TEN, TEN + 60]
    log = path / commit_name(0)
    for old, new in (("2024-01-05T10:01:00Z", "2024-01-05T10:00:60Z"),
                     ("2024-01-05T10:00:00Z", "2024-01-05T09:59:60Z")):
        assert old in log.read_text()
        log.write_text(log.read_text().replace(old, new))
        assert answers() == [1, 1, TEN, TEN + 60], new
        rc, doc = verify(str(path), "--level", "schema")
        assert rc == 0 and doc["passed"], doc
