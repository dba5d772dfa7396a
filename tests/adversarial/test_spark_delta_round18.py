"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the eighteenth round's Delta statistics texts that are not JSON
(``test_delta_round18.py``): it reads a text up to the error and keeps what it read there, so it counts rows by a
``numRecords`` that delta-rs — reading the whole text leniently, the last of a key named twice — does not; text only
Spark reads (single quotes, trailing text) it skips files by, while delta-rs refuses the table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from carriers.delta.carrier import add_action_rows
from tests.adversarial.test_delta_held_round18 import (
    LOGICAL_KEYS,
    PARTITIONS_READ_ALIKE,
    logical_keyed,
    same,
    spelled_partition,
)
from tests.adversarial.test_delta_round18 import LENIENT, SPARK_COUNTS_FIVE, UNREAD, lenient_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _answers(spark: SparkSession, path: Path) -> tuple[Any, ...]:
    """(rows with v = 2, MAX(v), COUNT(*)) as Spark answers them; the table holds v 1 and 2."""
    table = f"delta.`{path}`"
    return tuple(
        spark.sql(q).collect()[0][0]
        for q in (
            f"SELECT count(*) FROM {table} WHERE v = 2",
            f"SELECT max(v) FROM {table}",
            f"SELECT count(*) FROM {table}",
        )
    )


def test_spark_counts_rows_by_the_text_before_the_error(spark: SparkSession, tmp_path: Path) -> None:
    """The respelling test_delta_round18 refuses at verify: delta-rs reads 2 rows, Spark's COUNT(*) is 5."""
    path = lenient_table(tmp_path, SPARK_COUNTS_FIVE)
    assert add_action_rows(DeltaTable(str(path)))[0]["num_records"] == 2
    assert _answers(spark, path) == (1, 2, 5)


def test_spark_reads_none_past_the_error(spark: SparkSession, tmp_path: Path) -> None:
    """A maximum 01 that delta-rs skips the file by (v = 2: no row for delta-rs): Spark reads every row."""
    path = lenient_table(tmp_path, LENIENT["a leading zero in a maximum"])
    assert _answers(spark, path) == (1, 2, 2)


@pytest.mark.parametrize("case", ["single quotes", "trailing text"])
def test_spark_reads_text_delta_rs_refuses(spark: SparkSession, tmp_path: Path, case: str) -> None:
    """The forged maximum 1 skips the file holding 2 and answers MAX(v); refused (never VERIFIED) by the round's
    fix and by delta-rs itself."""
    path = lenient_table(
        tmp_path, UNREAD[case].replace('"numRecords":2', '"numRecords":5').replace("'numRecords':2", "'numRecords':5")
    )
    assert _answers(spark, path) == (0, 1, 5)


def test_spark_reads_the_held_partition_spellings_as_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    """The held partition spellings of test_delta_held_round18: Spark's value is delta-rs's (the attested one)."""
    for i, (values, spelling, read) in enumerate(PARTITIONS_READ_ALIKE):
        path = spelled_partition(tmp_path / str(i), values, spelling)
        got = [r[0] for r in spark.read.format("delta").load(str(path)).select("p").collect()]
        assert len(got) == 1 and same(got[0], read), (spelling, got)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_spark_reads_no_statistics_keyed_by_logical_names(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    """A maximum of id 1 under the logical name over rows 1, 2: Spark finds id 2 and answers MAX(id) 2 from the rows."""
    for i, stats in enumerate(LOGICAL_KEYS.values()):
        table = f"delta.`{logical_keyed(tmp_path / str(i), mode, stats)}`"
        assert spark.sql(f"SELECT count(*) FROM {table} WHERE id = 2").collect()[0][0] == 1
        assert spark.sql(f"SELECT max(id) FROM {table}").collect()[0][0] == 2
