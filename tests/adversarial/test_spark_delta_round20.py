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
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_delta_partition_spellings import STAMP, attested, delta_rs, rewrite
from tests.adversarial.test_delta_round20 import MISSED_ZONED, MISSED_ZONELESS, TEN
from tests.adversarial.test_spark_partition_spellings import TEN as TEN_SECONDS
from tests.adversarial.test_spark_partition_spellings import spark_values

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

NEW_YORK = TEN_SECONDS + 5 * 3600  # 10:00 in New York, as seconds since the epoch


def test_spark_reads_a_respelled_timestamp_partition_value_as_another_instant(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
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
