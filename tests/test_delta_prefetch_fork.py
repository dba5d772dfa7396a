"""The command line's head start in a child process (carriers.delta.prefetch.ForkedDeltaPrefetch), for Delta logs of
many files: the same listing and hashing as the thread, the same verdicts, nothing left running.

The child is forked only from a fresh process (the ``attest`` program): each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from carriers.delta.prefetch import FORK_MIN_COMMIT_BYTES, DeltaPrefetch, ForkedDeltaPrefetch, _commit_bytes
from tests.conftest import run_cli
from tests.test_cli_fast import _delta

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: start the head start as the command line does, then (optionally) cancel it or verify the
# table through it; print what happened as JSON.
_SCRIPT = """
import json, os, sys
from carriers.delta.prefetch import DeltaPrefetch
table, mode = sys.argv[1], sys.argv[2]
prefetch = DeltaPrefetch.start(table, may_fork=True)
out = {"kind": type(prefetch).__name__}
if mode == "cancel":
    prefetch.cancel()
prefetch._thread.join(60)
out["reading"] = prefetch._thread.is_alive()
out["listed"] = len(prefetch.sizes)
out["hashed"] = prefetch._hashes is not None
if hasattr(prefetch, "_pid"):
    try:
        os.waitpid(prefetch._pid, os.WNOHANG)
        out["reaped"] = False
    except ChildProcessError:
        out["reaped"] = True
if mode == "verify":
    from tests.test_cli_fast import _verify_with_prefetch
    from pathlib import Path
    report, used = _verify_with_prefetch(Path(table), prefetch)
    out.update(used=used, passed=report.passed, codes=[e.code.value for e in report.errors])
print(json.dumps(out))
"""


def _fresh(table: Path, mode: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(table), mode], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table whose log is past FORK_MIN_COMMIT_BYTES: one file per partition."""
    table = tmp_path_factory.mktemp("fork") / "t"
    _delta(table, 300, partitioned=True)
    assert _commit_bytes(str(table / "_delta_log")) >= FORK_MIN_COMMIT_BYTES
    return table


def _copy(table: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(table, to, symlinks=True)
    return to


def test_a_log_of_many_files_is_hashed_in_a_child_with_the_same_verdict(many: Path) -> None:
    out = _fresh(many, "verify")
    assert out["kind"] == "ForkedDeltaPrefetch" and out["listed"] == 300 and out["hashed"]
    assert out["used"] and out["passed"], out
    assert out["reaped"] and not out["reading"]


def test_a_tampered_file_fails_through_the_child(many: Path, tmp_path: Path) -> None:
    table = _copy(many, tmp_path / "t")
    victim = next(table.glob("p=*/*.parquet"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the hash tells
    victim.write_bytes(bytes(data))
    out = _fresh(table, "verify")
    assert out["kind"] == "ForkedDeltaPrefetch" and out["used"]
    assert not out["passed"] and "artifact_hash_mismatch" in out["codes"], out


def test_a_cancelled_child_is_killed_and_reaped(many: Path) -> None:
    out = _fresh(many, "cancel")
    assert out["kind"] == "ForkedDeltaPrefetch" and not out["hashed"] and out["reaped"] and not out["reading"]


def test_the_child_lists_as_the_thread_does_and_never_follows_a_symlink(many: Path, tmp_path: Path) -> None:
    table = _copy(many, tmp_path / "t")
    victim = next(table.glob("p=*/*.parquet"))
    moved = tmp_path / "elsewhere.parquet"
    victim.rename(moved)
    victim.symlink_to(moved)
    out = _fresh(table, "verify")
    assert out["kind"] == "ForkedDeltaPrefetch" and out["listed"] == 0 and not out["used"], out
    assert not out["passed"] and "file_outside_table" in out["codes"], out  # the ordinary path's verdict


def test_the_command_line_verifies_a_log_of_many_files(many: Path, tmp_path: Path) -> None:
    """End to end, as a user runs it (the program forks: a fresh process): verified, and a changed byte is caught."""
    proc = run_cli("verify", str(many), "--level", "bytes", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["passed"], proc.stdout + proc.stderr
    table = _copy(many, tmp_path / "t")
    victim = sorted(table.glob("p=*/*.parquet"))[-1]
    data = bytearray(victim.read_bytes())
    data[-100] ^= 0x01
    victim.write_bytes(bytes(data))
    proc = run_cli("verify", str(table), "--level", "bytes", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and "artifact_hash_mismatch" in [e["code"] for e in doc["errors"]], doc


def test_no_child_unless_the_caller_is_a_fresh_process_with_a_long_log(many: Path, tmp_path: Path) -> None:
    """A caller's process (main() called from a notebook or a test) gets the thread: a child forked there could wait
    forever on hashing threads the process had started. Nor with another thread running, nor for a short log."""
    for prefetch in (DeltaPrefetch.start(str(many)), DeltaPrefetch.start(str(many), may_fork=False)):
        assert type(prefetch) is DeltaPrefetch
        prefetch.cancel()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        prefetch = DeltaPrefetch.start(str(many), may_fork=True)
        assert type(prefetch) is DeltaPrefetch
        prefetch.cancel()
    finally:
        release.set()
        other.join()
    _delta(tmp_path / "short", 3)
    assert _commit_bytes(str(tmp_path / "short" / "_delta_log")) < FORK_MIN_COMMIT_BYTES
    assert _fresh(tmp_path / "short", "verify")["kind"] == "DeltaPrefetch"
    assert not issubclass(DeltaPrefetch, ForkedDeltaPrefetch) and os.getpid() > 0
