"""Delta attacks of the fourteenth round measured as held, pinned so a change in delta-rs, Spark or attest shows
(redteam14d; measured with delta-spark 4.4 on Spark 4.1 and delta-rs 1.6).

- statistics keyed in another case than their column or field (``"V"`` for ``v``, ``"MaxValues"``, ``"NumRecords"``,
  a nested ``"A"`` for ``s.a``), beside the true ones: Spark's statistics parsing matches names exactly, as
  delta-rs's does — every row for ``v >= 1``, the true COUNT / MIN / MAX (``test_spark_delta_round14.py``): VERIFIED;
- a checkpoint whose typed statistics (``stats_parsed``) leave a column out while its JSON ones forge that column's
  bounds: delta-rs reads the JSON bounds then (``v >= 1``: no row), as Spark does — one reading; the checkpoint is not
  the replay of its commits (``table_inconsistent``) and, once they are cleaned up after the attestation, delta-rs's
  reading changed (``reader_view_changed``);
- partition values spelled otherwise, read alike by both engines (``16777217`` for a ``float`` column: both 16777216;
  ``3.4028236e38``: both infinity; ``-0`` for an int; ``INF`` / ``nan`` for a double): VERIFIED; spelled so that
  delta-rs cannot parse them while Spark reads a value (`` 1.5``, ``1.5d``, ``0x1p1`` for a double, ``1.7`` for a
  short, ``f`` / ``no`` / ``0`` for a boolean, ``2024-01`` or ``2024-01-05 23:00:00+05:00`` for a date,
  ``2024-01-05 10:00`` for a ``timestamp_ntz``): ``table_unreadable``, never VERIFIED.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.log import commit_name
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_delta_partition_spellings import attested, delta_rs, rewrite
from tests.adversarial.test_delta_round14 import _record, two_appends


@pytest.mark.parametrize("stats", [
    {"numRecords": 3, "NumRecords": 1, "minValues": {"v": 1, "V": 100}, "maxValues": {"v": 3, "V": 0},
     "MaxValues": {"v": 0}, "nullCount": {"v": 0}},
    {"numRecords": 3, "minValues": {"v": 1}, "maxValues": {"v": 3}, "nullCount": {"V": 3}, "NullCount": {"v": 3}},
    {"numRecords": 3, "minValues": {"v": 1, "s": {"A": 100}}, "maxValues": {"v": 3, "s": {"A": 0}}},
], ids=["beside", "null-counts", "nested"])
def test_statistics_keyed_in_another_case_are_read_by_no_engine_and_verify(tmp_path: Path,
                                                                          stats: dict[str, Any]) -> None:
    path = tmp_path / "t"
    s = pa.StructArray.from_arrays([pa.array([1, 2, 3], pa.int64())], names=["a"])
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2, 3], pa.int64()), "s": s}))
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["stats"] = json.dumps(stats)
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    dataset = DeltaTable(str(path)).to_pyarrow_dataset()
    assert dataset.to_table(filter=ds.field("v") >= 1).num_rows == 3
    assert dataset.to_table(filter=ds.field("s").cast(pa.struct([("a", pa.int64())])).is_valid()).num_rows == 3
    _record(path)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


_NARROW = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("w", pa.string())])),
                     ("maxValues", pa.struct([("w", pa.string())])), ("nullCount", pa.struct([("w", pa.int64())]))])


def _narrow_typed_checkpoint(path: Path, cleanup: bool) -> None:
    """A checkpoint whose typed statistics cover ``w`` only, its JSON ones giving v bounds under every row."""
    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    add = pa.field("add", pa.struct([*table.schema.field("add").type, pa.field("stats_parsed", _NARROW)]))
    rows_ = table.to_pylist()
    for row in rows_:
        if row.get("add"):
            stats = json.loads(row["add"]["stats"])
            row["add"]["stats_parsed"] = {"numRecords": stats["numRecords"], "nullCount": {"w": 0},
                                          "minValues": {"w": stats["minValues"]["w"]},
                                          "maxValues": {"w": stats["maxValues"]["w"]}}
            stats["minValues"]["v"], stats["maxValues"]["v"] = -5, -1
            row["add"]["stats"] = json.dumps(stats)
    pq.write_table(pa.Table.from_pylist(rows_, schema=pa.schema([add if f.name == "add" else f
                                                                 for f in table.schema])), cp)
    if cleanup:
        for v in range(int(cp.name[:20])):
            (path / commit_name(v)).unlink()


@pytest.mark.parametrize(("cleanup", "code"), [(False, "table_inconsistent"), (True, "reader_view_changed")])
def test_typed_statistics_leaving_a_forged_column_out_are_never_verified(tmp_path: Path, cleanup: bool,
                                                                         code: str) -> None:
    path = two_appends(tmp_path / "t")
    _record(path)
    _narrow_typed_checkpoint(path, cleanup)
    assert DeltaTable(str(path)).to_pyarrow_dataset().to_table(filter=ds.field("v") >= 1).num_rows == 0
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == [code], doc


@pytest.mark.parametrize(("values", "spelling", "read"), [
    (pa.array([16777216.0], pa.float32()), "16777217", [16777216.0]),
    (pa.array([float("inf")], pa.float32()), "3.4028236e38", [float("inf")]),
    (pa.array([0], pa.int32()), "-0", [0]),
    (pa.array([float("inf")]), "INF", [float("inf")]),
])
def test_other_spellings_read_alike_verify(tmp_path: Path, values: pa.Array, spelling: str, read: list[Any]) -> None:
    path = attested(tmp_path / "t", values)
    rewrite(path, [spelling])
    assert delta_rs(path) == read
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc


@pytest.mark.parametrize(("values", "spelling"), [
    (pa.array([1.5]), " 1.5"),
    (pa.array([1.5]), "1.5d"),
    (pa.array([2.0]), "0x1p1"),
    (pa.array([1], pa.int16()), "1.7"),
    (pa.array([False]), "f"),
    (pa.array([False]), "no"),
    (pa.array([False]), "0"),
    (pa.array([datetime.date(2024, 1, 1)]), "2024-01"),
    (pa.array([datetime.date(2024, 1, 5)]), "2024-01-05 23:00:00+05:00"),
    (pa.array([datetime.datetime(2024, 1, 5, 10)], pa.timestamp("us")), "2024-01-05 10:00"),
])
def test_spellings_only_spark_parses_are_unreadable(tmp_path: Path, values: pa.Array, spelling: str) -> None:
    path = attested(tmp_path / "t", values)
    rewrite(path, [spelling])
    with pytest.raises(Exception, match="Failed to parse value"):
        delta_rs(path)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc
