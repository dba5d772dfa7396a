"""Bounds in a recorded version's Delta log that delta-rs reads none of, held to the file's rows as Spark reads them.

delta-rs reads none of a bound it cannot parse (and none of a file's statistics where one value does not fit its
column), so its typed statistics — which ``record`` held to the rows — lack it, while Spark parses the log's JSON with
its own parser and skips files by what it reads. Measured (delta-rs 1.6, delta-spark 4.4, test_spark_skips_by_them
below): a decimal(38, 0) maximum forged below the greatest value, an integer maximum beside an overflowing bound, and
a timestamp maximum spelled ``2024-01-05T10`` each made Spark's ``WHERE c = <greatest>`` return no row while a full
read returned it, and Spark answered ``MAX(v)`` of the integer from the forged bound; all were recorded and VERIFIED
(with a note). Honest delta-rs tables too: delta-rs writes a decimal past 17 digits through a float, and its text
(``1.2345678901234567e+19`` for 12345678901234567890.12…) lies below the greatest value, so Spark skipped the file
holding it. Such bounds are now read as Spark reads them and held to the rows (``table_inconsistent``); rounded
outward (above every value) Spark reads every row, and the table verifies. Values Spark reads as null (an integer
past its type, a decimal past its precision) skip nothing: measured, and accepted.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import add_action_rows, attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

D = decimal.Decimal
UTC = datetime.UTC
TEN = datetime.datetime(2024, 1, 5, 10, tzinfo=UTC)


def _given(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Every add of commit 0 with its statistics edited (``edit`` changes the parsed JSON), as a writer can."""
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            edit(stats)
            action["add"]["stats"] = json.dumps(stats)
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for crc in path.glob("_delta_log/.*.crc"):
        crc.unlink()


def _bound(side: str, column: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda st: st.setdefault(side, {}).update({column: value})


def _both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda st: [e(st) for e in edits] and None


# name: (rows, statistics edit, column whose bound delta-rs must read none of, what Spark does with it)
_FORGED: dict[str, tuple[pa.Table, Callable[[dict[str, Any]], None] | None, str]] = {
    "a decimal(38,0) maximum below the greatest value": (
        pa.table({"d": pa.array([D("12345678901234567890123"), D(5)], pa.decimal128(38, 0))}),
        _bound("maxValues", "d", 1.1e22), "d"),
    "an integer maximum beside an overflowing bound": (
        pa.table({"i": pa.array([1, 1], pa.int32()), "v": pa.array([1, 2], pa.int64())}),
        _both(_bound("minValues", "i", 4294967297), _bound("maxValues", "v", 1)), "v"),
    "a loose integer maximum beside an overflowing bound": (  # Spark answers MAX(v) from it: held exactly
        pa.table({"i": pa.array([1, 1], pa.int32()), "v": pa.array([1, 2], pa.int64())}),
        _both(_bound("minValues", "i", 4294967297), _bound("maxValues", "v", 9)), "v"),
    "a timestamp maximum without minutes": (
        pa.table({"t": pa.array([TEN, TEN + datetime.timedelta(hours=1)], pa.timestamp("us", "UTC"))}),
        _bound("maxValues", "t", "2024-01-05T10"), "t"),
    "a date minimum in Spark's lenient spelling": (
        pa.table({"dt": pa.array([datetime.date(2024, 1, 5)])}), _bound("minValues", "dt", "2024-01-06T00"), "dt"),
    "an object as a string bound": (
        pa.table({"s": ["a"]}), _both(_bound("minValues", "s", {"z": 1}), _bound("maxValues", "s", {"z": 1})), "s"),
    "a decimal(38,18) maximum delta-rs rounded down": (
        pa.table({"d": pa.array([D("12345678901234567890.123456789012345678"), D("-1.5")], pa.decimal128(38, 18))}),
        None, "d"),
    "a decimal(38,18) minimum delta-rs rounded up": (
        pa.table({"d": pa.array([D("-12345678901234567890.5"), D(1)], pa.decimal128(38, 18))}), None, "d"),
}


def _table(tmp_path: Path, rows: pa.Table, edit: Callable[[dict[str, Any]], None] | None, column: str) -> Path:
    path = tmp_path / "t"
    write_deltalake(str(path), rows)
    if edit is not None:
        _given(path, edit)
    row = add_action_rows(DeltaTable(str(path)))[0]
    unread = [side for side in ("min", "max") if row[side] is None or row[side].get(column) is None]
    assert unread, row  # delta-rs reads none of the bound under test (else its reading is checked as before)
    return path


@pytest.mark.parametrize("case", sorted(_FORGED))
def test_a_bound_delta_rs_reads_none_of_is_held_as_spark_reads_it(tmp_path: Path, case: str) -> None:
    """VERIFIED (with a note) before: now table_inconsistent, nothing recorded."""
    rows, edit, column = _FORGED[case]
    path = _table(tmp_path, rows, edit, column)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert f"{column}: " in str(caught.value) and "Spark" in str(caught.value), caught.value
    if "rounded" in case:
        assert "rounded through a float" in str(caught.value), caught.value


_SPARK_NULL: dict[str, tuple[pa.Table, Callable[[dict[str, Any]], None] | None, str]] = {
    "an INT bound past its type": (pa.table({"i": pa.array([1], pa.int32())}),
                                   _both(_bound("minValues", "i", 4294967297), _bound("maxValues", "i", 4294967297)),
                                   "i"),
    "a decimal bound past its precision": (pa.table({"d": pa.array([D("1.50")], pa.decimal128(10, 2))}),
                                           _both(_bound("minValues", "d", 1e30), _bound("maxValues", "d", "1e30")),
                                           "d"),
    "a decimal(38,18) maximum delta-rs rounded up": (  # written 1.2345678901234567e+19: above the value
        pa.table({"d": pa.array([D("12345678901234566500.5"), D("-1.5")], pa.decimal128(38, 18))}), None, "d"),
}


@pytest.mark.parametrize("case", sorted(_SPARK_NULL))
def test_a_bound_spark_skips_nothing_by_still_verifies(tmp_path: Path, case: str) -> None:
    """No false alarm: bounds Spark reads as null (measured: it skipped no file by them) or that contain every value
    verify, with the note naming statistics delta-rs cannot read."""
    rows, edit, column = _SPARK_NULL[case]
    path = _table(tmp_path, rows, edit, column)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and any("delta-rs cannot read" in n for n in doc["notes"]), doc


@pytest.mark.spark
def test_spark_skips_by_them(spark: SparkSession, tmp_path: Path) -> None:
    """The measurement: Spark's filtered reads and MIN / MAX / COUNT(*) against a full read, over the tables above."""
    def ask(query: str) -> Any:
        return spark.sql(query).collect()[0][0]

    cases = {name: _FORGED[name] for name in ("a decimal(38,0) maximum below the greatest value",
                                              "an integer maximum beside an overflowing bound",
                                              "a timestamp maximum without minutes",
                                              "a decimal(38,18) maximum delta-rs rounded down")}
    cases["a decimal(38,18) maximum delta-rs rounded up"] = _SPARK_NULL["a decimal(38,18) maximum delta-rs rounded up"]
    seen: dict[str, tuple[Any, ...]] = {}
    for i, (name, (rows, edit, column)) in enumerate(cases.items()):
        path = _table(tmp_path / str(i), rows, edit, column)
        greatest = max(rows.column(column).to_pylist())
        literal = f"timestamp'{greatest:%Y-%m-%d %H:%M:%S}'" if column == "t" else str(greatest)
        full = [r[0] for r in spark.read.format("delta").load(str(path)).select(column).collect()]
        assert greatest in [v.replace(tzinfo=UTC) if column == "t" else v for v in full]  # a full read has it
        table = f"delta.`{path}`"
        seen[name] = (ask(f"SELECT count(*) FROM {table} WHERE {column} = {literal}"),
                      ask(f"SELECT max({column}) FROM {table}"), ask(f"SELECT count(*) FROM {table}"))
    assert seen["a decimal(38,0) maximum below the greatest value"] == (0, D("12345678901234567890123"), 2)
    assert seen["an integer maximum beside an overflowing bound"] == (0, 1, 2)  # MAX from the forged bound
    assert seen["a timestamp maximum without minutes"][:1] == (0,)
    big = D("12345678901234567890.123456789012345678")
    assert seen["a decimal(38,18) maximum delta-rs rounded down"] == (0, big, 2)  # MAX from the rows
    assert seen["a decimal(38,18) maximum delta-rs rounded up"] == (1, D("12345678901234566500.5"), 2)
