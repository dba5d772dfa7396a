"""Overhead of the post-write hook on a Structured Streaming query (on demand; not part of pytest).

    .venv/bin/python benchmarks/bench_streaming.py [--batches 20] [--rows 20000] [--rounds 2] [--warehouse DIR]

A rate source (``rate-micro-batch``: ``--rows`` rows per batch, whatever the clock) streamed into a Delta path
table, ``--batches`` micro-batches per run, with and without ``attest.spark.install(spark)``, alternating, in one
session after a warm-up. Each time runs from ``start()`` until the last batch committed; with the hook, until its
last attestation too (``flush``), so every batch's hashing counts. Prints the wall times and the ratio of the best
runs (target: <= 1.05) and checks that every committed batch version is attested.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warehouse", default=None)
    args = parser.parse_args()
    from attest.spark import install, local_session

    warehouse = Path(args.warehouse or tempfile.mkdtemp(prefix="bench-streaming-"))
    spark = local_session(warehouse)

    def run(name: str, hooked: bool) -> float:
        hook: Any = install(spark, "required") if hooked else None
        start = time.perf_counter()
        query = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", args.rows).load()
                 .selectExpr("value", "timestamp", "sha2(cast(value AS string), 256) AS h")
                 .writeStream.format("delta").option("checkpointLocation", str(warehouse / f"ck_{name}"))
                 .trigger(processingTime="0 seconds").start(str(warehouse / name)))
        try:
            while (query.lastProgress or {}).get("batchId", -1) < args.batches - 1:
                if query.exception() is not None:
                    raise RuntimeError(str(query.exception()))
                time.sleep(0.05)
        finally:
            query.stop()
        if hook is not None:
            hook.flush()
        elapsed = time.perf_counter() - start
        if hook is not None:
            assert hook.failed == 0 and hook.skipped == 0, hook.errors
            pointers = len(list((warehouse / name / "_recipe_attest" / "versions").glob("*.json")))
            commits = len(list((warehouse / name / "_delta_log").glob("*.json")))
            assert pointers == commits, (pointers, commits)  # every committed batch attested
            hook.uninstall()
        return elapsed

    run("warmup", False)  # JIT, caches, first file-system touches: part of neither side
    times: dict[str, list[float]] = {"without hook": [], "with hook": []}
    for r in range(args.rounds):
        order = [("without hook", False), ("with hook", True)]
        if r % 2:
            order.reverse()  # no side always runs first
        for label, hooked in order:
            times[label].append(run(f"t_{label.split()[0]}_{r}", hooked))
    print(f"machine : {os.cpu_count()} cores (shared: other jobs run beside this one), load {os.getloadavg()[0]:.1f}")
    print(f"stream  : {args.batches} micro-batches of {args.rows:,} rows (rate-micro-batch -> Delta path)")
    base = min(times["without hook"])
    for label, values in times.items():
        print(f"{label:<13}: {', '.join(f'{t:.1f}s' for t in values)}  ratio {min(values) / base:.3f}")
    print("target: ratio <= 1.05 (best with hook / best without)")
    spark.stop()


if __name__ == "__main__":
    main()
