"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the seventeenth round's Delta attacks (rt17d,
``test_delta_round17.py``): a ``delta.dataSkippingStatsColumns`` naming ``B`` for the column ``b`` makes Spark read the
log's (forged) bounds of ``b`` — at the attested version, or set by a metadata-only commit after it — while the
property naming ``a`` alone keeps them unread."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_delta_round17 import forged_unindexed, made_live_later

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_spark_reads_statistics_of_a_column_named_in_another_case(spark: SparkSession, tmp_path: Path) -> None:
    tables = {"a, `B`": tmp_path / "spelled", "a,B later": tmp_path / "later", "a": tmp_path / "kept-out"}
    forged_unindexed(tables["a, `B`"], "a, `B`")
    made_live_later(tables["a,B later"])
    forged_unindexed(tables["a"], "a")
    got = {}
    for case, path in tables.items():
        table = f"delta.`{path}`"
        got[case] = (
            len(spark.sql(f"SELECT * FROM {table} WHERE b = 5").collect()),
            spark.sql(f"SELECT max(b) FROM {table}").collect()[0][0],
            sorted(tuple(r) for r in spark.sql(f"SELECT a, b FROM {table}").collect()),
        )
    rows = [(1, 5), (2, 6)]
    assert got == {"a, `B`": (0, 200, rows), "a,B later": (0, 200, rows), "a": (1, 6, rows)}, got
