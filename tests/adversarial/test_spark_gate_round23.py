"""Round 23 on the Spark read gate and hook: reads of a table's *changes*, not of one version.

Spark reads a Delta or Iceberg table's changes between versions through relations that are no version's scan:

- a Delta change data feed (``readChangeFeed``, ``table_changes``, ``table_changes_by_path``): ``DeltaCDFRelation``,
  which reads the ``_change_data/`` files the log's ``cdc`` actions name and the add files of every version in range —
  no attestation of a version covers the first, the second are other versions' files;
- an Iceberg changelog (``<table>.changes``, ``create_changelog_view``): ``SparkChangelogTable``;
- an Iceberg incremental read (``start-snapshot-id`` / ``end-snapshot-id``, as ``.option`` or SQL ``WITH``): a
  ``SparkTable`` pinned to no snapshot, so the gate checked the *current* one while the scan read the files the
  appends in range added — files a later snapshot removed among them;
- streams started in the past (a Delta source's ``readChangeFeed`` / ``startingVersion``, an Iceberg source's
  ``stream-from-timestamp``).

Each was let through by the gate (measured below: a forged change-data row, a forged row in a removed Iceberg file,
a stale table's changes read). Now each is refused (``unattested``: no attestation covers a read of changes), and
the hook records an incremental read as heuristic, never as the current snapshot's content. Also found: an Iceberg
stream loaded by name (``readStream.format("iceberg").load(name)``) keeps no catalog in its relation and was never
checked at all; it is now named as Iceberg's source names it and checked.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.test_spark_hook_round14 import _inputs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _refused(action: Any, code: str = "unattested") -> str:
    from attest.errors import VerificationRefusedError

    with pytest.raises(VerificationRefusedError) as refused:
        action()
    assert refused.value.code.value == code, str(refused.value)
    return str(refused.value)


def _forge(path: Path, rows: pa.Table, *, same_size: bool = False) -> None:
    """``path`` rewritten to hold ``rows``, its Hadoop checksum beside it dropped — as a forger would. With
    ``same_size`` at the file's own size (Iceberg's reader checks the length its metadata records): zero bytes
    between the last column chunk and the footer, which no reader looks at (the footer's offsets are absolute)."""
    size = path.stat().st_size
    pq.write_table(rows, path, store_schema=False, write_statistics=False)
    if same_size:
        data = path.read_bytes()
        footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
        assert len(data) <= size, f"the forged rows do not fit the file's {size} bytes"
        path.write_bytes(data[:footer] + bytes(size - len(data)) + data[footer:])
    (path.parent / f".{path.name}.crc").unlink(missing_ok=True)


def _cdf_table(spark: SparkSession, hook: Hook, where: Path) -> str:
    """An attested Delta table with the change data feed on and one UPDATE (attested too): its change-data file
    forged afterwards to hold a row 999 no version has."""
    src = str(where)
    spark.range(3).write.format("delta").option("delta.enableChangeDataFeed", "true").save(src)
    spark.sql(f"UPDATE delta.`{src}` SET id = id + 10 WHERE id = 1")
    hook.flush()
    assert hook.failed == 0, hook.errors
    (cdc,) = (where / "_change_data").glob("*.parquet")
    rows = pq.read_table(cdc)
    forged = rows.set_column(rows.schema.get_field_index("id"), rows.schema.field("id"),
                             pa.array([999] * rows.num_rows, pa.int64()))
    _forge(cdc, forged)
    return src


def test_a_delta_change_feed_of_forged_change_data_is_refused(spark: SparkSession, hook: Hook,
                                                              tmp_path: Path) -> None:
    from attest.spark import require_verified

    src = _cdf_table(spark, hook, tmp_path / "cdf")
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(src)
    assert 999 in {r[0] for r in feed.select("id").collect()}  # what Spark's change feed reads: the forged row
    name = f"default.r23_cdf_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{src}'")
    with require_verified(spark) as gate:
        assert spark.read.format("delta").load(src).count() == 3  # the table's version: attested, verifies
        message = _refused(lambda: spark.read.format("delta").option("readChangeFeed", "true")
                           .option("startingVersion", 0).load(src).count())  # was: let through, 999 and all
        assert "change data feed" in message and "Delta table" in message, gate.refused
        _refused(lambda: spark.sql(f"SELECT * FROM table_changes('{name}', 0)").count())
        _refused(lambda: spark.sql(f"SELECT 1 AS x WHERE EXISTS (SELECT * FROM table_changes_by_path('{src}', 1))")
                 .count())  # in a subquery
        # The control: the change feed switched off reads the version, which verifies.
        assert spark.read.format("delta").option("readChangeFeed", "false").load(src).count() == 3
    assert "version None" not in message  # a read of no one version names none


def test_a_delta_change_feed_of_an_unattested_version_is_refused(spark: SparkSession, hook: Hook,
                                                                 tmp_path: Path) -> None:
    from attest.spark import require_verified

    src = str(tmp_path / "cdf")
    spark.range(3).write.format("delta").option("delta.enableChangeDataFeed", "true").save(src)
    hook.flush()
    hook.uninstall()
    spark.range(100, 102).write.format("delta").mode("append").save(src)  # no attestation of it
    with require_verified(spark):
        _refused(lambda: spark.read.format("delta").load(src).count(), "stale")  # the version
        _refused(lambda: spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
                 .load(src).count())  # was: let through, the unattested append's rows among them


def _incremental_table(spark: SparkSession, hook: Hook, prefix: str) -> tuple[str, int]:
    """An attested Iceberg table whose second append's file (row 2) a later DELETE removed; that file forged to hold
    666 afterwards. Its name and the first snapshot's id: an incremental read after it reads the removed file."""
    ns = f"iceberg.{prefix}_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    table = f"{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    first = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at").collect()[-1][0]

    def files() -> set[str]:
        return {r[0] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect()}

    before = files()
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    (removed,) = files() - before
    spark.sql(f"DELETE FROM {table} WHERE id = 2")  # the whole file: removed from the current snapshot
    hook.flush()
    assert hook.failed == 0, hook.errors
    assert removed not in files()
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    _forge(Path(removed.removeprefix("file:")), pa.table({"id": pa.array([666], pa.int64())}, schema=schema),
           same_size=True)
    return table, int(first)


def test_an_iceberg_incremental_read_of_a_removed_forged_file_is_refused(spark: SparkSession, hook: Hook) -> None:
    from attest.spark import require_verified

    table, first = _incremental_table(spark, hook, "r23_inc")
    incremental = spark.read.format("iceberg").option("start-snapshot-id", str(first)).load(table)
    assert [r[0] for r in incremental.collect()] == [666]  # what Spark reads: the removed file, forged
    with require_verified(spark) as gate:
        assert [r[0] for r in spark.table(table).collect()] == [1]  # the current snapshot: attested, verifies
        message = _refused(lambda: spark.read.format("iceberg").option("start-snapshot-id", str(first))
                           .load(table).count())  # was: the current snapshot checked, the forged row read
        assert "incremental read" in message and "Iceberg table" in message, gate.refused
        _refused(lambda: spark.read.format("iceberg").option("START-SNAPSHOT-ID", str(first)).load(table).count())
        _refused(lambda: spark.sql(f"SELECT * FROM {table} WITH ('start-snapshot-id' = '{first}')").count())


def test_an_iceberg_changelog_read_is_refused(spark: SparkSession, hook: Hook) -> None:
    from attest.spark import require_verified

    table, _ = _incremental_table(spark, hook, "r23_log")
    assert 666 in {r[0] for r in spark.table(f"{table}.changes").select("id").collect()}  # the forged file's row
    view = f"r23_cv_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CALL iceberg.system.create_changelog_view(table => '{table}', changelog_view => '{view}')")
    with require_verified(spark) as gate:
        message = _refused(lambda: spark.table(f"{table}.changes").count())  # was: let through unchecked
        assert "changelog" in message, gate.refused
        _refused(lambda: spark.table(view).count())


def test_an_iceberg_incremental_read_is_recorded_heuristic(spark: SparkSession, hook: Hook,
                                                           spark_warehouse: Path) -> None:
    ns = f"iceberg.r23_hk_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.t VALUES (1)")
    first = spark.sql(f"SELECT snapshot_id FROM {ns}.t.snapshots ORDER BY committed_at").collect()[-1][0]
    spark.sql(f"INSERT INTO {ns}.t VALUES (2)")
    hook.flush()
    dst = str(spark_warehouse / f"r23_hk_dst_{uuid.uuid4().hex[:6]}")
    spark.read.format("iceberg").option("start-snapshot-id", str(first)).load(f"{ns}.t") \
        .write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    assert [r[0] for r in spark.read.format("delta").load(dst).collect()] == [2]  # the append after `first` only
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, the current snapshot's content (1 and 2)
    (read,) = inputs
    assert "content" not in read and "incremental read" in read["watermark"], read


def _start(reader: Any) -> None:
    query = reader.writeStream.format("memory").queryName(f"r23_{uuid.uuid4().hex[:8]}").start()
    query.stop()


def test_streams_started_in_the_past_are_refused(spark: SparkSession, hook: Hook, tmp_path: Path) -> None:
    from attest.spark import require_verified

    src = _cdf_table(spark, hook, tmp_path / "cdf")
    table, _ = _incremental_table(spark, hook, "r23_st")
    with require_verified(spark) as gate:
        delta = spark.readStream.format("delta")
        for option, value in (("readChangeFeed", "true"), ("startingVersion", "0"), ("startingTimestamp",
                                                                                        "2000-01-01")):
            message = _refused(lambda o=option, v=value: _start(delta.option(o, v).load(src)))
            assert option.lower() in message, gate.refused
        _refused(lambda: _start(spark.readStream.format("iceberg").option("stream-from-timestamp", "0").load(table)))
        _refused(lambda: _start(spark.readStream.option("stream-from-timestamp", "0").table(table)))
        # The controls: a Delta stream from the latest version starts (that version is checked).
        _start(spark.readStream.format("delta").load(src))
        _start(spark.readStream.format("delta").option("startingVersion", "latest").load(src))
        # An Iceberg stream starts at the oldest snapshot: this table's DELETE removed a file it would read.
        assert "is a delete" in _refused(lambda: _start(spark.readStream.table(table)))


def test_an_iceberg_stream_loaded_by_name_is_checked(spark: SparkSession, hook: Hook) -> None:
    from attest.spark import require_verified

    ns = f"iceberg.r23_sn_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.t VALUES (1)")
    hook.flush()
    with require_verified(spark) as gate:
        _start(spark.readStream.format("iceberg").load(f"{ns}.t"))  # attested: checked, and it verifies
        assert gate.checked == 1, gate.refused  # was: 0 — never looked at
        hook.uninstall()
        spark.sql(f"INSERT INTO {ns}.t VALUES (2)")  # no attestation of it
        from attest.errors import VerificationRefusedError

        with pytest.raises(VerificationRefusedError) as refused:
            _start(spark.readStream.format("iceberg").load(f"{ns}.t"))  # was: let through unchecked
        assert refused.value.code.value == "stale", str(refused.value)


def _two_appends(spark: SparkSession, prefix: str) -> tuple[str, str]:
    """An Iceberg table of two appends (rows 1 and 2): its name and the first append's data file."""
    ns = f"iceberg.{prefix}_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    table = f"{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    (original,) = [r[0] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect()]
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    return table, original


def _compact_and_forge(spark: SparkSession, hook: Hook, table: str, original: str) -> None:
    """``table`` compacted (``rewrite_data_files``: a ``replace`` snapshot; the hook carries its attestation
    forward), then its first original — no longer in the current snapshot — forged to hold 666."""
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2'))")
    hook.flush()
    assert hook.failed == 0, hook.errors
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    _forge(Path(original.removeprefix("file:")), pa.table({"id": pa.array([666], pa.int64())}, schema=schema),
           same_size=True)


def test_an_iceberg_stream_of_a_compacted_table_is_refused(spark: SparkSession, hook: Hook) -> None:
    """A stream starts at the oldest snapshot and skips a compaction (``replace``): it reads the compaction's
    original files, which the current snapshot — the one the gate checked — no longer holds. Measured: a forged
    original read as 666 by a stream the gate let through."""
    from attest.spark import require_verified

    table, original = _two_appends(spark, "r23_cp")
    with require_verified(spark) as gate:
        _start(spark.readStream.table(table))  # the control: appends only, every file read is checked
        assert gate.checked == 1, gate.refused
    _compact_and_forge(spark, hook, table, original)
    query = spark.readStream.table(table).writeStream.format("memory").queryName(f"r23_{uuid.uuid4().hex[:8]}")
    running = query.start()
    running.processAllAvailable()
    running.stop()
    assert sorted(r[0] for r in spark.table(running.name).collect()) == [2, 666]  # what the stream reads
    with require_verified(spark) as gate:
        assert sorted(r[0] for r in spark.table(table).collect()) == [1, 2]  # the current snapshot verifies
        message = _refused(lambda: _start(spark.readStream.table(table)))  # was: let through, 666 read
        assert "replace" in message, gate.refused
        _refused(lambda: _start(spark.readStream.format("iceberg").load(table)))


def _recorded_stream_input(hook: Hook, dst: str, kind: str) -> dict[str, Any]:
    from tests.adversarial.test_spark_hook_round14 import _recorded

    result = [r for r in hook.results if r.location.rstrip("/").endswith(Path(dst).name)][-1]
    _, inputs = _recorded(result)
    (found,) = [i for i in inputs if i["table"].startswith(f"{kind}:")]
    return found


def test_a_stream_batch_that_read_removed_files_is_recorded_heuristic(spark: SparkSession, hook: Hook,
                                                                     tmp_path: Path) -> None:
    """foreachBatch over an Iceberg stream of a compacted table (it reads the compaction's original, forged) and over
    a Delta stream from version 0 past an overwrite (``skipChangeCommits``: it reads the overwritten row): the hook
    recorded each source at the batch's end version by content (``strong``) — rows that are not that version's.

    Under the required hook: the Iceberg stream's second batch is empty (the attestation's own snapshot adds no
    file), and its Delta append commits nothing. foreachBatch writes ran unstamped (the batch runs in the stream's
    clone of the session), so that write's missing commit failed the batch; they are stamped now."""
    table, original = _two_appends(spark, "r23_fb")
    _compact_and_forge(spark, hook, table, original)
    src = tmp_path / "src"
    spark.range(1, 2).coalesce(1).write.format("delta").save(str(src))
    spark.range(2, 3).coalesce(1).write.format("delta").mode("overwrite").save(str(src))
    hook.flush()
    for label, reader, dst in (
            ("iceberg", spark.readStream.table(table), tmp_path / "from_iceberg"),
            ("delta", spark.readStream.format("delta").option("startingVersion", "0")
             .option("skipChangeCommits", "true").load(str(src)), tmp_path / "from_delta")):
        def write(df: Any, _: int, to: Path = dst) -> None:
            df.write.format("delta").mode("append").save(str(to))

        reader.writeStream.option("checkpointLocation", str(tmp_path / f"ck_{label}")) \
            .trigger(availableNow=True).foreachBatch(write).start().awaitTermination()  # was: failed (iceberg)
        hook.flush()
        assert (hook.failed, hook.not_found) == (0, 0), hook.errors
        read = sorted(r[0] for r in spark.read.format("delta").load(str(dst)).collect())
        assert read == ([2, 666] if label == "iceberg" else [1]), read  # not the end version's rows
        found = _recorded_stream_input(hook, str(dst), label)
        assert found["proof_class"] == "heuristic" and "content" not in found, found  # was: strong
        assert ("is a replace" if label == "iceberg" else "started at an earlier version") in found["watermark"]
        from deltalake import DeltaTable

        writes = [h for h in DeltaTable(str(dst)).history() if h.get("operation") == "WRITE"]
        assert writes and all(str(h.get("userMetadata", "")).startswith("recipe-attest:write:") for h in writes)


def test_an_empty_append_under_the_required_hook_is_no_failure(spark: SparkSession, hook: Hook,
                                                               tmp_path: Path) -> None:
    """Delta records no empty commit (``skipRecordingEmptyCommits``): a blind append of no rows commits nothing.
    The required hook counted it as a write whose commit cannot be found and failed ``flush()`` — every job that
    appends an empty DataFrame (no new data today) failed."""
    dst = str(tmp_path / "t")
    spark.range(1).write.format("delta").save(dst)
    hook.flush()
    spark.range(0).write.format("delta").mode("append").save(dst)
    hook.flush()  # was: PolicyError, "1 Spark write(s) were not attested"
    assert hook.not_found == 0 and hook.failed == 0, hook.errors
    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier

    assert verify_table(DeltaCarrier(dst), level="bytes").passed  # still the first write's attestation, in force


def test_relations_without_a_location_are_inputs_and_metadata_tables_are_no_version(
        spark: SparkSession, hook: Hook, tmp_path: Path) -> None:
    """A relation with no location — an Iceberg changelog, an Iceberg metadata table, any DSv2 table that is no Delta
    or Iceberg table's — was taken for the target of a write by path (whose table name is None) and dropped from the
    inputs: a job joining an Iceberg changelog with an attested Delta table was recorded ``strong``, its only input
    the Delta table. An Iceberg metadata table (``t.snapshots``) was read as a table named ``t.snapshots``, which the
    hook failed to load (the write never attested) and the gate refused as ``table_unreadable``."""
    from attest.spark import require_verified

    ns = f"iceberg.r23_md_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.t VALUES (1)")
    delta = str(tmp_path / "d")
    spark.range(3).write.format("delta").save(delta)
    hook.flush()
    for label, joined in (("changes", f"{ns}.t.changes"), ("snapshots", f"{ns}.t.snapshots")):
        dst = str(tmp_path / f"out_{label}")
        spark.sql(f"SELECT x.id FROM delta.`{delta}` x JOIN {joined} ON true").write.format("delta").save(dst)
        hook.flush()  # was (snapshots): PolicyError, "Table does not exist: ….t.snapshots"
        assert hook.failed == 0, hook.errors
        doc, inputs = _inputs(hook, dst)
        assert doc["inputs_proof_class"] == "heuristic", inputs  # was (changes): strong, the Delta input alone
        assert {i["table"] for i in inputs if i["table"].startswith("path:")} == {f"path:{joined}"}, inputs
    with require_verified(spark) as gate:
        assert spark.table(f"{ns}.t").count() == 1
        from attest.errors import VerificationRefusedError

        with pytest.raises(VerificationRefusedError) as refused:
            spark.table(f"{ns}.t.snapshots").count()
        assert refused.value.code.value == "unattested", str(refused.value)  # was: table_unreadable
        assert "metadata table (snapshots)" in str(refused.value), gate.refused
        assert refused.value.report is not None
        assert "not a snapshot's rows" in refused.value.report.errors[0].message
        _refused(lambda: spark.table(f"{ns}.t.position_deletes").count())
