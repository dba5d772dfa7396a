"""Round 17 of the Delta attacks (rt17d), variants that held before the fix of ``test_delta_round17.py``: a
``delta.dataSkippingStatsColumns`` naming columns in another case where delta-rs then reads none of the file's
statistics (``A,B``: every column out, so every bound the log gives is held to the rows as Spark reads it), or a
struct's field so (``s.X``), with forged bounds: refused on main already (``table_inconsistent``), and now by the
check of the property too."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_delta_round17 import forged_unindexed


def test_every_statistics_column_named_in_another_case(tmp_path: Path) -> None:
    path = tmp_path / "t"
    forged_unindexed(path, "A,B")
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value


def test_nested_statistics_column_named_in_another_case(tmp_path: Path) -> None:
    # s.X for the struct field s.x: delta-rs keeps none of x's statistics, Spark resolves the name; x's bounds forged.
    path = tmp_path / "t"
    write_deltalake(
        str(path),
        pa.table({"a": pa.array([1, 2], pa.int64()), "s": pa.array([{"x": 5}, {"x": 6}])}),
        configuration={"delta.dataSkippingStatsColumns": "a,s.X"},
    )
    commit = path / commit_name(0)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            assert "s" not in stats["maxValues"]  # delta-rs kept none for s.x
            stats["minValues"]["s"], stats["maxValues"]["s"], stats["nullCount"]["s"] = {"x": 100}, {"x": 200}, {"x": 0}
            action["add"]["stats"] = json.dumps(stats)
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value


# delta.dataSkippingStatsColumns / delta.dataSkippingNumIndexedCols spelled so that delta-rs keeps b out of its
# statistics, and Spark does too (measured, test_spark_delta_round17.py): b's forged bounds are unread by both, the
# table verifies as it is.
HELD_STATISTICS_COLUMNS = {
    "a,a": {"delta.dataSkippingStatsColumns": "a,a"},
    "a,`b `": {"delta.dataSkippingStatsColumns": "a,`b `"},
    "+1": {"delta.dataSkippingNumIndexedCols": "+1"},
    "a over 2": {"delta.dataSkippingStatsColumns": "a", "delta.dataSkippingNumIndexedCols": "2"},
}


def forged_statistics(path: Path, case: str) -> None:
    """forged_unindexed's table (b's bounds forged to 100..200) under the properties of ``case``."""
    forged_unindexed(path, "a", configuration=HELD_STATISTICS_COLUMNS[case])


@pytest.mark.parametrize("case", sorted(HELD_STATISTICS_COLUMNS))
def test_statistics_columns_both_engines_leave_out(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    forged_statistics(path, case)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def statistics_keyed_in_another_case(path: Path) -> None:
    """A delta-rs table (a: 1, 2; b: 5, 6) whose commit gives b's statistics under the key ``B`` (100..200) and none
    under ``b``: Spark reads the statistics JSON by exact keys as delta-rs does (measured: it read the row for
    ``b = 5`` and answered ``MAX(b)`` 6), so the key is no bound of either."""
    write_deltalake(str(path), pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([5, 6], pa.int64())}))
    commit = path / commit_name(0)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            for key, value in (("minValues", 100), ("maxValues", 200), ("nullCount", 0)):
                stats[key].pop("b")
                stats[key]["B"] = value
            action["add"]["stats"] = json.dumps(stats)
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def test_statistics_keyed_in_another_case(tmp_path: Path) -> None:
    path = tmp_path / "t"
    statistics_keyed_in_another_case(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
