"""Overhead of the Spark post-write hook on a job writing ~1 GiB, hashing on the driver and on the executors
(on demand; not part of pytest).

    .venv/bin/python benchmarks/bench_spark_hook.py [--gib 1.2] [--rounds 3] [--warehouse DIR]

Runs the same job (a Delta CTAS of poorly compressible rows) without the hook, with the hook hashing on the driver
(``executor_hash_bytes`` above the write) and with the hook hashing on the executors (``executor_hash_bytes=1``),
rotating the order, in one session after a warm-up, and prints the wall times, the bytes written and the ratio of
the best runs to the best run without the hook (target: <= 1.05). The hooked times include hashing every written
byte after the commit (flush waits for it).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.2)  # ~1.05 GiB of Parquet on disk
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warehouse", default=None)
    args = parser.parse_args()
    from attest.spark import install, local_session

    warehouse = Path(args.warehouse or tempfile.mkdtemp(prefix="bench-spark-hook-"))
    spark = local_session(warehouse)
    rows = int(args.gib * (1 << 30) / 80)  # ~80 bytes per row on disk: an id and a sha2 hex string

    def job(name: str) -> float:
        start = time.perf_counter()
        spark.sql(f"CREATE TABLE {name} USING delta AS SELECT id, sha2(cast(id AS string), 256) AS h "
                  f"FROM range({rows})")
        return time.perf_counter() - start

    job("bench_warmup")  # JIT, caches, first-file-system touches: not part of either side
    modes = {"without hook": None, "hook, driver hashing": 1 << 62, "hook, executor hashing": 1}
    times: dict[str, list[float]] = {m: [] for m in modes}
    busy: dict[str, float] = dict.fromkeys(modes, 0.0)
    where: dict[str, str] = {}
    for r in range(args.rounds):
        order = list(modes.items())
        order = order[r % len(order):] + order[:r % len(order)]  # rotate: no mode always runs first
        for mode, threshold in order:
            name = f"bench_{mode.split(',')[-1].strip().split()[0]}_{r}"
            if threshold is None:
                times[mode].append(job(name))
                continue
            hook = install(spark, "required", executor_hash_bytes=threshold)
            start = time.perf_counter()
            job(name)
            hook.flush()
            times[mode].append(time.perf_counter() - start)
            busy[mode] += hook.seconds
            assert hook.attested == 1, hook.errors
            s = hook.hashing
            where[mode] = (f"driver {s.driver_files} files / {s.driver_bytes / (1 << 30):.2f} GiB, executors "
                           f"{s.executor_files} files / {s.executor_bytes / (1 << 30):.2f} GiB in {s.tasks} tasks")
            hook.uninstall()
    written = _size(warehouse / "spark-warehouse" / "bench_driver_0")
    print(f"machine : {os.cpu_count()} cores (shared: other jobs run beside this one), load {os.getloadavg()[0]:.1f}")
    print(f"job writes {written / (1 << 30):.2f} GiB in {rows:,} rows")
    base = min(times["without hook"])
    for mode in modes:
        extra = f"; hook busy {busy[mode] / args.rounds:.2f}s per write; {where[mode]}" if mode in where else ""
        print(f"{mode:<24}: {', '.join(f'{t:.1f}s' for t in times[mode])}  ratio {min(times[mode]) / base:.3f}"
              f"{extra}")
    print("target: ratio <= 1.05 (best with hook / best without)")
    spark.stop()
    if args.warehouse is None:  # ~11 GB of tables per run: a temporary warehouse does not outlive the run
        import shutil

        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
