"""Partition values a Delta rewrite (``dataChange: false``) respells: the digest folds in each file's partition values
as delta-rs types them, so two spellings delta-rs reads alike are one value to it. Spark reads some of them apart.

Measured (delta-rs 1.6, delta-spark 4.4; ``test_spark_partition_spellings.py`` pins Spark's side):

- a ``timestamp`` partition value **without a zone** (``2024-01-05 10:00:00.000000``, as delta-rs writes) and the same
  wall-clock time **with** one (``2024-01-05T10:00:00.000000Z``, as Spark writes; ``+05:00`` offsets likewise) are one
  instant for delta-rs (it reads a zoneless value as UTC), while Spark reads a zoneless value in its session time zone
  (15:00 UTC in a New York session, against 10:00). A rewrite moving a file's rows from one spelling to the other was
  ``VERIFIED (content; …, same rows)`` — other rows for every Spark reader outside UTC. ``content_changed`` now;
- tried and held — spellings delta-rs reads as the attested value and Spark reads alike (UTC and New York sessions):
  ``+1`` / ``01`` (int), ``+1.00`` / ``01.00`` (``decimal(10,2)``), ``True`` / ``TRUE``, ``2024-1-1`` /
  ``+2024-01-01`` / `` 2024-01-01`` (date), ``1.50`` / ``15e-1`` / ``+1.5`` / ``inf`` / ``1e400`` (double), and
  any two timestamp spellings of one instant that both carry a zone, or both none (``.0000009`` past the
  microsecond: both truncate): VERIFIED; spellings delta-rs refuses to parse (`` 1``, ``1.0`` for an int, ``1`` or
  ``1.0`` for ``decimal(10,2)``,
  ``1`` / ``t`` / ``yes`` / ``true `` for a boolean, ``__HIVE_DEFAULT_PARTITION__`` for an int (Spark: null),
  ``2024-01-01T10`` or a year past 9999 for a date, ``2024-01-05T10:00:00`` without a zone, any zone on
  ``timestamp_ntz``) make the table unreadable to it: ``table_unreadable``, never VERIFIED. A string column's
  ``__HIVE_DEFAULT_PARTITION__``, `` a`` and ``a `` are read as written by both;
- a **leap second** (``10:00:60``): delta-rs reads the next second, Spark null — ``table_inconsistent``.
"""

from __future__ import annotations

import datetime
import decimal
import json
import shutil
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, edit_adds, latest, verify
from tests.adversarial.test_content_rewrite_delta import _adds

TEN = datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC)


def attested(path: Path, values: pa.Array, spelling: str | None = None) -> Path:
    """A table of one row per value partitioned by ``p`` (delta-rs's spelling, or ``spelling`` for every file, set in
    the commit before the attestation), attested and verifying."""
    write_deltalake(str(path), pa.table({"p": values, "v": list(range(len(values)))}), partition_by=["p"])
    if spelling is not None:
        edit_adds(path / commit_name(0), lambda add: add["partitionValues"].update(p=spelling))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc
    return path


def rewrite(path: Path, spellings: list[str]) -> None:
    """An OPTIMIZE-like commit: each live file copied byte for byte to a new path, added ``dataChange: false`` under
    ``spellings[i]`` as its partition value (the i-th file by path) and the old one removed — the same rows."""
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    for (raw, add), spelling in zip(sorted(_adds(path).items()), spellings, strict=True):
        rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        shutil.copy(path / unquote(raw), path / rel)
        actions.append({"remove": {"path": raw, "dataChange": False, "deletionTimestamp": 1,
                                   "extendedFileMetadata": True, "partitionValues": add["partitionValues"],
                                   "size": add["size"]}})
        actions.append({"add": {"path": rel, "partitionValues": {"p": spelling}, "size": (path / rel).stat().st_size,
                                "modificationTime": 2, "dataChange": False, "stats": add.get("stats")}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def delta_rs(path: Path) -> list[Any]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().column("p").to_pylist())


STAMP = pa.array([datetime.datetime(2024, 1, 5, 10)], pa.timestamp("us", "UTC"))


@pytest.mark.parametrize(("written", "respelled"), [
    (None, "2024-01-05T10:00:00.000000Z"),  # delta-rs's zoneless spelling to Spark's
    (None, "2024-01-05T15:00:00+05:00"),
    ("2024-01-05T10:00:00.000000Z", "2024-01-05 10:00:00.000000"),  # Spark's to delta-rs's
    ("2024-01-05T10:00:00+00:00", "2024-01-05 10:00:00"),  # write_content_addressed's to zoneless
])
def test_a_rewrite_that_moves_a_timestamp_partition_value_across_zones_is_refused(
        tmp_path: Path, written: str | None, respelled: str) -> None:
    """delta-rs reads the same instant, so the digest is the attested one (VERIFIED before); Spark outside UTC reads
    the zoneless spelling in its session zone: other rows."""
    path = attested(tmp_path / "t", STAMP, written)
    rewrite(path, [respelled])
    assert delta_rs(path) == [TEN]  # delta-rs: the attested rows
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "time zone" in json.dumps(doc) and "Spark" in json.dumps(doc), doc


@pytest.mark.parametrize(("written", "respelled"), [
    (None, "2024-01-05 10:00:00"),
    (None, "2024-01-05 10:00:00.0000009"),
    ("2024-01-05T10:00:00.000000Z", "2024-01-05T15:00:00+05:00"),
    ("2024-01-05T10:00:00.000000Z", "2024-01-05T10:00:00.0000001Z"),
])
def test_a_rewrite_keeping_the_zone_of_a_timestamp_partition_value_verifies(
        tmp_path: Path, written: str | None, respelled: str) -> None:
    """Control: both spellings with a zone (one instant for every reader) or both without (one wall-clock time for
    every Spark session, UTC for delta-rs)."""
    path = attested(tmp_path / "t", STAMP, written)
    rewrite(path, [respelled])
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"] and "same rows" in json.dumps(doc), doc


def test_removed_files_that_mix_zones_for_one_instant_are_not_carried_over(tmp_path: Path) -> None:
    """Two files of one instant, one spelled with a zone and one without: Spark outside UTC reads two instants, and a
    rewrite could move rows between them with the digest unchanged; any rewrite of them keeping that instant is
    refused."""
    path = tmp_path / "t"
    for v in (0, 1):  # two files of one instant, in versions 0 and 1
        write_deltalake(str(path), pa.table({"p": STAMP, "v": [v]}), partition_by=["p"], mode="append")
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    (add,) = [a for a in actions if "add" in a]
    add["add"]["partitionValues"]["p"] = "2024-01-05T10:00:00.000000Z"
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path), "--level", "schema")[0] == 0
    rewrite(path, ["2024-01-05 10:00:00.000000", "2024-01-05 10:00:00.000000"])
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"] and "both ways" in json.dumps(doc), doc


def test_a_second_rewrite_is_held_to_the_first_rewrites_spelling(tmp_path: Path) -> None:
    """Zoneless → with a zone in one rewrite, and back in the next: Spark reads the attested rows again at the end,
    but each step is judged against the files it removed (the first already changed what Spark reads)."""
    path = attested(tmp_path / "t", STAMP)
    rewrite(path, ["2024-01-05T10:00:00.000000Z"])
    rewrite(path, ["2024-01-05 10:00:00.000000"])
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc


HELD = [
    (pa.array([1], pa.int32()), ["+1", "01"], [1]),
    (pa.array([decimal.Decimal("1.00")], pa.decimal128(10, 2)), ["+1.00", "01.00"], [decimal.Decimal("1.00")]),
    (pa.array([True]), ["True", "TRUE"], [True]),
    (pa.array([datetime.date(2024, 1, 1)]), ["2024-1-1", "+2024-01-01", " 2024-01-01"], [datetime.date(2024, 1, 1)]),
    (pa.array([1.5]), ["1.50", "15e-1", "+1.5"], [1.5]),
    (pa.array([float("inf")]), ["inf", "+inf", "1e400"], [float("inf")]),
]


@pytest.mark.parametrize(("values", "spelling", "read"),
                         [(v, s, r) for v, spellings, r in HELD for s in spellings])
def test_other_spellings_both_engines_read_alike_verify(tmp_path: Path, values: pa.Array, spelling: str,
                                                        read: list[Any]) -> None:
    """Held: delta-rs reads the attested value, and so does Spark (measured in UTC and New York sessions,
    test_spark_partition_spellings): the same rows for every reader."""
    path = attested(tmp_path / "t", values)
    rewrite(path, [spelling])
    assert delta_rs(path) == read
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc


@pytest.mark.parametrize(("values", "spelling"), [
    (pa.array([1], pa.int32()), " 1"),
    (pa.array([1], pa.int32()), "1.0"),
    (pa.array([decimal.Decimal("1.00")], pa.decimal128(10, 2)), "1"),
    (pa.array([decimal.Decimal("1.00")], pa.decimal128(10, 2)), "1.005"),
    (pa.array([True]), "1"),
    (pa.array([True]), "yes"),
    (pa.array([True]), "true "),  # Spark: true
    (pa.array([1], pa.int32()), "__HIVE_DEFAULT_PARTITION__"),  # Spark: null (a string column: the literal, both)
    (pa.array([datetime.date(2024, 1, 1)]), "2024-01-01T10"),  # Spark: 2024-01-01
    (pa.array([datetime.date(2024, 1, 1)]), "10000-01-01"),
    (STAMP, "2024-01-05T10:00:00"),
    (pa.array([datetime.datetime(2024, 1, 5, 10)], pa.timestamp("us")), "2024-01-05T10:00:00Z"),
])
def test_spellings_delta_rs_cannot_parse_are_unreadable(tmp_path: Path, values: pa.Array, spelling: str) -> None:
    """Held: delta-rs refuses the table (``Failed to parse value``), so nothing is claimed."""
    path = attested(tmp_path / "t", values)
    rewrite(path, [spelling])
    with pytest.raises(Exception, match="Failed to parse value"):
        delta_rs(path)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc


def test_a_column_mapped_table_is_held_by_physical_name(tmp_path: Path) -> None:
    """Under column mapping the log keys partition values by physical name: the same respelling is refused."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"p": STAMP, "v": [0]}), partition_by=["p"],
                    configuration={"delta.columnMapping.mode": "name"})
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    (raw, add), = _adds(path).items()
    (physical, value), = add["partitionValues"].items()
    assert physical != "p" and value == "2024-01-05 10:00:00.000000"
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    shutil.copy(path / unquote(raw), path / rel)
    actions = [{"commitInfo": {"operation": "OPTIMIZE"}},
               {"remove": {"path": raw, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                           "partitionValues": add["partitionValues"], "size": add["size"]}},
               {"add": {"path": rel, "partitionValues": {physical: "2024-01-05T10:00:00.000000Z"},
                        "size": (path / rel).stat().st_size, "modificationTime": 2, "dataChange": False,
                        "stats": add.get("stats")}}]
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert delta_rs(path) == [TEN]
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"] and "'p'" in json.dumps(doc), doc


@pytest.mark.parametrize(("written", "respelled"), [
    ("2024-01-05 10:01:00.000000", "2024-01-05 10:00:60"),
    ("2024-01-05 10:01:00.500000", "2024-01-05 10:00:60.5"),
    ("2024-01-05T10:01:00.000000Z", "2024-01-05T10:00:60Z"),
    ("2024-01-06T00:00:00.000000Z", "2024-01-05T23:59:60.000000+00:00"),
])
def test_a_leap_second_partition_value_is_inconsistent(tmp_path: Path, written: str, respelled: str) -> None:
    """delta-rs reads ':60' as the next second — the attested instant, so a rewrite to it kept the digest (VERIFIED
    before) — while Spark reads the partition value as null (measured, test_spark_partition_spellings). A live file
    so spelled is table_inconsistent, in a rewrite or in the attested version itself (and record refuses it)."""
    when = datetime.datetime.fromisoformat(written.replace(" ", "T")).replace(tzinfo=datetime.UTC)
    stamp = pa.array([when.replace(tzinfo=None)], pa.timestamp("us", "UTC"))
    path = attested(tmp_path / "t", stamp, written)
    rewrite(path, [respelled])
    assert delta_rs(path) == [when]  # the attested instant, for delta-rs
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and "table_inconsistent" in codes(doc) and "leap second" in json.dumps(doc), doc
    fresh = tmp_path / "fresh"
    write_deltalake(str(fresh), pa.table({"p": stamp, "v": [0]}), partition_by=["p"])
    log = fresh / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["partitionValues"]["p"] = respelled
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    with pytest.raises(Exception, match="leap second"):
        attest_after_write(str(fresh), model="orders", program_hash=PROGRAM)
