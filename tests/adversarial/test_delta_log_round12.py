"""What Spark (delta-spark 4.4) reads from a Delta log that delta-rs 1.6 or the log replay may not (redteam12d).

- A classic checkpoint (``<v>.checkpoint.parquet``) keeping some of its file actions in sidecar files
  (``_delta_log/_sidecars/``) in a table whose protocol does not enable v2 checkpoints: delta-rs and the replay read
  the sidecars (the attested rows: VERIFIED before), Spark refuses the table ("sidecar files present in checkpoint even
  when checkpoint metadata is missing"; with a ``checkpointMetadata`` row, "requirement failed"). Now
  ``table_inconsistent``, as is a v2 (uuid-named) checkpoint in such a table (delta-rs reads it, Spark refuses it).
- a compacted file Spark reads, placed before ``<v>.checkpoint.json`` (the log's own state at the latest version):
  neither engine reads that name as a checkpoint, the replay did, and so took the compacted file for one no reader
  takes, checked only within CROSS_CHECK_LIMIT commits. Measured with 2,100 empty commits and a compacted file of them
  adding a planted copy of the data file: VERIFIED, while Spark read every row twice and delta-rs read the commits.
  Now ``table_inconsistent`` (the name is Spark's unbackfilled-commit pattern; compacted files are checked from the
  newest checkpoint every engine takes).

Tried and held (pinned here):

- the ``deletionVectors`` feature in only one of the protocol's feature lists (reader version 3 / writer 7, reader
  features only, writer features only; reader version 1 / writer 7 with it as a writer feature): Spark applies the
  vectors in every case (the deleted row not read), delta-rs refuses the protocol (``Reader features must contain
  only ReaderWriter features that are also listed in writer features``...), so ``record`` and ``verify`` say
  ``table_unreadable``; ``_vector_without_the_feature`` (both lists) never decides alone;
- a multi-part checkpoint with a forged part numbered 0 (``0 of 2`` beside ``1 of 2``): the replay counts two parts and
  reads them (the planted file), delta-rs takes the checkpoint for incomplete and replays the commits, Spark fails the
  read (part 2 missing): ``table_inconsistent``; a third part of two (``3 of 2``, holding a planted file) is read by no
  engine while the commits are there, and with the commits cleaned up delta-rs reads parts 1-2, Spark fails
  (``None.get``) and the replay refuses: never VERIFIED;
- a checkpoint planted past the latest commit (version 6 after commit 3, holding one more file): delta-rs reads it as
  version 6, Spark fails (``Could not find any delta files for version 6``), ``verify`` says ``stale`` (the commits
  since the attestation are gone);
- sidecar rows in a multi-part checkpoint (``1 of 1``), with or without v2 checkpoints: delta-rs and Spark skip them
  (one live file of three; Spark read that file's row), the replay reads them: ``table_inconsistent``;
- ``_last_checkpoint``'s copy of a v2 checkpoint's metaData (``v2Checkpoint.nonFileActions``) renaming a column, its
  checksum dropped: Spark reads the checkpoint's (the same columns and rows), VERIFIED.
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

from attest.errors import CarrierError
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.delta.log import commit_name, z85_encode
from tests.adversarial.conftest import PROGRAM, codes, log_state, verify, write_commit
from tests.delta.dv import dv_file

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _spark_rows(spark: SparkSession, path: Path) -> list[int] | str:
    """The ``v`` column Spark reads, or the first line of its error."""
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[attr-defined]
    try:
        return sorted(r["v"] for r in spark.read.format("delta").load(str(path)).select("v").collect())
    except Exception as exc:  # the read Spark refuses, named by its message
        return str(exc)


def _appends(path: Path, n: int = 3) -> None:
    for i in range(n):
        write_deltalake(str(path), pa.table({"v": pa.array([i], pa.int64())}), mode="append")


# ---- sidecars in a table without v2 checkpoints ---------------------------------------------------------------------
def _sidecar_checkpoint(path: Path, *, v2: bool) -> None:
    """Three appends (``v2``: then the v2Checkpoint feature), attested; a classic checkpoint of the attestation version
    by delta-rs, rewritten to keep all adds but the first in one sidecar file."""
    _appends(path)
    if v2:
        write_commit(path, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                          "readerFeatures": ["v2Checkpoint"], "writerFeatures": ["v2Checkpoint"]}}])
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    dt = DeltaTable(str(path))
    version = dt.version()
    dt.create_checkpoint()
    log = path / "_delta_log"
    checkpoint = log / f"{version:020d}.checkpoint.parquet"
    table = pq.read_table(checkpoint)
    adds = [i for i, a in enumerate(table.column("add").to_pylist()) if a]
    moved = adds[1:]
    (log / "_sidecars").mkdir()
    name = f"{uuid.uuid4()}.parquet"
    pq.write_table(table.take(moved).select(["add"]), log / "_sidecars" / name)
    kept = table.take([i for i in range(table.num_rows) if i not in moved])
    kept = pa.concat_tables([kept, pa.Table.from_pylist([{}], schema=kept.schema)])
    at = kept.schema.get_field_index("sidecar")
    sidecar = {"path": name, "sizeInBytes": (log / "_sidecars" / name).stat().st_size, "modificationTime": 1,
               "tags": None}
    column = pa.array([None] * (kept.num_rows - 1) + [sidecar], kept.schema.field(at).type)
    pq.write_table(kept.set_column(at, kept.schema.field(at), column), checkpoint)
    (log / "_last_checkpoint").unlink(missing_ok=True)
    for crc in log.glob("*.crc"):
        crc.unlink()


def test_sidecars_in_a_table_without_v2_checkpoints_get_no_verdict(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _sidecar_checkpoint(path, v2=False)
    # delta-rs reads the sidecar: every attested row
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [0, 1, 2]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "does not enable v2 checkpoints" in doc["errors"][0]["message"], doc


def test_sidecars_in_a_table_with_v2_checkpoints_verify(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _sidecar_checkpoint(path, v2=True)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


@pytest.mark.parametrize("v2", [True, False])
def test_sidecars_in_a_multi_part_checkpoint_get_no_verdict(tmp_path: Path, v2: bool) -> None:
    """delta-rs and Spark skip the sidecars of a multi-part checkpoint (measured: delta-rs one live file of three,
    Spark the rows of that file), the replay reads them: the live files disagree."""
    path = tmp_path / "t"
    _sidecar_checkpoint(path, v2=v2)
    log = path / "_delta_log"
    single = next(log.glob("*.checkpoint.parquet"))
    single.rename(log / single.name.replace(".checkpoint.parquet", ".checkpoint.0000000001.0000000001.parquet"))
    assert len(DeltaTable(str(path)).file_uris()) == 1
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and set(codes(doc)) == {"table_inconsistent"}, doc


@pytest.mark.spark
def test_spark_refuses_sidecars_without_v2_checkpoints(spark: SparkSession, tmp_path: Path) -> None:
    without, with_ = tmp_path / "without", tmp_path / "with"
    _sidecar_checkpoint(without, v2=False)
    _sidecar_checkpoint(with_, v2=True)
    assert "sidecar files present in checkpoint even when checkpoint metadata is missing" in str(
        _spark_rows(spark, without))
    assert _spark_rows(spark, with_) == [0, 1, 2]


# ---- the deletionVectors feature in one list ------------------------------------------------------------------------
ONE_LIST = {"reader features only": (3, ["deletionVectors"], []),
            "writer features only": (3, [], ["deletionVectors"]),
            "reader version 1": (1, None, ["deletionVectors"])}


def _vector_with(path: Path, reader_version: int, readers: list[str] | None, writers: list[str]) -> None:
    """Two delta-rs appends, a protocol listing deletionVectors as given, then an append of the first file's rows plus
    777 with a vector deleting 777."""
    for i in range(2):
        write_deltalake(str(path), pa.table({"v": pa.array([10 * i, 10 * i + 1], pa.int64())}), mode="append")
    rel = sorted(log_state(path).adds)[0]
    values = pq.read_table(path / rel).column("v").to_pylist()
    protocol: dict[str, Any] = {"minReaderVersion": reader_version, "minWriterVersion": 7, "writerFeatures": writers}
    if readers is not None:
        protocol["readerFeatures"] = readers
    write_commit(path, [{"protocol": protocol}])
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"v": pa.array([*values, 777], pa.int64())}), path / new)
    u = uuid.uuid4()
    (path / "ab").mkdir()
    data, offset, size = dv_file([len(values)])
    (path / f"ab/deletion_vector_{u}.bin").write_bytes(data)
    stats = {"numRecords": len(values) + 1, "minValues": {"v": min(values)}, "maxValues": {"v": 777},
             "nullCount": {"v": 0}, "tightBounds": False}
    write_commit(path, [{"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size,
                                 "modificationTime": 2, "dataChange": True, "stats": json.dumps(stats),
                                 "deletionVector": {"storageType": "u", "pathOrInlineDv": "ab" + z85_encode(u.bytes),
                                                    "offset": offset, "sizeInBytes": size, "cardinality": 1}}}],
                 version=3)


@pytest.mark.parametrize("case", sorted(ONE_LIST))
def test_a_vector_with_the_feature_in_one_list_is_never_verified(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    _vector_with(path, *ONE_LIST[case])
    with pytest.raises(Exception, match="Invalid protocol action"):
        DeltaTable(str(path))
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).record(model="m", program_hash=PROGRAM)
    assert err.value.code.value == "table_unreadable"
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc


@pytest.mark.spark
def test_spark_applies_a_vector_with_the_feature_in_either_list(spark: SparkSession, tmp_path: Path) -> None:
    for case, args in ONE_LIST.items():
        path = tmp_path / case.replace(" ", "-")
        _vector_with(path, *args)
        got = _spark_rows(spark, path)
        assert isinstance(got, list) and 777 not in got and len(got) == 6, (case, got)


# ---- multi-part checkpoints with a part too many ----------------------------------------------------------------
def _checkpointed_after_attestation(path: Path) -> int:
    """Three appends, attested, a fourth (666), checkpointed by delta-rs: the version of that checkpoint."""
    _appends(path)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    write_deltalake(str(path), pa.table({"v": pa.array([666], pa.int64())}), mode="append")
    dt = DeltaTable(str(path))
    version = dt.version()
    dt.create_checkpoint()
    return version


def _taken_checkpoint(log: Path, version: int) -> pa.Table:
    """The rows of the classic checkpoint of ``version``, which is deleted, and its ``_last_checkpoint`` hint with
    it (for rows to be written back otherwise)."""
    single = log / f"{version:020d}.checkpoint.parquet"
    table = pq.read_table(single)
    single.unlink()
    (log / "_last_checkpoint").unlink(missing_ok=True)
    return table


def _drop_hints(log: Path) -> None:
    """No ``_last_checkpoint`` and no checksum files: engines find the log's files by listing alone."""
    (log / "_last_checkpoint").unlink(missing_ok=True)
    for crc in log.glob("*.crc"):
        crc.unlink()


def _multi_part(path: Path, parts: str, *, cleanup: bool) -> None:
    """Three appends, attested, a fourth; the delta-rs checkpoint of it rewritten as parts: ``honest`` (1 and 2 of 2),
    ``zero`` (0 of 2: one planted file, 1 of 2: the whole checkpoint), ``third`` (honest, and 3 of 2: the planted
    file); ``cleanup``: the commits up to the checkpoint deleted."""
    version = _checkpointed_after_attestation(path)
    log = path / "_delta_log"
    table = _taken_checkpoint(log, version)
    _drop_hints(log)
    listed = table.to_pylist()
    last = [row for row in listed if row["add"]][-1]
    shutil.copy(path / last["add"]["path"], path / "planted.parquet")
    planted = pa.Table.from_pylist([{**last, "add": {**last["add"], "path": "planted.parquet"}}], schema=table.schema)
    half = table.num_rows // 2
    written = {"honest": [(1, table.slice(0, half)), (2, table.slice(half))],
               "zero": [(0, planted), (1, table)],
               "third": [(1, table.slice(0, half)), (2, table.slice(half)), (3, planted)]}[parts]
    for part, rows_ in written:
        pq.write_table(rows_, log / f"{version:020d}.checkpoint.{part:010d}.0000000002.parquet")
    if cleanup:
        for v in range(version + 1):
            (path / commit_name(v)).unlink()


@pytest.mark.parametrize(("parts", "cleanup", "outcome"),
                         [("zero", False, (1, "table_inconsistent")), ("zero", True, (2, "table_not_found")),
                          # the latest commit file gone beside its checkpoint: Spark reads nothing
                          # (test_delta_commit_behind_checkpoint.py)
                          ("third", True, (2, "table_inconsistent"))])
def test_a_multi_part_checkpoint_with_a_part_too_many_is_never_verified(tmp_path: Path, parts: str, cleanup: bool,
                                                                        outcome: tuple[int, str]) -> None:
    path = tmp_path / "t"
    _multi_part(path, parts, cleanup=cleanup)
    rc, doc = verify(str(path), "--level", "bytes")
    assert (rc, codes(doc)[0]) == outcome, doc


@pytest.mark.spark
def test_spark_reads_a_multi_part_checkpoint_by_its_part_numbers(spark: SparkSession, tmp_path: Path) -> None:
    got = {}
    for parts, cleanup in (("honest", False), ("zero", False), ("third", False), ("third", True)):
        path = tmp_path / f"{parts}-{cleanup}"
        _multi_part(path, parts, cleanup=cleanup)
        got[(parts, cleanup)] = _spark_rows(spark, path)
    assert got[("honest", False)] == got[("third", False)] == [0, 1, 2, 666]  # the planted part unread
    assert "Failed in getting the file information" in str(got[("zero", False)])  # parts 1..2 asked, 2 missing
    assert "None.get" in str(got[("third", True)])


# ---- a checkpoint past the latest commit ---------------------------------------------------------------------------
def test_a_checkpoint_planted_past_the_latest_commit_gets_no_verdict(tmp_path: Path) -> None:
    path = tmp_path / "t"
    version = _checkpointed_after_attestation(path)
    log = path / "_delta_log"
    (log / f"{version:020d}.checkpoint.parquet").rename(log / f"{version + 2:020d}.checkpoint.parquet")
    (path / commit_name(version)).unlink()
    _drop_hints(log)
    dt = DeltaTable(str(path))
    assert dt.version() == version + 2 and 666 in dt.to_pyarrow_table().column("v").to_pylist()
    rc, doc = verify(str(path), "--level", "bytes")
    # stale before; now the latest version has a checkpoint and no commit file, which Spark reads nothing of
    # (test_delta_commit_behind_checkpoint.py)
    assert rc == 2 and codes(doc) == ["table_inconsistent"], doc


# ---- the hint's nonFileActions -------------------------------------------------------------------------------------
@pytest.mark.spark
def test_spark_takes_no_schema_from_the_hints_non_file_actions(spark: SparkSession, tmp_path: Path) -> None:
    """``_last_checkpoint`` repeats a v2 checkpoint's protocol and metaData (``v2Checkpoint.nonFileActions``): Spark
    reads them from the checkpoint, not the hint (a column renamed there, the checksum dropped: the same columns and
    rows), so the hint's copy is not held to the checkpoint."""
    import io
    from contextlib import redirect_stdout

    from attest.cli import main

    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (v INT, s STRING) USING delta "
              "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '100')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    with redirect_stdout(io.StringIO()):
        assert main(["record", str(path), "--model", "m", "--program-hash", PROGRAM]) == 0
    jvm = spark._jvm  # type: ignore[attr-defined]
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(path)).checkpoint()  # type: ignore[attr-defined]
    forged = shutil.copytree(path, tmp_path / "forged")  # a copy: Spark keeps the snapshot of a path it read
    for crc in forged.rglob(".*.crc"):
        crc.unlink()
    hint_file = forged / "_delta_log" / "_last_checkpoint"
    hint = json.loads(hint_file.read_text())
    assert hint["version"] == 2 and hint["v2Checkpoint"]["nonFileActions"]
    for action in hint["v2Checkpoint"]["nonFileActions"]:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            schema["fields"][1]["name"] = "renamed"
            action["metaData"]["schemaString"] = json.dumps(schema)
    hint.pop("checksum")
    hint_file.write_text(json.dumps(hint))
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    df = spark.read.format("delta").load(str(forged))
    assert df.columns == ["v", "s"] and sorted(map(tuple, df.collect())) == [(1, "a"), (2, "b")]
    rc, doc = verify(str(forged), "--level", "bytes")
    assert rc == 0, doc


# ---- a checkpoint only the replay took, before a compacted file -----------------------------------------------------
def _json_checkpoint_and_compacted(path: Path, empty: int, *, checkpoint: bool = True, compacted: bool = True) -> None:
    """An append, ``empty`` commits of commitInfo alone, the attestation; then a JSON classic checkpoint of the latest
    version (``<v>.checkpoint.json``: the log's own state) and a compacted file of the empty commits adding a planted
    copy of the data file."""
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int64())}))
    for v in range(1, empty + 1):
        (path / commit_name(v)).write_text(json.dumps({"commitInfo": {"operation": "WRITE", "timestamp": 1}}) + "\n")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    version, state = empty + 1, log_state(path)
    log = path / "_delta_log"
    for crc in log.glob("*.crc"):
        crc.unlink()
    if checkpoint:
        actions = [{"protocol": state.protocol}, {"metaData": state.metadata},
                   *({"add": a} for a in state.adds.values())]
        (log / f"{version:020d}.checkpoint.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    if compacted:
        add = dict(next(iter(state.adds.values())))
        shutil.copy(path / add["path"], path / "planted.parquet")
        planted = {"add": {**add, "path": "planted.parquet"}}
        (log / f"{1:020d}.{empty:020d}.compacted.json").write_text(json.dumps(planted) + "\n")


def test_a_compacted_file_before_a_json_checkpoint_gets_no_verdict(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay took ``<v>.checkpoint.json`` (which neither engine reads) for the checkpoint engines load, so the
    compacted file before it was one no reader takes, checked only within CROSS_CHECK_LIMIT commits: measured with
    2,100 empty commits, VERIFIED while Spark read the planted copy (the rows twice). The limit is lowered here so the
    log stays small."""
    import carriers.delta.log as delta_log

    monkeypatch.setattr(delta_log, "CROSS_CHECK_LIMIT", 3)
    path = tmp_path / "t"
    _json_checkpoint_and_compacted(path, 5)
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and set(codes(doc)) == {"table_inconsistent"}, doc
    messages = " ".join(e["message"] for e in doc["errors"])
    assert "checkpoint.json is named as Spark names" in messages and "is not the reconciliation" in messages, doc


def test_a_multi_part_checkpoint_spark_does_not_take_leaves_compacted_files_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts 0 and 1 of 2: complete by the replay's count, not for delta-rs; compacted files after the older base are
    checked as ones an engine reads, whatever the limit."""
    import carriers.delta.log as delta_log

    monkeypatch.setattr(delta_log, "CROSS_CHECK_LIMIT", 0)
    path = tmp_path / "t"
    _json_checkpoint_and_compacted(path, 5, checkpoint=False)
    log = path / "_delta_log"
    dt = DeltaTable(str(path))
    dt.create_checkpoint()
    table = _taken_checkpoint(log, dt.version())
    pq.write_table(table.slice(0, 1), log / f"{dt.version():020d}.checkpoint.0000000000.0000000002.parquet")
    pq.write_table(table.slice(1), log / f"{dt.version():020d}.checkpoint.0000000001.0000000002.parquet")
    names = sorted(p.name for p in log.iterdir())
    problems = delta_log._compacted_problems(_storage(path), names, dt.version(), dt.version())
    assert any("is not the reconciliation" in p for p in problems), problems


def _storage(path: Path) -> Any:
    from carriers.storage.delta import DeltaStorage

    return DeltaStorage(str(path))


@pytest.mark.spark
def test_spark_reads_a_compacted_file_before_a_json_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _json_checkpoint_and_compacted(path, 5)
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2]
    assert _spark_rows(spark, path) == [1, 1, 2, 2]  # the planted copy, from the compacted file


@pytest.mark.parametrize("kind", ["json", "parquet"])
def test_a_v2_checkpoint_in_a_table_without_v2_checkpoints_gets_no_verdict(tmp_path: Path, kind: str) -> None:
    """A uuid-named checkpoint (the log's own state) in a table without the v2Checkpoint feature: delta-rs reads it,
    Spark refuses the table ("requirement failed"; without a checkpointMetadata action, "has no CheckpointMetadata
    action") — measured, delta-spark 4.4."""
    path = tmp_path / "t"
    _json_checkpoint_and_compacted(path, 2, compacted=False)
    log = path / "_delta_log"
    single = next(log.glob("*.checkpoint.json"))
    target = log / single.name.replace(".checkpoint.json", f".checkpoint.{uuid.uuid4()}.{kind}")
    if kind == "json":
        single.rename(target)
        target.write_text(target.read_text() + json.dumps({"checkpointMetadata": {"version": int(target.name[:20])}})
                          + "\n")
    else:
        single.unlink()
        dt = DeltaTable(str(path))
        dt.create_checkpoint()
        (log / f"{dt.version():020d}.checkpoint.parquet").rename(target)
    (log / "_last_checkpoint").unlink(missing_ok=True)
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "is a v2 checkpoint" in doc["errors"][0]["message"], doc
