"""Round 15 on what the Spark post-write hook records: two more ways it claimed what the job did not do.

- **Files skipped by the scan.** With ``spark.sql.files.ignoreMissingFiles`` / ``ignoreCorruptFiles``, Spark's
  file scan skips a data file it cannot open instead of failing: the job wrote a subset of the version's rows
  while the hook recorded the version's content, ``strong`` (measured: 4 of 6 rows written).
- **SQL confs that change rows but not the plan.** ``spark.sql.legacy.timeParserPolicy`` is read when the query
  executes, not written into the analysed plan: ``to_date('2020-1-5', 'yyyy-MM-dd')`` wrote NULL under CORRECTED
  and 2020-01-05 under LEGACY with one ``program_hash`` and the same strong inputs.

Each failed on the code before this round. Pins for what holds: the same read without skipping stays strong, a conf
set to its default value (or spelt in another case) keeps the program it had.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_spark_hook_round14 import _inputs
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _partitioned(spark: SparkSession, hook: Hook, root: Path, name: str) -> str:
    """An attested Delta path table of ids 0..5 in two partitions (p = id % 2), version 0."""
    path = str(root / f"{name}_{uuid.uuid4().hex[:6]}")
    spark.range(6).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(path)
    hook.flush()
    assert hook.failed == 0, hook.errors
    return path


def _rows(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _write(spark: SparkSession, hook: Hook, df: Any, root: Path, name: str) -> str:
    dst = str(root / f"{name}_{uuid.uuid4().hex[:6]}")
    df.write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    return dst


@pytest.mark.parametrize("how", ["missing", "corrupt"])
def test_a_read_that_skipped_files_is_not_read_strongly(spark: SparkSession, hook: Hook, spark_warehouse: Path,
                                                        how: str) -> None:
    src = _partitioned(spark, hook, spark_warehouse, "r15_skip")
    victim = sorted((Path(src) / "p=1").glob("*.parquet"))[0]  # our own scratch table: the attack's damage
    if how == "missing":
        victim.unlink()
    else:
        victim.write_bytes(b"not parquet" * 8)
    key = "ignoreMissingFiles" if how == "missing" else "ignoreCorruptFiles"
    with session_conf(spark, f"spark.sql.files.{key}", "true"):
        dst = _write(spark, hook, spark.read.format("delta").load(src), spark_warehouse, "r15_skip_dst")
    written = _rows(spark, dst)
    assert 0 < len(written) < 6, written  # measured: the scan skipped the file, the write had a subset
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, the content of all 6 rows
    (read,) = inputs
    assert "content" not in read and key in read["watermark"], read


def test_the_same_read_without_skipping_stays_strong(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    src = _partitioned(spark, hook, spark_warehouse, "r15_noskip")
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "false")  # set, but to what fails on a missing file
    try:
        dst = _write(spark, hook, spark.read.format("delta").load(src), spark_warehouse, "r15_noskip_dst")
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")
    assert len(_rows(spark, dst)) == 6
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "strong", inputs


def test_a_parser_policy_that_changes_the_rows_changes_the_program(spark: SparkSession, hook: Hook,
                                                                   spark_warehouse: Path) -> None:
    src = str(spark_warehouse / f"r15_conf_{uuid.uuid4().hex[:6]}")
    spark.createDataFrame([("2020-1-5",)], "s string").write.format("delta").save(src)
    hook.flush()
    policy = "spark.sql.legacy.timeParserPolicy"
    runs: dict[str, tuple[list[tuple[Any, ...]], str, str]] = {}
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")  # a malformed date is then NULL, not an error
    try:
        for value in (None, "CORRECTED", "LEGACY", "legacy"):
            if value is None:
                spark.conf.unset(policy)
            else:
                spark.conf.set(policy, value)
            dst = _write(spark, hook, spark.read.format("delta").load(src).selectExpr("to_date(s, 'yyyy-MM-dd') AS d"),
                         spark_warehouse, "r15_conf_dst")
            doc, _ = _inputs(hook, dst)
            runs[str(value)] = (_rows(spark, dst), doc["program_hash"], doc["inputs_proof_class"])
    finally:
        spark.conf.unset(policy)
        spark.conf.set("spark.sql.ansi.enabled", str(ansi))
    import datetime

    assert runs["LEGACY"][0] == [(datetime.date(2020, 1, 5),)] and runs["CORRECTED"][0] == [(None,)], runs
    assert {r[2] for r in runs.values()} == {"strong"}
    assert runs["LEGACY"][1] != runs["CORRECTED"][1], runs  # was: one program_hash for two results
    assert runs["LEGACY"][1] == runs["legacy"][1]  # the same setting spelt in lower case: the same program
    assert runs["None"][1] == runs["CORRECTED"][1]  # set to its default: the program of a session on defaults


def test_a_streaming_querys_program_has_its_result_changing_confs(spark: SparkSession, hook: Hook,
                                                                  spark_warehouse: Path) -> None:
    """A streaming query's program is computed once from its own session's confs, as a batch write's."""
    from tests.spark.test_streaming import _json_files

    u = uuid.uuid4().hex[:6]
    src = spark_warehouse / f"r15_stream_in_{u}"
    _json_files(src, 1)
    policy = "spark.sql.legacy.timeParserPolicy"
    hashes: dict[str, set[str]] = {}
    for value in ("CORRECTED", "LEGACY"):
        table = spark_warehouse / f"r15_stream_{value}_{u}"
        with session_conf(spark, policy, value):
            query = (spark.readStream.format("json").schema("id long, s string").load(str(src))
                     .selectExpr("try_to_date(s, 'yyyy-MM-dd') AS d")
                     .writeStream.format("delta").option("checkpointLocation", str(table) + "_ck")
                     .trigger(availableNow=True).start(str(table)))
            query.awaitTermination()
        hook.flush()
        assert hook.failed == 0, hook.errors
        hashes[value] = {r.manifest.to_dict()["program_hash"] for r in hook.results
                         if r.location.rstrip("/").endswith(table.name) and r.manifest is not None}
        assert len(hashes[value]) == 1, hashes
    assert hashes["CORRECTED"] != hashes["LEGACY"], hashes  # was: one program for both


def test_a_streaming_batch_that_skipped_files_is_not_read_strongly(spark: SparkSession, hook: Hook,
                                                                   spark_warehouse: Path) -> None:
    """A Delta source read by a streaming query with ``ignoreMissingFiles`` on: its batch skips the missing file
    as a batch read does (measured), so the source's range is not recorded by content either."""
    from tests.adversarial.test_spark_hook_round14 import _recorded

    src = _partitioned(spark, hook, spark_warehouse, "r15_stream_skip")
    sorted((Path(src) / "p=1").glob("*.parquet"))[0].unlink()  # our own scratch table: the attack's damage
    table = spark_warehouse / f"r15_stream_skip_dst_{uuid.uuid4().hex[:6]}"
    with session_conf(spark, "spark.sql.files.ignoreMissingFiles", "true"):
        query = (spark.readStream.format("delta").load(src).writeStream.format("delta")
                 .option("checkpointLocation", str(table) + "_ck").trigger(availableNow=True).start(str(table)))
        query.awaitTermination()
    hook.flush()
    assert hook.failed == 0, hook.errors
    assert 0 < len(_rows(spark, str(table))) < 6  # measured: the batch skipped the file
    batches = [r for r in hook.results if r.location.rstrip("/").endswith(table.name)]
    assert batches, hook.results
    for result in batches:
        doc, inputs = _recorded(result)
        assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, the source version's content
        assert all("content" not in i for i in inputs) and "ignoreMissingFiles" in inputs[0]["watermark"], inputs


def test_confs_delta_sets_itself_are_not_program(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    """delta-spark sets ``spark.sql.parquet.fieldId.read.enabled`` in the session on first use (measured: absent
    before a Delta write, TRUE after): listed as program, one CTAS hashed one way before any Delta use and another
    after (the Spark notebook's silver program changed). A session on defaults lists no conf after Delta's writes."""
    from carriers.spark.plan import result_confs

    _partitioned(spark, hook, spark_warehouse, "r15_fieldid")  # a Delta write in this session
    jspark = spark._jsparkSession  # type: ignore[attr-defined]
    assert str(jspark.sessionState().conf().getConfString("spark.sql.parquet.fieldId.read.enabled", "unset")) \
        .lower() == "true"  # what Delta set: if this stops holding, the exclusion's reason is gone
    assert result_confs(jspark, spark._jvm) == {}  # type: ignore[attr-defined]
