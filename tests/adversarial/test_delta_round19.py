"""Round 19 (Delta): a data file storing a column as another type than the schema's, which readers convert with a loss.

The content digest reads a file's columns as stored (pyarrow's types) and casts them to the schema's type only where
that loses nothing (``carriers/delta/content.py`` ``_read_type``); any other stored type was digested as stored, and the
table recorded. But every reader converts the stored values to the schema's type, and not alike (delta-spark 4.4 on
Spark 4.1, delta-rs 1.6; what Spark reads is in ``test_spark_delta_round19.py``):

- an ``int32`` of 70000 in a ``short`` column (300 in a ``byte`` column; 70000 in a struct's ``short`` field): Spark
  read 4464 (44; 4464) — the stored value wrapped — while the digest held 70000 and delta-rs's query engine failed
  the read: recorded, VERIFIED;
- a ``decimal(12,4)`` 1.2345 in a ``decimal(10,2)`` column, a double 1e300 in a ``float`` column, a double 1.5 in a
  ``long`` column, a timestamp at 23:00 in a ``date`` column, an int in a ``string`` or ``boolean`` column, an int64
  past 2**53 in a ``double`` column: delta-rs read 1.23, inf, 1, the date, ``'1'``, ``true``, the rounded double, Spark
  failed the read — recorded, VERIFIED, the digest holding values no reader returns.

Such a file is now ``table_inconsistent`` at ``record`` (``content_changed`` when a rewrite adds it). Conversions
that keep every stored value still record and verify: an int32 in a ``long`` or ``double`` column, a float in a
``double`` column, a ``decimal(10,2)`` in a ``decimal(12,4)`` column, bytes in a ``string`` column and text in a
``binary`` one, and an integer stored wider than its column whose values all fit (measured: delta-rs reads them as
stored, Spark too — or, for an int64 in a ``double`` column, fails the read: never other values).
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.delta_commits import first_commit

# name: (the schema's type, the stored column); readers convert some stored value with a loss
LOSSY: dict[str, tuple[str, pa.Array]] = {
    "an int32 past 16 bits in a short column": ("short", pa.array([70000, 2], pa.int32())),
    "an int32 past 8 bits in a byte column": ("byte", pa.array([300, 2], pa.int32())),
    "an int64 past 32 bits in an integer column": ("integer", pa.array([2**40 + 7, 3], pa.int64())),
    "an int64 past 2**53 in a double column": ("double", pa.array([2**53 + 1, 3], pa.int64())),
    "a double in a float column": ("float", pa.array([0.1, 1e300], pa.float64())),
    "a double 1.5 in a long column": ("long", pa.array([1.5, 2.0], pa.float64())),
    "a decimal(12,4) in a decimal(10,2) column": (
        "decimal(10,2)",
        pa.array([decimal.Decimal("1.2345"), decimal.Decimal("2.0000")], pa.decimal128(12, 4)),
    ),
    "a timestamp in a date column": (
        "date",
        pa.array([datetime.datetime(2024, 1, 5, 23), datetime.datetime(2024, 1, 6)], pa.timestamp("us", "UTC")),
    ),
    "an int in a string column": ("string", pa.array([1, 2], pa.int32())),
    "an int in a boolean column": ("boolean", pa.array([1, 0], pa.int32())),
    "a uint32 past 31 bits in an integer column": ("integer", pa.array([2**32 - 1, 2], pa.uint32())),
    "an int32 past 16 bits in a struct's short field": (
        {"type": "struct", "fields": [{"name": "x", "type": "short", "nullable": True, "metadata": {}}]},
        pa.array([{"x": 70000}, {"x": 2}], pa.struct([("x", pa.int32())])),
    ),
}

# Conversions every reader makes keeping each stored value (measured): recorded, VERIFIED.
KEPT: dict[str, tuple[Any, pa.Array]] = {
    "an int32 in a long column": ("long", pa.array([1, 2], pa.int32())),
    "an int32 in a double column": ("double", pa.array([1, 2], pa.int32())),
    "a float in a double column": ("double", pa.array([0.1, 2.5], pa.float32())),
    "a decimal(10,2) in a decimal(12,4) column": (
        "decimal(12,4)",
        pa.array([decimal.Decimal("1.23"), decimal.Decimal("2.00")], pa.decimal128(10, 2)),
    ),
    "bytes in a string column": ("string", pa.array([b"\xff\xfe", b"ok"], pa.binary())),
    "text in a binary column": ("binary", pa.array(["a", "b"], pa.string())),
    "an int32 that fits in a short column": ("short", pa.array([7000, 2], pa.int32())),
    "an int64 below 2**53 in a double column": ("double", pa.array([2**40, 2], pa.int64())),
}


def stored_as(path: Path, kind: Any, column: pa.Array) -> Path:
    """A one-file Delta table (protocol 1/2) of column ``v`` of the schema's type ``kind``, whose file stores
    ``column`` (as any writer with storage access can write one)."""
    (path / "_delta_log").mkdir(parents=True)
    rel = "part-00000.parquet"
    pq.write_table(pa.table({"v": column}), path / rel)
    first_commit(path, rel, [{"name": "v", "type": kind, "nullable": True, "metadata": {}}], num_records=len(column))
    return path


def query_engine(path: Path) -> list[Any]:
    """Column v as delta-rs's query engine reads it."""
    return (
        pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT v FROM t").read_all())
        .column("v")
        .to_pylist()
    )


@pytest.mark.parametrize("case", sorted(LOSSY))
def test_a_column_stored_as_a_type_read_with_a_loss_is_refused(tmp_path: Path, case: str) -> None:
    kind, column = LOSSY[case]
    path = stored_as(tmp_path / "t", kind, column)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "with a loss" in str(caught.value), caught.value
    assert not (path / "_recipe_attest").exists() or not any((path / "_recipe_attest").iterdir())


def test_delta_rs_reads_other_values_than_the_file_stores(tmp_path: Path) -> None:
    """What the digest held (the stored values) and what delta-rs returned, for the cases it reads."""
    read = {
        "a decimal(12,4) in a decimal(10,2) column": [decimal.Decimal("1.23"), decimal.Decimal("2.00")],
        "a double in a float column": [pytest.approx(0.1), float("inf")],
        "a double 1.5 in a long column": [1, 2],
        "a timestamp in a date column": [datetime.date(2024, 1, 5), datetime.date(2024, 1, 6)],
        "an int in a string column": ["1", "2"],
        "an int in a boolean column": [True, False],
        "an int64 past 2**53 in a double column": [float(2**53), 3.0],
    }
    for i, (case, values) in enumerate(read.items()):
        kind, column = LOSSY[case]
        path = stored_as(tmp_path / str(i), kind, column)
        assert query_engine(path) == values, case
        assert pq.read_table(next(path.glob("*.parquet"))).column("v").to_pylist() == column.to_pylist()
    with pytest.raises(Exception, match="Can't cast value 70000"):  # Spark reads 4464
        query_engine(stored_as(tmp_path / "short", *LOSSY["an int32 past 16 bits in a short column"]))


@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_column_stored_as_a_type_read_without_a_loss_verifies(tmp_path: Path, case: str) -> None:
    kind, column = KEPT[case]
    path = stored_as(tmp_path / "t", kind, column)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
