"""A Delta version whose commit file is removed while a checkpoint of that version stays in the log.

delta-rs 1.x loads such a version from the checkpoint alone; Spark (delta-spark 4.x) does not read it: ``versionAsOf``
of it fails with "Could not find any delta files for version N", and when it is the latest version no read of the
table succeeds at all, plain or by version (measured below). On the code before, ``attest verify --version 1`` of a
table whose commit 1 (the attestation's follow-up) was removed said ``VERIFIED``, and so did a plain ``attest verify``
when that version was the latest, where Spark read nothing. Now both are ``table_inconsistent``
(``DeltaCarrier._check_commit_files``); the other versions, which Spark reads, are judged as before.
Log cleanup keeps the commit of the checkpoint it keeps (delta-rs's ``cleanup_metadata``, measured: it deletes below
that checkpoint's version).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, codes, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _table(path: Path, *, later: bool) -> Path:
    """[1] at version 0, attested by the follow-up commit 1, checkpointed at 1, whose commit file is then removed;
    ``later``: [666] appended at version 2 first (so version 1 is not the latest)."""
    shutil.rmtree(path, ignore_errors=True)
    write_deltalake(str(path), _ids(1))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    if later:
        write_deltalake(str(path), _ids(666), mode="append")
    DeltaTable(str(path), version=1).create_checkpoint()
    (path / "_delta_log" / f"{1:020d}.json").unlink()
    return path


def _delta_rs(path: Path, version: int | None = None) -> list[Any]:
    return sorted(DeltaTable(str(path), version=version).to_pyarrow_table().column("id").to_pylist())


def test_a_version_behind_its_checkpoint_gets_no_verdict(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", later=True)
    assert _delta_rs(table, 1) == [1]  # delta-rs reads it, from the checkpoint
    doc = assert_refused(table, "table_inconsistent", "--version", "1")
    assert "00000000000000000001.json" in str(doc), doc
    rc, doc = verify(str(table), "--version", "2")
    assert rc != 0 and codes(doc) == ["stale"], doc  # version 2 (Spark reads it): judged as before


def test_the_latest_version_behind_its_checkpoint_gets_no_verdict(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", later=False)
    assert _delta_rs(table) == [1]
    assert_refused(table, "table_inconsistent")
    assert_refused(table, "table_inconsistent", "--version", "0")  # Spark reads no version of it


def test_a_version_whose_commit_and_checkpoint_are_both_gone_is_not_found(tmp_path: Path) -> None:
    """Delta's log cleanup: versions below the kept checkpoint, commit and checkpoint gone (as before)."""
    table = _table(tmp_path / "t", later=True)
    DeltaTable(str(table), version=2).create_checkpoint()
    for name in (f"{0:020d}.json", f"{1:020d}.checkpoint.parquet"):
        (table / "_delta_log" / name).unlink()
    assert_refused(table, "version_not_found", "--version", "1")


def test_log_cleanup_keeps_the_commit_of_its_checkpoint_and_verifies(tmp_path: Path) -> None:
    """delta-rs's ``cleanup_metadata`` (retention 0) deletes below the checkpoint and keeps its commit: VERIFIED."""
    table = tmp_path / "t"
    write_deltalake(str(table), _ids(0), configuration={"delta.logRetentionDuration": "interval 0 seconds"})
    write_deltalake(str(table), _ids(1), mode="append")
    attest_after_write(str(table), model="orders", program_hash=PROGRAM)
    DeltaTable(str(table)).create_checkpoint()
    time.sleep(0.05)  # the commits' modification times strictly before the cutoff
    DeltaTable(str(table)).cleanup_metadata()
    names = sorted(p.name for p in (table / "_delta_log").iterdir() if not p.name.startswith("_"))
    assert names == [f"{2:020d}.checkpoint.parquet", f"{2:020d}.json"], names
    rc, doc = verify(str(table))
    assert rc == 0, doc


@pytest.mark.spark
def test_spark_reads_no_version_behind_its_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    def read(path: Path, version: int | None = None) -> list[Any]:
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return sorted(r[0] for r in reader.load(str(path)).select("id").collect())

    later = _table(tmp_path / "later", later=True)
    with pytest.raises(Exception, match="Could not find any delta files for version 1"):
        read(later, 1)
    assert (read(later, 0), read(later, 2), read(later)) == ([1], [1, 666], [1, 666])
    latest = _table(tmp_path / "latest", later=False)
    for version in (None, 0, 1):
        with pytest.raises(Exception, match="Could not find any delta files for version 1"):
            read(latest, version)
