"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the fifteenth round's Delta attacks (redteam15d): the fixed
ones (``test_delta_round15.py``) and the held ones (``test_delta_held_round15.py``), each beside delta-rs's reading."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable

from tests.adversarial.test_delta_held_round15 import (
    SPELLINGS,
    checkpointed,
    delta_rs,
    hints,
    partition_stored_in_the_file,
    spelled,
)
from tests.adversarial.test_delta_round15 import FORGED_STATISTICS, cdf_table, change_data, forged_append, optimize

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_spark_reads_forged_change_data_and_forged_statistics(spark: SparkSession, tmp_path: Path) -> None:
    # Change data in a dataChange: false OPTIMIZE after the attestation: Spark's change feed reads the row.
    path = tmp_path / "cdf"
    attested = cdf_table(path)
    n = optimize(path, [change_data(path)])
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", attested + 1) \
        .load(str(path)).select("id", "_change_type", "_commit_version").collect()
    assert [tuple(r) for r in feed] == [(999, "insert", n)]
    assert sorted(r[0] for r in spark.read.format("delta").load(str(path)).select("id").collect()) == [1, 2, 3, 4]
    # The recorded version's own statistics: Spark answers COUNT / MIN / MAX and skips files by them.
    got = {}
    for case in FORGED_STATISTICS:
        forged = tmp_path / case.replace(" ", "-")
        forged_append(forged, FORGED_STATISTICS[case][0])

        def one(sql: str, where: Path = forged) -> object:
            return spark.sql(sql.replace("T", f"delta.`{where}`")).collect()[0][0]

        got[case] = (one("select count(*) from T"), one("select min(v) from T"), one("select max(v) from T"),
                     one("select count(*) from T where v = 2"))
        dataset = DeltaTable(str(forged)).to_pyarrow_dataset()
        if case == "a maximum below the greatest value":  # delta-rs skips the file too
            assert dataset.to_table(filter=ds.field("v") == 2).num_rows == 0 and dataset.count_rows() == 2
    assert got == {"a row count above the rows": (5, 1, 2, 1), "a maximum below the greatest value": (2, 1, 1, 0),
                   "a maximum above the greatest value": (2, 1, 50, 1), "a minimum above the least value": (2, 2, 2, 1),
                   "a null count over no null": (2, 1, 2, 1)}, got


def test_spark_reads_the_held_attacks_as_delta_rs_does(spark: SparkSession, tmp_path: Path) -> None:
    def read(path: Path, column: str = "v") -> list[int]:
        return sorted(r[0] for r in spark.read.format("delta").load(str(path)).select(column).collect())

    for case in SPELLINGS:
        path = tmp_path / case.replace(" ", "-")
        spelled(path, case)
        assert read(path) == delta_rs(path) == [1, 100], case
    path = tmp_path / "partition"
    partition_stored_in_the_file(path)
    assert read(path, "p") == [1, 1]
    assert spark.read.format("delta").load(str(path)).where("p = 2").count() == 0
    table = tmp_path / "checkpointed"
    older, newer = checkpointed(table)
    for case, text in hints(older, newer).items():
        path = tmp_path / f"hint-{case.replace(' ', '-')}"
        shutil.copytree(table, path)
        (path / "_delta_log" / "_last_checkpoint").write_text(text)
        assert read(path) == [0, 1, 2, 3, 4, 5], case  # "missing" too: delta-rs refuses that one
