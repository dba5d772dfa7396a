"""Round 20b (Delta): what Spark (delta-spark 4.4 / Spark 4.1) reads that delta-rs does not, second pass.

**Data values outside Python's years 1 to 9999** (round 20 left them: it took partition values and the statistics
delta-rs reads). A ``date`` or ``timestamp`` column whose *rows* hold a year Parquet, delta-rs and Spark hold but
Python does not (``date32`` -800000 days: the year -221; a timestamp in the year 11476): the digest encodes them from
Arrow, but the statistics check read each column's least and greatest value as Python values — a bare OverflowError,
``internal_error`` at ``attest record`` (the check every digested file gets, a rewrite's too). A timestamp's
statistics delta-rs writes so (``-0249-10-15T19:33:20Z``) it reads none of, and the check of Spark's reading refused
them as misstating the rows (they do not). Both are held now, exactly (``content._Beyond``: days / microseconds from
1970, any year): an honest table is recorded and verifies; a bound that misstates such rows (a maximum in Python's
years over a row past them, a minimum past them over rows inside) is ``table_inconsistent`` as any other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, edit_adds, verify

# Each past Python's years at both ends: -221-09-04 .. 10183-09-21, -249-10-15 .. 11476-08-15
FAR = {
    "date": pa.array([-800_000, 0, 3_000_000], pa.date32()),
    "timestamp": pa.array([-70_000_000_000_000_000, 0, 300_000_000_000_000_000], pa.timestamp("us", "UTC")),
    "timestamp_ntz": pa.array([-70_000_000_000_000_000, 0, 300_000_000_000_000_000], pa.timestamp("us")),
    "nested": pa.array([{"d": -800_000}, {"d": 0}, {"d": 3_000_000}], pa.struct([("d", pa.date32())])),
}


def far_table(path: Path, kind: str, edit: Any = None) -> Path:
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": FAR[kind]}))
    if edit is not None:
        edit_adds(path / commit_name(0), edit)
    return path


def _stats(edit: Any) -> Any:
    def apply(add: dict[str, Any]) -> None:
        stats = json.loads(add["stats"])
        edit(stats)
        add["stats"] = json.dumps(stats)

    return apply


def _drop_v_bounds(stats: dict[str, Any]) -> None:
    stats["minValues"].pop("v", None)
    stats["maxValues"].pop("v", None)


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_a_table_of_timestamps_past_pythons_years_is_recorded_and_verifies(tmp_path: Path, kind: str) -> None:
    """delta-rs writes the bounds (``-0249-10-15T19:33:20Z`` / ``+11476-08-15T05:20:00Z``) and reads none of them.
    Was: OverflowError (``internal_error``) at record."""
    path = far_table(tmp_path / "t", kind)
    result = attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert result.content is not None  # digested, not recorded without a digest
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


@pytest.mark.parametrize("kind", ["date", "timestamp", "timestamp_ntz", "nested"])
def test_rows_past_pythons_years_without_bounds_are_recorded(tmp_path: Path, kind: str) -> None:
    """No bounds for the column (a date's bounds delta-rs reads are unsupported_table since round 20): the rows are
    observed for the null counts all the same. Was: OverflowError (``internal_error``)."""
    path = far_table(tmp_path / "t", kind, _stats(_drop_v_bounds))
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


@pytest.mark.parametrize(
    ("side", "bound"),
    [
        ("maxValues", "2000-01-01T00:00:00.000Z"),  # a maximum Python holds over a row in the year 11476
        ("minValues", "0001-01-01T00:00:00.000Z"),  # a minimum Python holds over a row in the year -249
        ("minValues", "-0100-01-01T00:00:00.000Z"),  # past Python's years both, above the least row (-249)
        ("maxValues", "+11476-08-15T05:19:59.000Z"),  # a second below the greatest row
    ],
)
def test_bounds_misstating_rows_past_pythons_years_are_refused(tmp_path: Path, side: str, bound: str) -> None:
    """Spark reads each bound (its lenient parser takes signed years) and skips the file by it (measured for a
    maximum ``-0100-…``: test_spark_delta_round20b.py). Was: internal_error (the rows' observation failed first)."""

    def forge(stats: dict[str, Any]) -> None:
        stats[side]["v"] = bound

    path = far_table(tmp_path / "t", "timestamp", _stats(forge))
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code == "table_inconsistent", caught.value
    assert "statistics" in caught.value.message, caught.value


def test_a_wider_bound_past_pythons_years_is_sound(tmp_path: Path) -> None:
    """Held: a minimum further back than the least row (sound: no row is skipped), as Spark prunes by it."""

    def widen(stats: dict[str, Any]) -> None:
        stats["minValues"]["v"] = "-0300-01-01T00:00:00.000Z"
        stats["tightBounds"] = False

    path = far_table(tmp_path / "t", "timestamp", _stats(widen))
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def test_a_rewrite_of_rows_past_pythons_years_verifies_by_content(tmp_path: Path) -> None:
    """A ``dataChange: false`` rewrite of such a table (delta-rs's compaction): its Parquet footer's bounds, which
    pyarrow cannot give as Python values, are held as the counts Parquet stores (round 20, extreme-value sweep: was
    ``content_changed``, the footer statistics "cannot be held to its rows", a refusal of an honest rewrite; before
    that, internal_error already at record). Forged footer bounds of such values: tests/test_extreme_values.py."""
    path = tmp_path / "t"
    for rows in (FAR["timestamp"][:2], FAR["timestamp"][2:]):
        write_deltalake(str(path), pa.table({"v": rows}), mode="append")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    from deltalake import DeltaTable

    DeltaTable(str(path)).optimize.compact()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content"]["passed"], doc
