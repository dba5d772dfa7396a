"""Maintenance through Spark with the post-write hook installed (issue 32 item 5, docs/maintenance.md, docs/spark.md).

Measured before: the hook ignored OPTIMIZE / REORG / VACUUM and Iceberg CALL procedures (no event, no counter, no
log line). The table kept verifying by content after a Delta rewrite, but an Iceberg ``rewrite_data_files`` followed by
``expire_snapshots`` left the current snapshot unattested. Now the hook writes a carry-forward attestation after a
rewrite (the producer's program, inputs and run; never the maintenance command as a program), counts it in
``hook.carried`` and logs it; cleanup writes nothing. After each command ``attest verify --level bytes`` (CLI, fresh
interpreter) is VERIFIED and ``attest show`` names the producer's program. One hook for the module; tiny tables.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import required_hook
from tests.spark.session_conf import session_conf
from tests.spark.test_hook import _attest, _delta_path, _show
from tests.spark.test_maintenance_iceberg import _age, _pyiceberg, _remove_orphans_now

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


hook = required_hook  # attest.spark.install(spark, policy="required") for the test (tests/conftest.py)


def _verified(ref: str, warehouse: Path) -> dict[str, Any]:
    import json

    proc = _attest("verify", ref, "--level", "bytes", "--json", warehouse=warehouse)
    doc: dict[str, Any] = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["level"] == "bytes" and doc["verdict"].startswith("VERIFIED"), doc
    return doc


def _verified_shown(ref: str, warehouse: Path) -> tuple[dict[str, Any], Any]:
    """``_verified`` and ``attest show`` side by side: two fresh interpreters, mostly starting up (2 cores in CI)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        shown = pool.submit(_show, ref, warehouse)
        return _verified(ref, warehouse), shown.result()


def _counts(h: Hook) -> tuple[int, int, int, int, int]:
    h.flush()
    return h.attested, h.carried, h.maintained, h.skipped, h.failed


def _carried_once(h: Hook, before: tuple[int, int, int, int, int], program: str) -> None:
    """The command wrote exactly one carry-forward attestation keeping ``program``, and no attestation of its own."""
    attested, carried, maintained, skipped, failed = _counts(h)
    assert (attested, carried, maintained, skipped, failed) == (before[0], before[1] + 1, before[2] + 1, before[3],
                                                               before[4]), h.errors
    last = h.results[-1]
    assert last.continues is not None and last.manifest is not None and last.manifest.program_hash == program


def _delta(spark: SparkSession, h: Hook, properties: str = "") -> tuple[str, str, str]:
    """(name, path, producer program) of a hook-attested Delta table: three INSERTs of two files each."""
    name = f"hm_{uuid.uuid4().hex[:8]}"
    extra = f" TBLPROPERTIES ({properties})" if properties else ""
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING delta{extra}")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id AS STRING) FROM range(10)")
    h.flush()
    assert h.failed == 0, h.errors
    program = h.results[-1].manifest.program_hash  # type: ignore[union-attr]
    return name, _delta_path(spark, name), program


@pytest.mark.parametrize("command", ["OPTIMIZE {name}", "OPTIMIZE {name} ZORDER BY (id)"])
def test_delta_optimize_is_carried_forward(spark: SparkSession, spark_warehouse: Path, hook: Hook,
                                           command: str) -> None:
    name, path, program = _delta(spark, hook)
    before = _counts(hook)
    spark.sql(command.format(name=name)).collect()
    _carried_once(hook, before, program)
    doc, shown = _verified_shown(path, spark_warehouse)
    assert "content" not in doc["verdict"], doc  # the carry-forward binds the new file's bytes: no rows read
    assert shown["program_hash"] == program and shown["subject"]["model"] != "OPTIMIZE", shown


def test_delta_reorg_purge_is_carried_forward(spark: SparkSession, spark_warehouse: Path, hook: Hook) -> None:
    name, path, _ = _delta(spark, hook, "'delta.enableDeletionVectors' = 'true'")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    hook.flush()
    program = hook.results[-1].manifest.program_hash  # type: ignore[union-attr]  # the DELETE's attestation
    before = _counts(hook)
    spark.sql(f"REORG TABLE {name} APPLY (PURGE)").collect()
    _carried_once(hook, before, program)
    shown = _verified_shown(path, spark_warehouse)[1]
    assert shown["program_hash"] == program
    assert spark.table(name).count() == 26  # 4 of the 30 ids are multiples of 7


def test_delta_vacuum_after_optimize(spark: SparkSession, spark_warehouse: Path, hook: Hook) -> None:
    name, path, program = _delta(spark, hook)
    spark.sql(f"OPTIMIZE {name}").collect()
    before = _counts(hook)
    with session_conf(spark, "spark.databricks.delta.retentionDurationCheck.enabled", "false"):
        spark.sql(f"VACUUM {name} RETAIN 0 HOURS").collect()
    after = _counts(hook)
    assert after == (before[0], before[1], before[2] + 1, before[3], before[4]), hook.errors  # cleanup: nothing written
    shown = _verified_shown(path, spark_warehouse)[1]
    assert shown["program_hash"] == program


def _iceberg(spark: SparkSession, h: Hook) -> tuple[str, str, str]:
    """(Spark name, attest reference, producer program) of a hook-attested Iceberg table: three small INSERTs."""
    ns = f"hm{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id AS STRING) FROM range(10)")
    h.flush()
    assert h.failed == 0, h.errors
    program = h.results[-1].manifest.program_hash  # type: ignore[union-attr]
    return name, f"iceberg://iceberg/{ns}.t", program


def _now(spark: SparkSession) -> str:
    # One wall clock at millisecond precision (snapshot times, the literal): a few milliseconds put every earlier
    # commit strictly before it; the statement below waits for the hook's pending attestations (the write guard).
    time.sleep(0.05)
    return str(spark.sql("SELECT CAST(current_timestamp() AS STRING)").first()[0])  # type: ignore[index]


def test_iceberg_rewrite_data_files_then_cleanup(spark: SparkSession, spark_warehouse: Path, hook: Hook) -> None:
    """Measured before: rewrite_data_files, then expire_snapshots(retain_last 1) left the table unattested."""
    name, ref, program = _iceberg(spark, hook)
    table = name.split(".", 1)[1]
    before = _counts(hook)
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}')").collect()
    _carried_once(hook, before, program)
    _verified(ref, spark_warehouse)
    before = _counts(hook)
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    _age(_pyiceberg(spark_warehouse, name), 4)
    spark.sql(f"CALL iceberg.system.remove_orphan_files(table => '{table}')").collect()
    assert _counts(hook) == (before[0], before[1], before[2] + 2, before[3], before[4]), hook.errors
    hook.flush()  # no carry-forward commit in flight when the sweep runs (see _procedure)
    _remove_orphans_now(spark, name)  # the action with olderThan(now): the procedure refuses under 24 hours
    assert len(_pyiceberg(spark_warehouse, name).metadata.snapshots) == 1
    doc, shown = _verified_shown(ref, spark_warehouse)
    assert "content" not in doc["verdict"], doc
    assert shown["program_hash"] == program


def test_iceberg_rewrite_manifests_then_expiry(spark: SparkSession, spark_warehouse: Path, hook: Hook) -> None:
    """A ``replace`` snapshot adding and removing no file: the hook carries the attestation onto it all the same."""
    name, ref, program = _iceberg(spark, hook)
    table = name.split(".", 1)[1]
    before = _counts(hook)
    spark.sql(f"CALL iceberg.system.rewrite_manifests(table => '{table}')").collect()
    # Measured without this carry-forward (a snapshot that changed no file was left alone): after the expiry below,
    # UNATTESTED — the attested snapshot and the follow-up carrying its attestation both expired.
    _carried_once(hook, before, program)
    _verified(ref, spark_warehouse)
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    hook.flush()
    shown = _verified_shown(ref, spark_warehouse)[1]
    assert shown["program_hash"] == program


def test_iceberg_procedures_whose_result_is_never_read(spark: SparkSession, spark_warehouse: Path,
                                                        hook: Hook) -> None:
    """Measured before (Spark 4.1, Iceberg 1.10): ``spark.sql("CALL ...")`` runs the procedure at once (the rewrite's
    snapshot is committed when it returns), but Spark reports a CALL to no listener unless its result is read, so a
    bare CALL was invisible to the hook: no carry-forward, ``maintained`` unchanged, and after expiry the table was
    left unattested. Now the hook sees it when ``spark.sql`` returns; reading the result later queues nothing more."""
    name, ref, program = _iceberg(spark, hook)
    table = name.split(".", 1)[1]
    before = _counts(hook)
    result = spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}')")  # never read here
    _carried_once(hook, before, program)
    _verified(ref, spark_warehouse)
    before = _counts(hook)
    result.collect()  # read afterwards: the same statement, not a second maintenance command
    assert _counts(hook) == before, hook.errors
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)")
    spark.sql(f"call iceberg.system.remove_orphan_files(table => '{table}')")
    assert _counts(hook) == (before[0], before[1], before[2] + 2, before[3], before[4]), hook.errors
    assert len(_pyiceberg(spark_warehouse, name).metadata.snapshots) == 1
    doc, shown = _verified_shown(ref, spark_warehouse)
    assert "content" not in doc["verdict"], doc
    assert shown["program_hash"] == program
    name, ref, program = _iceberg(spark, hook)
    table = name.split(".", 1)[1]
    before = _counts(hook)
    spark.sql(f"CALL iceberg.system.rewrite_manifests(table => '{table}')")
    _carried_once(hook, before, program)
    _verified(ref, spark_warehouse)


def test_iceberg_rewrite_manifests_right_after_a_carry_forward(spark: SparkSession, spark_warehouse: Path,
                                                              hook: Hook) -> None:
    """Iceberg's maintenance sequence, rewrite_data_files then rewrite_manifests. Measured before the hook dropped
    Spark's cached copy of the table after its own (pyiceberg) commit: the second procedure failed, Iceberg
    ValidationException (a deleted manifest not in the latest snapshot: planned on the stale copy)."""
    name, ref, program = _iceberg(spark, hook)
    table = name.split(".", 1)[1]
    before = _counts(hook)
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}')")
    _carried_once(hook, before, program)
    before = _counts(hook)
    spark.sql(f"CALL iceberg.system.rewrite_manifests(table => '{table}')")
    after = _counts(hook)
    assert (after[2], after[3], after[4]) == (before[2] + 1, before[3], before[4]), hook.errors
    shown = _verified_shown(ref, spark_warehouse)[1]
    assert shown["program_hash"] == program


def test_delta_optimize_and_vacuum_whose_result_is_never_read(spark: SparkSession, spark_warehouse: Path,
                                                              hook: Hook) -> None:
    """Delta's OPTIMIZE and VACUUM are commands Spark runs in ``spark.sql`` and reports to the listeners at once
    (measured: a "command" event with the OptimizeTableCommand plan before anything is read): seen unread too."""
    name, path, program = _delta(spark, hook)
    before = _counts(hook)
    spark.sql(f"OPTIMIZE {name}")
    _carried_once(hook, before, program)
    before = _counts(hook)
    with session_conf(spark, "spark.databricks.delta.retentionDurationCheck.enabled", "false"):
        spark.sql(f"VACUUM {name} RETAIN 0 HOURS")
    assert _counts(hook) == (before[0], before[1], before[2] + 1, before[3], before[4]), hook.errors
    doc, shown = _verified_shown(path, spark_warehouse)
    assert "content" not in doc["verdict"], doc
    assert shown["program_hash"] == program



# Chains of Iceberg maintenance procedures, each ending with expiry keeping only the last snapshot. The DELETE before
# them (merge-on-read) leaves position delete files; ``rewrite_data_files`` compacts ``id < 10`` only, so that the
# snapshot after it has more than one manifest and the ``rewrite_manifests`` after it commits a snapshot (measured:
# after a full compaction one manifest is left, and rewrite_manifests commits nothing).
_ICEBERG_ORDERS: tuple[tuple[str, ...], ...] = (
    ("rewrite_data_files", "rewrite_manifests", "expire", "orphans"),
    ("rewrite_position_delete_files", "expire", "rewrite_manifests", "rewrite_data_files", "orphans", "expire"),
)


def _procedure(spark: SparkSession, name: str, step: str, hook: Hook) -> None:
    table = name.split(".", 1)[1]
    if step == "expire":
        spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP "
                  f"'{_now(spark)}', retain_last => 1)")
    elif step == "orphans":
        # The hook's carry-forward commits run after the statement returns: an orphan sweep with olderThan(now) racing
        # one deletes the metadata file it is writing (seen under load: NotFoundException on 000NN-….metadata.json).
        hook.flush()
        _remove_orphans_now(spark, name)  # the action with olderThan(now): the procedure refuses under 24 hours
    elif step == "rewrite_data_files":
        spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}', where => 'id < 10', options => "
                  "map('min-input-files', '2', 'delete-file-threshold', '1'))")
    elif step == "rewrite_position_delete_files":
        spark.sql(f"CALL iceberg.system.rewrite_position_delete_files(table => '{table}', options => "
                  "map('rewrite-all', 'true'))")
    else:
        spark.sql(f"CALL iceberg.system.{step}(table => '{table}')")


def _delta_log_cleanup(spark: SparkSession, name: str, path: str) -> None:
    """Delta's own log cleanup: it runs after a checkpoint and deletes log files older than the retention, the
    cutoff truncated to the day (so the log is made to look 3 days old); the checkpoint interval 1 makes the ALTER's
    own commit write a checkpoint. delta.logRetentionDuration may not be under deletedFileRetentionDuration."""
    old = time.time() - 3 * 86400
    for f in Path(path, "_delta_log").iterdir():
        if f.is_file():
            os.utime(f, (old, old))
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 1 hours', "
              "'delta.deletedFileRetentionDuration' = 'interval 1 hours', 'delta.checkpointInterval' = '1')")


def test_maintenance_chains_then_expiry_keep_the_attestation(spark: SparkSession, spark_warehouse: Path,
                                                             hook: Hook) -> None:
    """Issue 32: expiring the snapshot that carried an attestation never loses it. Chains of Iceberg maintenance
    procedures, each ending with ``expire_snapshots(older_than => now, retain_last => 1)``, leave one snapshot that
    verifies at bytes level with the producer's program (the hook carried the attestation onto every rewrite, a
    ``rewrite_manifests`` after a carry-forward included); and Delta's REORG PURGE, OPTIMIZE, VACUUM RETAIN 0 HOURS
    and log cleanup leave the current version verified the same way. Measured so (docs/maintenance.md)."""
    for steps in _ICEBERG_ORDERS:
        ns = f"hmo{uuid.uuid4().hex[:6]}"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
        name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
        spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg TBLPROPERTIES ('format-version' = '2', "
                  "'write.delete.mode' = 'merge-on-read')")
        for start in (0, 10, 20):
            spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({start}, {start + 10})")
        spark.sql(f"DELETE FROM {name} WHERE id IN (3, 13)")
        hook.flush()
        assert hook.failed == 0, hook.errors
        program = hook.results[-1].manifest.program_hash  # type: ignore[union-attr]  # the DELETE's
        carried = hook.carried
        for step in steps:
            _procedure(spark, name, step, hook)
        hook.flush()
        assert (hook.failed, hook.skipped) == (0, 0), (steps, hook.errors)
        rewrites = sum(1 for s in steps if s.startswith("rewrite"))
        assert hook.carried == carried + rewrites, steps  # each rewrite committed a snapshot, and was carried onto
        assert len(_pyiceberg(spark_warehouse, name).metadata.snapshots) == 1, steps
        doc, shown = _verified_shown(ref, spark_warehouse)
        assert "content" not in doc["verdict"], (steps, doc)
        assert shown["program_hash"] == program, steps
        assert spark.sql(f"SELECT count(*) FROM {name}").first()[0] == 28  # type: ignore[index]

    name, path, _ = _delta(spark, hook, "'delta.enableDeletionVectors' = 'true'")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")  # deletion vectors, which REORG purges
    hook.flush()
    program = hook.results[-1].manifest.program_hash  # type: ignore[union-attr]
    carried = hook.carried
    spark.sql(f"REORG TABLE {name} APPLY (PURGE)")
    spark.sql(f"OPTIMIZE {name}")
    with session_conf(spark, "spark.databricks.delta.retentionDurationCheck.enabled", "false"):
        spark.sql(f"VACUUM {name} RETAIN 0 HOURS")
    _delta_log_cleanup(spark, name, path)
    hook.flush()
    assert (hook.carried, hook.failed, hook.skipped) == (carried + 2, 0, 0), hook.errors
    assert not (Path(path) / "_delta_log" / f"{0:020d}.json").exists(), "log cleanup removed nothing"
    doc, shown = _verified_shown(path, spark_warehouse)
    assert "content" not in doc["verdict"], doc
    assert shown["program_hash"] == program
    assert spark.table(name).count() == 26
