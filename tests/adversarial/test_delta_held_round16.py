"""Delta variants of the sixteenth round measured as held, pinned so a change in delta-rs, Spark or attest shows
(rt16d; delta-rs 1.6, delta-spark 4.4 on Spark 4.1: ``test_spark_delta_round16.py``).

- a type-widened table (the feature on, or a column widened ``integer → long``; recorded after a widening of date to
  timestamp_ntz, a decimal's precision and scale, integer to double or to a decimal, short to long) whose statistics
  state its rows: recorded and VERIFIED, as before the round's check (``test_delta_round16.py``) — Spark answers
  from them as from the rows;
- a float column widened to double whose bounds delta-rs wrote as the float's exact value (``0.10000000149011612``):
  they hold every row as a double, so it records and verifies (Spark's own ``0.1`` is refused,
  ``test_delta_round16.py``);
- a ``decimal(38, 18)`` minimum delta-rs wrote through a float *outward* (-123456789012345678.5 as
  ``-1.2345678901234567e+19``, below it): Spark read the row for ``d = <least>`` and answered ``MIN(d)`` from the
  rows (measured): VERIFIED with the note; rounded inward it is refused (``test_delta_spark_only_bounds.py``; Spark
  returned no row for ``d = <least>``, measured here for the first time).
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, metadata_commit, rows, verify
from tests.adversarial.test_delta_round15 import forge_stats
from tests.adversarial.test_delta_round16 import (
    WIDENINGS,
    float_widened,
    legacy_dated,
    wide_null_count,
    widened_append,
)
from tests.adversarial.test_delta_spark_only_bounds import _table
from tests.delta.test_type_widening_ntz import _widen

D = decimal.Decimal
# a decimal(38, 18) minimum delta-rs writes through a float below the least value (outward)
OUTWARD_MINIMUM = pa.table({"d": pa.array([D("-123456789012345678.5"), D("1.5")], pa.decimal128(38, 18))})


@pytest.mark.parametrize("how", WIDENINGS)
def test_honest_statistics_of_a_type_widened_table_verify(tmp_path: Path, how: str) -> None:
    path = tmp_path / "t"
    widened_append(path, {}, how)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def test_float_statistics_written_exactly_verify_after_a_widening(tmp_path: Path) -> None:
    path = tmp_path / "t"
    float_widened(path, 0.10000000149011612)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def test_a_decimal_minimum_rounded_outward_verifies(tmp_path: Path) -> None:
    path = _table(tmp_path, OUTWARD_MINIMUM, None, "d")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and any("delta-rs cannot read" in n for n in doc["notes"]), doc


def _mapped(tmp_path: Path) -> Path:
    """A column-mapped (name mode) delta-rs table, attested, verifying."""
    path = tmp_path / "cm"
    write_deltalake(str(path), rows(), partition_by=["p"], configuration={"delta.columnMapping.mode": "name"})
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path), "--level", "bytes")[0] == 0
    return path


def test_a_column_mapping_high_water_mark_change_keeps_the_attestation(tmp_path: Path) -> None:
    """``delta.columnMapping.maxColumnId`` raised (or lowered) in a metaData-only commit: only writers read it (the
    next id to hand out); every column still resolves to the same physical column — VERIFIED."""
    path = _mapped(tmp_path)
    metadata_commit(path, lambda m: m["configuration"].update({"delta.columnMapping.maxColumnId": "99"}))
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


@pytest.mark.parametrize("change", ["re-added", "renamed", "id changed"])
def test_a_column_dropped_and_re_added_or_renamed_under_mapping_is_refused(tmp_path: Path, change: str) -> None:
    """A metaData-only commit that drops ``v`` and adds a ``v`` of a new physical name (its rows read as null by
    Spark), renames ``v``'s physical name, or gives it another id: the schema readers resolve changed —
    reader_view_changed, never VERIFIED."""
    path = _mapped(tmp_path)

    def edit(meta: dict[str, Any]) -> None:
        schema = json.loads(meta["schemaString"])
        v = next(f for f in schema["fields"] if f["name"] == "v")
        key = {"re-added": "delta.columnMapping.physicalName", "renamed": "delta.columnMapping.physicalName",
               "id changed": "delta.columnMapping.id"}[change]
        v["metadata"][key] = 99 if change == "id changed" else f"col-{uuid.uuid4()}"
        if change == "re-added":
            v["metadata"]["delta.columnMapping.id"] = 99
        meta["schemaString"] = json.dumps(schema)

    metadata_commit(path, edit)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc != 0 and "reader_view_changed" in codes(doc), doc


def test_a_wide_null_count_spark_skips_nothing_by_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    wide_null_count(path, 2)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


# column values, the widening (from, to), the reader features after it
HONEST_WIDENINGS: dict[str, tuple[pa.Array, tuple[str, str], list[str]]] = {
    "date to timestamp_ntz": (pa.array([datetime.date(2024, 1, 5), datetime.date(2024, 1, 6)]),
                              ("date", "timestamp_ntz"), ["timestampNtz", "typeWidening"]),
    "decimal(5,2) to decimal(10,4)": (pa.array([D("1.25"), D("2.50")], pa.decimal128(5, 2)),
                                      ("decimal(5,2)", "decimal(10,4)"), ["typeWidening"]),
    "integer to double": (pa.array([1, 2], pa.int32()), ("integer", "double"), ["typeWidening"]),
    "integer to decimal(12,2)": (pa.array([1, 2], pa.int32()), ("integer", "decimal(12,2)"), ["typeWidening"]),
    "short to long": (pa.array([1, 2], pa.int16()), ("short", "long"), ["typeWidening"]),
}


@pytest.mark.parametrize("case", sorted(HONEST_WIDENINGS))
def test_a_table_recorded_after_an_honest_widening_verifies(tmp_path: Path, case: str) -> None:
    """delta-rs's statistics of the narrower type, read after the widening as the wider one: they state the rows."""
    values, change, features = HONEST_WIDENINGS[case]
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"c": values}))
    _widen(path, {"c": change}, features)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def test_ancient_dates_without_a_legacy_footer_verify(tmp_path: Path) -> None:
    path = tmp_path / "t"
    legacy_dated(path, None)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


# statistics that name a key in another case than Spark reads (it reads neither, measured)
OTHER_CASES = {"a column key": '{"numRecords":2,"minValues":{"v":1},"maxValues":{"V":1},"nullCount":{"v":0}}',
               "a statistics key": '{"numRecords":2,"minValues":{"v":1},"MaxValues":{"v":1},"nullCount":{"v":0}}'}


def other_case(path: Path, stats: str) -> None:
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int64())}))
    log = path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["stats"] = stats
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.mark.parametrize("case", sorted(OTHER_CASES))
def test_statistics_keyed_in_another_case_verify(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    other_case(path, OTHER_CASES[case])
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


TIGHTNESS = {"absent": None, "true": True, "false": False}


def vectored_maximum(path: Path, tight: bool | None) -> None:
    """Rows 1, 2, 100, a deletion vector deleting 100, the file's statistics of every stored row."""
    from tests.delta.dv import add_deletion_vector

    write_deltalake(str(path), pa.table({"v": pa.array([1, 2, 100], pa.int64())}),
                    configuration={"delta.enableDeletionVectors": "true"})
    add_deletion_vector(path, [2])
    if tight is not None:
        forge_stats(path / "_delta_log" / f"{1:020d}.json", {"tightBounds": tight})


@pytest.mark.parametrize("case", sorted(TIGHTNESS))
def test_a_deleted_greatest_row_under_any_tightness_verifies(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    vectored_maximum(path, TIGHTNESS[case])
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


_TEN = datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC)
# column values, a maximum above the greatest (as the log writes it)
LOOSE_MAXIMA: dict[str, tuple[pa.Array, Any]] = {
    "timestamp": (pa.array([_TEN, _TEN + datetime.timedelta(hours=1)], pa.timestamp("us", "UTC")),
                  "2024-01-06T10:00:00.000Z"),
    "timestamp_ntz": (pa.array([_TEN.replace(tzinfo=None), _TEN.replace(tzinfo=None, hour=11)], pa.timestamp("us")),
                      "2024-01-06T10:00:00.000"),
    "decimal": (pa.array([D("1.50"), D("2.50")], pa.decimal128(10, 2)), 50.0),
    "string": (pa.array(["a", "b"]), "zzz"),
}


def loose_maximum(path: Path, case: str) -> None:
    values, bound = LOOSE_MAXIMA[case]
    write_deltalake(str(path), pa.table({"v": values}))
    log = path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            stats["maxValues"]["v"] = bound
            action["add"]["stats"] = json.dumps(stats)
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.mark.parametrize("case", sorted(LOOSE_MAXIMA))
def test_a_loose_maximum_spark_answers_nothing_from_verifies(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    loose_maximum(path, case)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
