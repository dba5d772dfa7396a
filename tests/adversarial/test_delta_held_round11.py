"""Delta attacks of the eleventh round measured as held, pinned so a change in delta-rs or in attest shows (pin11d).

Each test asserts what delta-rs reads (where it reads at all) and the verdict, so it fails if either changes:

- a deletion vector stored inline (``storageType: 'i'``): delta-rs and Spark read it alike (measured by redteam11d);
  a misstated ``sizeInBytes`` leaves delta-rs's rows as they were (measured here: it decodes the inline bits whatever
  the size says), and Spark (delta-spark 4.4) fails the read of a size short of the bitmap (a buffer underflow)
  and reads the same rows past it — so a rewrite carrying it verifies with the same rows, never with other ones;
  rewritten in place in the attested commit it is the reader view changed (the descriptor is in the view);
- ``partitionValues`` keyed in another case than the partition column (``P`` for ``p``), alone or beside ``p``:
  delta-rs refuses the table (``Partition column P not found in schema``): ``table_unreadable``;
- a checkpoint at version N+1 with no commit N+1 (the commit deleted, or never written): delta-rs reads the
  checkpoint as version N+1; Spark reads no version of such a table (round 13): ``table_inconsistent``, every version;
- row tracking switched off (``delta.enableRowTracking=false``) while ``rowTracking`` stays among the writer features:
  delta-rs reads the rows, Spark gives no ``_metadata.row_id``, an honest table verifies with its content digest bound,
  and so does a compaction giving its file another ``baseRowId`` (no reader is given ids).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name, z85_encode
from tests.adversarial.conftest import PROGRAM, codes, delta_stats, latest, rows, verify
from tests.adversarial.test_content_rewrite_delta import _adds, _attested
from tests.adversarial.test_delta_dv_cardinality import _delta_rs
from tests.delta.dv import bitmap
from tests.delta.row_tracking import give_row_tracking

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


# ---- 1. inline deletion vectors ----------------------------------------------------------------------------------
def _inline(positions: list[int], size_delta: int = 0) -> dict[str, Any]:
    """An inline vector deleting ``positions``: z85 of its bitmap, zero-padded to whole 4-byte groups as Delta's
    ``Base85Codec`` pads it, ``sizeInBytes`` the bitmap's length plus ``size_delta``."""
    data = bitmap(positions)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(data + b"\0" * (-len(data) % 4)),
            "sizeInBytes": len(data) + size_delta, "cardinality": len(positions)}


def _inline_rewrite(path: Path, size_delta: int) -> None:
    """A ``dataChange: false`` commit removing the file with the (stored) vector and adding its bytes under a new name
    with the same rows deleted by an inline vector."""
    adds = _adds(path)
    rel = next(r for r, a in adds.items() if a.get("deletionVector"))
    add = adds[rel]
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    shutil.copy(path / rel, path / new)
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}},
        {"remove": {"path": rel, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                    "partitionValues": {}, "size": add["size"], "deletionVector": add["deletionVector"]}},
        {"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size, "modificationTime": 2,
                 "dataChange": False, "stats": add.get("stats"), "deletionVector": _inline([1], size_delta)}}]
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.fixture
def vectored(tmp_path: Path) -> Path:
    """Three files of four rows, row 1 of one file deleted by a stored vector, attested with digests."""
    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    return path


@pytest.mark.parametrize("size_delta", [0, 1], ids=["honest", "one over"])
def test_an_inline_vector_in_a_rewrite_reads_the_same_rows_and_verifies(vectored: Path, size_delta: int) -> None:
    before = _delta_rs(vectored)
    _inline_rewrite(vectored, size_delta)
    assert _delta_rs(vectored) == before  # delta-rs decodes the inline bits whatever sizeInBytes says
    rc, doc = verify(str(vectored), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
    assert "same rows" in doc["verdict"], doc


@pytest.mark.parametrize("size_delta", [-1, -10, 4], ids=["one short", "truncated", "past the bits"])
def test_an_inline_vector_stated_past_its_bitmap_is_refused(vectored: Path, size_delta: int) -> None:
    """Held in round 11 (delta-rs decodes the inline bits whatever ``sizeInBytes`` says), refused since round 19:
    Spark reads only the stated bytes and failed the read (``test_deletes_round19.py``), so the engines disagree."""
    before = _delta_rs(vectored)
    _inline_rewrite(vectored, size_delta)
    assert _delta_rs(vectored) == before
    rc, doc = verify(str(vectored), "--level", "bytes")
    assert rc == 1 and not doc["passed"] and "table_inconsistent" in doc["verdict"], doc


def _inline_table(path: Path) -> list[int]:
    """Two delta-rs appends (deletion vectors enabled), then a DELETE of row 1 of the first file by an inline vector,
    attested; returns the rows delta-rs reads."""
    for i in range(2):
        write_deltalake(str(path), pa.table({"v": pa.array([10 * i + k for k in range(4)], pa.int64())}),
                        mode="append", configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    add = _adds(path)[sorted(_adds(path))[0]]
    actions = [{"commitInfo": {"operation": "DELETE", "operationParameters": {"predicate": "by hand"}}},
               {"remove": {"path": add["path"], "dataChange": True, "deletionTimestamp": 1, "size": add["size"],
                           "partitionValues": {}}},
               {"add": {**add, "modificationTime": 1, "dataChange": True, "deletionVector": _inline([1])}}]
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    return _delta_rs(path)


def test_an_honest_inline_vector_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    read = _inline_table(path)
    assert len(read) == 7 and set(read) in ({0, 2, 3, 10, 11, 12, 13}, {0, 1, 2, 3, 10, 12, 13}), read  # row 1 gone
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc
    assert doc["content_digest_bound"] is True, doc


def test_an_inline_vector_size_restated_in_the_attested_commit_is_not_verified(tmp_path: Path) -> None:
    path = tmp_path / "t"
    before = _inline_table(path)
    commit = path / commit_name(2)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            action["add"]["deletionVector"]["sizeInBytes"] += 1
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    assert _delta_rs(path) == before
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc


# ---- 2. partition values keyed in another case -------------------------------------------------------------------
_OTHER = {"a": "b", "b": "a"}


@pytest.mark.parametrize("keys", [
    lambda v: {"P": v["p"]},
    lambda v: {"p": v["p"], "P": _OTHER[v["p"]]},
    lambda v: {"P": _OTHER[v["p"]], "p": v["p"]},
], ids=["P for p", "p then P", "P then p"])
def test_partition_values_keyed_in_another_case_are_unreadable(delta: Path, keys: Any) -> None:
    """The attested commit rewritten in place, each add's partition value keyed ``P`` (column ``p``), alone or beside
    ``p`` with another value: delta-rs refuses the table, so no view is taken of it."""
    commit = delta / commit_name(0)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            action["add"]["partitionValues"] = keys(action["add"]["partitionValues"])
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    with pytest.raises(Exception, match="Partition column P not found in schema"):
        DeltaTable(str(delta))
    rc, doc = verify(str(delta))
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc


# ---- 3. a checkpoint at N+1 without its commit -------------------------------------------------------------------
@pytest.mark.parametrize("change", ["append", "overwrite"])
def test_a_checkpoint_past_the_last_commit_gets_no_verdict(delta: Path, tmp_path: Path, change: str) -> None:
    """A copy of the attested table changed by delta-rs and checkpointed at N+1; its checkpoint, ``_last_checkpoint``
    and new data files put into the table, commit N+1 left out: delta-rs reads version N+1 from the checkpoint."""
    n = latest(delta)
    other = shutil.copytree(delta, tmp_path / "other")
    if change == "append":
        write_deltalake(str(other), rows(), mode="append", partition_by=["p"])
    else:
        write_deltalake(str(other), pa.table({"p": ["a"], "v": [9], "w": ["q"]}), mode="overwrite",
                        partition_by=["p"])
    DeltaTable(str(other)).create_checkpoint()
    assert not (delta / commit_name(n + 1)).exists()
    for f in (other / "_delta_log").iterdir():
        if f.name.startswith(f"{n + 1:020d}.checkpoint") or f.name == "_last_checkpoint":
            shutil.copy(f, delta / "_delta_log" / f.name)
    for f in other.rglob("*.parquet"):
        if "_delta_log" not in f.parts and not (delta / f.relative_to(other)).exists():
            shutil.copy(f, delta / f.relative_to(other))
    table = DeltaTable(str(delta))
    expected = [1, 1, 2, 2, 3, 3] if change == "append" else [9]
    assert table.version() == n + 1 and sorted(table.to_pyarrow_table().column("v").to_pylist()) == expected
    # stale before round 13; now the latest version has a checkpoint and no commit file, so Spark reads no version of
    # the table at all, the attested one included (tests/adversarial/test_delta_commit_behind_checkpoint.py)
    rc, doc = verify(str(delta))
    assert rc == 2 and codes(doc) == ["table_inconsistent"], doc
    rc, doc = verify(str(delta), "--version", str(n))
    assert rc == 2 and codes(doc) == ["table_inconsistent"], doc


# ---- 4. row tracking off, the feature kept -----------------------------------------------------------------------
def _row_tracking_off(path: Path) -> None:
    """Two delta-rs appends, their commits rewritten as a writer supporting row tracking writes them with the property
    false (delta-rs cannot write the property: it refuses to parse it)."""
    for _ in range(2):
        write_deltalake(str(path), rows(), mode="append")
    give_row_tracking(path, {0: (0, 2), 1: (3, 5)}, enabled=False)


def test_an_honest_table_with_row_tracking_off_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _row_tracking_off(path)
    table = DeltaTable(str(path))
    assert "rowTracking" in (table.protocol().writer_features or [])
    assert table.metadata().configuration["delta.enableRowTracking"] == "false"
    assert sorted(table.to_pyarrow_table().column("v").to_pylist()) == [1, 1, 2, 2, 3, 3]
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc
    assert doc["content_digest_bound"] is True, doc


def test_an_honest_compaction_of_a_table_with_row_tracking_off_verifies(tmp_path: Path) -> None:
    """With the property false no reader is given row ids, so a compaction's new ``baseRowId`` changes nothing read."""
    path = tmp_path / "t"
    _row_tracking_off(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    before = sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=str)
    adds = _adds(path)
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pa_rows = pa.concat_tables([pq.read_table(path / rel) for rel in sorted(adds)])
    pq.write_table(pa_rows, path / new)
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    actions += [{"remove": {"path": rel, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                            "partitionValues": {}, "size": add["size"]}} for rel, add in sorted(adds.items())]
    actions.append({"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size,
                            "modificationTime": 2, "dataChange": False, "baseRowId": 100,
                            "defaultRowCommitVersion": latest(path) + 1, "stats": delta_stats(pa_rows)}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=str) == before
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


@pytest.mark.spark
def test_spark_reads_inline_vectors_alike_and_gives_no_row_ids_with_tracking_off(spark: SparkSession,
                                                                               tmp_path: Path) -> None:
    """Spark (delta-spark 4.4): the honest inline vector deletes the row delta-rs leaves out; a misstated size fails
    the read or reads the same rows (never others); with row tracking off ``_metadata.row_id`` is not given."""
    path = tmp_path / "inline"
    read = _inline_table(path)
    assert sorted(r["v"] for r in spark.read.format("delta").load(str(path)).collect()) == read
    for size_delta in (-10, -1, 1, 4):
        table = tmp_path / f"inline{size_delta}"
        shutil.copytree(path, table)
        commit = table / commit_name(2)
        lines = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in lines:
            if "add" in action:
                action["add"]["deletionVector"]["sizeInBytes"] += size_delta
        commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
        frame = spark.read.format("delta").load(str(table))
        if size_delta < 0:  # fewer bytes than the bitmap: Spark fails the read (measured)
            with pytest.raises(Exception, match=r"(?s)FAILED_READ_FILE.*BufferUnderflowException"):
                frame.collect()
        else:  # more: Spark decodes the bitmap and ignores the rest (measured), the same rows
            assert sorted(r["v"] for r in frame.collect()) == read, size_delta
    tracked = tmp_path / "tracked"
    _row_tracking_off(tracked)
    frame = spark.read.format("delta").load(str(tracked))
    assert sorted(r["v"] for r in frame.collect()) == [1, 1, 2, 2, 3, 3]
    with pytest.raises(Exception, match="row_id"):
        frame.select("_metadata.row_id").collect()
