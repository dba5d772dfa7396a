"""Shared by the carrier benchmarks: time one step and print it beside its ratio to a same-run reference; run steps
as fresh processes and compare their time, CPU time and peak memory with a reference process's
(bench_million_files.py, bench_million_files_iceberg.py)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
RECORD = "attest record"


def timed(label: str, fn: Callable[[], Any], reference: float | None = None) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - start
    ratio = f"  ({elapsed / reference:6.1f}x reference)" if reference else ""
    print(f"{label:<46}{elapsed:9.3f} s{ratio}")
    return elapsed, value


def run_once(argv: list[str], root: Path = ROOT,
             env: dict[str, str] | None = None) -> tuple[float, int, int, str, float]:
    """(wall seconds, exit status, max RSS in KiB, stdout + stderr tail, CPU seconds: user + system) of one process
    running ``root``'s code (in ``env``, else this one's environment). On a loaded machine the CPU time is the
    steadier figure."""
    start = time.perf_counter()
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(root)}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=root)
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    return (elapsed, os.waitstatus_to_exitcode(status), usage.ru_maxrss, out.decode(errors="replace")[-2000:],
            usage.ru_utime + usage.ru_stime)


def record_no_content(carrier: str) -> str:
    """A ``python -c`` program running ``attest record <its arguments> --model bench --program-hash a…`` with the
    carrier ``carrier`` (``module.Class``) computing no content digests. The benchmarks' one-byte files are not
    Parquet, so their rows cannot be read; a carrier computing none records the same sidecar and per-file views."""
    module, _, name = carrier.rpartition(".")
    return ("import sys\n"
            "from attest.errors import UnsupportedTableError\n"
            f"from {module} import {name}\n"
            "def none(*_a, **_k): raise UnsupportedTableError('benchmark: one-byte files, no rows')\n"
            f"{name}.file_content_digests = none\n"
            "from attest.cli import main\n"
            "sys.exit(main(['record', *sys.argv[1:], '--model', 'bench', '--program-hash', 'a' * 64]))\n")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """--rounds, --dir and --against, as every process benchmark takes them."""
    parser.add_argument("--rounds", type=int, default=1, help="rounds of verify and the reference (best is shown)")
    parser.add_argument("--dir", help="where the table is built (default: a temporary folder)")
    parser.add_argument("--against", metavar="ROOT",
                        help="also verify with the code of another checkout ROOT (e.g. a `git worktree` of main)")


def compare(steps: Mapping[str, tuple[list[str], Path]], verify: list[str], args: argparse.Namespace,
            env: dict[str, str] | None = None) -> int:
    """Run each step (label: (command line, the checkout whose code runs); the first is the reference, the engine's
    own) as a fresh process in ``env``: ``args.rounds`` rounds each but ``attest record`` (the best kept), and
    ``verify`` once more with the code of ``args.against`` when given. Prints a line per step: time, peak memory, CPU
    time, and each as a ratio to the reference's. Returns 1 when any step failed (a non-zero exit: an error, a
    verdict not VERIFIED), else 0."""
    if args.against:
        steps = {**steps, f"  the same, code of {args.against}": (verify, Path(args.against).resolve())}
    failed = 0
    results: dict[str, tuple[float, int, float]] = {}
    for label, (cmd, code) in steps.items():
        rounds = 1 if label == RECORD else args.rounds
        best: tuple[float, int, float] | None = None
        for _ in range(rounds):
            elapsed, status, rss, out, cpu = run_once(cmd, code, env=env)
            if status != 0:
                print(f"{label}: exit {status}\n{out}")
                failed = 1
            best = (elapsed, rss, cpu) if best is None or elapsed < best[0] else (best[0], max(best[1], rss), best[2])
        assert best is not None
        results[label] = best
        ref = results[next(iter(steps))]
        print(f"{label:<36}{best[0]:8.2f} s {best[1] / 1024:8.0f} MiB {best[2]:8.2f} s CPU   "
              f"{best[0] / ref[0]:5.2f}× time {best[1] / ref[1]:5.2f}× memory {best[2] / ref[2]:5.2f}× CPU  "
              f"(load {os.getloadavg()[0]:.1f})")
    return failed
