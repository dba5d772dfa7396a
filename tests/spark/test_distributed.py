"""Verification and hashing on Spark executors (carriers/spark/distributed.py, docs/distributed.md).

Every case is judged twice, locally (``verify_table``) and with the bytes hashed on the executors
(``attest.spark.verify``), and the two must agree on everything the verdict is made of: passed, level, verdict line,
codes with their paths, files and bytes checked. That executors really hashed is checked from Spark's side too (the
job group of the hashing job, in Spark's status tracker).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import attest.spark
from attest.tables import DataFile
from attest.verify.report import Report
from attest.verify.table import verify_table
from carriers.core import AttestedTable
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.spark.distributed import (
    ExecutorHasher,
    HashingStats,
    RoutedHasher,
    StorageRecipe,
    plan_buckets,
    storage_recipe,
)
from carriers.spark.errors import SparkJobError
from carriers.storage.base import local_path_of
from tests.conftest import required_hook
from tests.servers.stores import Bucket as S3

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
PROGRAM = "a" * 64


def _uid() -> str:
    return uuid.uuid4().hex[:8]


def _outcome(report: Report) -> dict[str, Any]:
    """Everything a verdict is made of (notes aside: the distributed one says where bytes were hashed)."""
    return {"passed": report.passed, "level": report.level, "verdict": report.verdict(),
            "errors": [(p.code.value, p.path) for p in report.errors], "files": report.files_checked,
            "bytes": report.bytes_checked}


def _both(spark: SparkSession, open_carrier: Callable[[], AttestedTable], *,
          version: str | None = None) -> tuple[dict[str, Any], Report]:
    """(the local outcome, the distributed report); fails unless they agree."""
    local = verify_table(open_carrier(), version=version, level="bytes")
    distributed = attest.spark.verify(spark, open_carrier(), version=version, level="bytes")
    assert _outcome(distributed) == _outcome(local), (distributed.human(), local.human())
    hashed_there = any("bytes hashed on Spark executors" in n for n in distributed.notes)
    assert hashed_there == (local.level == "bytes"), distributed.notes  # hashed on executors iff bytes were hashed
    return _outcome(local), distributed


def _flip_middle_byte(path: str) -> None:
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2] ^= 0xFF
    Path(path).write_bytes(bytes(data))


def _local(f: DataFile) -> str:
    path = local_path_of(f.location)
    assert path is not None
    return path


def _codes(outcome: dict[str, Any]) -> list[str]:
    return [code for code, _ in outcome["errors"]]


def _delta_path(spark: SparkSession, name: str) -> str:
    location = str(spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"])
    return location.removeprefix("file:")


hook = required_hook  # attest.spark.install(spark, policy="required") for the test (tests/conftest.py)


# ---- Delta ------------------------------------------------------------------------------------------------------
def test_delta_partitioned_with_deletion_vectors(spark: SparkSession, hook: Hook) -> None:
    name = f"dist_dv_{_uid()}"
    spark.sql(f"CREATE TABLE {name} (id INT, p STRING, s STRING) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO {name} SELECT id, CAST(id % 3 AS STRING), repeat('x', 200) FROM range(3000)")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")  # deletion vectors, not rewritten files
    hook.flush()
    assert hook.failed == 0, hook.errors
    path = _delta_path(spark, name)
    assert list(Path(path).rglob("deletion_vector_*.bin")), "Spark should have written deletion vectors"
    state = DeltaCarrier(path).state()
    kinds = {f.kind for f in state.live_files}
    assert kinds == {"data", "deletion_vector"} and len({f.path.split("/")[0] for f in state.live_files}) >= 3

    intact, _ = _both(spark, lambda: DeltaCarrier(path))
    assert intact["passed"] and intact["level"] == "bytes" and intact["files"] == len(state.live_files)

    # A data file changed in place (same size): the executors' hash disagrees exactly where the local one does.
    data = sorted((f for f in state.live_files if f.kind == "data"), key=lambda f: f.path)[0]
    original = Path(_local(data)).read_bytes()
    _flip_middle_byte(_local(data))
    tampered, _ = _both(spark, lambda: DeltaCarrier(path))
    assert tampered["errors"] == [("artifact_hash_mismatch", data.path)]
    # Gone: no executor can read it, reported as the local verifier reports it.
    os.remove(_local(data))
    missing, _ = _both(spark, lambda: DeltaCarrier(path))
    assert missing["errors"] == [("file_missing", data.path)]
    Path(_local(data)).write_bytes(original)
    assert _both(spark, lambda: DeltaCarrier(path))[0]["passed"]

    # A corrupt deletion vector: the engine cannot read the version, decided on the driver before any hashing.
    dv = next(f for f in state.live_files if f.kind == "deletion_vector")
    _flip_middle_byte(_local(dv))
    broken, _ = _both(spark, lambda: DeltaCarrier(path))
    assert not broken["passed"] and "table_unreadable" in _codes(broken)


def test_delta_stale_unattested_and_time_travel(spark: SparkSession, hook: Hook, tmp_path: Path) -> None:
    name = f"dist_stale_{_uid()}"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING delta")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    hook.flush()
    path = _delta_path(spark, name)
    attested = DeltaCarrier(path).read()
    assert attested is not None and attested.attested_version is not None
    hook.uninstall()  # the next write is not attested: the table goes stale
    spark.sql(f"INSERT INTO {name} VALUES (3, 'c')")
    stale, _ = _both(spark, lambda: DeltaCarrier(path))
    assert _codes(stale) == ["stale"]
    # The attested version itself still verifies, its bytes hashed on the executors.
    old, _ = _both(spark, lambda: DeltaCarrier(path), version=attested.attested_version)
    assert old["passed"] and old["level"] == "bytes"

    plain = tmp_path / "plain"
    write_deltalake(str(plain), pa.table({"x": [1, 2, 3]}))
    never, _ = _both(spark, lambda: DeltaCarrier(str(plain)))
    assert _codes(never) == ["unattested"]


def test_delta_on_an_object_store_reads_through_the_tables_own_options(spark: SparkSession, s3: S3) -> None:
    """Executors open s3:// with the table's storage options (handed over in the task), not with any of their own."""
    uri = s3.uri("t")
    data = pa.table({"p": ["a", "b", "c"] * 10, "v": list(range(30))})
    write_deltalake(uri, data, partition_by=["p"], storage_options=s3.storage_options)
    attest_after_write(uri, model="m", program_hash=PROGRAM, storage_options=s3.storage_options)

    def carrier() -> AttestedTable:
        return DeltaCarrier(uri, storage_options=s3.storage_options)

    intact, report = _both(spark, carrier)
    assert intact["passed"] and intact["files"] == 3
    assert any("3 file(s)" in n for n in report.notes)
    key = sorted(k for k in s3.keys("t/") if k.endswith(".parquet"))[0]
    s3.flip_byte(key)
    tampered, _ = _both(spark, carrier)
    assert tampered["errors"] == [("artifact_hash_mismatch", key.removeprefix("t/"))]


# ---- Iceberg ------------------------------------------------------------------------------------------------------
def _iceberg(warehouse: Path, ident: str) -> Callable[[], AttestedTable]:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.spark.session import pyiceberg_catalog_properties

    def open_carrier() -> AttestedTable:
        catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
        return IcebergCarrier(catalog.load_table(ident), catalog_name="iceberg")

    return open_carrier


def test_iceberg_partitioned_with_delete_files(spark: SparkSession, spark_warehouse: Path, hook: Hook) -> None:
    ns = f"dist{_uid()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, p STRING, s STRING) USING iceberg PARTITIONED BY (p) "
              "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT CAST(id AS INT), CAST(id % 3 AS STRING), repeat('y', 100) FROM range(900)")
    spark.sql(f"DELETE FROM {name} WHERE id % 5 = 0")  # position delete files
    hook.flush()
    assert hook.failed == 0, hook.errors
    open_carrier = _iceberg(spark_warehouse, f"{ns}.t")
    state = open_carrier().state()
    assert {f.kind for f in state.live_files} == {"data", "delete"}

    intact, _ = _both(spark, open_carrier)
    assert intact["passed"] and intact["level"] == "bytes" and intact["files"] == len(state.live_files)

    delete = next(f for f in state.live_files if f.kind == "delete")
    _flip_middle_byte(_local(delete))
    tampered, _ = _both(spark, open_carrier)
    assert tampered["errors"] == [("artifact_hash_mismatch", delete.path)]

    hook.uninstall()
    spark.sql(f"INSERT INTO {name} VALUES (5000, 'z', 'late')")
    stale, _ = _both(spark, open_carrier)
    assert _codes(stale) == ["stale"]


def test_iceberg_java_manifest_summaries_of_every_transform_verify(spark: SparkSession, spark_warehouse: Path,
                                                                    hook: Hook) -> None:
    """Java writes the manifest list's partition summaries (recipe-attest checks them against the manifests): days,
    hours, bucket and truncate partitions, with nulls and merge-on-read deletes, verify; a bound narrowed on the
    Java-written list is caught."""
    from pyiceberg.manifest import clear_manifest_cache, read_manifest_list, write_manifest_list

    ns = f"tr{_uid()}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING, ts TIMESTAMP, d DATE) USING iceberg "
              "PARTITIONED BY (hours(ts), bucket(4, id), truncate(2, s), days(d)) "
              "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT id, IF(id % 7 = 0, NULL, concat('k', id % 5)), "
              "timestamp_seconds(1767225600 + id * 5000), IF(id % 11 = 0, NULL, date_add(DATE'2026-01-01', "
              "CAST(id % 3 AS INT))) FROM range(60)")
    spark.sql(f"DELETE FROM {name} WHERE id % 13 = 0")
    hook.flush()
    assert hook.failed == 0, hook.errors
    open_carrier = _iceberg(spark_warehouse, f"{ns}.t")
    report = verify_table(open_carrier())
    assert report.passed and report.level == "bytes", report.human()

    carrier = open_carrier()
    table = carrier.table  # type: ignore[attr-defined]
    snap = table.current_snapshot()
    manifests = list(read_manifest_list(table.io.new_input(snap.manifest_list)))
    data = next(m for m in manifests if int(m.content.value) == 0 and m.partitions)
    bucket = next(i for i, f in enumerate(table.spec().fields) if f.name.startswith("id_bucket"))
    data.partitions[bucket]._data[2] = data.partitions[bucket].upper_bound  # lower_bound := upper_bound
    listing = local_path_of(snap.manifest_list)
    assert listing is not None
    with write_manifest_list(format_version=2, output_file=table.io.new_output(f"file://{listing}.new"),
                             snapshot_id=snap.snapshot_id, parent_snapshot_id=snap.parent_snapshot_id,
                             sequence_number=snap.sequence_number, avro_compression="null") as writer:
        writer.add_manifests(manifests)
    Path(f"{listing}.new").replace(listing)
    clear_manifest_cache()
    report = verify_table(open_carrier(), level="schema")
    assert any(p.code.value == "table_inconsistent" and "id_bucket" in p.message for p in report.errors), \
        report.human()


# ---- the hook -----------------------------------------------------------------------------------------------------
def test_the_hook_hashes_a_large_write_on_the_executors(spark: SparkSession) -> None:
    """Above the threshold (lowered here: CI tables are small) the hook's hashes come from an executor job; the
    attestation is the same as a driver-hashed one would be, and verifies."""
    big = attest.spark.install(spark, policy="required", executor_hash_bytes=1)
    try:
        name = f"dist_hook_{_uid()}"
        spark.sql(f"CREATE TABLE {name} USING delta PARTITIONED BY (p) AS "
                  "SELECT id, CAST(id % 4 AS STRING) AS p, sha2(CAST(id AS STRING), 256) AS h FROM range(20000)")
        big.flush()
    finally:
        big.uninstall()
    assert (big.attested, big.failed) == (1, 0), big.errors
    stats = big.hashing
    assert stats.executor_files >= 4 and stats.driver_files == 0 and stats.fallbacks == 0
    tracker = spark.sparkContext.statusTracker()
    jobs = [j for g in stats.job_groups for j in tracker.getJobIdsForGroup(g)]
    assert jobs and all(tracker.getJobInfo(j).status == "SUCCEEDED" for j in jobs)  # type: ignore[union-attr]
    path = _delta_path(spark, name)
    report = verify_table(DeltaCarrier(path), level="bytes")  # hashed here, independently
    assert report.passed and report.files_checked == stats.executor_files

    small = attest.spark.install(spark, policy="required", executor_hash_bytes=1 << 20)  # below it: the driver
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1, '1', 'x')")
        small.flush()
    finally:
        small.uninstall()
    assert small.attested == 1 and small.hashing.executor_files == 0 and small.hashing.driver_files == 1


def test_the_default_threshold_keeps_hashing_on_the_driver_under_a_local_master(spark: SparkSession) -> None:
    """Local executors are the driver's own cores: by default the hook never pays a job for them; a cluster gets
    EXECUTOR_HASH_BYTES, and an explicit threshold applies to any master."""
    from carriers.spark.distributed import EXECUTOR_HASH_BYTES, executor_threshold

    class Cluster:
        class sparkContext:  # the attribute a SparkSession has
            master = "spark://head:7077"

    assert executor_threshold(spark) is None and executor_threshold(spark, 5) == 5
    assert executor_threshold(Cluster()) == EXECUTOR_HASH_BYTES
    hook = attest.spark.install(spark, policy="required")
    try:
        name = f"dist_default_{_uid()}"
        spark.sql(f"CREATE TABLE {name} USING delta AS SELECT id FROM range(1000)")
        hook.flush()
    finally:
        hook.uninstall()
    assert hook.attested == 1 and hook.hashing.executor_files == 0 and hook.hashing.driver_files >= 1


# ---- failures and planning ----------------------------------------------------------------------------------------
def test_a_failed_executor_job_is_coded_and_the_hook_falls_back(spark: SparkSession, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from carriers.storage.hashing import hash_locations

    write_deltalake(str(tmp_path / "t"), pa.table({"x": [1]}))
    carrier = DeltaCarrier(str(tmp_path / "t"))
    files = [DataFile(path="x.bin", size=3, location="s3://no-bucket/x.bin")]
    hasher = ExecutorHasher(spark, carrier.storage)
    # An executor that cannot open the table's filesystem: the job fails, and says why, with a code.
    hasher.recipe = StorageRecipe("fileio", "s3://no-bucket", {}, io_class="no_such_module:FileIO")
    with pytest.raises(SparkJobError) as caught:
        hasher.hash_files(files)
    assert caught.value.code.value == "spark_unavailable" and "no_such_module" in caught.value.message

    # The hook's hasher redoes a failed executor job on the driver: same bytes, same hashes, never unattested.
    def failing(self: ExecutorHasher, files: Any, *, progress: Any = None) -> dict[str, str]:
        raise SparkJobError("executors are gone")

    monkeypatch.setattr(ExecutorHasher, "hash_files", failing)
    routed = RoutedHasher(spark, carrier.storage, threshold=1, stats=HashingStats())
    live = list(carrier.state().live_files)
    hashes = routed.hash_files(live)
    assert routed.stats.fallbacks == 1 and routed.stats.driver_files == len(live) == 1
    assert hashes == hash_locations(carrier.storage, live) and set(hashes) == {f.path for f in live}


def test_buckets_spread_bytes_and_keep_every_file_once() -> None:
    files = [DataFile(path=f"f{i}", size=size, location=f"/x/f{i}")
             for i, size in enumerate([100, 1, 1, 1, 50, 50, 0, 7, 3, 99])]
    buckets = plan_buckets(files, 3)
    assert sorted(p for b in buckets for p, _ in b) == sorted(f.path for f in files)
    loads = sorted(sum(next(f.size for f in files if f.path == p) for p, _ in b) for b in buckets)
    assert loads[-1] <= 110  # the 100-byte file alone-ish, the rest packed around it (LPT)
    assert len(plan_buckets(files[:2], 8)) == 2 and plan_buckets([], 4) == []


def test_storage_recipes_never_show_credentials_and_rebuild_the_same_filesystem(tmp_path: Path) -> None:
    import pickle

    from carriers.storage.delta import DeltaStorage

    recipe = storage_recipe(DeltaStorage(str(tmp_path), {"AWS_SECRET_ACCESS_KEY": "hunter2"}))
    assert "hunter2" not in repr(recipe)
    rebuilt = pickle.loads(pickle.dumps(recipe)).open()
    assert isinstance(rebuilt, DeltaStorage) and rebuilt.options == {"AWS_SECRET_ACCESS_KEY": "hunter2"}


# ---- the command line -----------------------------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_cli_verify_and_audit_with_spark_agree_with_local(tmp_path: Path) -> None:
    """Fresh processes, as a user runs them: ``--spark`` changes where bytes are hashed, nothing else."""
    lake = tmp_path / "lake"
    for name in ("intact", "tampered", "stale"):
        write_deltalake(str(lake / name), pa.table({"p": ["a", "b"], "v": [1, 2]}), partition_by=["p"])
        attest_after_write(str(lake / name), model=name, program_hash=PROGRAM)
    state = DeltaCarrier(str(lake / "tampered")).state()
    _flip_middle_byte(_local(state.live_files[0]))
    write_deltalake(str(lake / "stale"), pa.table({"p": ["c"], "v": [3]}), partition_by=["p"], mode="append")
    shutil.copytree(lake / "intact", tmp_path / "single")
    for i in range(3):  # compacted after it was attested: checked by content, the added file digested on executors
        write_deltalake(str(lake / "compacted"), pa.table({"p": ["a", "b"], "v": [i, i]}), partition_by=["p"],
                        mode="append")
    attest_after_write(str(lake / "compacted"), model="compacted", program_hash=PROGRAM)
    DeltaTable(str(lake / "compacted")).optimize.compact()

    local = _cli("audit", str(lake), "--level", "bytes", "--json")
    spark = _cli("audit", str(lake), "--level", "bytes", "--json", "--spark", "--master", "local[2]")
    assert spark.returncode == local.returncode == 1, spark.stdout + spark.stderr
    rows = {r["table"]: (r["outcome"], r["code"]) for r in json.loads(local.stdout)["tables"]}
    assert {r["table"]: (r["outcome"], r["code"]) for r in json.loads(spark.stdout)["tables"]} == rows
    assert sorted(rows.values()) == [("NOT VERIFIED", "artifact_hash_mismatch"), ("STALE", "stale"),
                                     ("VERIFIED", None), ("VERIFIED", None)]

    one = _cli("verify", str(tmp_path / "single"), "--json", "--spark", "--master", "local[1]")
    report = json.loads(one.stdout)  # stdout is exactly one JSON object: the JVM's output went to stderr
    assert one.returncode == 0 and report["passed"] and report["level"] == "bytes"
    assert any("bytes hashed on Spark executors (local[1])" in n for n in report["notes"])
    refused = _cli("verify", str(tmp_path / "m.json"), "--spark", "--json")
    assert refused.returncode == 2 and json.loads(refused.stdout)["errors"][0]["code"] == "invalid_argument"
