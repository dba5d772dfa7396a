"""Exact commit attribution: every write carries a per-write id into its commit (carriers/spark/stamp.py).

Concurrent writers to one Delta path table — two threads of one job, two processes — must never have their
commits attributed to each other: each attested version's program identity must be the one of the writer whose
rows that version added.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from carriers.spark.stamp import DELTA_STAMP_CONF, ICEBERG_STAMP_KEY, STAMP_PREFIX
from tests.spark.concurrent_writer_job import append
from tests.spark.session_conf import session_conf
from tests.spark.side_by_side import run_side_by_side

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

ROUNDS = 5


def _commits(path: Path) -> dict[int, dict[str, Any]]:
    """version -> {"info": commitInfo, "adds": [data file paths]} straight from the Delta log."""
    out: dict[int, dict[str, Any]] = {}
    for f in sorted((path / "_delta_log").glob("*.json")):
        info: dict[str, Any] = {}
        adds: list[str] = []
        for line in f.read_bytes().split(b"\n"):
            if not line.strip():
                continue
            action = json.loads(line)
            info = action.get("commitInfo", info)
            if "add" in action:
                adds.append(action["add"]["path"])
        out[int(f.stem)] = {"info": info, "adds": adds}
    return out


def _markers(path: Path, adds: list[str]) -> set[str]:
    import pyarrow.parquet as pq

    values: set[str] = set()
    for rel in adds:
        values |= {str(v) for v in pq.read_table(path / rel, columns=["s"]).column("s").to_pylist()}
    return values


def _check(path: Path, attested: dict[int, str]) -> None:
    """Every data version attested once, by the program of the writer whose rows it added; the race happened."""
    commits = _commits(path)
    data_versions = {v for v, c in commits.items() if v > 0 and c["adds"]}
    assert set(attested) == data_versions
    programs: dict[str, set[str]] = {}
    for version, program in attested.items():
        (marker,) = _markers(path, commits[version]["adds"])
        programs.setdefault(marker, set()).add(program)
    assert len(programs) == 2 and all(len(p) == 1 for p in programs.values()), programs
    assert len({next(iter(p)) for p in programs.values()}) == 2  # two writers, two programs
    reads = [c["info"].get("readVersion") for v, c in commits.items() if v in data_versions]
    # The point of the test: writes overlapped, so two commits read the same version (read version + operation
    # could not tell them apart).
    assert len(reads) > len(set(reads)), reads
    assert all(str(commits[v]["info"].get("userMetadata", "")).startswith(STAMP_PREFIX) for v in data_versions)


def _new_table(spark: SparkSession, root: Path) -> Path:
    path = root / f"concurrent_{uuid.uuid4().hex[:8]}"
    spark.createDataFrame([(0, "init")], "id int, s string").write.format("delta").save(path.as_posix())
    return path


@pytest.mark.spark
@pytest.mark.parametrize("second", ["save", "sql"])
def test_two_threads_writing_one_path_table_are_never_attributed_to_each_other(
        spark: SparkSession, spark_warehouse: Path, hook: Callable[..., Hook], second: str) -> None:
    # Thread a: df.write.save (stamped through write options); thread b: the same, or SQL INSERT (stamped through
    # the session conf, one statement at a time, its event recognised by plan identity).
    path = _new_table(spark, spark_warehouse)
    h = hook(policy="required", delta_mode="detached")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(marker: str, sql: bool) -> None:
        try:
            for i in range(ROUNDS):
                barrier.wait(timeout=600)
                append(spark, path.as_posix(), marker, i, sql=sql)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=writer, args=("a", False)),
               threading.Thread(target=writer, args=("b", second == "sql"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    h.flush()
    assert not errors, errors
    assert (h.failed, h.skipped) == (0, 0), h.errors
    assert h.attested == 2 * ROUNDS
    _check(path, {int(r.attested_version or -1): r.manifest.program_hash for r in h.results if r.manifest})


@pytest.mark.spark
@pytest.mark.slow
def test_two_processes_writing_one_path_table_are_never_attributed_to_each_other(
        spark: SparkSession, tmp_path: Path) -> None:
    path = _new_table(spark, tmp_path)
    sync = tmp_path / "sync"
    sync.mkdir()
    # SQL INSERTs pin the version they read, as the old matching (read version + operation) relied on: with it,
    # one of two writers that read the same version took the other's commit. (Path saves pin none.)
    run_side_by_side({marker: [sys.executable, "-m", "tests.spark.concurrent_writer_job", str(tmp_path / f"w_{marker}"),
                               str(path), marker, str(ROUNDS), str(sync), str(tmp_path / f"{marker}.json"), "--sql"]
                      for marker in ("a", "b")}, tmp_path / "logs", timeout_s=1200)
    attested: dict[int, str] = {}
    for marker in ("a", "b"):
        report = json.loads((tmp_path / f"{marker}.json").read_text())
        assert (report["failed"], report["skipped"], report["attested"]) == (0, 0, ROUNDS), report["errors"]
        for version, program in report["versions"].items():
            assert int(version) not in attested  # no version attested by both processes
            attested[int(version)] = program
    _check(path, attested)


@pytest.mark.spark
def test_the_users_own_user_metadata_is_kept(spark: SparkSession, spark_warehouse: Path,
                                            hook: Callable[..., Hook]) -> None:
    path = _new_table(spark, spark_warehouse)
    h = hook(policy="required", delta_mode="detached")
    spark.createDataFrame([(1, "x")], "id int, s string").write.format("delta").mode("append") \
        .option("userMetadata", "mine").save(path.as_posix())
    with session_conf(spark, DELTA_STAMP_CONF, "theirs"):
        spark.sql(f"INSERT INTO delta.`{path.as_posix()}` VALUES (2, 'y')")
    h.flush()
    commits = _commits(path)
    assert [commits[v]["info"].get("userMetadata") for v in (1, 2)] == ["mine", "theirs"]
    assert (h.attested, h.failed) == (2, 0), h.errors  # unstamped: found by read version + operation


@pytest.mark.spark
def test_writer_options_are_restored_and_sql_is_classified(spark: SparkSession, spark_warehouse: Path,
                                                           hook: Callable[..., Hook]) -> None:
    from carriers.spark.stamp import _writes

    path = _new_table(spark, spark_warehouse)
    u = uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.s{u}")
    spark.sql(f"CREATE TABLE iceberg.s{u}.t (id INT, s STRING) USING iceberg")
    h = hook(policy="required", delta_mode="detached")
    df = spark.createDataFrame([(1, "x")], "id int, s string")
    writer = df.write.format("delta").mode("append").option("foo", "1")
    writer.save(path.as_posix())
    keys = writer._jwrite.extraOptions().keySet()
    assert {str(k) for k in _scala(keys)} == {"foo"}  # ours added for the call and removed after it
    v2 = df.writeTo(f"iceberg.s{u}.t").option("foo", "1")
    v2.append()
    field = v2._jwriter.getClass().getDeclaredField("options")
    field.setAccessible(True)
    assert {str(k) for k in _scala(field.get(v2._jwriter).keySet())} == {"foo"}
    h.flush()
    assert (h.attested, h.failed) == (2, 0), h.errors
    assert str(_commits(path)[1]["info"].get("userMetadata")).startswith(STAMP_PREFIX)
    summaries = spark.sql(f"SELECT summary FROM iceberg.s{u}.t.snapshots").collect()
    assert any(str(r["summary"].get(ICEBERG_STAMP_KEY, "")).startswith(STAMP_PREFIX) for r in summaries)
    # Only statements that write take the session's stamp lock; what cannot be parsed counts as a write.
    assert not _writes(spark, "SELECT 1")
    assert not _writes(spark, "CREATE TEMP VIEW v AS SELECT 1")
    for text in ("INSERT INTO t VALUES (1)", "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
                 "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "UPDATE t SET a = 1",
                 "DELETE FROM t", "CREATE TABLE t USING delta AS SELECT 1", "REPLACE TABLE t USING delta AS SELECT 1",
                 "INSERT INTO t REPLACE WHERE id = 1 SELECT 1", "SELECT {x}"):
        assert _writes(spark, text), text


def _scala(collection: Any) -> list[Any]:
    it = collection.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def test_commit_info_is_read_line_by_line_on_newlines_only() -> None:
    from carriers.delta.lines import commit_info as _read_commit_info

    info = {"operation": "WRITE", "userMetadata": "a\u2028b\u0085c"}
    data = (json.dumps({"add": {"path": "x"}}) + "\n" + json.dumps({"commitInfo": info}, ensure_ascii=False)).encode()
    assert _read_commit_info(data) == info  # str.splitlines() would cut the line at U+2028 and U+0085
    assert _read_commit_info(b'{"commitInfo": {oops\n{"commitInfo": {"operation": "MERGE"}}') == {"operation": "MERGE"}
    assert _read_commit_info(None) == {}


def test_two_commits_carrying_one_write_are_refused() -> None:
    from carriers.spark.hook import WriteEvent, _Ambiguous, _one

    event = WriteEvent(command="AppendData", format="delta", table_name="t", location="/t")
    assert _one([], event) is None and _one([4], event) == 4
    with pytest.raises(_Ambiguous, match="2 commits"):
        _one([4, 5], event)
