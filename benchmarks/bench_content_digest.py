#!/usr/bin/env python3
"""The content digest (attest.content, docs/content-digest.md) against a plain pyarrow read of the same files.

Writes ``--rows`` rows (default 1,000,000) of typical columns (int64 id, int32, float64, a short string, a UTC
timestamp, a date, a decimal(10,2), a bool, a partition constant) into ``--files`` Parquet files, then times, in
the same run, ``pyarrow.parquet.read_table`` of every file (the reference) and read + ``digest_table`` of every file
summed into the version's total, once with the native kernel (``recipe_attest_digest``, when installed) and once on
the pure-Python path (``ATTEST_CONTENT_NATIVE=0``): ``--rounds`` rounds of the read and the native digest,
alternating which goes first, and ``--pure-rounds`` of the pure one (about 100 times slower). Best of N with the
median in brackets, the ratios, the machine's load, and where each digest's time goes.

    python benchmarks/bench_content_digest.py [--rows N] [--files F] [--rounds R] [--pure-rounds P] [--dir D]

Exit status is non-zero only on an error (a total that differs from the sum of the files' digests, or the two paths
disagreeing), never because of a ratio. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
import pyarrow.parquet as pq

from attest.content import ColumnSpec, ContentDigest, digest_table, native
from attest.content import encoding as enc

CONSTANT = {"physical:part-date": (pa.date32(), dt.date(2026, 12, 3))}


def make_files(folder: Path, rows: int, files: int) -> list[Path]:
    paths = []
    per = -(-rows // files)
    for f in range(files):
        start, stop = f * per, min(rows, (f + 1) * per)
        ids = list(range(start, stop))
        table = pa.table({
            "id": pa.array(ids, pa.int64()),
            "qty": pa.array([i % 1000 for i in ids], pa.int32()),
            "price": pa.array([i * 0.25 for i in ids], pa.float64()),
            "sku": pa.array([f"sku-{i % 50000:05}" for i in ids], pa.string()),
            "at": pa.array([1_700_000_000_000_000 + i for i in ids], pa.timestamp("us", tz="UTC")),
            "day": pa.array([19000 + i % 365 for i in ids], pa.date32()),
            "amount": pa.array([decimal.Decimal(i % 100000) / 100 for i in ids], pa.decimal128(10, 2)),
            "flag": pa.array([i % 3 == 0 for i in ids], pa.bool_()),
        })
        path = folder / f"part-{f:03}.parquet"
        pq.write_table(table, path)
        paths.append(path)
    return paths


def columns(schema: pa.Schema) -> list[ColumnSpec]:
    return [ColumnSpec(f"physical:col-{f.name}", f) for f in schema]


def read_all(paths: list[Path]) -> int:
    return sum(pq.read_table(p).num_rows for p in paths)


def read_and_digest(paths: list[Path]) -> ContentDigest:
    digests = []
    for p in paths:
        table = pq.read_table(p)
        digests.append(digest_table(table, columns(table.schema), CONSTANT))
    return ContentDigest.total(digests)


def pure(switch: bool) -> None:
    """Take the pure-Python path (``ATTEST_CONTENT_NATIVE=0``) or the default one (the kernel when installed)."""
    if switch:
        os.environ[native.ENV] = "0"
    else:
        os.environ.pop(native.ENV, None)


def stages(paths: list[Path], kernel: native.Kernel | None) -> dict[str, float]:
    """One pass with each stage timed on its own (the same calls digest_table makes on that path). With the kernel:
    the read, then the kernel's digest_batch (it encodes each row from the Arrow arrays and hashes it), and, for
    comparison, what the fallback would spend: pyarrow's encoding and the kernel hashing those encodings."""
    if kernel is None:
        spent = {"read": 0.0, "encode": 0.0, "hash (BLAKE3 XOF per row)": 0.0, "lane sums": 0.0}
    else:
        spent = {"read": 0.0, "native kernel (encode + XOF + lane sums)": 0.0}
        fallback = {"pyarrow encoding (fallback)": 0.0, "kernel hashing those": 0.0}
    for p in paths:
        t0 = time.perf_counter()
        table = pq.read_table(p)
        spent["read"] += time.perf_counter() - t0
        plan = enc._plan(columns(table.schema), CONSTANT)
        for batch in table.to_batches():
            if kernel is not None:
                t0 = time.perf_counter()
                if enc._native_batch(kernel, batch, plan, None) is None:
                    raise AssertionError("a column the kernel does not take")
                spent["native kernel (encode + XOF + lane sums)"] += time.perf_counter() - t0
                for start in range(0, batch.num_rows, enc.NATIVE_BATCH_ROWS):
                    part = batch.slice(start, enc.NATIVE_BATCH_ROWS)
                    t0 = time.perf_counter()
                    encoded = enc._encode_batch(part, plan)
                    t1 = time.perf_counter()
                    enc._native_sum(kernel, encoded, None)
                    fallback["pyarrow encoding (fallback)"] += t1 - t0
                    fallback["kernel hashing those"] += time.perf_counter() - t1
                continue
            for start in range(0, batch.num_rows, enc.BATCH_ROWS):
                part = batch.slice(start, enc.BATCH_ROWS)
                t0 = time.perf_counter()
                encoded = enc._encode_batch(part, plan)
                t1 = time.perf_counter()
                spent["encode"] += t1 - t0
                elements = enc._elements(encoded)
                t2 = time.perf_counter()
                enc._reduce(elements)
                t3 = time.perf_counter()
                spent["hash (BLAKE3 XOF per row)"] += t2 - t1
                spent["lane sums"] += t3 - t2
    if kernel is not None:
        spent.update({f"  vs. {k}": v for k, v in fallback.items()})
    return spent


def breakdown(title: str, spent: dict[str, float]) -> None:
    whole_time = sum(v for k, v in spent.items() if not k.startswith(" "))
    print(f"where the time goes, {title} (one pass):")
    for name, seconds in spent.items():
        share = "" if name.startswith(" ") else f"  {100 * seconds / whole_time:5.1f} %"
        print(f"  {name:<42}{seconds:8.3f} s{share}")


def load() -> str:
    try:
        return "load average " + " ".join(f"{v:.1f}" for v in os.getloadavg()) + f" on {os.cpu_count()} cores"
    except OSError:
        return "load average unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pure-rounds", type=int, default=1, help="rounds of the pure-Python digest (slow)")
    parser.add_argument("--dir", help="where the Parquet files are written (default: a temporary folder)")
    args = parser.parse_args(argv)
    switch = os.environ.get(native.ENV)
    try:
        pure(False)
        kernel = native.kernel()
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(args.dir) if args.dir else Path(scratch)
            folder.mkdir(parents=True, exist_ok=True)
            return run(args, folder, kernel)
    finally:
        if switch is None:
            os.environ.pop(native.ENV, None)
        else:
            os.environ[native.ENV] = switch


def run(args: argparse.Namespace, folder: Path, kernel: native.Kernel | None) -> int:
    paths = make_files(folder, args.rows, args.files)
    size = sum(p.stat().st_size for p in paths)
    print(f"{args.rows:,} rows in {args.files} Parquet files, {size / 2**20:.1f} MiB; best of {args.rounds} "
          f"[median] ({args.pure_rounds} of the pure path); {load()}")
    print(f"digest path: {native.status()}")
    read_all(paths)  # page cache warm for all
    names = ["read"] + (["read + digest (native)"] if kernel is not None else [])
    times: dict[str, list[float]] = {name: [] for name in [*names, "read + digest (pure)"]}
    cpu_times: dict[str, list[float]] = {name: [] for name in times}  # every thread's CPU time, this process
    totals: dict[str, ContentDigest] = {}
    for round_ in range(max(args.rounds, args.pure_rounds)):
        order = names if round_ < args.rounds else []
        order = [*order, "read + digest (pure)"] if round_ < args.pure_rounds else order
        for name in order if round_ % 2 == 0 else order[::-1]:
            pure(name == "read + digest (pure)")
            start, cpu = time.perf_counter(), time.process_time()
            if name == "read":
                read_all(paths)
            else:
                totals[name] = read_and_digest(paths)
            times[name].append(time.perf_counter() - start)
            cpu_times[name].append(time.process_time() - cpu)
            pure(False)
    whole = pq.read_table(paths[0]) if len(paths) == 1 else pa.concat_tables(pq.read_table(p) for p in paths)
    reference = digest_table(whole, columns(whole.schema), CONSTANT)
    for name, total in totals.items():
        if total != reference or total.rows != args.rows:
            print(f"ERROR: {name}: the version's total differs from the digest of all rows at once")
            return 1
    best = {k: min(v) for k, v in times.items() if v}
    cpu_best = {k: min(v) for k, v in cpu_times.items() if v}
    print(f"{'':<24}{'wall':>9}   [median]   CPU (every thread)")
    for name, values in times.items():
        if values:
            print(f"{name:<24}{best[name]:9.3f} s [{statistics.median(values):7.3f}]  {cpu_best[name]:7.3f} s")
    for name in best:
        if name != "read":
            print(f"ratio {name} / read: {best[name] / best['read']:.1f}x (goal <= 2x); "
                  f"CPU time: {cpu_best[name] / cpu_best['read']:.1f}x")
    if "read + digest (native)" in best and "read + digest (pure)" in best:
        print(f"native speed-up over pure: {best['read + digest (pure)'] / best['read + digest (native)']:.1f}x")
    print(f"digest {reference.short_id()}, {reference.rows:,} rows ({'both paths' if len(totals) > 1 else 'one path'})")
    if kernel is not None:
        breakdown("native", stages(paths, kernel))
    if args.pure_rounds:
        breakdown("pure Python", stages(paths, None))
    print(f"({load()} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
