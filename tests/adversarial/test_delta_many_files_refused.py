"""A table of 5,000 files in one folder (the benchmark's builder: statistics on every add, a checkpoint, JSON commits
after it), so that every fast path of a large verification is in force — the folder listed once for confinement
(carriers.core._plain_by_folder), the checkpoint read in columns, the statistics judged in bulk, the reader views
compared without encoding them (docs/scale.md) — and one file among the 5,000 made hostile: still refused, as on a
table of three files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import bench_million_files as bench
from carriers import core
from tests.adversarial.conftest import assert_refused, verify

ROOT = Path(__file__).resolve().parent.parent.parent
FILES = 5_000
VICTIM = "d0000/part-00002500.parquet"  # listed in the checkpoint
GONE = ("d0000/part-00000100.parquet", "d0000/part-00004500.parquet")  # one of the checkpoint, one of a JSON commit


def _commit(table: Path, actions: list[dict[str, object]]) -> None:
    log = table / "_delta_log"
    version = max(int(p.name[:20]) for p in log.glob("*.json")) + 1
    now = int(time.time() * 1000)
    lines = [{"commitInfo": {"timestamp": now, "operation": "DELETE", "operationParameters": {}}}, *actions]
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def _remove(path: str) -> dict[str, object]:
    return {"remove": {"path": path, "deletionTimestamp": int(time.time() * 1000), "dataChange": True}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5,000 files in 5 commits, checkpointed at version 3, a commit removing two files; attested."""
    table = tmp_path_factory.mktemp("many") / "t"
    bench.build_delta(table, FILES, after=2)
    assert (table / "_delta_log" / f"{3:020d}.checkpoint.parquet").exists()
    _commit(table, [_remove(p) for p in GONE])
    for p in GONE:
        (table / p).unlink()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", bench.RECORD_NO_CONTENT, str(table)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return table


@pytest.fixture
def table(recorded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "t"
    shutil.copytree(recorded, copy, copy_function=os.link)  # hard links: a victim is unlinked, never written
    return copy


def test_the_table_verifies_without_its_removed_files(table: Path) -> None:
    assert FILES >= 16 * core.FOLDER_LISTING_MIN  # the folder is listed, not each file lstat'ed
    rc, doc = verify(str(table), "--level", "files")
    assert rc == 0, doc
    assert doc["files_checked"] == FILES - len(GONE)


def test_a_symlink_among_many_files_is_refused(table: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.parquet"
    victim = table / VICTIM
    shutil.copy(victim, outside)  # the same byte: only confinement can tell
    victim.unlink()
    victim.symlink_to(outside)
    assert_refused(table, "file_outside_table", "--level", "files")


def test_a_symlinked_folder_of_many_files_is_refused(table: Path, tmp_path: Path) -> None:
    folder = table / "d0000"
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere, target_is_directory=True)
    assert_refused(table, "file_outside_table", "--level", "files")


@pytest.mark.timeout(300)
def test_a_fifo_among_many_files_is_refused_without_hanging(table: Path) -> None:
    victim = table / VICTIM
    victim.unlink()
    os.mkfifo(victim)
    assert_refused(table, "file_missing")


def test_a_removed_file_brought_back_is_not_live(table: Path) -> None:
    (table / GONE[0]).write_bytes(b"x")  # the bytes are back; the log still removes it
    rc, doc = verify(str(table), "--level", "files")
    assert rc == 0, doc
    assert doc["files_checked"] == FILES - len(GONE)


def test_a_file_removed_after_the_attestation_is_refused(table: Path) -> None:
    _commit(table, [_remove(VICTIM)])
    assert_refused(table, "stale", "--level", "files")  # a data commit after the attested version


def test_a_file_added_after_the_attestation_is_refused(table: Path) -> None:
    (table / GONE[0]).write_bytes(b"x")
    _commit(table, [{"add": {"path": GONE[0], "partitionValues": {}, "size": 1, "dataChange": True,
                             "modificationTime": int(time.time() * 1000)}}])
    assert_refused(table, "stale", "--level", "files")
