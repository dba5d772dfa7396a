"""Overhead of the Spark post-write hook on a job writing ~1 GiB (on demand; not part of pytest).

    .venv/bin/python benchmarks/bench_spark_hook.py [--gib 1.0] [--warehouse DIR]

Runs the same job (Delta CTAS of random-ish rows) without and with the hook in one session and prints the ratio
(target: <= 1.05). The hook's time includes hashing every written byte after the commit (flush waits for it).
"""

from __future__ import annotations

import argparse
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--warehouse", default=None)
    args = parser.parse_args()
    from attest.spark import install, local_session

    warehouse = args.warehouse or tempfile.mkdtemp(prefix="bench-spark-hook-")
    spark = local_session(warehouse)
    rows = int(args.gib * (1 << 30) / 64)  # ~64 bytes per row on disk with the sha2 column (poorly compressible)

    def job(name: str) -> float:
        start = time.perf_counter()
        spark.sql(f"CREATE TABLE {name} USING delta AS SELECT id, sha2(cast(id AS string), 256) AS h "
                  f"FROM range({rows})")
        return time.perf_counter() - start

    base = job("bench_plain")
    hook = install(spark, "required")
    start = time.perf_counter()
    job("bench_hooked")
    hook.flush()
    hooked = time.perf_counter() - start
    hook.uninstall()
    print(f"rows={rows} without hook {base:.1f}s, with hook (incl. flush) {hooked:.1f}s, "
          f"ratio {hooked / base:.3f}, hook seconds {hook.seconds:.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
