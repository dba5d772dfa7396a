"""The command line's fast paths (docs/hashing.md, "The command line"): they must never change a verdict.

- the head start: hashing begun from the raw command line (manifests: attest.verify.artifacts.EarlyHashes; local Delta
  tables: carriers.delta.prefetch) is used only when the real parse agrees, and only for exactly the files the
  verification resolves itself;
- one sub-parser per run (attest.cli.parser.build_parser(command)) parses as the whole parser does;
- a read-only command ends with os._exit after flushing and running the exit handlers (attest.cli.run);
- delta-rs's add actions are read without pyarrow, with the same values.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.cli import main
from attest.cli.parser import COMMANDS, build_parser
from attest.fast.startup import head_start as _head_start
from attest.verify.artifacts import EarlyHashes
from carriers.core import canonical_relative
from carriers.delta.prefetch import PREFETCH_MAX_FILES, DeltaPrefetch, PrefetchedHasher, _plain
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "a" * 64


def _manifest(tmp_path: Path, valid_doc: dict[str, Any], payloads: dict[str, bytes]) -> Path:
    art = tmp_path / "art"
    art.mkdir(exist_ok=True)
    outputs = []
    for name, payload in payloads.items():
        (art / name).write_bytes(payload)
        outputs.append({"path": name, "hash": blake3.blake3(payload).hexdigest()})
    valid_doc["output_hashes"] = outputs
    path = tmp_path / "m.json"
    path.write_text(json.dumps(valid_doc))
    return path


# ---- the head start: only from a command line it reads plainly -------------------------------------------------
@pytest.mark.parametrize("extra", [
    ["--level", "schema"], ["--level=schema"], ["--spark"], ["--allow-external-files"], ["--art", "x"],
    ["second-target"], ["--storage-option", "k=v"],
])
def test_the_head_start_starts_nothing_on_a_line_it_does_not_read_plainly(
        tmp_path: Path, valid_doc: dict[str, Any], extra: list[str]) -> None:
    m = _manifest(tmp_path, valid_doc, {"a.bin": b"a"})
    assert _head_start(["verify", str(m), "--artifacts-dir", str(tmp_path / "art"), *extra]) is None


@pytest.mark.parametrize("line", [[], ["digest", "x.json"], ["verify", "-", "--artifacts-dir", "."],
                                  ["verify", "iceberg://c/ns.t"], ["verify", "s3://b/t"]])
def test_the_head_start_is_only_for_local_verifies(line: list[str]) -> None:
    assert _head_start(line) is None


def test_a_head_start_the_parse_disagrees_with_is_cancelled_and_unused(tmp_path: Path,
                                                                       valid_doc: dict[str, Any]) -> None:
    m = _manifest(tmp_path, valid_doc, {"a.bin": b"a"})
    head = _head_start(["verify", str(m), "--artifacts-dir", str(tmp_path / "art")])
    assert head is not None and isinstance(head.work, EarlyHashes)
    agreeing = argparse.Namespace(command="verify", target=str(m), artifacts_dir=str(tmp_path / "art"), level=None,
                                  version=None)
    assert head.agreeing(agreeing) is head.work
    other = argparse.Namespace(**{**vars(agreeing), "artifacts_dir": str(tmp_path)})
    assert head.agreeing(other) is None and head.work._cancelled


def test_early_resolution_is_reused_only_for_the_same_entries_under_the_same_directory(
        tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    m = _manifest(tmp_path, valid_doc, {"a.bin": b"a", "b.bin": b"b"})
    early = EarlyHashes.start(m.read_bytes(), tmp_path / "art")
    assert early is not None
    outputs = json.loads(m.read_text())["output_hashes"]
    assert early.resolution(outputs, tmp_path / "art") is not None
    assert early.resolution(outputs, str(tmp_path / "art") + "/") is not None  # the same directory, spelled otherwise
    assert early.resolution(outputs[:1], tmp_path / "art") is None
    assert early.resolution([{**outputs[0], "path": "b.bin"}, outputs[1]], tmp_path / "art") is None
    assert early.resolution(outputs, tmp_path) is None


def test_verdicts_through_the_head_start_match_verdicts_without_it(tmp_path: Path,
                                                                   valid_doc: dict[str, Any]) -> None:
    m = _manifest(tmp_path, valid_doc, {f"f{i}.bin": os.urandom(100 + i) for i in range(20)})
    art = str(tmp_path / "art")
    assert main(["verify", str(m), "--artifacts-dir", art]) == 0
    (tmp_path / "art" / "f7.bin").write_bytes(os.urandom(107))  # same size, other bytes
    out = run_cli("verify", str(m), "--artifacts-dir", art, "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    codes = [e["code"] for e in json.loads(out.stdout)["errors"]]
    assert codes == ["artifact_hash_mismatch"]
    (tmp_path / "art" / "f7.bin").unlink()
    (tmp_path / "outside.bin").write_bytes(b"x")
    (tmp_path / "art" / "f7.bin").symlink_to(tmp_path / "outside.bin")
    out = run_cli("verify", str(m), "--artifacts-dir", art, "--json")
    assert out.returncode == 1 and [e["code"] for e in json.loads(out.stdout)["errors"]] == ["artifact_outside_root"]


# ---- the Delta head start ---------------------------------------------------------------------------------------
def test_plain_log_paths_are_exactly_the_ones_canonical_relative_keeps() -> None:
    """The prefetch reads a path literally only where the carrier would (carriers.core.canonical_relative)."""
    alphabet = "aZ09-._~!$&'()*+,;=:@/% é\\\x00"
    rng = random.Random(12)
    samples = ["p=1/part-0.parquet", "a", "./a", "a/../b", "a//b", "/abs", "s3://b/k", "c:/x", "x/c:y", ".hidden/f",
               "%41", "a%2Fb", "ü/f", "a b"]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(5000)]
    for raw in samples:
        if _plain(raw):
            assert canonical_relative(raw) == (raw, ""), raw


def _delta(path: Path, files: int, *, partitioned: bool = False) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    data = pa.table({"p": list(range(files)), "b": [os.urandom(2000) for _ in range(files)]})
    write_deltalake(str(path), data, partition_by=["p"] if partitioned else None)
    attest_after_write(str(path), model="t", program_hash=PROGRAM)


def _verify_with_prefetch(table: Path, prefetch: DeltaPrefetch) -> tuple[Any, bool]:
    from attest.verify.table import verify_state
    from carriers.refs import open_table

    carrier = open_table(str(table))
    hasher = PrefetchedHasher(prefetch, carrier.storage)
    return verify_state(carrier.state(None), carrier, level="bytes", hasher=hasher), hasher.used


def test_the_prefetch_serves_a_plain_table_and_the_verdict_is_the_same(tmp_path: Path) -> None:
    _delta(tmp_path / "t", 3, partitioned=True)
    prefetch = DeltaPrefetch.start(str(tmp_path / "t"))
    assert prefetch is not None
    report, used = _verify_with_prefetch(tmp_path / "t", prefetch)
    assert used and report.passed and report.level == "bytes" and report.files_checked == 3


def test_a_tampered_file_fails_through_the_prefetch(tmp_path: Path) -> None:
    _delta(tmp_path / "t", 2)
    victim = next((tmp_path / "t").glob("*.parquet"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    out = run_cli("verify", str(tmp_path / "t"), "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "artifact_hash_mismatch" in {e["code"] for e in json.loads(out.stdout)["errors"]}


def test_a_commit_landing_after_the_prefetch_makes_it_step_aside(tmp_path: Path) -> None:
    """The prefetch listed version 1's files; the carrier then sees version 2 with one more file: the prefetched
    hashes are not of exactly its files, so they are not used, and the verdict is the carrier's."""
    import pyarrow as pa
    from deltalake import write_deltalake

    _delta(tmp_path / "t", 2)
    prefetch = DeltaPrefetch.start(str(tmp_path / "t"))
    assert prefetch is not None
    prefetch._thread.join()
    write_deltalake(str(tmp_path / "t"), pa.table({"p": [9], "b": [b"x"]}), mode="append")
    report, used = _verify_with_prefetch(tmp_path / "t", prefetch)
    assert not used and not report.passed  # the appended version is unattested (stale), judged without the prefetch


@pytest.mark.parametrize("layout", ["many files", "symlinked file", "symlinked folder", "checkpoint"])
def test_the_prefetch_steps_aside_where_it_does_not_apply(tmp_path: Path, layout: str) -> None:
    table = tmp_path / "t"
    _delta(table, PREFETCH_MAX_FILES + 1 if layout == "many files" else 2,
           partitioned=layout in ("many files", "symlinked folder"))
    if layout == "symlinked file":
        victim = next(table.glob("*.parquet"))
        moved = tmp_path / "elsewhere.parquet"
        victim.rename(moved)
        victim.symlink_to(moved)
    if layout == "symlinked folder":  # a partition folder leading outside the table: its file is never opened
        folder = next(table.glob("p=*"))
        moved = tmp_path / "elsewhere"
        folder.rename(moved)
        folder.symlink_to(moved, target_is_directory=True)
    if layout == "checkpoint":
        from deltalake import DeltaTable

        DeltaTable(str(table)).create_checkpoint()
    prefetch = DeltaPrefetch.start(str(table))
    assert prefetch is not None
    prefetch._thread.join()
    assert prefetch.sizes == {}  # nothing listed, nothing hashed
    report, used = _verify_with_prefetch(table, prefetch)
    assert not used
    if layout.startswith("symlinked"):  # the carrier's confinement decides, as without a prefetch
        assert "file_outside_table" in {p.code.value for p in report.errors}
    else:
        assert report.passed


def test_the_prefetch_reports_progress_while_it_is_waited_for(tmp_path: Path) -> None:
    _delta(tmp_path / "t", 3, partitioned=True)
    prefetch = DeltaPrefetch.start(str(tmp_path / "t"))
    assert prefetch is not None
    seen: list[tuple[int, int, int]] = []
    files = [str(p.resolve()) for p in (tmp_path / "t").glob("*/*.parquet")]
    hashes = prefetch.take(files, lambda *a: seen.append(a))
    assert hashes is not None and set(hashes) == set(files)
    assert seen[-1] == (3, 3, sum(os.path.getsize(f) for f in files))
    assert all(done < total for done, total, _ in seen[:-1])  # the bar closes only at the end
    assert len(files) == 3 and prefetch.take(files[:2]) is None  # not exactly its files: nothing


def test_a_table_verify_through_the_cli_takes_the_head_start(tmp_path: Path) -> None:
    _delta(tmp_path / "t", 2)
    head = _head_start(["verify", str(tmp_path / "t"), "--level", "bytes", "--json"])
    assert head is not None and isinstance(head.work, DeltaPrefetch)
    assert _head_start(["verify", str(tmp_path / "t"), "--level", "files"]) is None
    assert _head_start(["verify", str(tmp_path / "t"), "--version", "x"]) is None
    assert main(["verify", str(tmp_path / "t")]) == 0


# ---- the parser: one command's parser parses as the whole one --------------------------------------------------
@pytest.mark.parametrize("line", [
    ["verify", "m.json", "--artifacts-dir", "d", "--json"], ["verify", "t", "--version", "3", "--level", "files"],
    ["digest", "x.json"], ["schema", "--json"], ["show", "t", "--inputs"], ["lineage", "t", "--format", "dot"],
    ["audit", "a", "b", "--format", "csv"], ["record", "t", "--model", "m", "--sql", "select 1"],
    ["keygen", "--out", "k"], ["publish", "iceberg://c/n.t", "--branch", "b"],
])
def test_one_commands_parser_parses_as_the_whole_parser(line: list[str]) -> None:
    assert vars(build_parser(line[0]).parse_args(line)) == vars(build_parser().parse_args(line))


def test_the_top_level_help_still_lists_every_command() -> None:
    out = run_cli("--help")
    assert out.returncode == 0 and all(c in out.stdout for c in COMMANDS)
    out = run_cli("no-such-command")
    assert out.returncode == 2 and "invalid choice" in out.stderr


# ---- the quick exit -----------------------------------------------------------------------------------------------
def test_the_quick_exit_runs_exit_handlers_flushes_and_keeps_the_code() -> None:
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('handler ran'))\n"
            "sys.stdout.write('x' * 200000)\n"
            "from attest.fast.startup import end_now as _end_now\n"
            "_end_now(3)\n"
            "print('not reached')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 3
    assert out.stdout.startswith("x" * 200000) and out.stdout.endswith("handler ran\n")


def test_the_quick_exit_waits_for_a_running_non_daemon_thread() -> None:
    code = ("import threading, time\n"
            "from attest.fast.startup import end_now as _end_now\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.3), print('thread done')))\n"
            "t.start()\n"
            "_end_now(0)\n"
            "print('ordinary exit')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and "ordinary exit" in out.stdout and "thread done" in out.stdout


def test_a_large_json_report_through_a_pipe_is_complete(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    m = _manifest(tmp_path, valid_doc, {f"f{i}.bin": b"%d" % i for i in range(300)})
    for f in list((tmp_path / "art").iterdir())[:150]:
        f.write_bytes(b"changed")
    out = run_cli("verify", str(m), "--artifacts-dir", str(tmp_path / "art"), "--json")
    assert out.returncode == 1
    assert len(json.loads(out.stdout)["errors"]) == 150


# ---- add actions without pyarrow ----------------------------------------------------------------------------------
def test_add_action_rows_match_pyarrow(tmp_path: Path) -> None:
    """The reader view's per-file entries are built from these rows: a difference would change every view digest."""
    import datetime
    import decimal

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from carriers.delta.carrier import add_action_rows

    utc = datetime.UTC
    data = pa.table({
        "i": pa.array([1, None, 3], pa.int64()), "i8": pa.array([1, 2, 3], pa.int8()),
        "f": [1.5, float("nan"), None], "s": ["a", "é", None], "b": pa.array([b"x", None, b"z"]),
        "bo": [True, False, None], "d": [datetime.date(2020, 1, 1)] * 3,
        "ts": pa.array([datetime.datetime(2020, 1, 1, 1, 2, 3, 456789, tzinfo=utc)] * 3, pa.timestamp("us", "UTC")),
        "tn": pa.array([datetime.datetime(2020, 1, 1, 1, 2, 3)] * 3, pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("1.23"), decimal.Decimal("-4.56"), None], pa.decimal128(10, 2)),
        "st": pa.array([{"a": 1, "b": "x"}, None, {"a": 2, "b": "y"}],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "p": ["x", "y", "x"], "pd": [datetime.date(2020, 1, 2)] * 3,
    })
    write_deltalake(str(tmp_path / "t"), data, partition_by=["p", "pd"])
    dt = DeltaTable(str(tmp_path / "t"))
    rows = add_action_rows(dt)
    assert len(rows) == 2 and rows == pa.table(dt.get_add_actions(flatten=False)).to_pylist()


def test_fifos_never_hold_up_a_head_start(tmp_path: Path) -> None:
    """A FIFO where the head start would read (a manifest, a Delta commit) is left alone: the thread a verify waits
    for never blocks on it."""
    os.mkfifo(tmp_path / "m.json")
    (tmp_path / "art").mkdir()
    assert _head_start(["verify", str(tmp_path / "m.json"), "--artifacts-dir", str(tmp_path / "art")]) is None
    _delta(tmp_path / "t", 1)
    commit = tmp_path / "t" / "_delta_log" / f"{1:020}.json"
    commit.unlink()
    os.mkfifo(commit)
    prefetch = DeltaPrefetch.start(str(tmp_path / "t"))
    assert prefetch is not None
    prefetch._thread.join(timeout=10)
    assert not prefetch._thread.is_alive() and prefetch.sizes == {}


def test_the_head_start_imports_nothing_heavy(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    """What runs before hashing starts is the part of start-up nothing overlaps: no typing, pathlib, queue, urllib,
    argparse, dataclasses or table library (modules the interpreter already had are not counted: a development
    install's import hook loads pathlib and urllib at start-up, an installed copy does not)."""
    m = _manifest(tmp_path, valid_doc, {"a.bin": b"a"})
    _delta(tmp_path / "t", 1)
    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "from attest.fast.startup import head_start as _head_start\n"
            f"assert _head_start(['verify', {str(m)!r}, '--artifacts-dir', {str(tmp_path / 'art')!r}]) is not None\n"
            f"assert _head_start(['verify', {str(tmp_path / 't')!r}]) is not None\n"
            "heavy = ['typing', 'pathlib', 'queue', 'urllib.parse', 'argparse', 'dataclasses', 'deltalake',\n"
            "         'pyarrow']\n"
            "print([h for h in heavy if h in sys.modules and h not in before])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _verify_seeing_pyarrow(table: Path) -> subprocess.CompletedProcess[str]:
    """`attest verify table --level bytes` in a fresh process that prints each pyarrow module it imports to stderr."""
    code = ("import runpy, sys\n"
            "class Seen:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'pyarrow':\n"
            "            print('imported', name, file=sys.stderr, flush=True)\n"
            "sys.meta_path.insert(0, Seen())\n"
            f"sys.argv = ['attest', 'verify', {str(table)!r}, '--level', 'bytes']\n"
            "runpy.run_module('attest.cli', run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("partitioned", [False, True])
def test_verify_of_a_small_delta_table_imports_no_pyarrow_compute(tmp_path: Path, partitioned: bool) -> None:
    """A verify of a Delta table of few files reads delta-rs's add actions without pyarrow (carriers/delta/columns.py
    ``ROWS_MAX``) and judges its few statistics texts one by one (carriers/delta/log.py ``BULK_MIN``): importing
    pyarrow.compute and pyarrow.json cost it ~100-200 ms, more than the rest of its reading. pyarrow.parquet is
    imported (~50 ms of CPU): ``--level bytes`` reads each data file's Parquet footer to hold its stored types to the
    schema (docs/verify.md, "Stored types") — a trust check, taken over the start-up time."""
    _delta(tmp_path / "t", 3, partitioned=partitioned)
    out = _verify_seeing_pyarrow(tmp_path / "t")
    assert out.returncode == 0 and out.stdout.startswith("VERIFIED (bytes"), out.stdout + out.stderr
    assert "imported pyarrow.parquet" in out.stderr, out.stderr  # the footers were read
    assert "imported pyarrow.compute" not in out.stderr and "imported pyarrow.json" not in out.stderr, out.stderr


@pytest.mark.parametrize("partitioned", [False, True])
def test_verify_of_a_small_delta_table_with_a_checkpoint_imports_no_pyarrow_compute(tmp_path: Path,
                                                                                   partitioned: bool) -> None:
    """A checkpoint of few rows is read by the line reader (carriers/delta/log.py ``LINE_ROWS_MAX``), whose verdict
    the columns only ever reach faster: its Parquet is read with pyarrow, and pyarrow.compute and pyarrow.json, which
    the columns need, are not imported (~150-300 ms of a small table's verify)."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from carriers.delta.carrier import attest_after_write

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"p": [1, 2], "b": [b"x", b"y"]}), partition_by=["p"] if partitioned else None)
    DeltaTable(str(table)).create_checkpoint()
    write_deltalake(str(table), pa.table({"p": [3], "b": [b"z"]}), partition_by=["p"] if partitioned else None,
                    mode="append")
    DeltaTable(str(table)).create_checkpoint()  # the cross-check reads the one before, and the commit between
    attest_after_write(str(table), model="t", program_hash=PROGRAM)
    out = _verify_seeing_pyarrow(table)
    assert out.returncode == 0 and out.stdout.startswith("VERIFIED (bytes"), out.stdout + out.stderr
    assert "imported pyarrow.parquet" in out.stderr, out.stderr  # the checkpoint was read
    assert "imported pyarrow.compute" not in out.stderr and "imported pyarrow.json" not in out.stderr, out.stderr
