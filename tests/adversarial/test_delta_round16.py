"""Delta attacks of the sixteenth round that were false VERIFIED verdicts (rt16d; delta-rs 1.6, delta-spark 4.4 on
Spark 4.1; what Spark reads: ``test_spark_delta_round16.py``).

Log statistics of a type-widened table's recorded files. Round 15 held each recorded file's log statistics to its
rows — except on a table with Delta's type widening feature on (``typeWidening`` / ``typeWidening-preview``), where
the check was skipped wholesale (the statistics being of the stored, narrower type). Spark skips files and answers
``COUNT(*)`` / ``MIN`` / ``MAX`` by the statistics of such a table all the same: measured, with the feature on (and
with a column widened ``integer → long``), an append whose ``maxValues`` said 1 over rows 1, 2 returned one row of
two for ``v = 2``, a ``numRecords`` of 5 over 2 rows made ``COUNT(*)`` 7 of 4, a maximum of 50 made ``MAX(v)`` 50 —
each attested and VERIFIED before. The statistics of such a table's files are now held to their rows at ``record``
as any other table's (``table_inconsistent``, nothing recorded); only a re-read of attested files as the wider types
(``widened_digests``, after a widening since the attestation) leaves them to the attested reading.

Float and double bounds off the rows. Round 15 held a recorded file's float bounds soundly only (no row outside
them), as for timestamps, decimals and strings, whose ``MIN`` / ``MAX`` Spark answers from the rows. Of a float or a
double column Spark answers them from the statistics (measured: ``MAX(v)`` 50.0 over rows 1.5, 2.5 for a
``maxValues`` of 50.0, ``MIN(v)`` -50.0 for a ``minValues`` of -50.0, a FLOAT column alike; the timestamp, decimal
and string columns forged so answered from the rows): VERIFIED before. Float bounds are now held exactly — the
least and greatest number (NaN left out, as writers leave it; -0.0 as 0.0) — at ``record``.

Null counts under wide bounds. A file's ``nullCount`` was held only where ``tightBounds`` is not false (wide bounds:
a deletion vector added without new statistics). Spark skips by it all the same: measured over rows 1, null, 3 with
``tightBounds: false``, a ``nullCount`` of 0 made ``WHERE v IS NULL`` return no row, one of 3 (every row) made
``WHERE v IS NOT NULL`` and ``WHERE v = 1`` return none — VERIFIED before. Under wide bounds a null count of 0 over a
stored null, or of every row over a stored value, is now refused (any other count skips nothing: held,
``test_delta_held_round16.py``).

A recorded file whose Parquet footer says Spark 2.4 wrote it (``org.apache.spark.version`` 2.4.8, or
``org.apache.spark.legacyDateTime``) holding dates before 1582: Spark reads them rebased from the Julian calendar,
delta-rs and the digest as stored (a rewrite's file was held so since round 13; measured here on the append: Spark
read 1000-01-06 for the stored 1000-01-01) — VERIFIED before; now ``table_inconsistent``, as a table Spark 2.4 wrote
with such dates is read two ways too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, log_state, verify, write_commit
from tests.adversarial.test_delta_protocol_view import protocol
from tests.adversarial.test_delta_round15 import FORGED_STATISTICS, forge_stats
from tests.delta.test_type_widening_nested import _change

# How the table has type widening: the feature alone (no column retyped), or the column widened integer → long as
# Spark's ``ALTER COLUMN v TYPE BIGINT`` writes it (the typeChanges metadata, the schema's type).
WIDENINGS = ("the feature on", "a column widened")


def widened_append(path: Path, forge: dict[str, Any], how: str) -> None:
    """A delta-rs table of rows 1, 2 (twice: two appends, ``integer``), the second append's statistics edited by
    ``forge`` (as ``test_delta_round15.forged_append``), then type widening turned on as ``how`` says (delta-rs
    writes no table with the feature: the commits come first, as Spark would find them)."""
    for _ in range(2):
        write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int32())}), mode="append")
    forge_stats(path / commit_name(1), forge)
    features = ["typeWidening"]
    if how == "the feature on":
        write_commit(path, [protocol(3, 7, features, features)])
        return
    meta = json.loads(json.dumps(log_state(path).metadata))
    schema = json.loads(meta["schemaString"])
    schema["fields"][0]["type"] = "long"
    _change(schema["fields"][0], "integer", "long")
    meta["schemaString"] = json.dumps(schema)
    meta["configuration"] = {**(meta.get("configuration") or {}), "delta.enableTypeWidening": "true"}
    write_commit(path, [protocol(3, 7, features, features), {"metaData": meta}])


@pytest.mark.parametrize("how", WIDENINGS)
@pytest.mark.parametrize("case", sorted(FORGED_STATISTICS))
def test_record_refuses_misstated_statistics_of_a_type_widened_table(tmp_path: Path, case: str, how: str) -> None:
    forge, said = FORGED_STATISTICS[case]
    path = tmp_path / "t"
    widened_append(path, forge, how)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent" and said in str(caught.value), caught.value
    assert "misstate its rows" in str(caught.value)
    rc, doc = verify(str(path))
    assert rc != 0, doc  # nothing recorded


def float_widened(path: Path, stats: float | None) -> None:
    """A float column holding 0.1 (stored 0.100000001490116…) widened to double, as Spark's ``ALTER COLUMN c TYPE
    DOUBLE`` writes it; ``stats``: its bounds as the log gives them (Spark writes ``0.1``, measured), None: as
    delta-rs wrote them."""
    write_deltalake(str(path), pa.table({"c": pa.array([0.1], pa.float32())}))
    if stats is not None:
        log = path / commit_name(0)
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        for action in actions:
            if "add" in action:
                doc = json.loads(action["add"]["stats"])
                doc["minValues"], doc["maxValues"] = {"c": stats}, {"c": stats}
                action["add"]["stats"] = json.dumps(doc)
        log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    meta = json.loads(json.dumps(log_state(path).metadata))
    schema = json.loads(meta["schemaString"])
    schema["fields"][0]["type"] = "double"
    _change(schema["fields"][0], "float", "double")
    meta["schemaString"] = json.dumps(schema)
    write_commit(path, [protocol(3, 7, ["typeWidening"], ["typeWidening"]), {"metaData": meta}])


def test_record_refuses_float_statistics_spark_reads_as_doubles(tmp_path: Path) -> None:
    """A float column widened to double whose bounds say 0.1, as Spark writes them: Spark reads them as the double
    0.1, below the stored value (MIN 0.1, no row for ``c = 0.10000000149011612D``; test_spark_delta_round16.py) —
    refused, naming the widening. It verified before."""
    path = tmp_path / "t"
    float_widened(path, 0.1)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "'c' is a float column widened to double" in str(caught.value), caught.value


# column type, the rows, the forged bound
FLOAT_BOUNDS: dict[str, tuple[pa.DataType, list[float], str, float]] = {
    "a double maximum above the greatest value": (pa.float64(), [1.5, 2.5], "maxValues", 50.0),
    "a double minimum below the least value": (pa.float64(), [1.5, 2.5], "minValues", -50.0),
    "a float maximum above the greatest value": (pa.float32(), [1.5, 2.5], "maxValues", 50.0),
}


def float_forged(path: Path, case: str) -> None:
    t, rows, side, value = FLOAT_BOUNDS[case]
    write_deltalake(str(path), pa.table({"v": pa.array(rows, t)}))
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            stats[side]["v"] = value
            action["add"]["stats"] = json.dumps(stats)
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.mark.parametrize("case", sorted(FLOAT_BOUNDS))
def test_record_refuses_float_bounds_loose_of_the_rows(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    float_forged(path, case)
    side = "maximum" if FLOAT_BOUNDS[case][2] == "maxValues" else "minimum"
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert f"v: a {side} of {FLOAT_BOUNDS[case][3]!r}" in str(caught.value), caught.value
    rc, doc = verify(str(path))
    assert rc != 0, doc  # nothing recorded


# the null count forged under tightBounds false over rows 1, null, 3
WIDE_NULL_COUNTS = {"no null over a null": 0, "every row null over values": 3}


def wide_null_count(path: Path, count: int) -> None:
    write_deltalake(str(path), pa.table({"v": pa.array([1, None, 3], pa.int64())}))
    forge_stats(path / commit_name(0), {"tightBounds": False, "nullCount": {"v": count}})


@pytest.mark.parametrize("case", sorted(WIDE_NULL_COUNTS))
def test_record_refuses_a_null_count_spark_skips_by_under_wide_bounds(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    wide_null_count(path, WIDE_NULL_COUNTS[case])
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert f"v: 1 nulls stored, {WIDE_NULL_COUNTS[case]} in its statistics, which Spark skips the file by with " \
        "tightBounds false" in str(caught.value), caught.value
    rc, doc = verify(str(path))
    assert rc != 0, doc  # nothing recorded


LEGACY_FOOTER = {"org.apache.spark.version": "2.4.8", "org.apache.spark.legacyDateTime": ""}


def legacy_dated(path: Path, footer: dict[str, str] | None) -> None:
    """A delta-rs append of dates 1000-01-01 and 1500-06-01, its file's footer then given ``footer`` (the same rows,
    its size restated), before any attestation."""
    import datetime

    import pyarrow.parquet as pq

    write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64()),
                                         "d": pa.array([datetime.date(1000, 1, 1), datetime.date(1500, 6, 1)])}))
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            data = path / action["add"]["path"]
            stored = pq.read_table(data)
            pq.write_table(stored if footer is None else stored.replace_schema_metadata(footer), data)
            action["add"]["size"] = data.stat().st_size
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_record_refuses_its_own_file_spark_reads_in_the_legacy_calendar(tmp_path: Path) -> None:
    path = tmp_path / "t"
    legacy_dated(path, LEGACY_FOOTER)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent" and "Julian calendar" in str(caught.value), caught.value
    rc, doc = verify(str(path))
    assert rc != 0, doc  # nothing recorded
