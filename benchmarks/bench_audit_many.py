"""``attest audit`` over many small tables against the engine opening each table alone, in the same run (issue 35.3).

Builds N small attested Delta tables under one folder (a few hundred built with delta-rs and attested, the rest
copies of them: every copy is a genuine table that verifies) and a sqlite pyiceberg catalog of M attested Iceberg
tables, then times, each in a fresh process with the peak memory of its whole process tree (worker processes
included, sampled with psutil):

- the reference: delta-rs ``DeltaTable(p).version()`` of every table; pyiceberg ``catalog.load_table`` of every
  table of the catalog (listed as the audit lists it);
- ``attest audit FOLDER`` and ``attest audit iceberg://bench``, serial (``--jobs 1``), in threads and in worker
  processes (``ATTEST_AUDIT_POOL``), and once with ``--to`` (the kept audit, written in batches).

Per table: the whole run divided by the tables, and the cost of one more table (the run on N tables less the run on
one, divided by N - 1: the interpreter's start-up is left out of both sides). Goal: within 2x of the reference.

Run: ``.venv/bin/python benchmarks/bench_audit_many.py`` (300 Delta + 100 Iceberg, minutes) or ``--full`` (10,000 +
2,000); ``--keep DIR`` builds once and reuses the tables on the next run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROGRAM = "a" * 64
REAL = 100  # Delta tables built and attested for real; the others are copies of them
GROUP = 500  # tables per folder (lake/gNN/dNNNNN)

_REF_DELTA = """
import sys
from deltalake import DeltaTable
paths = open(sys.argv[1]).read().split()
for p in paths:
    DeltaTable(p).version()
"""

_REF_ICEBERG = """
import sys
from pyiceberg.catalog import load_catalog
catalog = load_catalog("bench")
limit = int(sys.argv[1])
idents = [i for ns in catalog.list_namespaces() for i in catalog.list_tables(ns)][:limit]
for ident in idents:
    catalog.load_table(ident)
"""


def build_delta(lake: Path, count: int) -> list[Path]:
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    paths = [lake / f"g{i // GROUP:02d}" / f"d{i:05d}" for i in range(count)]
    if all((p / "_delta_log").is_dir() for p in paths):
        return paths
    start = time.perf_counter()
    for i, path in enumerate(paths):
        if (path / "_delta_log").is_dir():
            continue
        if i < REAL:
            write_deltalake(str(path), pa.table({"id": [i, i + 1], "name": ["a", "b"]}))
            attest_after_write(str(path), model=f"m{i}", program_hash=PROGRAM)
        else:
            shutil.copytree(paths[i % REAL], path)
    print(f"built {count} Delta tables in {time.perf_counter() - start:.1f} s", flush=True)
    return paths


def build_iceberg(root: Path, count: int) -> None:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import attest_after_write

    (root / "wh").mkdir(exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'wh'}")
    if ("ns",) not in catalog.list_namespaces():
        catalog.create_namespace("ns")
    have = {tuple(t) for t in catalog.list_tables("ns")}
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    start = time.perf_counter()
    made = 0
    for i in range(count):
        if ("ns", f"t{i:05d}") in have:
            continue
        table = catalog.create_table(f"ns.t{i:05d}", schema=data.schema)
        table.append(data)
        attest_after_write(table, model=f"t{i}", program_hash=PROGRAM)
        made += 1
    if made:
        print(f"built {made} Iceberg tables in {time.perf_counter() - start:.1f} s", flush=True)


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak MiB of the process tree (sampled every 20 ms) and stdout of one command."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        try:
            parent = psutil.Process(proc.pid)
            while not done.is_set():
                total = 0
                for p in [parent, *parent.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += p.memory_info().rss
                peak[0] = max(peak[0], total)
                time.sleep(0.02)
        except psutil.Error:
            pass

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{out[-2000:]}\n{err[-2000:]}")
    return elapsed, peak[0] / 2**20, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="10,000 Delta tables and 2,000 Iceberg tables")
    parser.add_argument("--delta", type=int, default=None, help="Delta tables (default 300; --full 10,000)")
    parser.add_argument("--iceberg", type=int, default=None, help="Iceberg tables (default 100; --full 2,000)")
    parser.add_argument("--jobs", type=int, default=None, help="attest audit --jobs (default: its own)")
    parser.add_argument("--pools", default="serial,threads,processes", help="which ways of auditing to time")
    parser.add_argument("--keep", type=Path, default=None, help="build the tables here and reuse them next time")
    args = parser.parse_args()
    n_delta = args.delta if args.delta is not None else (10_000 if args.full else 300)
    n_iceberg = args.iceberg if args.iceberg is not None else (2_000 if args.full else 100)
    holder = None
    if args.keep is None:
        holder = tempfile.TemporaryDirectory()
        root = Path(holder.name)
    else:
        root = args.keep.resolve()
        root.mkdir(parents=True, exist_ok=True)
    try:
        run(root, n_delta, n_iceberg, args)
    finally:
        if holder is not None:
            holder.cleanup()


def run(root: Path, n_delta: int, n_iceberg: int, args: argparse.Namespace) -> None:
    lake = root / "lake"
    paths = build_delta(lake, n_delta) if n_delta else []
    if n_iceberg:
        build_iceberg(root, n_iceberg)
    env = {**os.environ, "PYICEBERG_CATALOG__BENCH__URI": f"sqlite:///{root / 'catalog.db'}",
           "PYICEBERG_CATALOG__BENCH__WAREHOUSE": f"file://{root / 'wh'}"}
    env.pop("ATTEST_AUDIT_POOL", None)
    py = sys.executable
    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"{os.cpu_count()} CPU(s), load {load:.1f}; per table: whole run / tables, and one more table "
          "(run on N less run on 1) / (N - 1)")
    lists = {1: root / "one.txt", len(paths): root / "all.txt"}
    for n, file in lists.items():
        file.write_text("\n".join(str(p) for p in paths[:n]))
    # One table alone, for the start-up of each side (a folder holding exactly one table).
    single = root / "single"
    if paths and not (single / "t" / "_delta_log").is_dir():
        single.mkdir(exist_ok=True)
        shutil.copytree(paths[0], single / "t")

    def row(label: str, n: int, whole: float, one: float, mib: float, ref: tuple[float, float, float] | None) -> None:
        per, more = whole / n * 1e3, (whole - one) / max(n - 1, 1) * 1e3
        ratio = "" if ref is None else (f"  {per / ref[0]:5.2f}x  {more / ref[1]:5.2f}x  {mib / ref[2]:5.2f}x mem")
        print(f"{label:<34}{whole:8.2f} s {per:8.2f} ms {more:8.2f} ms {mib:8.1f} MiB{ratio}", flush=True)

    header = f"{'':<34}{'run':>10} {'per table':>11} {'one more':>11} {'peak':>12}  ratios (per, more, mem)"
    pools = [p for p in args.pools.split(",") if p]
    if paths:
        print(f"\n{len(paths)} Delta tables\n{header}")
        one, _, _ = measure([py, "-c", _REF_DELTA, str(lists[1])], env)
        whole, mib, _ = measure([py, "-c", _REF_DELTA, str(lists[len(paths)])], env)
        ref = (whole / len(paths) * 1e3, (whole - one) / max(len(paths) - 1, 1) * 1e3, mib)
        row("delta-rs DeltaTable(p).version()", len(paths), whole, one, mib, None)
        for pool in pools:
            penv = {**env, "ATTEST_AUDIT_POOL": pool}
            options = ["--jobs", "1"] if pool == "serial" else jobs
            one, _, _ = measure([py, "-m", "attest.cli", "audit", str(single), *options], penv)
            whole, mib, out = measure([py, "-m", "attest.cli", "audit", str(lake), *options], penv)
            assert out.splitlines()[-1].startswith(f"{len(paths)} table(s): {len(paths)} verified"), out[-500:]
            row(f"attest audit ({pool})", len(paths), whole, one, mib, ref)
        kept = root / "kept"
        shutil.rmtree(kept, ignore_errors=True)
        whole, mib, _ = measure([py, "-m", "attest.cli", "audit", str(lake), "--to", str(kept), *jobs], env)
        row("attest audit --to (default pool)", len(paths), whole, one, mib, ref)
        from deltalake import DeltaTable

        history = [h for h in DeltaTable(str(kept)).history() if "attest.audit.batch" in h]
        print(f"  kept: {len(DeltaTable(str(kept)).to_pyarrow_table())} rows in {len(history)} commit(s)")
    if n_iceberg:
        print(f"\n{n_iceberg} Iceberg tables (sqlite catalog)\n{header}")
        one, _, _ = measure([py, "-c", _REF_ICEBERG, "1"], env)
        whole, mib, _ = measure([py, "-c", _REF_ICEBERG, str(n_iceberg)], env)
        ref = (whole / n_iceberg * 1e3, (whole - one) / max(n_iceberg - 1, 1) * 1e3, mib)
        row("pyiceberg catalog.load_table", n_iceberg, whole, one, mib, None)
        for pool in pools:
            penv = {**env, "ATTEST_AUDIT_POOL": pool}
            options = ["--jobs", "1"] if pool == "serial" else jobs
            one, _, _ = measure([py, "-m", "attest.cli", "audit", "iceberg://bench/ns.t00000", *options], penv)
            whole, mib, out = measure([py, "-m", "attest.cli", "audit", "iceberg://bench", *options], penv)
            assert out.splitlines()[-1].startswith(f"{n_iceberg} table(s): {n_iceberg} verified"), out[-500:]
            row(f"attest audit ({pool})", n_iceberg, whole, one, mib, ref)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
