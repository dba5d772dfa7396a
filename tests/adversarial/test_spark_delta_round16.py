"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the sixteenth round's Delta attacks (rt16d): the fixed ones
(``test_delta_round16.py``) and the held ones (``test_delta_held_round16.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_delta_round15 import FORGED_STATISTICS
from tests.adversarial.test_delta_round16 import WIDENINGS, widened_append

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_spark_reads_the_statistics_of_a_type_widened_table(spark: SparkSession, tmp_path: Path) -> None:
    # Two appends of rows 1, 2, the second's statistics forged: Spark skips that file and answers COUNT / MIN / MAX
    # by them, with type widening on as with it off (test_spark_delta_round15.py).
    got = {}
    for how in WIDENINGS:
        for case in FORGED_STATISTICS:
            path = tmp_path / f"{how}-{case}".replace(" ", "-")
            widened_append(path, FORGED_STATISTICS[case][0], how)

            def one(sql: str, where: Path = path) -> object:
                return spark.sql(sql.replace("T", f"delta.`{where}`")).collect()[0][0]

            got[how, case] = (one("select count(*) from T"), one("select min(v) from T"), one("select max(v) from T"),
                              one("select count(*) from T where v = 2"))
            assert sorted(r[0] for r in spark.read.format("delta").load(str(path)).select("v").collect()) == \
                [1, 1, 2, 2]  # the full read: every row
    for how in WIDENINGS:
        assert {case: got[how, case] for case in FORGED_STATISTICS} == {
            "a row count above the rows": (7, 1, 2, 2), "a maximum below the greatest value": (4, 1, 2, 1),
            "a maximum above the greatest value": (4, 1, 50, 2), "a minimum above the least value": (4, 1, 2, 2),
            "a null count over no null": (4, 1, 2, 2)}, (how, got)
