"""Round 20 (Delta), Spark's side: what delta-spark 4.4 (Spark 4.1) reads from the rewrites of
``test_delta_round20.py``, in a UTC and a New York session, against delta-rs's reading (the digest's).

- a ``timestamp`` partition value rewritten (``dataChange: false``) from Spark's zoned spelling
  (``2024-01-05T10:00:00.000000Z``) to a zoneless one the zone check did not take for zoneless — unpadded
  (``2024-1-5 10:00:00``, ``2024-01-05 10:0:0``), led by a blank or a ``+``: delta-rs reads the attested instant,
  Spark in New York 15:00 UTC (it read the attested file's value as 10:00 UTC);
- the other way, delta-rs's zoneless spelling rewritten to one with a zone the check did not parse
  (``2024-01-05 10:00:00 UTC``, ``…10:00:00UTC``): delta-rs reads the attested instant, Spark in New York 10:00 UTC
  where it read 15:00 UTC.

Each was ``VERIFIED (content; …, same rows)`` before; ``content_changed`` now.

- a ``double`` partition value spelled ``+nan``, ``-nan`` or ``+NAN``: delta-rs reads NaN, Spark null (its cast takes
  ``NaN``/``+NaN``/``-NaN`` as Java spells them and the lower-case literal ``nan``, no signed one): was VERIFIED after
  a rewrite, ``table_inconsistent`` now;
- a ``timestamp`` partition value outside the years 1 to 9999 (``-0001-…``, ``+10000-…``, ``0000-…``): Spark reads
  it (as delta-rs does); the tool cannot hold it in Python (``internal_error`` before): ``unsupported_table``;
- held (test_delta_held_round20.py): ``nan``, ``NAN``, ``+NaN``, the infinities in any case, read alike by Spark in
  both sessions; and a rewrite's own new file with a deletion vector over a row its exact statistics bound (777):
  Spark reads the attested rows and answers ``COUNT`` / ``MIN`` / ``MAX`` from them, not from the statistics.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_delta_held_round20 import FLOATS_ALIKE, OTHER_ALIKE, vector_table
from tests.adversarial.test_delta_partition_spellings import STAMP, attested, delta_rs, rewrite
from tests.adversarial.test_delta_round20 import FAR_YEARS, MISSED_ZONED, MISSED_ZONELESS, SIGNED_NANS, TEN
from tests.adversarial.test_spark_partition_spellings import TEN as TEN_SECONDS
from tests.adversarial.test_spark_partition_spellings import spark_values

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

NEW_YORK = TEN_SECONDS + 5 * 3600  # 10:00 in New York, as seconds since the epoch


def test_spark_reads_a_respelled_timestamp_partition_value_as_another_instant(
    spark: SparkSession, tmp_path: Path
) -> None:
    cases = [("2024-01-05T10:00:00.000000Z", s, NEW_YORK) for s in MISSED_ZONELESS]
    cases += [(None, s, TEN_SECONDS) for s in MISSED_ZONED]
    for i, (written, respelled, new_york) in enumerate(cases):
        path = attested(tmp_path / f"t{i}", STAMP, written)
        before = spark_values(spark, path, "America/New_York", True)
        assert before == [TEN_SECONDS if written else NEW_YORK], (respelled, before)
        rewrite(path, [respelled])
        assert delta_rs(path) == [TEN], respelled  # delta-rs: the attested rows
        assert spark_values(spark, path, "UTC", True) == [TEN_SECONDS], respelled
        # Spark in New York: another instant than it read at the attested version
        assert spark_values(spark, path, "America/New_York", True) == [new_york] != before, respelled
        rc, doc = verify(str(path), "--level", "schema")
        assert rc == 1 and codes(doc) == ["content_changed"], (respelled, doc)


def test_spark_reads_a_signed_nan_partition_value_as_null(spark: SparkSession, tmp_path: Path) -> None:
    for i, spelling in enumerate(SIGNED_NANS):
        path = attested(tmp_path / f"t{i}", pa.array([float("nan")]))
        assert math.isnan(spark_values(spark, path, "UTC")[0])
        rewrite(path, [spelling])
        assert math.isnan(delta_rs(path)[0]), spelling  # delta-rs: NaN
        assert spark_values(spark, path, "UTC") == [None], spelling  # Spark: null
        rc, doc = verify(str(path), "--level", "schema")
        assert rc == 1 and codes(doc) == ["table_inconsistent"], (spelling, doc)


def test_spark_reads_the_held_float_spellings_as_delta_rs_does(spark: SparkSession, tmp_path: Path) -> None:
    cases = [(v, s) for v, spellings in FLOATS_ALIKE for s in spellings] + [(float("nan"), "-NaN")]
    for i, (value, spelling) in enumerate(cases):
        path = attested(tmp_path / f"t{i}", pa.array([value]))
        rewrite(path, [spelling])
        for zone in ("UTC", "America/New_York"):
            (read,) = spark_values(spark, path, zone)
            assert (math.isnan(read) and math.isnan(value)) or read == value, (spelling, read)
    for i, (values, spelling) in enumerate(OTHER_ALIKE):
        path = attested(tmp_path / f"o{i}", values)
        rewrite(path, [spelling])
        assert spark_values(spark, path, "UTC") == values.to_pylist(), spelling


def test_spark_answers_from_the_rows_of_a_file_with_its_own_vector(spark: SparkSession, tmp_path: Path) -> None:
    for tight in (True, None, False):
        path = vector_table(tmp_path / f"t{tight}", tight)
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        assert sorted(r[0] for r in spark.sql(f"SELECT v FROM delta.`{path}`").collect()) == [1, 2, 3]
        assert tuple(spark.sql(f"SELECT count(*), min(v), max(v) FROM delta.`{path}`").collect()[0]) == (3, 1, 3)
        assert spark.sql(f"SELECT count(*) FROM delta.`{path}` WHERE v > 100").collect()[0][0] == 0
        assert verify(str(path), "--level", "bytes")[0] == 0


def test_spark_reads_a_timestamp_partition_value_past_pythons_years(spark: SparkSession, tmp_path: Path) -> None:
    for i, spelling in enumerate(FAR_YEARS):
        path = attested(tmp_path / f"t{i}", STAMP)
        rewrite(path, [spelling])
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        (year,) = spark.sql(f"SELECT year(p) FROM delta.`{path}`").collect()[0]
        assert year == int(spelling[: spelling.index("-", 1)]), (spelling, year)
        assert codes(verify(str(path), "--level", "schema")[1]) == ["unsupported_table"]
