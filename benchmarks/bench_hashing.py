#!/usr/bin/env python3
"""Throughput of attest.hashing against b3sum on the same files, in the same run.

Two shapes: one 1 GiB file (hash_file vs ``b3sum`` with its default threading) and 2,000 files of
512 KiB (hash_files vs one ``b3sum`` invocation over all of them). Random bytes, page cache warm,
best of N rounds with the two tools interleaved so that a noisy neighbour hurts both alike.

    python benchmarks/bench_hashing.py [--dir D] [--keep] [--rounds N]

Exit status is non-zero only on an error (including digests that disagree with b3sum), never
because of a ratio. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Run from a checkout without installing: make `attest` importable from the repo root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import blake3

from attest.hashing import hash_file, hash_files

MiB = 1 << 20
WRITE_CHUNK = 8 * MiB


def write_random(path: Path, size: int) -> None:
    with path.open("wb") as f:
        left = size
        while left:
            n = min(left, WRITE_CHUNK)
            f.write(os.urandom(n))
            left -= n


def make_data(root: Path, big_bytes: int, small_count: int, small_bytes: int) -> tuple[Path, list[Path]]:
    big = root / "big.bin"
    small_dir = root / "small"
    small_dir.mkdir(exist_ok=True)
    small = [small_dir / f"f{i:05}.bin" for i in range(small_count)]
    write_random(big, big_bytes)
    for p in small:
        write_random(p, small_bytes)
    return big, small


def warm(paths: list[Path]) -> None:
    """Read every byte once so both tools see the page cache, not the disk."""
    for p in paths:
        with p.open("rb", buffering=0) as f:
            while f.read(WRITE_CHUNK):
                pass


def b3sum_digests(args: list[str], cwd: Path) -> list[str]:
    out = subprocess.run(["b3sum", "--no-names", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return out.stdout.split()


def timed(fn: Callable[[], list[str]]) -> tuple[float, list[str]]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def mbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None,
                        help="parent directory for the data (default: the system temp dir); "
                             "put it on the disk you care about")
    parser.add_argument("--keep", action="store_true", help="keep the generated files and print their path")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measurement; the best is kept")
    parser.add_argument("--big-mib", type=int, default=1024, help="size of the big file in MiB")
    parser.add_argument("--small-count", type=int, default=2000, help="number of small files")
    parser.add_argument("--small-kib", type=int, default=512, help="size of each small file in KiB")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.big_mib < 1 or args.small_count < 1 or args.small_kib < 1:
        parser.error("--rounds, --big-mib, --small-count and --small-kib must be >= 1")

    big_bytes = args.big_mib * MiB
    small_bytes = args.small_kib * 1024
    needed = big_bytes + args.small_count * small_bytes
    parent = args.dir if args.dir is not None else Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(parent).free
    if free < needed * 1.1:
        print(f"error: {parent} has {free / MiB:.0f} MiB free, the data needs {needed / MiB:.0f} MiB",
              file=sys.stderr)
        return 2

    b3sum = shutil.which("b3sum")
    version = subprocess.run(["b3sum", "--version"], capture_output=True, text=True).stdout.strip() if b3sum else ""
    print(f"machine : {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"blake3-py {blake3.__version__}")
    print(f"b3sum   : {version or 'not found on PATH: absolute throughput only (make b3sum)'}")

    root = Path(tempfile.mkdtemp(prefix="attest-bench-", dir=parent))
    try:
        print(f"data    : {root} (1 x {args.big_mib} MiB, {args.small_count} x {args.small_kib} KiB)")
        big, small = make_data(root, big_bytes, args.small_count, small_bytes)
        warm([big, *small])
        small_names = [str(p.relative_to(root)) for p in small]
        small_total = args.small_count * small_bytes

        times: dict[str, list[float]] = {}
        digests: dict[str, list[str]] = {}

        def ours_small() -> list[str]:
            result = hash_files(small)
            return [result[str(p)] for p in small]

        runs: list[tuple[str, Callable[[], list[str]]]] = [
            ("ours big", lambda: [hash_file(big)]),
            ("ours small", ours_small),
        ]
        if b3sum:
            runs += [
                ("b3sum big", lambda: b3sum_digests([big.name], root)),
                ("b3sum small", lambda: b3sum_digests(small_names, root)),
            ]
        for i in range(args.rounds):
            # Every run once per round, in an order that rotates (b3sum first, then ours first, ...) so
            # neither tool always follows the other, and a noisy neighbour hurts both alike.
            order = runs[::-1] if i % 2 == 0 else runs
            for name, fn in order:
                t, out = timed(fn)
                times.setdefault(name, []).append(t)
                digests[name] = out
            # A benchmark of wrong answers is worthless: every round checks the digests.
            if b3sum and (digests["ours big"] != digests["b3sum big"]
                          or digests["ours small"] != digests["b3sum small"]):
                print("error: attest.hashing disagrees with b3sum", file=sys.stderr)
                return 1

        rows = [
            (f"1 x {args.big_mib} MiB", "hash_file", big_bytes, "big"),
            (f"{args.small_count} x {args.small_kib} KiB", "hash_files", small_total, "small"),
        ]
        print(f"\nbest of {args.rounds} (median in brackets), MB/s = 10^6 bytes per second")
        print(f"{'shape':<18} {'b3sum MB/s':>18} {'ours MB/s':>18} {'ours/b3sum':>16}  ours")
        for shape, fn_name, nbytes, key in rows:
            ours, ours_med = (mbps(nbytes, f(times[f"ours {key}"])) for f in (min, statistics.median))
            if b3sum:
                ref, ref_med = (mbps(nbytes, f(times[f"b3sum {key}"])) for f in (min, statistics.median))
                print(f"{shape:<18} {ref:>9.0f} [{ref_med:>6.0f}] {ours:>9.0f} [{ours_med:>6.0f}] "
                      f"{ours / ref:>7.2f} [{ours_med / ref_med:>5.2f}]  {fn_name}")
            else:
                print(f"{shape:<18} {'-':>18} {ours:>9.0f} [{ours_med:>6.0f}] {'-':>16}  {fn_name}")
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"\nkept    : {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
