"""Round 35, measured with Spark (delta-spark 4.4 on Spark 4.1): what Spark reads from a rewrite's file whose
converted type says other than its logical type (tests/adversarial/test_parquet_annotations_round35.py).

parquet-mr takes the converted type where the two disagree: a ``TIMESTAMP(MICROS)`` column given ``TIMESTAMP_MILLIS``
is read as milliseconds — each instant a thousand times further from 1970 — by both of Spark's Parquet readers; a
decimal whose element scale is not its logical type's, and a string annotated ``MAP``, fail Spark's read. pyarrow reads
the attested rows from each (the logical type), so each was ``VERIFIED (content; …, same rows)`` before; each is
``content_changed`` now. Control: the honest rewrite reads the attested instants in Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.parquet_thrift import with_footer
from tests.adversarial.test_file_size_round33 import rewritten_as
from tests.adversarial.test_parquet_annotations_round35 import EDITS, ROWS, honest_file
from tests.conftest import run_cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

QUERY = "SELECT id, unix_micros(ts), CAST(nz AS STRING), CAST(dec AS STRING), s FROM delta.`{}` ORDER BY id"


def spark_rows(spark: SparkSession, path: Path, vectorized: bool = True) -> list[tuple[Any, ...]]:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", str(vectorized).lower())
    try:
        return [tuple(r) for r in spark.sql(QUERY.format(path)).collect()]
    finally:
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "true")


def _verify(path: Path) -> tuple[int, dict[str, Any]]:
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    return done.returncode, json.loads(done.stdout)


def test_spark_reads_the_converted_timestamp_unit(spark: SparkSession, tmp_path: Path) -> None:
    honest = tmp_path / "honest"
    rewritten_as(honest, ROWS, lambda _: honest_file())
    attested = spark_rows(spark, honest)
    assert [r[1] for r in attested] == [1_700_000_000_000_000, 1_700_000_000_123_456]
    assert _verify(honest)[0] == 0

    utc, local = tmp_path / "utc", tmp_path / "local"
    rewritten_as(utc, ROWS, lambda _: with_footer(honest_file(), EDITS[
        "a UTC timestamp's converted type TIMESTAMP_MILLIS (logical MICROS)"]))
    rewritten_as(local, ROWS, lambda _: with_footer(honest_file(), EDITS[
        "a local timestamp given the converted type TIMESTAMP_MILLIS (logical MICROS)"]))
    for vectorized in (True, False):
        got = spark_rows(spark, utc, vectorized)
        assert [r[1] for r in got] == [1_700_000_000_000_000_000, 1_700_000_000_123_456_000], got  # ×1000
        assert [r[2:] for r in got] == [r[2:] for r in attested]
        got = spark_rows(spark, local, vectorized)
        assert [r[2] for r in got] == ["+55840-11-08 22:13:20", "+52671-12-25 12:26:40"], got
    for path in (utc, local):
        rc, doc = _verify(path)
        assert rc == 1 and [e["code"] for e in doc["errors"]] == ["content_changed"], doc  # VERIFIED before


@pytest.mark.parametrize(("edit", "refusal"), [
    ("a decimal's element scale 4 (logical DECIMAL(10, 2))", "Decimal scale should match"),
    ("a string's converted type MAP (logical STRING)", "MAP can not be applied to a primitive type"),
])
def test_spark_refuses_other_mismatches(spark: SparkSession, tmp_path: Path, edit: str, refusal: str) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: with_footer(honest_file(), EDITS[edit]))
    with pytest.raises(Exception, match=refusal):
        spark_rows(spark, path)
    rc, doc = _verify(path)
    assert rc == 1 and [e["code"] for e in doc["errors"]] == ["content_changed"], doc  # VERIFIED before
