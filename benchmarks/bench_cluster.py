#!/usr/bin/env python3
"""Hashing a table on a Spark standalone cluster: one worker against two (one core each), on a table of >= 4 GiB.

    python benchmarks/bench_cluster.py [--dir D] [--gib 4] [--files 32] [--rounds 2]

Writes (or reuses, under --dir) an attested Delta table of random bytes, then for 1 and for 2 workers starts a
standalone master and the workers as separate processes (tests/spark/cluster.py: ``spark-class`` from the installed
pyspark, loopback only; executors run a Python without the project, so the code they run is the zip the job ships)
and runs ``attest.spark.verify``-equivalent verification (``verify_table`` with the bytes hashed on the executors),
best of N rounds after a warm-up job. Prints the wall time of the verification and of the hashing job alone, the
ratio 1 worker / 2 workers (ideal 2.0; goal >= 1.7 on two free cores), and the machine's load average beside every
figure: on a shared machine the ratio says as much about the neighbours as about the code. Every verification must
pass, or the run fails (exit 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_distributed import make_table, warm


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} / {five:.1f} / {fifteen:.1f} (1/5/15 min) on {os.cpu_count()} cores"


def on_cluster(root: Path, workers: int, table: Path, nbytes: int, rounds: int) -> tuple[float, float, float]:
    """(best verify seconds, best hashing-job seconds, best fixed cost: a job hashing one 1-byte file) on a fresh
    cluster of ``workers`` one-core workers."""
    from attest.tables import DataFile
    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier
    from carriers.spark.distributed import ExecutorHasher, cli_session, executor_hasher
    from carriers.storage.delta import DeltaStorage
    from tests.spark.cluster import StandaloneCluster

    with StandaloneCluster(root / f"cluster-{workers}", workers=workers, cores=1, memory="1g") as cluster:
        os.environ["PYSPARK_PYTHON"] = str(cluster.executor_python)  # executors: the project only from the job
        spark = cli_session(cluster.master_url, app_name=f"bench-cluster-{workers}")
        try:
            sc = spark.sparkContext
            deadline = time.monotonic() + 120  # every worker's executor registered before timing anything
            while sc._jsc.sc().getExecutorMemoryStatus().size() < workers + 1 and time.monotonic() < deadline:
                time.sleep(0.5)
            for _ in range(3):  # Python workers up on every executor
                sc.parallelize(range(4 * workers), 4 * workers).count()
            verify_table(DeltaCarrier(str(table)), level="files")
            tiny = root / "tiny.bin"  # a job's fixed cost on this cluster: scheduling, task launch, results
            tiny.write_bytes(b"x")
            fixed: list[float] = []
            for _ in range(max(rounds, 3)):
                start = time.perf_counter()
                ExecutorHasher(spark, DeltaStorage(str(table))).hash_files(
                    [DataFile(path="tiny", size=1, location=str(tiny))])
                fixed.append(time.perf_counter() - start)
            print(f"  {workers} worker(s): a hashing job of one 1-byte file {min(fixed):.3f} s (best of {len(fixed)}); "
                  f"{load()}")
            totals: list[float] = []
            jobs: list[float] = []
            for _ in range(rounds):
                warm(table)  # other jobs on the machine evict the page cache
                carrier = DeltaCarrier(str(table))
                hasher = executor_hasher(carrier, spark)
                before = load()
                start = time.perf_counter()
                report = verify_table(carrier, level="bytes", hasher=hasher)
                totals.append(time.perf_counter() - start)
                jobs.append(hasher.stats.seconds)
                if not report.passed or hasher.stats.executor_bytes != nbytes:
                    print(report.human(), file=sys.stderr)
                    raise SystemExit(1)
                print(f"  {workers} worker(s): verify {totals[-1]:7.2f} s, hashing job {jobs[-1]:7.2f} s "
                      f"({nbytes / jobs[-1] / 1e9:.2f} GB/s, {hasher.stats.tasks} tasks); before: {before}")
        finally:
            spark.stop()
    return min(totals), min(jobs), min(fixed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None, help="where the table goes (reused when complete)")
    parser.add_argument("--gib", type=float, default=4.0)
    parser.add_argument("--files", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver listens on loopback, as the cluster does
    root = args.dir if args.dir is not None else Path(tempfile.mkdtemp(prefix="attest-bench-cluster-"))
    table = root / "table"
    try:
        nbytes = make_table(table, args.gib, args.files)
        print(f"machine : {os.cpu_count()} cores, shared with whatever else runs; {load()}")
        print(f"table   : {table}, {args.files} files, {nbytes / (1 << 30):.2f} GiB")
        t1, job1, fixed1 = on_cluster(root, 1, table, nbytes, args.rounds)
        t2, job2, fixed2 = on_cluster(root, 2, table, nbytes, args.rounds)
        print(f"\n1 worker : verify {t1:7.2f} s, hashing job {job1:7.2f} s, fixed cost {fixed1:.3f} s")
        print(f"2 workers: verify {t2:7.2f} s, hashing job {job2:7.2f} s, fixed cost {fixed2:.3f} s")
        # T_job(k) = F + B / (k * r): one task slot's rate r from the two jobs' difference (the fixed cost cancels)
        if job1 > job2:
            rate = nbytes / (2 * (job1 - job2))
            print(f"per task slot, from the two jobs: r = B / (2 (T1 - T2)) = {rate / 1e9:.2f} GB/s; "
                  f"fixed F = T1 - B/r = {job1 - nbytes / rate:.2f} s")
        print(f"scaling 1 worker / 2 workers: verify {t1 / t2:.2f}x, hashing job {job1 / job2:.2f}x "
              f"(ideal 2.0, goal >= 1.7); now {load()}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
