"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the sixteenth round's Delta attacks (rt16d): the fixed ones
(``test_delta_round16.py``) and the held ones (``test_delta_held_round16.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta import attest_after_write
from tests.adversarial.conftest import PROGRAM
from tests.adversarial.test_delta_held_round16 import (
    LOOSE_MAXIMA,
    OTHER_CASES,
    OUTWARD_MINIMUM,
    TIGHTNESS,
    loose_maximum,
    other_case,
    vectored_maximum,
)
from tests.adversarial.test_delta_round15 import FORGED_STATISTICS
from tests.adversarial.test_delta_round16 import (
    FLOAT_BOUNDS,
    LEGACY_FOOTER,
    WIDE_NULL_COUNTS,
    WIDENINGS,
    float_forged,
    legacy_dated,
    wide_null_count,
    widened_append,
)
from tests.adversarial.test_delta_spark_only_bounds import _FORGED, _table

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


def test_spark_reads_a_float_widened_to_double_by_its_float_statistics(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's own table: a float column holding 0.1, ALTER COLUMN c TYPE DOUBLE. Its bounds (written ``0.1``) are
    read as the double 0.1, below the stored 0.10000000149011612: MIN from them, the file skipped for the value."""
    path = tmp_path / "f"
    table = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {table} (c FLOAT) USING delta TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO {table} VALUES (0.1)")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN c TYPE DOUBLE")
    assert [r[0] for r in spark.sql(f"SELECT c FROM {table}").collect()] == [0.10000000149011612]  # a full read
    assert spark.sql(f"SELECT min(c) FROM {table}").collect()[0][0] == 0.1
    assert spark.sql(f"SELECT count(*) FROM {table} WHERE c = 0.10000000149011612D").collect()[0][0] == 0
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "'c' is a float column widened to double" in str(caught.value), caught.value


def test_spark_reads_delta_rs_decimal_minima_rounded_through_a_float(spark: SparkSession, tmp_path: Path) -> None:
    """delta-rs's minimum of -12345678901234567890.5 written inward (``-1.2345678901234565e+19``): Spark skipped the
    file for the least value (refused, test_delta_spark_only_bounds.py); of -123456789012345678.5 written outward
    (``-1.2345678901234568e+17``): Spark read it (held, test_delta_held_round16.py). MIN from the rows both times."""
    inward = _FORGED["a decimal(38,18) minimum delta-rs rounded up"][0]
    got = {}
    for name, rows in (("inward", inward), ("outward", OUTWARD_MINIMUM)):
        path = _table(tmp_path / name, rows, None, "d")
        least = min(rows.column("d").to_pylist())
        table = f"delta.`{path}`"
        got[name] = (spark.sql(f"SELECT count(*) FROM {table} WHERE d = {least}").collect()[0][0],
                     spark.sql(f"SELECT min(d) FROM {table}").collect()[0][0] == least,
                     spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0])
    assert got == {"inward": (0, True, 2), "outward": (1, True, 2)}, got


def test_spark_answers_min_and_max_of_floats_from_the_statistics(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for case in FLOAT_BOUNDS:
        path = tmp_path / case.replace(" ", "-")
        float_forged(path, case)
        table = f"delta.`{path}`"
        got[case] = tuple(spark.sql(f"SELECT min(v), max(v) FROM {table}").collect()[0])
        assert sorted(r[0] for r in spark.sql(f"SELECT v FROM {table}").collect()) == [1.5, 2.5]  # a full read
    assert got == {"a double maximum above the greatest value": (1.5, 50.0),
                   "a double minimum below the least value": (-50.0, 2.5),
                   "a float maximum above the greatest value": (1.5, 50.0)}, got
    # delta-rs's own bounds leave NaN out (max 1.5 over 1.5, NaN): what Spark answers there (held, noted)
    path = tmp_path / "nan"
    write_deltalake(str(path), pa.table({"v": pa.array([1.5, float("nan")], pa.float64())}))
    nan = tuple(spark.sql(f"SELECT min(v), max(v) FROM delta.`{path}`").collect()[0])
    assert nan == (1.5, 1.5), nan


def test_spark_skips_by_null_counts_under_wide_bounds(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for case, count in {**WIDE_NULL_COUNTS, "held": 2}.items():
        path = tmp_path / case.replace(" ", "-")
        wide_null_count(path, count)
        table = f"delta.`{path}`"
        got[case] = tuple(spark.sql(f"SELECT count(*) FROM {table} WHERE {where}").collect()[0][0]
                          for where in ("v IS NULL", "v IS NOT NULL", "v = 1"))
    assert got == {"no null over a null": (0, 2, 1), "every row null over values": (1, 0, 0), "held": (1, 2, 1)}, got


def test_spark_reads_a_recorded_files_legacy_dates_rebased(spark: SparkSession, tmp_path: Path) -> None:
    import datetime

    got = {}
    for name, footer in (("legacy", LEGACY_FOOTER), ("plain", None)):
        path = tmp_path / name
        legacy_dated(path, footer)
        got[name] = sorted(r[0] for r in spark.read.format("delta").load(str(path)).select("d").collect())
    assert got["plain"] == [datetime.date(1000, 1, 1), datetime.date(1500, 6, 1)], got
    assert got["legacy"] != got["plain"], got  # rebased from the Julian calendar: other days


def test_spark_reads_no_statistics_keyed_in_another_case(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for case, stats in OTHER_CASES.items():
        path = tmp_path / case.replace(" ", "-")
        other_case(path, stats)
        table = f"delta.`{path}`"
        got[case] = (spark.sql(f"SELECT count(*) FROM {table} WHERE v = 2").collect()[0][0],
                     spark.sql(f"SELECT max(v) FROM {table}").collect()[0][0])
    assert got == {"a column key": (1, 2), "a statistics key": (1, 2)}, got


def test_spark_answers_max_from_the_rows_of_a_file_with_a_vector(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for case, tight in TIGHTNESS.items():
        path = tmp_path / case
        vectored_maximum(path, tight)
        got[case] = tuple(spark.sql(f"SELECT max(v), count(*) FROM delta.`{path}`").collect()[0])
    assert got == {"absent": (2, 2), "true": (2, 2), "false": (2, 2)}, got


def test_spark_answers_max_of_other_types_from_the_rows(spark: SparkSession, tmp_path: Path) -> None:
    for case, (values, _) in LOOSE_MAXIMA.items():
        path = tmp_path / case
        loose_maximum(path, case)
        got = spark.sql(f"SELECT max(v) FROM delta.`{path}`").collect()[0][0]
        greatest = max(values.to_pylist())
        if case == "timestamp":
            got = got.astimezone(greatest.tzinfo)  # the session gives a local time
        assert got == greatest, (case, got)
