"""Round 18 (Delta), variants that held: log lines in the lenient JSON delta-rs's reader takes.

delta-rs 1.6 reads a commit line with a leading zero in a number, a trailing comma or a raw control character in a
string (measured below: it reads the table's rows), and Spark's Jackson refuses them. The log replay reads every line
strictly (Python's parser, no key twice), so such a line is ``table_inconsistent`` at record — as the statistics text
inside a line now is (test_delta_round18.py), in a checkpoint's rows too and through the bulk reading of long logs.

Partition values spelled at record as no writer spells them: delta-rs refuses most (a space, ``1.0`` or an overflow for
an integer, ``t`` for a boolean, a time for a date, digits past a decimal's scale: ``table_unreadable``), and reads the
rest as Spark does (measured, test_spark_delta_round18.py: ``-0``, ``tRuE``, ``-0.00``, float spellings rounding to
the stored float, ``nan``, overflow to infinity, underflow to 0.0): recorded, VERIFIED, the same rows.

Statistics of a column-mapped table (``name`` or ``id``) keyed by the logical names instead of the physical ones,
forged (a maximum of ``id`` below its rows) beside true physical ones or alone: delta-rs reads none of them and Spark
skipped no file by them nor answered ``MAX`` from them (measured, test_spark_delta_round18.py) — recorded, VERIFIED;
forged under the physical names they are refused as before.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import add_action_rows, attest_after_write
from carriers.delta.log import commit_name, statistics_unique
from tests.adversarial.conftest import PROGRAM, edit_adds, verify
from tests.adversarial.test_delta_round17 import mapped_table
from tests.adversarial.test_delta_round18 import LENIENT, SPARK_COUNTS_FIVE, lenient_table

LINES: dict[str, Callable[[str], str]] = {
    "a size with a leading zero": lambda t: re.sub(r'"size":(\d+)', r'"size":0\1', t),
    "a modificationTime with a leading zero": lambda t: re.sub(
        r'"modificationTime":(\d+)', r'"modificationTime":0\1', t
    ),
    "a trailing comma in an add": lambda t: t.replace('"dataChange":true', '"dataChange":true,', 1),
    "a raw tab in commitInfo": lambda t: t.replace('"commitInfo":{', '"commitInfo":{"x":"a\tb",', 1),
    "a reader version 01": lambda t: t.replace('"minReaderVersion":1', '"minReaderVersion":01', 1),
}


@pytest.mark.parametrize("case", sorted(LINES))
def test_a_lenient_log_line_is_refused(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int64())}))
    log = path / commit_name(0)
    text = log.read_text()
    log.write_text(LINES[case](text))
    assert log.read_text() != text
    assert DeltaTable(str(path)).to_pyarrow_table().num_rows == 2  # delta-rs reads it
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "not a JSON action" in str(caught.value), caught.value


@pytest.mark.parametrize("case", ["a leading zero in a maximum", "a raw tab in a string bound", "a doubled comma"])
def test_not_json_statistics_in_a_checkpoint_are_refused(tmp_path: Path, case: str) -> None:
    """delta-rs's checkpoint copies the statistics text as written; the commits before it cleaned up, the
    checkpoint's rows are judged as commit lines are."""
    path = lenient_table(tmp_path, LENIENT[case])
    write_deltalake(str(path), pa.table({"v": pa.array([3], pa.int64()), "s": ["c"]}), mode="append")
    DeltaTable(str(path)).create_checkpoint()
    for n in (0, 1):
        (path / commit_name(n)).unlink()
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "checkpoint" in str(caught.value) and "not JSON" in str(caught.value), caught.value


def test_the_bulk_reading_sends_not_json_statistics_back() -> None:
    """Logs of more than BULK_MIN statistics texts are read by pyarrow's JSON reader first: it refuses every text of
    the round (a batch holding one is judged again line by line, where the problem is found)."""
    honest = '{"numRecords":2,"minValues":{"v":1},"maxValues":{"v":2},"nullCount":{"v":0}}'
    assert statistics_unique([honest] * 3)
    for text in [*LENIENT.values(), SPARK_COUNTS_FIVE]:
        assert not statistics_unique([honest, text, honest]), text


D = decimal.Decimal
# (column values as written, the spelling put in the log before the attestation, the value both engines read)
PARTITIONS_READ_ALIKE: list[tuple[pa.Array, str, object]] = [
    (pa.array([1], pa.int32()), "-0", 0),
    (pa.array([True]), "tRuE", True),
    (pa.array([D("1.00")], pa.decimal128(10, 2)), "-0.00", D("0.00")),
    (pa.array([1.5], pa.float32()), "1.50000001", 1.5),
    (pa.array([1.5], pa.float32()), "16777217", 16777216.0),
    (pa.array([1.5], pa.float32()), "3.4e39", math.inf),
    (pa.array([1.5], pa.float32()), "nan", math.nan),
    (pa.array([1.5], pa.float64()), "-Infinity", -math.inf),
    (pa.array([1.5], pa.float64()), "4.9e-325", 0.0),
    (pa.array([1.5], pa.float64()), "1.7976931348623159e308", math.inf),
]

PARTITIONS_REFUSED: list[tuple[pa.Array, str]] = [
    (pa.array([1], pa.int32()), " 1"),
    (pa.array([1], pa.int32()), "1.0"),
    (pa.array([1], pa.int32()), "2147483648"),
    (pa.array([1], pa.int8()), "200"),
    (pa.array([True]), "t"),
    (pa.array([datetime.date(2024, 1, 1)]), "2024-01-01T00:00:00"),
    (pa.array([D("1.00")], pa.decimal128(10, 2)), "1.005"),
    (pa.array([1.5], pa.float64()), "0x1p0"),
]


def spelled_partition(tmp_path: Path, values: pa.Array, spelling: str) -> Path:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"p": values, "v": [0]}), partition_by=["p"])
    edit_adds(path / commit_name(0), lambda add: add["partitionValues"].update(p=spelling))
    return path


def same(a: object, b: object) -> bool:
    """Equal, NaN to NaN and -0.0 apart from 0.0 (as the rows differ)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


@pytest.mark.parametrize(
    ("values", "spelling", "read"), PARTITIONS_READ_ALIKE, ids=[f"{v.type}-{s}" for v, s, _ in PARTITIONS_READ_ALIKE]
)
def test_a_partition_spelling_delta_rs_reads_verifies(
    tmp_path: Path, values: pa.Array, spelling: str, read: object
) -> None:
    path = spelled_partition(tmp_path, values, spelling)
    got = DeltaTable(str(path)).to_pyarrow_table().column("p").to_pylist()
    assert len(got) == 1 and same(got[0], read), got
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0, doc


@pytest.mark.parametrize(
    ("values", "spelling"), PARTITIONS_REFUSED, ids=[f"{v.type}-{s}" for v, s in PARTITIONS_REFUSED]
)
def test_a_partition_spelling_delta_rs_refuses_is_unreadable(tmp_path: Path, values: pa.Array, spelling: str) -> None:
    path = spelled_partition(tmp_path, values, spelling)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_unreadable", caught.value


# Statistics keyed by the logical names of a mapped table (columns id, s stored as col-1, col-2; rows id 1, 2).
LOGICAL_KEYS = {
    "logical names alone": {
        "numRecords": 2,
        "minValues": {"id": 1, "s": "a"},
        "maxValues": {"id": 1, "s": "a"},
        "nullCount": {"id": 0, "s": 0},
    },
    "logical beside true physical": {
        "numRecords": 2,
        "minValues": {"col-1": 1, "id": 1},
        "maxValues": {"col-1": 2, "id": 1},
        "nullCount": {"col-1": 0, "id": 0},
    },
}


def logical_keyed(path: Path, mode: str, stats: dict[str, object]) -> Path:
    mapped_table(path, mode)
    edit_adds(path / commit_name(0), lambda add: add.__setitem__("stats", json.dumps(stats)))
    return path


@pytest.mark.parametrize("mode", ["name", "id"])
@pytest.mark.parametrize("case", sorted(LOGICAL_KEYS))
def test_statistics_keyed_by_logical_names_verify(tmp_path: Path, case: str, mode: str) -> None:
    path = logical_keyed(tmp_path / "t", mode, LOGICAL_KEYS[case])
    read = add_action_rows(DeltaTable(str(path)))[0]
    assert read["max"] is None or read["max"].get("id") is None, read  # delta-rs reads none of the logical keys
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0, doc


def test_statistics_forged_under_physical_names_are_refused(tmp_path: Path) -> None:
    stats = {"numRecords": 2, "minValues": {"col-1": 1}, "maxValues": {"col-1": 1}, "nullCount": {"col-1": 0}}
    path = logical_keyed(tmp_path / "t", "name", stats)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
