"""A Delta rewrite whose added file's statistics leave out what the files it removed carried.

delta-rs 1.6's filtered reads (``DeltaTable.to_pyarrow_dataset()``, ``to_pyarrow_table(filters=...)``) take a
missing ``minValues`` / ``maxValues`` of a column it keeps bounds for as a null bound and skip the file
(delta-io/delta-rs#3173, closed, reproduces), and a missing ``nullCount`` as none: measured, a ``dataChange: false``
rewrite of the attested rows whose statistics left out ``v``'s bounds made ``v >= 1`` return 0 of 4 rows (delta-rs's
own QueryBuilder, and Spark, every row); one leaving out ``v``'s null count made ``v >= 1`` return the null rows and
``v IS NULL`` none. ``attest verify --level bytes`` said ``VERIFIED (content; …, same rows)`` — the check held the
statistics given to the rows, and a missing one is never wrong. Now ``content_changed``: an added file must keep
``numRecords``, each column's ``nullCount`` and the bounds of each column it holds a value of, wherever the files it
removed carried them. Honest: a column the new file holds no value of has no bounds; a column no removed file bounds
(Spark writes no boolean bounds) need not be bounded; delta-rs's own compaction keeps them all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.content import _unbounded
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, delta_stats, latest, verify
from tests.adversarial.test_content_rewrite_delta import _adds, rewrite

ROWS = pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([5, None], pa.int64())})
TWICE = pa.concat_tables([ROWS, ROWS])


def _table(path: Path, rows: pa.Table = ROWS, *, strip: tuple[str, ...] = ()) -> None:
    """Two delta-rs appends of ``rows``, attested; ``strip``: columns whose bounds the log then leaves out (as Spark
    writes a boolean's), before the attestation."""
    write_deltalake(str(path), rows)
    write_deltalake(str(path), rows, mode="append")
    for n in range(latest(path) + 1):
        log = path / commit_name(n)
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        for a in actions:
            if "add" in a and strip:
                stats = json.loads(a["add"]["stats"])
                for key in ("minValues", "maxValues"):
                    stats[key] = {c: x for c, x in stats[key].items() if c not in strip}
                a["add"]["stats"] = json.dumps(stats)
        log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)


def _rewrite(path: Path, rows: pa.Table, edit: Any = None) -> None:
    """One ``dataChange: false`` commit replacing every file by ``rows``, its statistics delta-rs's less ``edit``."""
    stats = json.loads(delta_stats(rows))
    rewrite(path, sorted(_adds(path)), [(rows, {})], stats=[json.dumps(edit(stats) if edit else stats)])


def _without(stats: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``stats`` less each ``part.column`` (``minValues.v``) or top-level key of ``keys``."""
    out = json.loads(json.dumps(stats))
    for key in keys:
        part, _, column = key.partition(".")
        if column:
            out[part].pop(column, None)
        else:
            out.pop(part, None)
    return out


def _filtered(path: Path, expression: Any) -> int:
    return DeltaTable(str(path)).to_pyarrow_dataset().to_table(filter=expression).num_rows


def _queried(path: Path, where: str) -> int:
    return len(QueryBuilder().register("t", DeltaTable(str(path))).execute(f"SELECT * FROM t WHERE {where}")
               .read_all())


VARIANTS = {
    "v's bounds left out": lambda s: _without(s, "minValues.v", "maxValues.v"),
    "v's maximum left out": lambda s: _without(s, "maxValues.v"),
    "every bound left out": lambda s: {**s, "minValues": {}, "maxValues": {}},
    "numRecords only": lambda s: {"numRecords": s["numRecords"]},
    "v's null count left out": lambda s: _without(s, "nullCount.v"),
    "v said all null, tightBounds false": lambda s: {**_without(s, "minValues.v", "maxValues.v"),
                                                     "nullCount": {"k": 0, "v": 4}, "tightBounds": False},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_rewrite_leaving_statistics_out(tmp_path: Path, variant: str) -> None:
    path = tmp_path / "t"
    _table(path)
    _rewrite(path, TWICE, VARIANTS[variant])
    # What delta-rs reads (measured): its filtered reads by the log's statistics, its query engine by them too but
    # for a missing bound (every row of v >= 1, v <= 10, v IS NULL: 2, 2, 2).
    assert DeltaTable(str(path)).to_pyarrow_table().num_rows == 4
    got = (_filtered(path, ds.field("v") >= 1), _filtered(path, ds.field("v") <= 10),
           _filtered(path, ds.field("v").is_null()))
    queried = (_queried(path, "v >= 1"), _queried(path, "v <= 10"), _queried(path, "v IS NULL"))
    assert got == {
        "every bound left out": (0, 0, 2),
        "v's bounds left out": (0, 0, 2),
        "v's maximum left out": (2, 0, 2),
        # No column statistics at all: read whole (here and beside files that have them); refused all the same, as
        # the removed files stated them (honest writers that keep statistics write them all).
        "numRecords only": (2, 2, 2),
        "v's null count left out": (4, 4, 0),  # the null rows in v >= 1, none for v IS NULL
        "v said all null, tightBounds false": (0, 0, 4),
    }[variant]
    assert queried == ((0, 0, 4) if variant == "v said all null, tightBounds false" else (2, 2, 2))
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    message = doc["errors"][0]["message"]
    if variant == "v said all null, tightBounds false":  # the null count is not held to the rows then
        assert "leaves out statistics the files it removed carried: minValues.v" in message, message
    else:
        assert "leaves out statistics the files it removed carried" in message, message
        assert "delta-rs's filtered reads" in message, message


def test_a_column_without_a_value_has_no_bounds(tmp_path: Path) -> None:
    """Honest: the rows split into a file holding ``v``'s values and one holding only its nulls, which has none."""
    path = tmp_path / "t"
    _table(path)
    valued = pa.table({"k": pa.array([1, 1], pa.int64()), "v": pa.array([5, 5], pa.int64())})
    nulls = pa.table({"k": pa.array([2, 2], pa.int64()), "v": pa.array([None, None], pa.int64())})
    assert "v" not in json.loads(delta_stats(nulls))["minValues"]
    rewrite(path, sorted(_adds(path)), [(valued, {}), (nulls, {})])
    assert _filtered(path, ds.field("v") >= 1) == 2 and _filtered(path, ds.field("v").is_null()) == 2
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_null_count_that_hides_values_is_refused(tmp_path: Path) -> None:
    """The exception is the file's own null count, which is held to its rows: one saying ``v`` holds no value while
    it does is refused."""
    path = tmp_path / "t"
    _table(path)
    _rewrite(path, TWICE, lambda s: {**_without(s, "minValues.v", "maxValues.v"), "nullCount": {"k": 0, "v": 4}})
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "v: 2 nulls stored, 4 in its statistics" in doc["errors"][0]["message"], doc


def test_a_column_the_removed_files_did_not_bound(tmp_path: Path) -> None:
    """Honest: Spark writes no bounds of a boolean column; a rewrite of such files without them verifies (delta-rs's
    filtered reads skip the files before it as after it: the attestation binds what was written), and one that drops
    them where the removed files had them does not."""
    rows = ROWS.append_column("b", pa.array([True, False]))
    for strip, expected in ((("b",), 0), ((), 1)):
        path = tmp_path / f"t{len(strip)}"
        _table(path, rows, strip=strip)
        _rewrite(path, pa.concat_tables([rows, rows]), lambda s: _without(s, "minValues.b", "maxValues.b"))
        rc, doc = verify(str(path), "--level", "bytes")
        assert rc == expected, doc
        if expected:
            assert codes(doc) == ["content_changed"] and "minValues.b" in doc["errors"][0]["message"], doc
        else:
            assert doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_delta_rs_compaction_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _table(path, ROWS.append_column("b", pa.array([True, False])))
    DeltaTable(str(path)).optimize.compact()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_without_the_removed_files_statistics() -> None:
    """The log no longer holding the attested version: the file's own null counts name the columns to bound."""
    assert _unbounded(json.loads(delta_stats(TWICE))) == []
    assert _unbounded({"numRecords": 4}) == ["nullCount"]
    assert _unbounded({"numRecords": 4, "nullCount": {"k": 0, "v": 2}, "minValues": {"k": 1},
                       "maxValues": {"k": 2}}) == ["minValues.v"]
    assert _unbounded({"nullCount": {"v": 4}}) == ["numRecords", "minValues.v"]
    assert _unbounded({"numRecords": 4, "nullCount": {"v": 4}}) == []
