"""Round 14 on what the Spark post-write hook records: the inputs claim (``inputs_proof_class``) and the program.

``strong`` may be claimed only when every input the job really read is known by content. Three ways a real local
Spark job read something else than the attestation said (each failed on the code before this round):

- a Delta DataFrame analysed before another writer committed: Delta scans the log's latest snapshot when the query
  executes (``TahoeLogFileIndex.getSnapshotToScan``), not ``snapshotAtAnalysis``, which the hook pinned;
- a cached DataFrame: Spark answers from the cached rows, read at an older version, while the analysed plan names
  the table's version now;
- a Python UDF: ``LogicalPlan.toJSON()`` writes its function as ``"func": null`` — two jobs differing only in the
  UDF's body had one ``program_hash`` — and what the UDF reads is in no plan; nor what an RDD's rows came from;
- the read gate checked an unpinned Delta read at its analysed version, and let the action read a later commit.

And pins for what holds: an unchanged read (an attestation commit between analysis and scan included) and a
time-travel read stay strong, a parquet read of a Delta table's folder is heuristic.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.spark.test_hook import _show

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _append_outside_spark(path: str, ids: list[int]) -> None:
    """Another writer (delta-rs, another process's engine) commits to the table: Spark's session is not told."""
    import deltalake
    import pyarrow as pa

    deltalake.write_deltalake(path, pa.table({"id": pa.array(ids, pa.int64())}), mode="append")


def _source(spark: SparkSession, hook: Hook, root: Path, name: str) -> str:
    """An attested Delta path table of ids 0..2 (Spark's write, the hook's attestation)."""
    path = str(root / f"{name}_{uuid.uuid4().hex[:6]}")
    spark.range(3).write.format("delta").save(path)
    hook.flush()
    assert hook.failed == 0, hook.errors
    return path


def _inputs(hook: Hook, path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest and the input records of the hook's last attestation, which must be of ``path``."""
    result = hook.results[-1]
    assert result.location.rstrip("/").endswith(Path(path).name), (result.location, path)
    return _recorded(result)


def _recorded(result: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from carriers.storage.base import local_path_of

    assert result.manifest is not None and result.sidecar is not None
    sidecar = json.loads(Path(local_path_of(result.sidecar) or result.sidecar).read_text())
    return result.manifest.to_dict(), sidecar["inputs"]


def test_a_dataframe_analysed_before_another_writer_committed_is_not_read_strongly(
        spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    src = _source(spark, hook, spark_warehouse, "r14_moved")
    df = spark.read.format("delta").load(src)  # analysed now: snapshotAtAnalysis is src's version now
    _append_outside_spark(src, [100, 101])
    dst = str(spark_warehouse / f"r14_moved_dst_{uuid.uuid4().hex[:6]}")
    df.write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    # measured: the job read the other writer's rows — Delta scanned the latest snapshot, not the analysed one
    assert sorted(r[0] for r in spark.read.format("delta").load(dst).collect()) == [0, 1, 2, 100, 101]
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, with the content of src's version 0
    (read,) = inputs
    assert "content" not in read and read["proof_class"] == "heuristic"
    assert "not pinned" in read["watermark"], read
    assert _show(dst, spark_warehouse)["inputs_proof_class"] == "heuristic"  # what `attest show` reads offline


def test_a_read_only_an_attestation_commit_landed_under_stays_strong(spark: SparkSession, hook: Hook,
                                                                     spark_warehouse: Path) -> None:
    """Between analysis and scan only a metadata-only commit (an attestation): readers get the same rows at both
    ends, so the scan read them — the read keeps its content identity."""
    from carriers.delta.carrier import DeltaCarrier

    src = str(spark_warehouse / f"r14_same_{uuid.uuid4().hex[:6]}")
    _append_outside_spark(src, [0, 1, 2])  # version 0, unattested
    df = spark.read.format("delta").load(src)
    DeltaCarrier(src).record(model="src", program_hash="0" * 64, inputs=[])  # version 1: attests version 0
    dst = str(spark_warehouse / f"r14_same_dst_{uuid.uuid4().hex[:6]}")
    df.write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "strong", inputs
    assert [(i["version"], "content" in i) for i in inputs] == [("0", True)]


def test_a_time_travel_read_is_pinned_and_stays_strong(spark: SparkSession, hook: Hook,
                                                       spark_warehouse: Path) -> None:
    src = _source(spark, hook, spark_warehouse, "r14_tt")
    _append_outside_spark(src, [100])
    dst = str(spark_warehouse / f"r14_tt_dst_{uuid.uuid4().hex[:6]}")
    spark.read.format("delta").option("versionAsOf", 0).load(src).write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    assert sorted(r[0] for r in spark.read.format("delta").load(dst).collect()) == [0, 1, 2]
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "strong", inputs
    assert [(i["version"], "content" in i) for i in inputs] == [("0", True)]


def test_a_cached_dataframe_of_an_older_version_is_not_read_strongly(spark: SparkSession, hook: Hook,
                                                                     spark_warehouse: Path) -> None:
    from carriers.delta.carrier import DeltaCarrier

    src = _source(spark, hook, spark_warehouse, "r14_cache")
    cached = spark.read.format("delta").load(src)
    cached.cache()
    try:
        assert cached.count() == 3  # the cache holds version 0's rows
        _append_outside_spark(src, [7])
        DeltaCarrier(src).record(model="src", program_hash="0" * 64, inputs=[])  # the new version, attested
        dst = str(spark_warehouse / f"r14_cache_dst_{uuid.uuid4().hex[:6]}")
        spark.read.format("delta").load(src).write.format("delta").save(dst)  # analysed at the new version
        hook.flush()
        assert hook.failed == 0, hook.errors
        # measured: the job wrote the cached rows, not the version its plan names
        assert sorted(r[0] for r in spark.read.format("delta").load(dst).collect()) == [0, 1, 2]
    finally:
        cached.unpersist(blocking=True)
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, the content of the appended version
    (read,) = inputs
    assert "content" not in read and "cache" in read["watermark"], read


def test_python_udfs_are_in_the_program_and_make_the_inputs_heuristic(spark: SparkSession, hook: Hook,
                                                                      spark_warehouse: Path) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    src = _source(spark, hook, spark_warehouse, "r14_udf")
    hashes = []
    for body in (lambda x: x + 1, lambda x: x + 2):
        dst = str(spark_warehouse / f"r14_udf_dst_{uuid.uuid4().hex[:6]}")
        spark.read.format("delta").load(src).select(F.udf(body, LongType())("id").alias("id")) \
            .write.format("delta").save(dst)
        hook.flush()
        assert hook.failed == 0, hook.errors
        doc, inputs = _inputs(hook, dst)
        hashes.append(doc["program_hash"])
        # the UDF could have read anything: never strong on the word of the plan's relations alone
        assert doc["inputs_proof_class"] == "heuristic", inputs
        assert {i["table"] for i in inputs if "content" not in i} == {"code:PythonUDF"}, inputs
    assert hashes[0] != hashes[1]  # was: one program_hash for two programs

    dst = str(spark_warehouse / f"r14_reflect_dst_{uuid.uuid4().hex[:6]}")  # a JVM static method, by reflection
    spark.read.format("delta").load(src).selectExpr("reflect('java.lang.String', 'valueOf', id) AS s") \
        .write.format("delta").save(dst)
    hook.flush()
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic"
    assert {i["table"] for i in inputs if "content" not in i} == {"code:CallMethodViaReflection"}, inputs


def test_rows_an_rdd_computed_are_not_read_strongly(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    """``df.rdd.map(f).toDF()``: the plan holds a LogicalRDD — neither ``f`` nor the table the RDD read is in it. Beside
    an attested table read directly, the inputs were ``strong`` with that table alone."""
    attested = _source(spark, hook, spark_warehouse, "r14_rdd_a")
    hidden = _source(spark, hook, spark_warehouse, "r14_rdd_b")
    through_rdd = spark.read.format("delta").load(hidden).rdd.map(lambda r: (r.id * 1000,)).toDF(["id"])
    dst = str(spark_warehouse / f"r14_rdd_dst_{uuid.uuid4().hex[:6]}")
    spark.read.format("delta").load(attested).unionByName(through_rdd).write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, the RDD's table in no input
    assert {i["table"] for i in inputs if "content" not in i} == {"code:LogicalRDD"}, inputs


def test_a_parquet_read_of_a_delta_tables_folder_is_heuristic(spark: SparkSession, hook: Hook,
                                                              spark_warehouse: Path) -> None:
    """Raw files under a Delta table, read without its log (removed files included): a path, never the table."""
    src = _source(spark, hook, spark_warehouse, "r14_raw")
    dst = str(spark_warehouse / f"r14_raw_dst_{uuid.uuid4().hex[:6]}")
    spark.read.parquet(src).write.format("delta").save(dst)
    hook.flush()
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic"
    assert [i["table"].startswith("path:") for i in inputs] == [True], inputs


def test_the_read_gate_checks_the_version_an_unpinned_delta_read_will_scan(spark: SparkSession, hook: Hook,
                                                                           spark_warehouse: Path) -> None:
    """The read gate has the same blind spot: it checked the DataFrame's analysed version, which verifies, and let
    the action read an unattested commit another writer made since."""
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    src = _source(spark, hook, spark_warehouse, "r14_gate")
    df = spark.read.format("delta").load(src)
    with require_verified(spark) as gate:
        assert sorted(r[0] for r in df.collect()) == [0, 1, 2]  # the attested version: read
        _append_outside_spark(src, [666])  # unattested
        with pytest.raises(VerificationRefusedError) as refused:
            df.collect()  # was: checked the analysed (attested) version, then read the unattested rows
        assert refused.value.code.value == "stale", gate.refused
        pinned = spark.read.format("delta").option("versionAsOf", 1).load(src)  # the attestation commit
        assert sorted(r[0] for r in pinned.collect()) == [0, 1, 2]  # time travel reads what was checked


def test_a_streaming_query_running_a_python_udf_is_not_read_strongly(spark: SparkSession, hook: Hook,
                                                                     spark_warehouse: Path) -> None:
    """Each micro-batch's attestation: the UDF adds the ``code:`` input as for a batch write (its function is in
    the query's program document the same way)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    from tests.spark.test_streaming import _json_files

    u = uuid.uuid4().hex[:6]
    src, table = spark_warehouse / f"r14_stream_in_{u}", spark_warehouse / f"r14_stream_{u}"
    _json_files(src, 1)
    query = (spark.readStream.format("json").schema("id long, s string").load(str(src))
             .select(F.udf(lambda x: x * 3, LongType())("id").alias("id"))
             .writeStream.format("delta").option("checkpointLocation", str(spark_warehouse / f"r14_stream_ck_{u}"))
             .trigger(availableNow=True).start(str(table)))
    query.awaitTermination()
    hook.flush()
    assert hook.failed == 0, hook.errors
    batches = [r for r in hook.results if r.location.rstrip("/").endswith(table.name)]
    assert batches, hook.results
    for result in batches:
        doc, inputs = _recorded(result)
        assert doc["inputs_proof_class"] == "heuristic", inputs
        assert "code:PythonUDF" in {i["table"] for i in inputs}, inputs
