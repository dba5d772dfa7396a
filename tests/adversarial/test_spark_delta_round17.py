"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the seventeenth round's Delta attacks (rt17d,
``test_delta_round17.py``, held variants in ``test_delta_held_round17.py``): a ``delta.dataSkippingStatsColumns``
naming ``B`` for the column ``b`` makes Spark read the log's (forged) bounds of ``b`` — at the attested version, or set
by a metadata-only commit after it — while the property naming ``a`` alone keeps them unread; a materialized
row-tracking column is read by name without case."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.test_delta_held_round17 import (
    HELD_STATISTICS_COLUMNS,
    forged_statistics,
    statistics_keyed_in_another_case,
)
from tests.adversarial.test_delta_round17 import (
    COMMIT_VERSION_COLUMN,
    NARROW_WIDENINGS,
    ROW_ID_COLUMN,
    forged_unindexed,
    made_live_later,
    mapped_table,
    narrow_rewrite,
    narrow_table,
    nested_case_table,
    rewritten_ids,
    row_tracked,
)

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


def test_spark_reads_statistics_columns_held_alike(spark: SparkSession, tmp_path: Path) -> None:
    """Held (``test_delta_held_round17.py``): where delta-rs keeps b out of its statistics and Spark does too, b's
    forged bounds change nothing Spark reads — ``a,a``, ``a,`b ``` (a column ``b `` there is none), a
    ``delta.dataSkippingNumIndexedCols`` of ``+1``, and ``a`` beside a ``delta.dataSkippingNumIndexedCols`` of 2 (the
    named columns win in both)."""
    got = {}
    for columns in HELD_STATISTICS_COLUMNS:
        path = tmp_path / str(len(got))
        forged_statistics(path, columns)
        got[columns] = (
            len(spark.sql(f"SELECT * FROM delta.`{path}` WHERE b = 5").collect()),
            spark.sql(f"SELECT max(b) FROM delta.`{path}`").collect()[0][0],
        )
    path = tmp_path / "keyed"
    statistics_keyed_in_another_case(path)
    got["keyed B"] = (
        len(spark.sql(f"SELECT * FROM delta.`{path}` WHERE b = 5").collect()),
        spark.sql(f"SELECT max(b) FROM delta.`{path}`").collect()[0][0],
    )
    assert got == dict.fromkeys((*HELD_STATISTICS_COLUMNS, "keyed B"), (1, 6)), got


def test_spark_reads_materialized_row_tracking_columns_without_case(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for case, name in (("row ids", ROW_ID_COLUMN.upper()), ("row ids exact", ROW_ID_COLUMN)):
        path = tmp_path / case.replace(" ", "-")
        rewritten_ids(path, name)
        got[case] = sorted(
            tuple(r)
            for r in spark.sql(
                f"SELECT id, _metadata.row_id, _metadata.row_commit_version FROM delta.`{path}`"
            ).collect()
        )
    path = tmp_path / "versions"
    row_tracked(path, {COMMIT_VERSION_COLUMN.upper(): pa.array([7] * 6, pa.int64())})
    got["commit versions"] = sorted(
        tuple(r)
        for r in spark.sql(f"SELECT id, _metadata.row_id, _metadata.row_commit_version FROM delta.`{path}`").collect()
    )
    shifted = [(i, 1000 + i, 1) for i in range(6)]
    assert got == {"row ids": shifted, "row ids exact": shifted, "commit versions": [(i, i, 7) for i in range(6)]}, got


def test_spark_reads_integers_past_their_annotation_as_stored(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    recorded = tmp_path / "recorded"
    narrow_table(recorded)
    got["recorded"] = sorted(r[0] for r in spark.sql(f"SELECT v FROM delta.`{recorded}`").collect())
    for how in NARROW_WIDENINGS:
        path = tmp_path / how.replace(" ", "-")
        narrow_rewrite(path, how)
        got[how] = sorted(r[0] for r in spark.sql(f"SELECT v FROM delta.`{path}`").collect())
    # pyarrow, delta-rs and the digest read 44 and 1 (test_delta_round17.py)
    assert got == {key: [1, 300] for key in ("recorded", *NARROW_WIDENINGS)}, got


def test_spark_reads_a_struct_field_without_case(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    nested_case_table(path)
    assert [r[0] for r in spark.sql(f"SELECT s.x FROM delta.`{path}` ORDER BY id").collect()] == [50, 60]


def test_spark_reads_a_mapping_mode_without_case(spark: SparkSession, tmp_path: Path) -> None:
    # delta-rs's query engine reads nulls under NAME and Name (test_delta_round17.py), Spark the stored values.
    got = {}
    for mode in ("NAME", "ID", "name"):
        path = tmp_path / mode
        mapped_table(path, mode)
        got[mode] = [tuple(r) for r in spark.sql(f"SELECT id, s FROM delta.`{path}` ORDER BY id").collect()]
    assert got == {key: [(1, "a"), (2, "b")] for key in ("NAME", "ID", "name")}, got
