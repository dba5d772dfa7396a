#!/usr/bin/env python3
"""Verification with the bytes hashed on Spark executors: local[1] against local[2] on one table of >= 2 GiB.

    python benchmarks/bench_distributed.py [--dir D] [--gib 2.25] [--files 24] [--rounds 3]

Writes (or reuses, under --dir) an attested Delta table of random bytes, then in one run:

- the reference: ``verify_table(..., level="bytes")`` in this process (all cores, no Spark);
- the driver's share: ``carrier.state()`` (listing, confinement, reader view) alone;
- ``attest.spark.verify(spark, table, level="bytes")`` on a ``local[1]`` and on a ``local[2]`` session (each warmed
  up by one job first: Python workers started), best of N rounds, and the hashing job alone;

and prints the scaling ratio local[1] / local[2] (ideal: 2.0 on 2 free cores) and the per-core hashing rate the cost
model in docs/hashing.md extrapolates from. Every verification must pass, or the run fails (exit 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MiB = 1 << 20
PROGRAM = "a" * 64
T = TypeVar("T")


def make_table(path: Path, gib: float, files: int) -> int:
    """An attested Delta table of ``files`` files of random bytes, ``gib`` GiB in all; returns its data bytes."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    marker = path / f".complete-{gib}-{files}"
    if not marker.exists():
        shutil.rmtree(path, ignore_errors=True)
        per_file = int(gib * 1024 / files)  # MiB per file, one 1 MiB value per row, one partition per file
        for part in range(files):  # one commit per file: bounded memory
            rows = [os.urandom(MiB) for _ in range(per_file)]
            write_deltalake(str(path), pa.table({"p": [part] * per_file, "b": pa.array(rows, pa.binary())}),
                            partition_by=["p"], mode="append")
        attest_after_write(str(path), model="bench", program_hash=PROGRAM)
        marker.touch()
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def warm(table: Path) -> float:
    """Read every data file (page cache warm: the executors must hash, not wait for the disk); GB/s of the read."""
    start, total = time.perf_counter(), 0
    for p in table.rglob("*.parquet"):
        with p.open("rb", buffering=0) as f:
            while chunk := f.read(8 * MiB):
                total += len(chunk)
    return total / (time.perf_counter() - start) / 1e9


def best(fn: Callable[[], T], rounds: int, table: Path) -> tuple[float, T]:
    times: list[float] = []
    for _ in range(rounds):
        warm(table)  # before every round: other jobs on the machine evict the page cache
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def on_executors(master: str, table: Path, nbytes: int, rounds: int) -> tuple[float, float, float]:
    """(best verify seconds, best hashing-job seconds, least task CPU seconds) with a fresh session on ``master``."""
    from attest.tables import DataFile
    from attest.verify.report import Report
    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier
    from carriers.spark.distributed import ExecutorHasher, cli_session, executor_hasher
    from carriers.storage.delta import DeltaStorage

    spark = cli_session(master, app_name="bench-distributed")
    try:
        for _ in range(3):  # Python workers up, the JVM's scheduler paths compiled
            spark.sparkContext.parallelize(range(8), 8).count()
        jobs: list[float] = []
        cpu: list[float] = []

        def once() -> Report:
            carrier = DeltaCarrier(str(table))
            hasher = executor_hasher(carrier, spark)
            report = verify_table(carrier, level="bytes", hasher=hasher)
            jobs.append(hasher.stats.seconds)
            cpu.append(hasher.stats.executor_cpu_seconds)
            return report

        t, report = best(once, rounds, table)
        assert report.passed, report.human()
        tiny = table / "_bench_tiny.bin"
        tiny.write_bytes(b"x")
        files = [DataFile(path="tiny", size=1, location=str(tiny))]
        fixed, _ = best(lambda: ExecutorHasher(spark, DeltaStorage(str(table))).hash_files(files), rounds, table)
        tiny.unlink()
        print(f"{'one hashing job of one 1-byte file, ' + master:<52}{fixed:8.3f} s  (a job's fixed cost)")
    finally:
        spark.stop()
    print(f"{'verify on executors, ' + master:<52}{t:8.3f} s  (hashing job {min(jobs):.3f} s, "
          f"{nbytes / min(jobs) / 1e9:.2f} GB/s; tasks used {min(cpu):.3f} CPU s)")
    return t, min(jobs), min(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None, help="where the table goes (reused when complete)")
    parser.add_argument("--gib", type=float, default=2.25)
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier

    root = args.dir if args.dir is not None else Path(tempfile.mkdtemp(prefix="attest-bench-dist-"))
    table = root / "table"
    try:
        nbytes = make_table(table, args.gib, args.files)
        print(f"machine : {os.cpu_count()} cores (shared: other jobs run beside this one), load "
              f"{os.getloadavg()[0]:.1f}")
        print(f"table   : {table}, {args.files} files, {nbytes / (1 << 30):.2f} GiB")
        print(f"page cache: re-read at {warm(table):.1f} GB/s (several GB/s: cached; a disk reads far slower)")
        t_state, _ = best(lambda: DeltaCarrier(str(table)).state(), args.rounds, table)
        t_local, report = best(lambda: verify_table(DeltaCarrier(str(table)), level="bytes"), args.rounds, table)
        assert report.passed, report.human()
        print(f"{'reference: verify_table --level bytes (no Spark)':<52}{t_local:8.3f} s  "
              f"{nbytes / t_local / 1e9:6.2f} GB/s")
        print(f"{'driver share: carrier.state()':<52}{t_state:8.3f} s")

        results = {master: on_executors(master, table, nbytes, args.rounds) for master in ("local[1]", "local[2]")}
        (t1, job1, _), (t2, job2, cpu2) = results["local[1]"], results["local[2]"]
        print(f"\nscaling local[1] / local[2]: verify {t1 / t2:.2f}x, hashing job {job1 / job2:.2f}x (ideal 2.0)")
        print(f"per executor core: {nbytes / job1 / 1e9:.2f} GB/s wall in the local[1] job; {nbytes / cpu2 / 1e9:.2f} "
              "GB per task CPU second (read from the page cache + BLAKE3; robust to the machine's load)")
        print(f"distributed vs local reference: {t_local / t2:.2f}x on local[2]; load {os.getloadavg()[0]:.1f}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
