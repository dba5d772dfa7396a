"""``attest audit`` over many small tables against the engine opening each table alone, in the same run (issue 35.3).

Builds N small attested Delta tables under one folder (a hundred built with delta-rs and attested, the rest
copies of them: every copy is a genuine table that verifies) and a sqlite pyiceberg catalog of M attested Iceberg
tables, then times, each in a fresh process with the peak memory of its whole process tree (worker processes
included, sampled with psutil):

- the reference: delta-rs ``DeltaTable(p).version()`` of every table; pyiceberg ``catalog.load_table`` of every
  table of the catalog (listed as the audit lists it);
- the engine listing each Iceberg table's files too (``scan().plan_files()``), as any verification must;
- ``attest audit FOLDER`` and ``attest audit iceberg://bench``, serial (``--jobs 1``), in threads and in worker
  processes (``ATTEST_AUDIT_POOL``), and with ``--to`` (the kept audit, written in batches: serially when the serial
  pool is timed, and in the default pool).

Per table: the whole run divided by the tables (wall and CPU: user + system of the run and the workers it waited
for, steady however loaded the machine is), and the CPU of one more table (the run on N tables less the run on one,
divided by N - 1: the interpreter's start-up is left out of both sides). Goal: within 2x of the reference.

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
limit, plan = int(sys.argv[1]), sys.argv[2] == "plan"
idents = [i for ns in catalog.list_namespaces() for i in catalog.list_tables(ns)][:limit]
for ident in idents:
    table = catalog.load_table(ident)
    if plan:  # the engine listing the table's files (manifest list, manifests), as any verification must
        list(table.scan().plan_files())
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


def measure(argv: list[str], env: dict[str, str], repeat: int = 1) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system of the process and the workers it waited for: what the run costs
    however loaded the machine is), peak MiB of the process tree (sampled every 20 ms) and stdout of one command;
    with ``repeat``, the best of that many runs."""
    best: tuple[float, float, float, str] | None = None
    for _ in range(repeat):
        got = _once(argv, env)
        best = got if best is None else (min(best[0], got[0]), min(best[1], got[1]), min(best[2], got[2]), got[3])
    assert best is not None
    return best


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    import psutil

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, text=True)
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
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        text = out.read()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{text[-2000:]}\n{err.read()[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, peak[0] / 2**20, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="10,000 Delta tables and 2,000 Iceberg tables")
    parser.add_argument("--delta", type=int, default=None, help="Delta tables (default 300; --full 10,000)")
    parser.add_argument("--iceberg", type=int, default=None, help="Iceberg tables (default 100; --full 2,000)")
    parser.add_argument("--jobs", type=int, default=None, help="attest audit --jobs (default: its own)")
    parser.add_argument("--pools", default="serial,threads,processes", help="which ways of auditing to time")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs of each command")
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
    print(f"{os.cpu_count()} CPU(s), load {load:.1f}. Per table: wall/t and cpu/t (user + system of the run and its "
          "workers) over the whole run; cpu+1 the CPU of one more table ((run on N - run on 1) / (N - 1), start-up "
          "left out); MiB the peak of the process tree")
    lists = {1: root / "one.txt", len(paths): root / "all.txt"}
    for n, file in lists.items():
        file.write_text("\n".join(str(p) for p in paths[:n]))
    # One table alone, for the start-up of each side (a folder holding exactly one table).
    single = root / "single"
    if paths and not (single / "t" / "_delta_log").is_dir():
        single.mkdir(exist_ok=True)
        shutil.copytree(paths[0], single / "t")

    Figures = tuple[float, float, float, float]  # wall ms, CPU ms, CPU ms of one more table (per table), peak MiB

    def side(label: str, n: int, one_argv: list[str], all_argv: list[str], env: dict[str, str],
             ref: Figures | None, expect: str | None = None) -> Figures:
        _, one_cpu, _, _ = measure(one_argv, env, args.repeat)
        wall, cpu, mib, out = measure(all_argv, env, args.repeat)
        if expect is not None:
            assert out.splitlines()[-1].startswith(expect), out[-500:]
        got = (wall / n * 1e3, cpu / n * 1e3, (cpu - one_cpu) / max(n - 1, 1) * 1e3, mib)
        ratios = "" if ref is None else "  " + "  ".join(f"{a / b:5.2f}x" for a, b in zip(got, ref, strict=True))
        print(f"{label:<34}{wall:8.2f} s {got[0]:8.2f} {got[1]:8.2f} {got[2]:8.2f} {mib:8.1f}{ratios}", flush=True)
        return got

    header = (f"{'':<34}{'run':>10} {'wall/t':>8} {'cpu/t':>8} {'cpu+1':>8} {'MiB':>8}  ratios to the reference "
              "(wall/t, cpu/t, cpu+1, MiB)")
    pools = [p for p in args.pools.split(",") if p]
    audit = [py, "-m", "attest.cli", "audit"]
    if paths:
        n = len(paths)
        print(f"\n{n} Delta tables (ms per table)\n{header}")
        ref = side("delta-rs DeltaTable(p).version()", n, [py, "-c", _REF_DELTA, str(lists[1])],
                   [py, "-c", _REF_DELTA, str(lists[n])], env, None)
        for pool in pools:
            options = ["--jobs", "1"] if pool == "serial" else jobs
            side(f"attest audit ({pool})", n, [*audit, str(single), *options], [*audit, str(lake), *options],
                 {**env, "ATTEST_AUDIT_POOL": pool}, ref, f"{n} table(s): {n} verified")
        kept, kept_one = root / "kept", root / "kept1"
        for label, options in (("attest audit --to (serial)", ["--jobs", "1"]),
                               ("attest audit --to (default pool)", jobs)):
            if label.endswith("(serial)") and "serial" not in pools:
                continue
            shutil.rmtree(kept, ignore_errors=True)
            shutil.rmtree(kept_one, ignore_errors=True)
            # The one-table run keeps its row too: the writer's start-up (its imports, the first commit) is left out
            # of cpu+1 as the interpreter's is (before, the one-table run had no --to and cpu+1 carried it).
            side(label, n, [*audit, str(single), "--to", str(kept_one), *options],
                 [*audit, str(lake), "--to", str(kept), *options], env, ref)
        from deltalake import DeltaTable

        history = [h for h in DeltaTable(str(kept)).history() if "attest.audit.batch" in h]
        print(f"  kept: {len(DeltaTable(str(kept)).to_pyarrow_table())} rows in {len(history)} commit(s) "
              f"({args.repeat} run(s))")
    if n_iceberg:
        print(f"\n{n_iceberg} Iceberg tables, sqlite catalog (ms per table)\n{header}")
        ref = side("pyiceberg catalog.load_table", n_iceberg, [py, "-c", _REF_ICEBERG, "1", "load"],
                   [py, "-c", _REF_ICEBERG, str(n_iceberg), "load"], env, None)
        side("  + scan().plan_files()", n_iceberg, [py, "-c", _REF_ICEBERG, "1", "plan"],
             [py, "-c", _REF_ICEBERG, str(n_iceberg), "plan"], env, ref)
        for pool in pools:
            options = ["--jobs", "1"] if pool == "serial" else jobs
            side(f"attest audit ({pool})", n_iceberg, [*audit, "iceberg://bench/ns.t00000", *options],
                 [*audit, "iceberg://bench", *options], {**env, "ATTEST_AUDIT_POOL": pool}, ref,
                 f"{n_iceberg} table(s): {n_iceberg} verified")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
