"""`attest audit` over many tables (issue 35.3): checked in threads or worker processes, the report is the serial one
line for line (order, verdicts, codes, exit); rows are streamed, never all held; the kept audit (`--to`) is written in
batches and a run cut short — interrupted, or killed outright — leaves whole batches that say the run did not
complete; progress goes to stderr on a terminal, or when asked with `--progress`, never otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from io import StringIO
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from attest.cli.audit_pool import Kept, LogProgress
from attest.errors import Code, Problem
from attest.verify.audit import AuditReport, AuditRow
from attest.verify.report import Report
from carriers.audit_table import BATCH_KEY, COMPLETE_KEY, RUN_KEY, AuditTable
from carriers.delta.carrier import attest_after_write
from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write

PROGRAM = "b" * 64
ROOT = Path(__file__).resolve().parents[1]


def _delta(path: Path, *, attest: bool = True) -> Path:
    write_deltalake(str(path), pa.table({"x": [1, 2, 3]}))
    if attest:
        attest_after_write(str(path), model=path.name, program_hash=PROGRAM)
    return path


def _tamper(table: Path) -> None:
    data = sorted(table.rglob("*.parquet"))[0]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))


@pytest.fixture
def mixed(tmp_path: Path) -> dict[str, Any]:
    """Intact, tampered, unattested, unreadable, nested and Iceberg tables (a catalog and a folder read statically),
    and a hidden table listed as skipped: every kind of row an audit prints."""
    lake = tmp_path / "lake"
    for i in range(6):
        _delta(lake / f"a{i}")
    _tamper(_delta(lake / "b_tampered"))
    _delta(lake / "c_bare", attest=False)
    broken = lake / "d_broken" / "_delta_log"
    broken.mkdir(parents=True)
    (broken / f"{0:020d}.json").write_text("{not json\n")
    _delta(lake / "e_outer")
    _delta(lake / "e_outer" / "inner")  # nested inside another table
    _delta(lake / "_hidden")  # listed SKIPPED
    (tmp_path / "wh").mkdir()
    catalog = SqlCatalog("par", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    catalog.create_namespace("ns")
    for name in ("i0", "i1"):
        table = catalog.create_table(f"ns.{name}", schema=pa.schema([("x", pa.int64())]))
        table.append(pa.table({"x": pa.array([1, 2], pa.int64())}))
        iceberg_attest_after_write(table, model=name, program_hash=PROGRAM)
    bare = catalog.create_table("ns.i2_bare", schema=pa.schema([("x", pa.int64())]))
    bare.append(pa.table({"x": pa.array([1], pa.int64())}))
    (tmp_path / "wh2").mkdir()  # a catalog not configured: its table folder is read statically
    other = SqlCatalog("other", uri=f"sqlite:///{tmp_path / 'cat2.db'}", warehouse=f"file://{tmp_path / 'wh2'}")
    other.create_namespace("ns")
    static = other.create_table("ns.s0", schema=pa.schema([("x", pa.int64())]))
    static.append(pa.table({"x": pa.array([1], pa.int64())}))
    iceberg_attest_after_write(static, model="s0", program_hash=PROGRAM)
    env = {"PYICEBERG_CATALOG__PAR__URI": f"sqlite:///{tmp_path / 'cat.db'}",
           "PYICEBERG_CATALOG__PAR__WAREHOUSE": f"file://{tmp_path / 'wh'}"}
    # lake/, the catalog, its warehouse folder (read through the catalog) and another (read statically)
    return {"targets": [str(lake), "iceberg://par", str(tmp_path / "wh"), str(tmp_path / "wh2")], "env": env,
            "root": tmp_path}


def _audit(targets: list[str], env: dict[str, str], *extra: str, pool: str | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    full.pop("ATTEST_AUDIT_POOL", None)
    if pool is not None:
        full["ATTEST_AUDIT_POOL"] = pool
    return subprocess.run([sys.executable, "-m", "attest.cli", "audit", *targets, *extra], capture_output=True,
                          text=True, env=full, timeout=600, cwd=cwd)


def _shape(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(t["table"], t["outcome"], t["code"], t["level"], t["version"], t["notes"], t["message"])
            for t in doc["tables"]]


def test_parallel_audit_is_the_serial_report(mixed: dict[str, Any]) -> None:
    targets, env = mixed["targets"], mixed["env"]
    serial = _audit(targets, env, "--jobs", "1")
    assert serial.returncode == 2, serial.stdout + serial.stderr  # the worst outcome: the unreadable table
    lines = serial.stdout.splitlines()
    assert any(x.startswith("NOT VERIFIED") and "b_tampered (artifact_hash_mismatch)" in x for x in lines), lines
    assert any(x.startswith("UNATTESTED") and "c_bare" in x for x in lines), lines
    assert any(x.startswith("ERROR") and "d_broken (table_unreadable)" in x for x in lines), lines
    assert any(x.startswith("SKIPPED") and "_hidden" in x for x in lines), lines
    assert any("nested inside table" in x for x in lines) and any("read without a catalog" in x for x in lines)
    assert any("verified through catalog 'par'" in x for x in lines), lines
    assert any(x.startswith("VERIFIED") and x.endswith("iceberg://par/ns.i1") for x in lines), lines
    assert any(x.startswith("UNATTESTED") and "iceberg://par/ns.i2_bare" in x for x in lines), lines
    assert lines[-1] == ("18 table(s): 13 verified, 0 stale, 0 compacted, 3 unattested, 1 not verified, 1 error; "
                         "1 place(s) skipped (listed above)"), lines
    first = json.loads(_audit(targets, env, "--jobs", "1", "--json").stdout)
    for pool, jobs in (("threads", "3"), ("processes", "2")):
        text = _audit(targets, env, "--jobs", jobs, pool=pool)
        assert (text.returncode, text.stdout) == (serial.returncode, serial.stdout), (pool, text.stderr)
        done = _audit(targets, env, "--jobs", jobs, "--json", pool=pool)
        doc = json.loads(done.stdout)
        assert done.returncode == 2 and _shape(doc) == _shape(first), pool
        assert (doc["counts"], doc["errors"], doc["skipped"]) == (first["counts"], first["errors"], first["skipped"])
        for mine, theirs in zip(doc["tables"], first["tables"], strict=True):
            if "report" in theirs:
                assert mine["report"]["verdict"] == theirs["report"]["verdict"]
        csv = _audit(targets, env, "--jobs", jobs, "--format", "csv", pool=pool).stdout.splitlines()
        assert len(csv) == 19 and [c.split(",")[2:8] for c in csv[1:]] == [
            c.split(",")[2:8] for c in _audit(targets, env, "--jobs", "1", "--format", "csv").stdout.splitlines()[1:]]


def test_json_and_tables_printed_a_table_at_a_time_are_the_same_text() -> None:
    """The streamed report prints exactly what the held one prints (the --json shape is unchanged)."""
    held = AuditReport()
    streamed = AuditReport.streaming(spool=True)
    streamed.audit_id = held.audit_id
    rows = [AuditRow("t\u2028é", "VERIFIED", "bytes", version="3", report={"passed": True, "notes": ["x\ny"]},
                     model="=m"),
            AuditRow("broken", "ERROR", code="table_unreadable", verdict="bad", message="bad", notes=["a note"]),
            AuditRow.of_report("s", Report(subject="s", level="schema"))]
    for report in (held, streamed):
        for row in rows:
            report.add(row)
        report.add_skipped(Problem(Code.TABLE_NOT_AUDITED, "hidden", "/x/_h"))
    assert streamed.rows == []  # nothing held: the rows are on disk
    assert "".join(streamed.json_chunks()) == json.dumps(held.to_json(), ensure_ascii=False, indent=2)
    assert streamed.to_json() == held.to_json() and streamed.exit_code == held.exit_code == 2
    assert streamed.csv() == held.csv() and streamed.table() == held.table() and streamed.human() == held.human()
    assert streamed.summary() == held.summary() and streamed.counts == held.counts
    empty = AuditReport.streaming(spool=True)
    assert "".join(empty.json_chunks()) == json.dumps(AuditReport(audit_id=empty.audit_id).to_json(), indent=2)
    streamed.close()
    empty.close()


def test_a_streamed_audit_of_ten_thousand_tables_holds_none_of_them() -> None:
    import tracemalloc

    tracemalloc.start()
    audit = AuditReport.streaming(spool=False)
    big = {"files": [f"part-{i:05d}.parquet" for i in range(200)]}  # a report with a long list in it
    for i in range(10_000):
        audit.add(AuditRow(f"/lake/t{i}", "VERIFIED" if i % 7 else "STALE", "bytes", report=dict(big)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert audit.rows == [] and audit.total == 10_000 and audit.counts["STALE"] == 1429
    assert audit.exit_code == 1 and not audit.passed
    assert peak < 2_000_000, peak  # the rows would be ~100 MB held


def _history(path: Path) -> list[dict[str, Any]]:
    return [h for h in DeltaTable(str(path)).history() if RUN_KEY in h]


def test_the_kept_audit_is_written_in_batches(tmp_path: Path) -> None:
    sink = AuditTable.open(str(tmp_path / "kept"))
    kept = Kept(sink, "run-1", rows=3, seconds=1e9)
    for i in range(7):
        kept.add(AuditRow(f"t{i}", "VERIFIED", "bytes", checked_at="2026-01-01T00:00:00Z"))
    assert len(_history(tmp_path / "kept")) == 2  # 6 rows written as two batches while the run goes on
    said = kept.finish()
    history = sorted(_history(tmp_path / "kept"), key=lambda h: h["version"])
    assert [(h[BATCH_KEY], h[COMPLETE_KEY]) for h in history] == [(1, False), (2, False), (3, True)]
    assert said == f"{tmp_path / 'kept'} version {history[-1]['version']} (3 commits from version " \
                   f"{history[0]['version']})"
    assert len(DeltaTable(str(tmp_path / "kept")).to_pyarrow_table()) == 7
    # A batch is also written when rows have waited long enough, however few.
    clock = iter([0.0, 100.0, 100.0, 100.0])
    timed = Kept(AuditTable.open(str(tmp_path / "kept")), "run-2", rows=1000, seconds=60, clock=lambda: next(clock))
    timed.add(AuditRow("a", "VERIFIED", checked_at="2026-01-01T00:00:00Z"))
    timed.add(AuditRow("b", "VERIFIED", checked_at="2026-01-01T00:00:00Z"))
    assert [h[BATCH_KEY] for h in _history(tmp_path / "kept") if h[RUN_KEY] == "run-2"] == [1]


_INTERRUPTED = """
import os, signal, sys
import attest.cli.audit_pool as pool
import carriers.audit_table as table
table.BATCH_ROWS = 2
seen = []
real = pool.check

def check(item, ctx):
    seen.append(item)
    if len(seen) == 6:
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)  # a crash: nothing runs after it
        raise KeyboardInterrupt
    return real(item, ctx)

pool.check = check
from attest.cli import main
sys.exit(main(["audit", sys.argv[2], "--to", sys.argv[3], "--jobs", "1"]))
"""


@pytest.mark.parametrize("how", ["interrupt", "kill"])
def test_an_audit_cut_short_keeps_whole_batches_and_says_so(tmp_path: Path, how: str) -> None:
    lake = tmp_path / "lake"
    for i in range(9):
        _delta(lake / f"t{i}")
    kept = tmp_path / "kept"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_INTERRUPTED), how, str(lake), str(kept)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    rows = DeltaTable(str(kept)).to_pyarrow_table().to_pylist()  # readable: every commit is whole
    history = _history(kept)
    assert len({r["audit_id"] for r in rows}) == 1 and all(r["outcome"] == "VERIFIED" for r in rows)
    assert not any(h[COMPLETE_KEY] for h in history)  # the run never says it completed
    if how == "interrupt":
        assert done.returncode == 130, done.stdout + done.stderr
        # the five tables checked before Ctrl-C are kept: two batches of two, and the one checked since
        assert sorted(r["table"] for r in rows) == [str(lake / f"t{i}") for i in range(5)]
        assert "cut short: 5 row(s) of this run kept in" in done.stderr and "attest: interrupted" in done.stderr
    else:
        assert done.returncode == -9
        assert sorted(r["table"] for r in rows) == [str(lake / f"t{i}") for i in range(4)]  # the whole batches
    # The next run is whole, and says so on its last commit only.
    again = _audit([str(lake)], {}, "--to", str(kept))
    assert again.returncode == 0, again.stderr
    last = [h for h in _history(kept) if h[RUN_KEY] != rows[0]["audit_id"]]
    assert [h[COMPLETE_KEY] for h in last] == [True]
    assert len(DeltaTable(str(kept)).to_pyarrow_table()) == len(rows) + 9


def test_progress_on_stderr_only_when_asked_off_a_terminal(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for i in range(3):
        _delta(lake / f"t{i}")
    quiet = _audit([str(lake)], {})
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    loud = _audit([str(lake)], {}, "--progress")
    assert loud.returncode == 0 and loud.stdout == quiet.stdout
    lines = loud.stderr.splitlines()
    assert lines[0] == "auditing: 0/3 tables" and lines[-1] == "auditing: 3/3 tables", lines
    as_json = _audit([str(lake)], {}, "--progress", "--json")
    assert json.loads(as_json.stdout)["counts"]["VERIFIED"] == 3 and "auditing: 3/3 tables" in as_json.stderr


def test_log_progress_is_a_line_every_few_seconds() -> None:
    out = StringIO()
    progress = LogProgress(out, every=3600)
    for done in range(0, 101):
        progress(done, 100, 0)
    assert out.getvalue().splitlines() == ["auditing: 0/100 tables", "auditing: 100/100 tables"]


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    done = _audit([str(tmp_path)], {}, "--jobs", "0", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["errors"][0]["code"] == "invalid_argument"


def test_a_worker_process_that_dies_takes_only_its_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables a dead worker held are ERROR rows saying so (never a verdict), the others are checked in a fresh
    pool, and the rows keep the tables' order."""
    import argparse
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    import attest.cli.audit_pool as pool
    from carriers.refs import TableRef

    pools: list[Any] = []

    class Dying:
        """A pool whose worker dies on the chunk holding table t3 (every chunk in flight then fails, as in
        ProcessPoolExecutor), until a fresh pool is made."""

        def __init__(self) -> None:
            self.broken = False
            self.held: list[Future[list[AuditRow]]] = []
            pools.append(self)

        def submit(self, fn: Any, chunk: list[Any]) -> Future[list[AuditRow]]:
            future: Future[list[AuditRow]] = Future()
            if self.broken or (len(pools) == 1 and any(name == "t3" for name, _, _ in chunk)):
                self.broken = True
                for held in [*self.held, future]:
                    if not held.done():
                        held.set_exception(BrokenProcessPool("a worker died"))
            else:
                future.set_result([AuditRow(name, "VERIFIED", "bytes") for name, _, _ in chunk])
            self.held.append(future)
            return future

        def shutdown(self, **_: Any) -> None:
            pass

    monkeypatch.setattr(pool, "_process_pool", lambda jobs, settings: Dying())
    items = [(f"t{i}", TableRef.discovered("delta", f"/x/t{i}"), ()) for i in range(40)]
    rows = list(pool._processes(items, argparse.Namespace(), 1))
    assert [r.table for r in rows] == [f"t{i}" for i in range(40)]
    lost = [r for r in rows if r.outcome != "VERIFIED"]
    assert lost and all(r.outcome == "ERROR" and r.code == "internal_error" and "worker process" in r.message
                        for r in lost)
    assert "t3" in {r.table for r in lost} and len(pools) == 2 and len(lost) < 40


def test_a_catalog_named_by_uri_is_audited_alike_in_every_pool(mixed: dict[str, Any]) -> None:
    """``--uri`` / ``--warehouse`` (no configuration): in threads, each table was an ERROR line "catalog 'par' is not
    configured" (the override is a context variable a pool's thread did not inherit), and in worker processes too
    (the worker's scope was closed as its start-up returned); two tables of that catalog named as targets were
    refused as "--catalog default and … name two catalogs". A branch of a table has its line in every pool."""
    root = mixed["root"]
    flags = ["--uri", f"sqlite:///{root / 'cat.db'}", "--warehouse", f"file://{root / 'wh'}"]
    catalog = SqlCatalog("par", uri=f"sqlite:///{root / 'cat.db'}", warehouse=f"file://{root / 'wh'}")
    head = catalog.load_table("ns.i0").current_snapshot().snapshot_id  # type: ignore[union-attr]
    catalog.load_table("ns.i0").manage_snapshots().create_branch(head, "audit").commit()
    catalog.load_table("ns.i0").append(pa.table({"x": pa.array([666], pa.int64())}), branch="audit")
    serial = _audit(["iceberg://par", *flags], {}, "--jobs", "1", "--json")
    doc = json.loads(serial.stdout)
    assert [(t["table"], t["outcome"]) for t in doc["tables"]] == [
        ("iceberg://par/ns.i0", "VERIFIED"), ("iceberg://par/ns.i1", "VERIFIED"),
        ("iceberg://par/ns.i2_bare", "UNATTESTED"), ("iceberg://par/ns.i0.branch_audit", "STALE")], serial.stderr
    for pool in ("threads", "processes"):
        done = _audit(["iceberg://par", *flags], {}, "--jobs", "2", "--json", pool=pool)
        assert (done.returncode, _shape(json.loads(done.stdout))) == (serial.returncode, _shape(doc)), pool
    two = _audit(["iceberg://par/ns.i0", "iceberg://par/ns.i1", *flags], {}, "--json")
    assert [(t["table"], t["outcome"]) for t in json.loads(two.stdout)["tables"]] == [
        ("iceberg://par/ns.i0", "VERIFIED"), ("iceberg://par/ns.i1", "VERIFIED"),
        ("iceberg://par/ns.i0.branch_audit", "STALE")], two.stderr
    other = _audit(["iceberg://par/ns.i0", "iceberg://nope/ns.i1", *flags], {})
    assert other.returncode == 2 and "would apply to 2 catalogs" in other.stderr, other.stderr
