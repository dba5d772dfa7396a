"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the second Delta pass of round 17 (rt17e,
``test_delta_held_round17b.py``): a collated string column (``__COLLATIONS`` field metadata, ``UTF8_LCASE``) is
compared by its collation, and no file is skipped by its binary statistics nor pruned by a generated partition column
over it, and a collated partition column is pruned by its collation; a CHECK constraint the rows violate, added in a
metadata-only commit, changes nothing read; a column a file lacks is filled by ``EXISTS_DEFAULT`` only (not by
``CURRENT_DEFAULT``, nor ``exists_default`` in lower case)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_delta_held_round17b import (
    collated_files,
    collated_generated_partition,
    collated_partition,
    defaulted_column,
    metadata_commit,
    set_property,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def ids(spark: SparkSession, path: Path, where: str) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"SELECT id FROM delta.`{path}` WHERE {where}").collect())


def test_spark_compares_a_collated_column_without_skipping_by_binary_statistics(
    spark: SparkSession, tmp_path: Path
) -> None:
    collated, plain, generated = tmp_path / "collated", tmp_path / "plain", tmp_path / "generated"
    collated_files(collated)
    collated_files(plain, collate=False)
    collated_generated_partition(generated)
    partition = tmp_path / "partition"
    collated_partition(partition)
    wheres = ("s = 'a'", "s > 'w'", "startswith(s, 'a')", "s = 'z'")
    got = {
        "collated": [ids(spark, collated, w) for w in wheres],
        "plain": [ids(spark, plain, w) for w in wheres],
        # the file of A (binary bounds A..Z) holds collated matches of 'a', 'z' and > 'w' all the same
        "generated": ids(spark, generated, "s = 'apple'"),
        "partition": [ids(spark, partition, w) for w in ("p = 'a'", "p IN ('a')", "p > 'Z'")],
    }
    assert got == {
        "collated": [[1], [2], [1], [2]],
        "plain": [[], [], [], []],
        "generated": [1, 2],
        "partition": [[1, 2], [1, 2], []],
    }, got


def test_spark_reads_past_a_check_constraint(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    collated_files(path, collate=False)
    before = [ids(spark, path, w) for w in ("id = 1", "id < 50", "true")]
    metadata_commit(path, set_property("delta.constraints.c", "id > 100"))
    after = [ids(spark, path, w) for w in ("id = 1", "id < 50", "true")]
    assert before == after == [[1], [1, 2, 3, 4], [1, 2, 3, 4]], (before, after)


def test_spark_fills_a_missing_column_by_exists_default_only(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for key in ("EXISTS_DEFAULT", "CURRENT_DEFAULT", "exists_default"):
        path = tmp_path / key
        defaulted_column(path, {key: "7"})
        got[key] = sorted(tuple(r) for r in spark.sql(f"SELECT id, c FROM delta.`{path}`").collect())
    assert got == {
        "EXISTS_DEFAULT": [(1, 7), (2, 7)],
        "CURRENT_DEFAULT": [(1, None), (2, None)],
        "exists_default": [(1, None), (2, None)],
    }, got
