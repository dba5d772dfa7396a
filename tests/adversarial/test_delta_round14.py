"""A Delta checkpoint's typed statistics (``stats_parsed``) where it keeps no JSON text of them (redteam14d).

A checkpoint may hold each file's statistics twice, as JSON text (``stats``) and typed (``stats_parsed``, as Spark
writes with ``delta.checkpoint.writeStatsAsStruct``, on by default). Round 10 held the two to each other when both are
given, and the checkpoint to the commits before it — but only where the checkpoint gives JSON text. Measured with
delta-spark 4.4 and delta-rs 1.6 (``test_spark_delta_round14.py``), a checkpoint of a table of three rows (v 1..3) whose
typed bounds say v is in [-5, -1]:

- the JSON column there and null for the file: delta-rs reads the typed bounds (``v >= 1`` returns no row), Spark reads
  the JSON column (no statistics: every row, the true MIN / MAX). Neither check looked (the twins: JSON text only; the
  cross-check: statistics compared where both sides give JSON) — ``record`` attested it and ``verify`` said VERIFIED;
- no JSON column (Spark's layout with ``delta.checkpoint.writeStatsAsJson`` false): both engines read the typed bounds
  (Spark also skipped the file and answered MIN / MAX -5 / -1 from them) — a checkpoint that is not the replay of its
  commits, as one forging JSON statistics is (``test_delta_attacks.py::test_checkpoint_forges_statistics``): the
  cross-check did not compare typed statistics, so VERIFIED before.

Now: a null JSON column beside typed statistics is ``table_inconsistent`` wherever it is read (the log cleaned up or
not), and typed-only statistics are compared with the commits' JSON ones as JSON statistics are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import CarrierError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, rows, verify

_LONG = pa.int64()
STATS = pa.struct([("numRecords", _LONG), ("minValues", pa.struct([("v", _LONG), ("w", pa.string())])),
                   ("maxValues", pa.struct([("v", _LONG), ("w", pa.string())])),
                   ("nullCount", pa.struct([("v", _LONG), ("w", _LONG)]))])


def typed_checkpoint(path: Path, json_stats: str, forge: Callable[[dict[str, Any]], None] | None = None,
                     cleanup: bool = False) -> int:
    """delta-rs's checkpoint of the latest version rewritten with every add's statistics typed (``stats_parsed``) and
    its JSON text ``kept``, ``null`` (the column there) or ``absent`` (no column: Spark's writeStatsAsJson false);
    ``forge(stats_parsed)`` edits each typed statistics; ``cleanup``: the commits before it deleted, as log cleanup
    does. Returns the checkpoint's version."""
    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    add_type = table.schema.field("add").type
    kept = [f for f in add_type if not (json_stats == "absent" and f.name == "stats")]
    add = pa.field("add", pa.struct([*kept, pa.field("stats_parsed", STATS)]))
    schema = pa.schema([add if f.name == "add" else f for f in table.schema])
    rows_ = table.to_pylist()
    for row in rows_:
        if row.get("add"):
            stats = json.loads(row["add"]["stats"])
            row["add"]["stats_parsed"] = {k: stats[k] for k in ("numRecords", "minValues", "maxValues", "nullCount")}
            if forge is not None:
                forge(row["add"]["stats_parsed"])
            if json_stats == "null":
                row["add"]["stats"] = None
            elif json_stats == "absent":
                del row["add"]["stats"]
    pq.write_table(pa.Table.from_pylist(rows_, schema=schema), cp)
    version = int(cp.name[:20])
    if cleanup:
        for v in range(version):
            (path / commit_name(v)).unlink()
    return version


def below_the_rows(stats: dict[str, Any]) -> None:
    """Bounds under every stored v (1..3): a reader of them skips the file for ``v >= 1``."""
    stats["minValues"]["v"], stats["maxValues"]["v"] = -5, -1


def two_appends(path: Path) -> Path:
    write_deltalake(str(path), rows(), partition_by=["p"])
    write_deltalake(str(path), rows(), partition_by=["p"], mode="append")
    return path


def _record(path: Path) -> None:
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)


@pytest.mark.parametrize("json_stats", ["null", "absent"])
@pytest.mark.parametrize("cleanup", [False, True], ids=["log", "cleaned-up"])
def test_record_refuses_typed_statistics_engines_read_otherwise(tmp_path: Path, json_stats: str,
                                                                cleanup: bool) -> None:
    """Measured: delta-rs read the forged typed bounds (``v >= 1``: no row of six). Before, ``record`` attested both
    and ``verify`` said VERIFIED; with the commits cleaned up the typed-only statistics are all there is (a
    checkpoint's statistics are then the table's, as forged JSON ones are) — the null JSON column is refused alone."""
    path = two_appends(tmp_path / "t")
    typed_checkpoint(path, json_stats, below_the_rows, cleanup=cleanup)
    import pyarrow.dataset as ds

    dataset = DeltaTable(str(path)).to_pyarrow_dataset()
    assert dataset.count_rows() == 6 and dataset.to_table(filter=ds.field("v") >= 1).num_rows == 0
    with pytest.raises(CarrierError) as caught:
        _record(path)
    assert caught.value.code.value == "table_inconsistent", caught.value
    if cleanup and json_stats == "absent":
        # The statistics every engine reads, with no log to hold them to: held to the rows since redteam15d (they
        # were attested before, as forged JSON ones were: tests/adversarial/test_delta_round15.py).
        assert "misstate its rows" in str(caught.value), caught.value
        return
    rc, doc = verify(str(path), "--level", "schema")
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


@pytest.mark.parametrize("json_stats", ["null", "absent"])
def test_a_typed_checkpoint_forged_after_the_attestation_is_never_verified(tmp_path: Path, json_stats: str) -> None:
    """After the attestation delta-rs's typed reading changed (``reader_view_changed`` before); now the checkpoint is
    named for what it is."""
    path = two_appends(tmp_path / "t")
    _record(path)
    typed_checkpoint(path, json_stats, below_the_rows)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) and set(codes(doc)) == {"table_inconsistent"}, doc


def test_a_null_json_column_is_named(tmp_path: Path) -> None:
    path = two_appends(tmp_path / "t")
    typed_checkpoint(path, "null", below_the_rows, cleanup=True)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc != 0 and "null as JSON and given as typed values" in json.dumps(doc), doc


@pytest.mark.parametrize("json_stats", ["kept", "absent"])
@pytest.mark.parametrize("cleanup", [False, True], ids=["log", "cleaned-up"])
def test_typed_statistics_that_are_the_logs_verify(tmp_path: Path, json_stats: str, cleanup: bool) -> None:
    """Control: typed statistics saying what the commits say, with the JSON text or without it, record and verify."""
    path = two_appends(tmp_path / "t")
    typed_checkpoint(path, json_stats, cleanup=cleanup)
    _record(path)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


def test_a_null_json_column_with_null_typed_statistics_verifies(tmp_path: Path) -> None:
    """A file without statistics, as Spark writes its checkpoint row (both null, or typed nulls throughout): no
    engine skips it."""
    path = two_appends(tmp_path / "t")

    def nulls(stats: dict[str, Any]) -> None:
        for key in ("minValues", "maxValues", "nullCount"):
            stats[key] = {"v": None, "w": None}
        stats["numRecords"] = None

    typed_checkpoint(path, "null", nulls, cleanup=True)
    _record(path)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


@pytest.mark.parametrize("as_json", ["true", "false"])
def test_delta_rs_s_typed_checkpoint_statistics_of_every_kind_verify(tmp_path: Path, as_json: str) -> None:
    """Control: delta-rs's own checkpoint with typed statistics (``writeStatsAsStruct``), with and without the JSON
    text, over the types whose bounds are compared (int, float32, double, decimal, date, timestamp with and without
    zone, a string past 32 characters) and the commits kept: the comparison of typed with JSON statistics passes."""
    import datetime
    import decimal

    path = tmp_path / "t"
    table = pa.table({
        "p": ["a", "b"], "i": pa.array([1, 2], pa.int32()), "f": pa.array([19 / 3, 1.5], pa.float32()),
        "d": [1.25, None], "m": pa.array([decimal.Decimal("1.05"), None], pa.decimal128(10, 2)),
        "day": [datetime.date(2024, 1, 1), None],
        "ts": pa.array([datetime.datetime(2024, 1, 5, 10, 0, 0, 123456), None], pa.timestamp("us", "UTC")),
        "ntz": pa.array([datetime.datetime(2024, 1, 5, 10), None], pa.timestamp("us")),
        "s": ["x" * 50, None], "b": [True, None]})
    configuration = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": as_json}
    write_deltalake(str(path), table, partition_by=["p"], configuration=configuration)
    write_deltalake(str(path), table, partition_by=["p"], mode="append")
    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    names = {f.name for f in pq.read_schema(cp).field("add").type}
    assert "stats_parsed" in names and ("stats" in names) == (as_json == "true")
    _record(path)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
