"""Round 24 on the Spark read gate: a streaming query restarted from its checkpoint.

The gate checked a Delta stream's source at its latest version when the query starts — what a fresh query reads. A
query restarted from a checkpoint resumes at the offset it logged and reads the adds of every commit since, files a
later commit removed among them, which the latest version (the one checked) no longer holds. Measured: an unattested
append of a row 666, taken out by a ``DELETE`` before an honest (attested) append, read by the restarted query
(``skipChangeCommits`` steps over the ``DELETE``) while the gate had verified the latest version; and a file an
``OPTIMIZE`` compacted away, forged at its own size, read the same way past a gate checking bytes. The gate now
reads the checkpoint's offsets and checks each version the resumed query reads whose files the latest does not hold.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.test_spark_gate_round23 import _forge, _refused
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _stream(spark: SparkSession, src: str, dst: str, checkpoint: str | None = None, *, name: str | None = None,
            skip_changes: bool = False, keyword: bool = False) -> list[int]:
    """Run a Delta → Delta stream of ``src`` until it has read what is there; the rows ``dst`` then holds (read
    with delta-rs: no gate counts it)."""
    reader = spark.readStream.format("delta")
    if skip_changes:
        reader = reader.option("skipChangeCommits", "true")
    writer = reader.load(src).writeStream.format("delta")
    if name is not None:
        writer = writer.queryName(name)
    if checkpoint is not None and not keyword:
        writer = writer.option("checkpointLocation", checkpoint)
    query = writer.start(dst, checkpointLocation=checkpoint) if keyword else writer.start(dst)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    from deltalake import DeltaTable

    return sorted(DeltaTable(dst).to_pyarrow_table().column("id").to_pylist())  # read past the gate


def _poisoned(spark: SparkSession, hook: Hook, src: str) -> None:
    """An unattested append of 666 (the hook off: a writer outside the pipeline), a ``DELETE`` of it, then an
    honest append of 10 the hook attests: the latest version verifies, 666 in none of its files."""
    from attest.spark import install

    hook.uninstall()
    spark.createDataFrame([(666,)], "id long").write.format("delta").mode("append").save(src)
    spark.sql(f"DELETE FROM delta.`{src}` WHERE id = 666")
    again = install(spark, policy="required")
    try:
        spark.range(10, 11).write.format("delta").mode("append").save(src)
        again.flush()
        assert again.failed == 0, again.errors
    finally:
        again.uninstall()


def test_a_restarted_stream_of_an_unattested_deleted_append_is_refused(spark: SparkSession, hook: Hook,
                                                                       tmp_path: Path) -> None:
    from attest.spark import require_verified

    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    spark.range(3).write.format("delta").save(src)
    hook.flush()
    assert _stream(spark, src, str(tmp_path / "dst"), ck) == [0, 1, 2]
    _poisoned(spark, hook, src)
    # What the restarted query reads, with no gate: the deleted, never attested 666.
    probe_ck = tmp_path / "probe_ck"
    import shutil

    shutil.copytree(ck, probe_ck)
    assert 666 in _stream(spark, src, str(tmp_path / "probe_dst"), str(probe_ck), skip_changes=True)
    with require_verified(spark) as gate:
        assert sorted(r[0] for r in spark.read.format("delta").load(src).collect()) == [0, 1, 2, 10]  # verifies
        message = _refused(lambda: _stream(spark, src, str(tmp_path / "dst"), ck, skip_changes=True), "stale")
        assert "resuming from its checkpoint" in message, gate.refused  # was: let through, 666 read
        # The checkpoint given as start()'s keyword, or found under the session's checkpoint root by the query's
        # name, is found all the same.
        _refused(lambda: _stream(spark, src, str(tmp_path / "dst"), ck, skip_changes=True, keyword=True), "stale")
        name = f"r24_{uuid.uuid4().hex[:8]}"
        shutil.copytree(ck, tmp_path / "root" / name)
        with session_conf(spark, "spark.sql.streaming.checkpointLocation", str(tmp_path / "root")):
            _refused(lambda: _stream(spark, src, str(tmp_path / "dst"), name=name, skip_changes=True), "stale")
        # The control: a fresh query (a new checkpoint) reads the latest version only, which verifies.
        assert _stream(spark, src, str(tmp_path / "fresh"), str(tmp_path / "fresh_ck")) == [0, 1, 2, 10]


def test_a_restarted_stream_past_a_compaction_checks_the_version_it_reads(spark: SparkSession, hook: Hook,
                                                                          tmp_path: Path) -> None:
    """An honest append and an ``OPTIMIZE`` after the checkpoint: the resumed query reads the append's file, which
    the compaction removed; the gate checks that version's own attestation (at bytes: a same-size forgery of the
    removed original is caught), and lets the query go on when it holds."""
    from attest.spark import require_verified

    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    spark.range(3).repartition(1).write.format("delta").save(src)
    hook.flush()
    assert _stream(spark, src, str(tmp_path / "dst"), ck) == [0, 1, 2]
    spark.createDataFrame([(7,)], "id long").write.format("delta").mode("append").save(src)
    spark.sql(f"OPTIMIZE delta.`{src}`")
    hook.flush()
    assert hook.failed == 0, hook.errors
    import shutil

    shutil.copytree(ck, tmp_path / "ck2")
    shutil.copytree(ck, tmp_path / "ck3")
    with require_verified(spark, level="bytes") as gate:
        assert _stream(spark, src, str(tmp_path / "dst"), ck) == [0, 1, 2, 7]  # honest: goes on
        assert gate.checked == 2, gate.refused  # the latest, and the append's version the query read
    appended = [p for p in Path(src).glob("*.parquet") if 7 in pq.read_table(p).column("id").to_pylist()
                and pq.read_table(p).num_rows == 1]
    assert len(appended) == 1, appended
    _forge(appended[0], pa.table({"id": pa.array([666], pa.int64())}), same_size=True)
    assert 666 in _stream(spark, src, str(tmp_path / "dst3"), str(tmp_path / "ck3"))  # what it reads, no gate
    with require_verified(spark, level="bytes") as gate:
        assert sorted(r[0] for r in spark.read.format("delta").load(src).collect()) == [0, 1, 2, 7]  # verifies
        message = _refused(lambda: _stream(spark, src, str(tmp_path / "dst2"), str(tmp_path / "ck2")),
                           "artifact_hash_mismatch")
        assert "resuming from its checkpoint" in message, gate.refused  # was: let through, 666 read


def test_a_checkpoint_that_cannot_be_read_refuses_a_delta_stream(spark: SparkSession, hook: Hook,
                                                                 tmp_path: Path) -> None:
    from attest.spark import require_verified

    src, ck = str(tmp_path / "src"), tmp_path / "ck"
    spark.range(3).write.format("delta").save(src)
    hook.flush()
    (ck / "offsets").mkdir(parents=True)
    (ck / "offsets" / "0").write_text('v1\n{}\n{"reservoirId": "x", "reservoirVersion": [1]}\n{not json\n')
    with require_verified(spark) as gate:
        message = _refused(lambda: _stream(spark, src, str(tmp_path / "dst"), str(ck)))
        assert "could not be read" in message, gate.refused


def test_where_a_resumed_delta_source_starts() -> None:
    """Spark-free: the earliest of the last two batches' offsets naming the table, snapshot offsets before commit
    offsets at one version, other tables' and other sources' offsets ignored, a malformed version refused."""
    from carriers.spark.resume import CheckpointUnknown, DeltaResume, delta_resume

    def offset(version: Any, starting: bool = False, table: str = "t") -> dict[str, Any]:
        return {"sourceVersion": 1, "reservoirId": table, "reservoirVersion": version, "index": -1,
                "isStartingVersion": starting}

    assert delta_resume([], "t") is None
    assert delta_resume([offset(3, table="other"), {"snapshot_id": 4}], "t") is None
    assert delta_resume([offset(7), offset(5)], "t") == DeltaResume(5, False)
    assert delta_resume([offset(5), offset(5, starting=True)], "t") == DeltaResume(5, True)
    for bad in ("5", -1, None, 5.0, True):
        with pytest.raises(CheckpointUnknown):
            delta_resume([offset(bad)], "t")



def test_a_stale_cached_delta_snapshot_is_not_what_the_gate_checks(spark: SparkSession, tmp_path: Path) -> None:
    """Under ``spark.databricks.delta.stalenessLimit`` a Delta scan reads its DeltaLog's cached snapshot, however old,
    and updates it in the background. Measured: a reader cached the snapshot holding an unattested 666; a ``DELETE``
    and an attested append later, the gate verified the latest version and the query read 666 from the cache. The
    gate now brings the relation's DeltaLog up to date first and checks the version it then holds: the one read."""
    import deltalake
    from deltalake import write_deltalake

    from attest.spark import require_verified
    from carriers.delta.carrier import attest_after_write

    src = str(tmp_path / "t")
    write_deltalake(src, pa.table({"id": pa.array([1, 2], pa.int64())}))
    attest_after_write(src, model="m", program_hash="a" * 64)
    with session_conf(spark, "spark.databricks.delta.stalenessLimit", "1h"):
        write_deltalake(src, pa.table({"id": pa.array([666], pa.int64())}), mode="append")  # no attestation
        assert 666 in [r[0] for r in spark.read.format("delta").load(src).collect()]  # a reader caches it, ungated
        deltalake.DeltaTable(src).delete("id = 666")
        write_deltalake(src, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
        attest_after_write(src, model="m", program_hash="a" * 64)
        latest = deltalake.DeltaTable(src).version()
        with require_verified(spark) as gate:
            rows = sorted(r[0] for r in spark.read.format("delta").load(src).collect())  # was: [1, 2, 666]
            assert rows == [1, 2, 3], rows
            assert [k[2] for k in gate._verified] == [str(latest)], gate._verified


def test_which_sessions_may_read_a_stale_delta_snapshot() -> None:
    from carriers.spark.gate import stale_snapshots

    class Conf:
        def __init__(self, value: str | None) -> None:
            self.value = value

        def get(self, key: str, default: str) -> str:
            if self.value == "raise":
                raise RuntimeError("no conf")
            return default if self.value is None else self.value

    class Session:
        def __init__(self, value: str | None) -> None:
            self.conf = Conf(value)

    for value, stale in ((None, False), ("0", False), ("0s", False), ("0ms", False), (" 0 ", False), ("", False),
                         ("1h", True), ("100", True), ("10min", True), ("-1", True), ("raise", True)):
        assert stale_snapshots(Session(value)) is stale, value


def test_a_read_answered_from_spark_s_cache_of_another_version_is_refused(spark: SparkSession, hook: Hook,
                                                                          tmp_path: Path) -> None:
    """Spark answers a read matching a cached plan (``df.cache()``, ``CACHE TABLE``) from the cached rows, filled when
    the cache was first used and never refreshed by a commit made elsewhere — a new DataFrame and SQL of the table
    too. Measured: cached holding an unattested 666, then a ``DELETE`` and an attested append, the gate verified the
    latest version and all three reads returned 666. Now refused, unless the cached rows are those of the version
    checked (only metadata-only commits since, such as an attestation); after ``unpersist()`` the read is checked."""
    import deltalake
    from deltalake import write_deltalake

    from attest.spark import require_verified
    from carriers.delta.carrier import attest_after_write

    src = str(tmp_path / "t")
    write_deltalake(src, pa.table({"id": pa.array([1, 2], pa.int64())}))
    attest_after_write(src, model="m", program_hash="a" * 64)
    write_deltalake(src, pa.table({"id": pa.array([666], pa.int64())}), mode="append")  # no attestation
    cached = spark.read.format("delta").load(src)
    cached.cache()
    try:
        assert cached.count() == 3
        deltalake.DeltaTable(src).delete("id = 666")
        write_deltalake(src, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
        attest_after_write(src, model="m", program_hash="a" * 64)
        assert 666 in [r[0] for r in spark.read.format("delta").load(src).collect()]  # what Spark answers, ungated
        with require_verified(spark) as gate:
            for read in (cached.collect, lambda: spark.read.format("delta").load(src).collect(),
                         lambda: spark.sql(f"SELECT * FROM delta.`{src}`").collect()):
                message = _refused(read)  # was: verified the latest, 666 returned
                assert "from Spark's cache (rows cached from version 2 on" in message, gate.refused
            cached.unpersist(blocking=True)
            assert sorted(r[0] for r in cached.collect()) == [1, 2, 3]  # scanned now: the version checked
            # The control: a read cached under the gate, then only an attestation committed — the cached rows are
            # the version checked, and the read goes on.
            again = spark.read.format("delta").load(src)
            again.cache()
            assert again.count() == 3
            attest_after_write(src, model="m2", program_hash="b" * 64)
            assert sorted(r[0] for r in again.collect()) == [1, 2, 3]
            # A DataFrame analysed at the old version and cached again (alone): the version its cache is filled at
            # is known only to be at or after that one, so it is refused (cautious: Delta plans it at the latest).
            spark.catalog.clearCache()
            cached.cache()
            assert "rows cached from version 2 on" in _refused(cached.count)
    finally:
        spark.catalog.clearCache()


def test_an_iceberg_read_from_spark_s_cache_of_the_snapshot_checked_goes_on(spark: SparkSession,
                                                                            hook: Hook) -> None:
    from attest.spark import require_verified

    ns = f"iceberg.r24_c_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.t VALUES (1), (2)")
    hook.flush()
    spark.sql(f"CACHE TABLE {ns}.t")
    try:
        with require_verified(spark) as gate:
            assert sorted(r[0] for r in spark.table(f"{ns}.t").collect()) == [1, 2]
            assert sorted(r[0] for r in spark.sql(f"SELECT * FROM {ns}.t").collect()) == [1, 2]
            assert not gate.refused
    finally:
        spark.sql(f"UNCACHE TABLE IF EXISTS {ns}.t")


def test_delta_spark_s_python_dml_is_gated(spark: SparkSession, tmp_path: Path) -> None:
    """``delta.tables.DeltaTable`` runs its MERGE / UPDATE / DELETE in the JVM, past the pyspark methods the gate
    wraps. Measured: ``DeltaTable.forPath(...).merge(<unattested source>, ...).execute()`` into an attested table ran
    under the gate with nothing checked (``gate.checked == 0``), the 666 rows merged in; an ``update`` of an
    unattested table too. Now the MERGE's source and target, and the table an UPDATE / DELETE reads, are checked."""
    from delta.tables import DeltaTable
    from deltalake import write_deltalake

    from attest.spark import require_verified
    from carriers.delta.carrier import attest_after_write

    tgt, src, ok = str(tmp_path / "tgt"), str(tmp_path / "src"), str(tmp_path / "ok")
    write_deltalake(tgt, pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([0, 0], pa.int64())}))
    attest_after_write(tgt, model="m", program_hash="a" * 64)
    write_deltalake(src, pa.table({"id": pa.array([2, 3], pa.int64()), "v": pa.array([666, 666], pa.int64())}))
    write_deltalake(ok, pa.table({"id": pa.array([3], pa.int64()), "v": pa.array([7], pa.int64())}))
    attest_after_write(ok, model="m", program_hash="a" * 64)

    def merge(source: str) -> None:
        (DeltaTable.forPath(spark, tgt).alias("t").merge(spark.read.format("delta").load(source).alias("s"),
                                                          "t.id = s.id")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    with require_verified(spark) as gate:
        assert "DeltaMergeBuilder.execute reads" in _refused(lambda: merge(src))  # was: merged, unchecked
        assert "DeltaTable.update reads" in _refused(lambda: DeltaTable.forPath(spark, src).update("id = 3",
                                                                                                    {"v": "1"}))
        assert "DeltaTable.delete reads" in _refused(lambda: DeltaTable.forPath(spark, src).delete("id = 3"))
        assert sorted(tuple(r) for r in spark.read.format("delta").load(tgt).collect()) == [(1, 0), (2, 0)]
        merge(ok)  # the control: both verify, the MERGE runs
        assert gate.checked >= 2, gate.refused
    assert sorted(tuple(r) for r in spark.read.format("delta").load(tgt).collect()) == [(1, 0), (2, 0), (3, 7)]


def test_a_stream_restarted_inside_its_first_snapshot_checks_that_snapshot(spark: SparkSession, hook: Hook,
                                                                          tmp_path: Path) -> None:
    """A query stopped after its first batch of a source's initial snapshot (``maxFilesPerTrigger``) logs a snapshot
    offset: restarted, it reads the rest of that version's files — after a ``DELETE`` of every row (attested, stepped
    over with ``skipChangeCommits``) none of them is in the latest version. Forged at their own size, they were read
    past a gate checking bytes; the snapshot's version is now checked too."""
    import time

    from attest.spark import require_verified

    src, ck = str(tmp_path / "src"), str(tmp_path / "ck")
    spark.range(3).repartition(3).write.format("delta").save(src)
    hook.flush()
    query = (spark.readStream.format("delta").option("maxFilesPerTrigger", "1").option("skipChangeCommits", "true")
             .load(src).writeStream.format("delta").option("checkpointLocation", ck)
             .trigger(processingTime="1 hour").start(str(tmp_path / "dst")))
    try:
        deadline = time.monotonic() + 120
        while not any(p["numInputRows"] for p in query.recentProgress) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        query.stop()
    assert (Path(ck) / "offsets" / "0").read_text().count('"isStartingVersion":true') == 1
    spark.sql(f"DELETE FROM delta.`{src}`")
    hook.flush()
    assert hook.failed == 0, hook.errors
    for data in Path(src).glob("*.parquet"):
        _forge(data, pa.table({"id": pa.array([666], pa.int64())}), same_size=True)
    with require_verified(spark, level="bytes") as gate:
        assert spark.read.format("delta").load(src).count() == 0  # the latest verifies: no files
        message = _refused(lambda: _stream(spark, src, str(tmp_path / "dst"), ck, skip_changes=True),
                           "artifact_hash_mismatch")
        assert "resuming from its checkpoint" in message, gate.refused  # was: let through, 666 read


def test_a_procedure_call_runs_once_under_the_gate(spark: SparkSession) -> None:
    """Spark 4 runs a procedure while it analyses its ``CALL`` (the ``InvokeProcedures`` rule), whatever the
    execution mode: the gate's analysis of the statement ran it, and Spark ran it again. Measured:
    ``rollback_to_snapshot`` answered with the snapshot it rolls back to as the previous one (its first run had
    already rolled back). A ``CALL`` is no longer analysed by the gate: it runs once."""
    from attest.spark import require_verified

    ns = f"iceberg.r24_p_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.t VALUES (1)")
    spark.sql(f"INSERT INTO {ns}.t VALUES (2)")
    first, second = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {ns}.t.snapshots ORDER BY committed_at")
                     .collect()]
    with require_verified(spark):
        (row,) = spark.sql(f"CALL iceberg.system.rollback_to_snapshot('{ns}.t', {first})").collect()
    assert (row[0], row[1]) == (second, first), row  # was: (first, first)


def test_execute_immediate_is_checked_without_running_it(spark: SparkSession, tmp_path: Path) -> None:
    """Spark runs the statement ``EXECUTE IMMEDIATE`` names while it analyses the outer statement. Measured: ``EXECUTE
    IMMEDIATE 'INSERT INTO <dst> SELECT * FROM <unattested>'`` was refused by the gate — after its analysis had
    inserted the rows. Now the statement given as a literal is checked as a statement of its own (never run by the
    check); one given as an expression or a variable cannot be read without running it, and is refused."""
    import deltalake
    from deltalake import write_deltalake

    from attest.spark import require_verified
    from carriers.delta.carrier import attest_after_write

    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    write_deltalake(src, pa.table({"id": pa.array([666], pa.int64())}))  # no attestation
    write_deltalake(dst, pa.table({"id": pa.array([1], pa.int64())}))
    attest_after_write(dst, model="m", program_hash="a" * 64)
    before = deltalake.DeltaTable(dst).version()
    spark.sql(f"DECLARE OR REPLACE VARIABLE r24_q STRING DEFAULT 'SELECT * FROM delta.`{dst}`'")
    with require_verified(spark) as gate:
        _refused(lambda: spark.sql(f"EXECUTE IMMEDIATE 'INSERT INTO delta.`{dst}` SELECT * FROM delta.`{src}`'"))
        assert deltalake.DeltaTable(dst).version() == before  # was: the INSERT had run, 666 in dst
        assert "EXECUTE IMMEDIATE runs" in _refused(lambda: spark.sql("EXECUTE IMMEDIATE r24_q"), "invalid_argument")
        assert [r[0] for r in spark.sql(f"EXECUTE IMMEDIATE 'SELECT * FROM delta.`{dst}`'").collect()] == [1]
        assert gate.checked >= 2, gate.refused
    assert deltalake.DeltaTable(dst).to_pyarrow_table().column("id").to_pylist() == [1]


def test_a_sql_script_is_never_analysed_as_one_plan(spark: SparkSession, tmp_path: Path) -> None:
    """SQL scripts (``BEGIN … END``) are on by default in Spark 4.1. Measured: ``BEGIN INSERT INTO <dst> SELECT * FROM
    <unattested>; END`` passed the gate with nothing checked, and ran twice (the gate's analysis of the script ran
    it). A script's reads cannot be known before it runs: refused under ``required``; under ``optional`` logged and
    run once."""
    import deltalake
    from deltalake import write_deltalake

    from attest.spark import require_verified

    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    write_deltalake(src, pa.table({"id": pa.array([666], pa.int64())}))  # no attestation
    write_deltalake(dst, pa.table({"id": pa.array([1], pa.int64())}))
    script = f"BEGIN INSERT INTO delta.`{dst}` SELECT * FROM delta.`{src}`; END"
    with require_verified(spark):
        assert "SQL script" in _refused(lambda: spark.sql(script), "invalid_argument")  # was: run twice, unchecked
    assert deltalake.DeltaTable(dst).version() == 0
    with require_verified(spark, mode="optional") as gate:
        spark.sql(script)
        assert any("SQL script" in w for w in gate.warnings), gate.warnings
    assert sorted(deltalake.DeltaTable(dst).to_pyarrow_table().column("id").to_pylist()) == [1, 666]  # once


def test_statistics_and_eager_evaluation_read_rows_through_the_gate(spark: SparkSession, tmp_path: Path) -> None:
    """``approxQuantile`` / ``corr`` / ``cov`` (and ``df.stat``'s) compute over the rows in the JVM, past every
    method the gate wrapped; a notebook with ``spark.sql.repl.eagerEval.enabled`` shows rows from ``repr`` /
    ``_repr_html_``. Measured: each read an unattested table under the gate, nothing checked (the 666 row in every
    answer). Now checked; a repr without eager evaluation (the schema only) is not."""
    from deltalake import write_deltalake

    from attest.spark import require_verified

    src = str(tmp_path / "src")
    write_deltalake(src, pa.table({"a": pa.array([1.0, 2.0, 666.0]), "b": pa.array([2.0, 4.0, 9.0])}))
    df = spark.read.format("delta").load(src)
    with require_verified(spark) as gate:
        for read in (lambda: df.approxQuantile("a", [1.0], 0.0), lambda: df.stat.approxQuantile("a", [1.0], 0.0),
                     lambda: df.corr("a", "b"), lambda: df.stat.cov("a", "b")):
            _refused(read)  # was: 666.0, a correlation, a covariance over it
        assert repr(df) == "DataFrame[a: double, b: double]" and df._repr_html_() is None
        assert len(gate.refused) == 4, gate.refused
        with session_conf(spark, "spark.sql.repl.eagerEval.enabled", "true"):
            _refused(lambda: repr(df))
            _refused(df._repr_html_)
