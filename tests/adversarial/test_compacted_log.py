"""Compacted log files (``_delta_log/<a>.<b>.compacted.json``): Spark reads one in place of commits a..b, delta-rs does
not read them at all. Each attack below rewrites or plants one on an attested table; whatever in it Spark would read
differently from the commits it stands for (schema, a file's modification time, files added, dropped or removed, the
protocol, txn and domain metadata) gets no verdict, whatever its span. The ``spark`` tests measure what Spark reads
(delta-spark 4.4, compacted files written by Delta Kernel's own LogCompactionHook)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from carriers.delta.log import commit_name
from tests.adversarial.conftest import a_data_file, assert_refused, codes, latest, verify, write_commit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Actions = list[dict[str, Any]]


def compacted_name(a: int, b: int) -> str:
    return f"_delta_log/{a:020d}.{b:020d}.compacted.json"


def reconciled(path: Path, a: int, b: int) -> Actions:
    """What a compaction of commits a..b holds, as Delta Kernel writes it (measured: the adds, then metaData and
    protocol, no commitInfo): the last action of each kind and file."""
    files: dict[str, dict[str, Any]] = {}
    last: dict[str, dict[str, Any]] = {}
    for v in range(a, b + 1):
        for line in (path / commit_name(v)).read_text().splitlines():
            action = json.loads(line)
            for kind in ("add", "remove"):
                if kind in action:
                    files[action[kind]["path"]] = {kind: action[kind]}
            for kind in ("metaData", "protocol", "txn", "domainMetadata"):
                if kind in action:
                    last[kind] = {kind: action[kind]}
    return [*files.values(), *last.values()]


def write_compacted(path: Path, a: int, b: int, actions: Actions | str) -> Path:
    target = path / compacted_name(a, b)
    target.write_text(actions if isinstance(actions, str) else "\n".join(json.dumps(x) for x in actions) + "\n")
    return target


# ---- the edits (each applied to the reconciliation of the attested table's commits) --------------------------------
def renamed_column(actions: Actions, path: Path) -> Actions:
    """Spark reads the renamed column as all nulls (measured)."""
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            schema["fields"][-1]["name"] += "_renamed"
            action["metaData"]["schemaString"] = json.dumps(schema)
    return actions


def modified_in_1970(actions: Actions, path: Path) -> Actions:
    """Spark's _metadata.file_modification_time reads 1970 (measured)."""
    for action in actions:
        if "add" in action:
            action["add"]["modificationTime"] = 1000
    return actions


def extra_file(actions: Actions, path: Path) -> Actions:
    """A copy of a live file added once more: Spark reads its rows twice (measured)."""
    add = json.loads(json.dumps(next(x for x in actions if "add" in x)))
    src = path / add["add"]["path"]
    shutil.copy(src, src.with_name("extra.parquet"))
    add["add"]["path"] = str(Path(add["add"]["path"]).with_name("extra.parquet"))
    return [*actions, add]


def dropped_file(actions: Actions, path: Path) -> Actions:
    """One add left out: Spark reads none of its rows (measured)."""
    first = next(i for i, x in enumerate(actions) if "add" in x)
    return actions[:first] + actions[first + 1:]


def other_protocol(actions: Actions, path: Path) -> Actions:
    """A reader feature Spark does not know: Spark refuses to read the table at all (measured)."""
    for action in actions:
        if "protocol" in action:
            action["protocol"] = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["forgedFeature"],
                                  "writerFeatures": ["forgedFeature"]}
    return actions


def other_statistics(actions: Actions, path: Path) -> Actions:
    """A forged maximum: engines skip the file in a filtered query."""
    for action in actions:
        if "add" in action and action["add"].get("stats"):
            stats = json.loads(action["add"]["stats"])
            stats["maxValues"] = {k: (-1 if isinstance(v, int) else v) for k, v in stats["maxValues"].items()}
            action["add"]["stats"] = json.dumps(stats)
    return actions


def with_txn(actions: Actions, path: Path) -> Actions:
    """An application's transaction version no commit wrote: an idempotent writer skips its next batch."""
    return [*actions, {"txn": {"appId": "ingest", "version": 99}}]


def with_domain(actions: Actions, path: Path) -> Actions:
    return [*actions, {"domainMetadata": {"domain": "delta.clustering", "removed": False,
                                          "configuration": json.dumps({"clusteringColumns": [["v"]]})}}]


def with_commit_info(actions: Actions, path: Path) -> Actions:
    return [{"commitInfo": {"operation": "WRITE", "inCommitTimestamp": 1}}, *actions]


def with_cdc(actions: Actions, path: Path) -> Actions:
    return [*actions, {"cdc": {"path": "x.parquet", "partitionValues": {}, "size": 1, "dataChange": False}}]


def two_metadata(actions: Actions, path: Path) -> Actions:
    meta = next(x for x in actions if "metaData" in x)
    return [*actions, *renamed_column([json.loads(json.dumps(meta))], path)]


def other_path_spelling(actions: Actions, path: Path) -> Actions:
    """The same file named ``./x``: Spark resolves it to x, a key that is not the commits'."""
    for action in actions:
        if "add" in action:
            action["add"]["path"] = "./" + action["add"]["path"]
            break
    return actions


def non_object_action(actions: Actions, path: Path) -> Actions:
    return [*actions, {"remove": "p=a/x.parquet"}]


EDITS: dict[str, Callable[[Actions, Path], Actions]] = {
    "renamed column": renamed_column, "modification time": modified_in_1970, "extra file": extra_file,
    "dropped file": dropped_file, "protocol": other_protocol, "statistics": other_statistics, "txn": with_txn,
    "domain metadata": with_domain, "commitInfo": with_commit_info, "cdc": with_cdc, "two metaData": two_metadata,
    "path spelling": other_path_spelling, "non-object action": non_object_action,
}


# ---- without Spark -------------------------------------------------------------------------------------------------
def test_a_compacted_file_that_is_its_commits_verifies(delta: Path) -> None:
    write_compacted(delta, 0, latest(delta), reconciled(delta, 0, latest(delta)))
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc


def test_a_compacted_file_written_by_delta_rs_verifies_and_delta_rs_does_not_read_it(delta: Path) -> None:
    """delta-rs writes compacted files (``DeltaTable.compact_logs``, Delta Kernel's reconciliation) and reads none:
    one of its own verifies, and a forged one changes nothing it reads (Spark does read it, measured below)."""
    n = latest(delta)
    DeltaTable(str(delta)).compact_logs(0, n)
    written = delta / compacted_name(0, n)
    kinds = {next(iter(json.loads(line))) for line in written.read_text().splitlines() if line.strip()}
    assert {"add", "metaData", "protocol"} <= kinds <= {"add", "remove", "metaData", "protocol", "txn",
                                                        "domainMetadata"}, kinds
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc
    engine = DeltaTable(str(delta)).to_pyarrow_table().to_pylist()
    write_compacted(delta, 0, n, dropped_file(renamed_column(
        [json.loads(line) for line in written.read_text().splitlines() if line.strip()], delta), delta))
    assert DeltaTable(str(delta)).to_pyarrow_table().to_pylist() == engine
    assert_refused(delta, "table_inconsistent")


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_compacted_file_that_is_not_its_commits_gets_no_verdict(delta: Path, edit: str) -> None:
    """Before, only file actions were compared (not their modification time): a renamed column, a 1970 modification
    time, another protocol, txn or domain metadata were VERIFIED while Spark read them."""
    n = latest(delta)
    write_compacted(delta, 0, n, EDITS[edit](reconciled(delta, 0, n), delta))
    doc = assert_refused(delta, "table_inconsistent")
    assert "compacted log file" in json.dumps(doc), doc


def test_a_compacted_file_removing_a_file_live_before_its_range_gets_no_verdict(delta: Path) -> None:
    """Compacted 1..1 (the attestation commit) plus a remove of a file added at version 0: Spark, replaying version 0
    and then the compacted file, read none of its rows (measured). Compared by net file actions from an empty state
    before, the remove changed nothing: VERIFIED."""
    n = latest(delta)
    actions = reconciled(delta, 1, n)
    actions.append({"remove": {"path": a_data_file(delta), "dataChange": True, "deletionTimestamp": 1}})
    write_compacted(delta, 1, n, actions)
    assert_refused(delta, "table_inconsistent")


def test_a_compacted_file_past_the_latest_commit_is_read_once_its_commits_exist(delta: Path) -> None:
    """A forged compacted file ending after the latest commit: neither Spark (measured) nor delta-rs reads it, so the
    attested version still verifies; once commits reach its end Spark reads it, and the table gets no verdict."""
    n = latest(delta)
    write_compacted(delta, 0, n + 1, extra_file(reconciled(delta, 0, n), delta))
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc
    write_commit(delta, [])
    assert_refused(delta, "table_inconsistent")


def test_a_compacted_file_overlapping_a_checkpoint_is_checked_too(delta: Path) -> None:
    """Starting at or before the checkpoint, the file is not read by Spark loading from that checkpoint (measured),
    but its commits are there: it is held to them as well."""
    n = latest(delta)
    DeltaTable(str(delta)).create_checkpoint()
    write_compacted(delta, 0, n, renamed_column(reconciled(delta, 0, n), delta))
    assert_refused(delta, "table_inconsistent")


def test_a_compacted_file_whose_commits_were_cleaned_up_before_the_checkpoint_is_not_read(delta: Path) -> None:
    n = latest(delta)
    write_compacted(delta, 0, n, renamed_column(reconciled(delta, 0, n), delta))
    DeltaTable(str(delta)).create_checkpoint()
    for v in range(n):
        (delta / commit_name(v)).unlink()
    _, doc = verify(str(delta), "--level", "schema")
    assert "compacted log file" not in json.dumps(doc), doc


def test_a_compacted_file_after_the_checkpoint_is_checked(delta: Path) -> None:
    write_commit(delta, [])  # a metadata-free commit after the attestation
    DeltaTable(str(delta)).create_checkpoint()
    n = write_commit(delta, [])
    write_compacted(delta, n, n, [{"txn": {"appId": "ingest", "version": 99}}])
    assert_refused(delta, "table_inconsistent")


def test_a_compacted_file_spanning_more_than_the_cross_check_limit_is_checked(delta: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a compacted file spanning more than CROSS_CHECK_LIMIT commits (2,000) was not compared at all; the
    limit is lowered here so the table stays small."""
    monkeypatch.setattr("carriers.delta.log.CROSS_CHECK_LIMIT", 2)
    for _ in range(3):
        write_commit(delta, [])
    last = latest(delta)
    write_compacted(delta, 0, last, renamed_column(reconciled(delta, 0, last), delta))
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def test_overlapping_compacted_files_past_the_bounded_work_are_refused(delta: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Compacted files engines read are checked whatever their span, against commits the replay reads anyway; only
    files overlapping one another (no writer makes those) can make that work grow, and past twice the commits plus
    CROSS_CHECK_LIMIT the table is refused instead."""
    monkeypatch.setattr("carriers.delta.log.CROSS_CHECK_LIMIT", 1)
    for _ in range(2):
        write_commit(delta, [])
    n = latest(delta)
    for a in range(n + 1):
        write_compacted(delta, a, n, reconciled(delta, a, n))
    rc, doc = verify(str(delta), "--level", "schema")
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert "cannot be bound" in json.dumps(doc), doc


@pytest.mark.parametrize("body", [
    "{not json\n",
    "[" * 100_000 + "\n",
    "\xff\n",
    "[1, 2]\n",
    '{"add": {"path": "x", "path": "y", "size": 1}}\n',
])
def test_a_malformed_compacted_file_is_a_coded_outcome(delta: Path, body: str) -> None:
    """Spark refused to read the table with such a file (measured: malformed and 100,000-deep lines)."""
    target = delta / compacted_name(0, latest(delta))
    target.write_bytes(body.encode("latin-1") if body == "\xff\n" else body.encode())
    assert_refused(delta, "table_inconsistent")


def test_a_huge_compacted_file_is_a_coded_outcome(delta: Path) -> None:
    n = latest(delta)
    actions = reconciled(delta, 0, n)
    add = next(x for x in actions if "add" in x)
    forged = [{"add": {**add["add"], "path": f"p=a/f{i}.parquet"}} for i in range(50_000)]
    write_compacted(delta, 0, n, actions + forged)
    assert_refused(delta, "table_inconsistent")


def test_a_compacted_file_naming_a_backward_range_is_refused(delta: Path) -> None:
    write_compacted(delta, 1, 0, reconciled(delta, 0, 1))
    doc = assert_refused(delta, "table_inconsistent")
    assert "ends before it starts" in json.dumps(doc), doc


# ---- with Spark: what it reads ---------------------------------------------------------------------------------------
def kernel_compaction(spark: SparkSession, path: Path, a: int, b: int) -> Path:
    """A compacted file written by Delta Kernel 4.4's own LogCompactionHook (delta-spark 4.4 only reads them)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    hadoop = spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    engine = jvm.io.delta.kernel.defaults.engine.DefaultEngine.create(hadoop)
    fs_path = jvm.io.delta.kernel.internal.fs.Path
    hook = jvm.io.delta.kernel.internal.hook.LogCompactionHook(fs_path(f"file:{path}"),
                                                               fs_path(f"file:{path}/_delta_log"), a, b, 0)
    hook.threadSafeInvoke(engine)
    return path / compacted_name(a, b)


def spark_read(spark: SparkSession, path: Path) -> Any:
    """Spark's rows with their _metadata.file_modification_time, sorted, or its error's class; the log cache cleared."""
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[attr-defined]
    try:
        df = spark.read.format("delta").load(str(path))
        return sorted((tuple(r) for r in df.selectExpr("*", "_metadata.file_modification_time").collect()), key=str)
    except Exception as exc:  # what Spark refuses with is the measurement
        return type(exc).__name__


@pytest.mark.spark
def test_a_compacted_file_written_by_delta_verifies_and_spark_reads_it(spark: SparkSession, delta: Path) -> None:
    n = latest(delta)
    before = spark_read(spark, delta)
    written = kernel_compaction(spark, delta, 0, n)
    kinds = [next(iter(json.loads(line))) for line in written.read_text().splitlines()]
    assert sorted(set(kinds)) == ["add", "metaData", "protocol"], kinds
    assert spark_read(spark, delta) == before
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc
    # Spark reads the file, not the commits: a forged copy in its place changes the rows it returns.
    written.write_text("\n".join(json.dumps(x) for x in dropped_file(
        [json.loads(line) for line in written.read_text().splitlines()], delta)) + "\n")
    assert spark_read(spark, delta) != before


@pytest.mark.spark
@pytest.mark.parametrize("edit", ["renamed column", "modification time", "extra file", "dropped file", "protocol"])
def test_spark_reads_what_a_forged_compacted_file_says(spark: SparkSession, delta: Path, edit: str) -> None:
    """Each edit changes what Spark returns (nulls for the renamed column, 1970, a row twice or gone, an error);
    delta-rs reads the commits and is unchanged, so the view from delta-rs alone was VERIFIED for the first two (and
    the protocol) before."""
    n = latest(delta)
    before = spark_read(spark, delta)
    engine = DeltaTable(str(delta)).to_pyarrow_table().to_pylist()
    written = kernel_compaction(spark, delta, 0, n)
    actions = [json.loads(line) for line in written.read_text().splitlines()]
    write_compacted(delta, 0, n, EDITS[edit](actions, delta))
    assert spark_read(spark, delta) != before
    assert DeltaTable(str(delta)).to_pyarrow_table().to_pylist() == engine
    assert_refused(delta, "table_inconsistent")


@pytest.mark.spark
def test_spark_reads_a_remove_of_a_file_live_before_the_compacted_range(spark: SparkSession, delta: Path) -> None:
    n = latest(delta)
    before = spark_read(spark, delta)
    actions = reconciled(delta, 1, n)
    actions.append({"remove": {"path": a_data_file(delta), "dataChange": True, "deletionTimestamp": 1}})
    write_compacted(delta, 1, n, actions)
    assert len(spark_read(spark, delta)) < len(before)
    assert_refused(delta, "table_inconsistent")


@pytest.mark.spark
def test_spark_reads_no_compacted_file_past_the_version_or_from_before_its_checkpoint(spark: SparkSession,
                                                                                      delta: Path) -> None:
    """Why those two are not bound for the version (the others above are): Spark skips both."""
    n = latest(delta)
    before = spark_read(spark, delta)
    write_compacted(delta, 0, n + 1, extra_file(reconciled(delta, 0, n), delta))
    assert spark_read(spark, delta) == before
    (delta / compacted_name(0, n + 1)).unlink()
    DeltaTable(str(delta)).create_checkpoint()
    write_compacted(delta, 0, n, extra_file(reconciled(delta, 0, n), delta))
    assert spark_read(spark, delta) == before


# ---- checkpoints: every candidate an engine may choose holds what the view binds ------------------------------------
def test_two_checkpoints_of_one_version_with_other_modification_times_get_no_verdict(delta: Path) -> None:
    """A classic and a one-part multi-part checkpoint of one version, alike but for the files' modificationTime: the
    view binds the classic one, which the replay reads; Spark read the multi-part one (measured below: every file
    modified in 1970). Before, candidates were compared without those times: VERIFIED."""
    multi_part_twin_modified_in_1970(delta)
    assert_refused(delta, "table_inconsistent")


def multi_part_twin_modified_in_1970(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    rows = table.to_pylist()
    for row in rows:
        if row.get("add"):
            row["add"]["modificationTime"] = 1000
    twin = cp.with_name(f"{cp.name[:20]}.checkpoint.0000000001.0000000001.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), twin)


@pytest.mark.spark
def test_spark_reads_the_multi_part_twin_of_a_classic_checkpoint(spark: SparkSession, delta: Path) -> None:
    before = spark_read(spark, delta)
    assert all(row[-1].year >= 2026 for row in before), before
    multi_part_twin_modified_in_1970(delta)
    after = spark_read(spark, delta)
    assert [row[:-1] for row in after] == [row[:-1] for row in before]
    assert all(row[-1].year == 1970 for row in after), after


@pytest.mark.spark
def test_spark_takes_nothing_it_reads_from_a_checksum_file(spark: SparkSession, tmp_path: Path) -> None:
    """Why a version's checksum file (``<version>.crc``, which Spark writes with the whole file list, ``allFiles``) is
    held to the log for delta-rs's reading only (test_delta_attacks): Spark 4.4 read the log's schema, files and
    modification times with the checksum file saying otherwise, delta-rs the checksum file's schema."""
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c')")
    before = spark_read(spark, path)
    crc = path / "_delta_log" / f"{2:020d}.crc"
    doc = json.loads(crc.read_text())
    assert len(doc["allFiles"]) == 3, doc
    doc["metadata"]["schemaString"] = doc["metadata"]["schemaString"].replace('"name":"s"', '"name":"renamed"')
    doc["allFiles"] = [{**f, "modificationTime": 1000} for f in doc["allFiles"][:1]]
    crc.write_text(json.dumps(doc))
    assert spark_read(spark, path) == before
    assert DeltaTable(str(path)).to_pyarrow_table().column_names == ["id", "renamed"]


@pytest.mark.spark
def test_spark_takes_no_schema_from_the_last_checkpoint_hint(spark: SparkSession, tmp_path: Path) -> None:
    """``_delta_log/_last_checkpoint`` of a v2 checkpoint repeats its protocol and metaData (``nonFileActions``):
    rewritten there with a renamed column (with its checksum dropped, or kept and so stale), Spark 4.4 still read the
    checkpoint's schema, so the hint is not a log file whose reading the view needs to cover."""
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRING) USING delta "
              "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')")
    for values in ("(1, 'a'), (2, 'b')", "(3, 'c')", "(4, 'd')"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {values}")
    before = spark_read(spark, path)
    hint = path / "_delta_log" / "_last_checkpoint"
    original = json.loads(hint.read_text())
    for drop_checksum in (True, False):
        doc = json.loads(json.dumps(original))
        actions = doc["v2Checkpoint"]["nonFileActions"]
        meta = next(a["metaData"] for a in actions if "metaData" in a)
        meta["schemaString"] = meta["schemaString"].replace('"name":"s"', '"name":"renamed"')
        if drop_checksum:
            doc.pop("checksum", None)
        hint.write_text(json.dumps(doc))
        assert spark_read(spark, path) == before
