"""Round 16 on the Spark post-write hook, tried and held (pinned so they stay so).

- A Delta change-data-feed read (``readChangeFeed`` between two versions): the relation is Delta's CDF relation, no
  version's scan — recorded heuristic (a ``path:`` read), never a version's content.
- A cached read whose cache is dropped by SQL (``CLEAR CACHE``) right after the write: ``spark.sql`` already waited
  for the listener (the write guard); pinned in test_spark_hook_round16.py beside the calls that did not.
- (``VALUES`` rows alone, no table read, recorded no input for them: a known limit pinned here until round 17 closed
  it — test_spark_hook_round17.py.)
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_hook_round14 import _inputs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def test_a_change_feed_read_is_not_read_strongly(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    src = str(spark_warehouse / f"r16_cdf_{uuid.uuid4().hex[:6]}")
    spark.range(3).write.format("delta").option("delta.enableChangeDataFeed", "true").save(src)
    spark.range(3, 5).write.format("delta").mode("append").save(src)
    hook.flush()
    assert hook.failed == 0, hook.errors
    dst = str(spark_warehouse / f"r16_cdf_dst_{uuid.uuid4().hex[:6]}")
    # versions after the first write: its attestation (metadata only, no change rows) and the append
    spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(src) \
        .select("id").write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    assert sorted(r[0] for r in spark.read.format("delta").load(dst).collect()) == [3, 4]  # the append's changes
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs
    assert inputs and all("content" not in i for i in inputs), inputs

