"""Run job processes side by side and fail fast, with every process's output (tests/spark/test_stamps.py,
tests/spark/test_identity.py).

Each process writes to its own file, never a pipe: a pipe nobody drains fills at 64 KiB (Spark's warnings, a
stack trace) and blocks its writer forever — while the test waited on the other process, itself waiting for its
stalled peer. When one process fails, the others are stopped at once; when the time runs out, each still running
is first asked for its Python stacks (the jobs register ``faulthandler`` on SIGUSR1), so a hang says where it was.
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Finished:
    name: str
    returncode: int | None  # None: stopped by us (a peer failed, or the time ran out)
    output: str


def run_side_by_side(commands: dict[str, list[str]], logs: Path, *, timeout_s: float) -> dict[str, Finished]:
    """Start every command at once (cwd: the repository root) and wait for all of them. Raises AssertionError,
    with each process's last output, as soon as one fails or when ``timeout_s`` passes."""
    logs.mkdir(parents=True, exist_ok=True)
    procs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    for name, cmd in commands.items():
        log = logs / f"{name}.log"
        with log.open("wb") as out:
            procs[name] = (subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT), log)
    deadline = time.monotonic() + timeout_s
    problem = ""
    while not problem and any(p.poll() is None for p, _ in procs.values()):
        failed = [n for n, (p, _) in procs.items() if p.returncode not in (None, 0)]
        if failed:
            problem = f"{', '.join(failed)} failed"
        elif time.monotonic() > deadline:
            problem = f"still running after {timeout_s:.0f} s"
        else:
            time.sleep(0.2)
    if not problem:
        failed = [n for n, (p, _) in procs.items() if p.returncode != 0]
        problem = f"{', '.join(failed)} failed" if failed else ""
    stopped = _stop([p for p, _ in procs.values() if p.poll() is None])
    done = {n: Finished(n, None if p in stopped else p.returncode, log.read_text(errors="replace"))
            for n, (p, log) in procs.items()}
    if problem:
        raise AssertionError(problem + "\n" + "\n".join(
            f"--- {f.name} (exit {f.returncode if f.returncode is not None else 'stopped'}) ---\n{f.output[-4000:]}"
            for f in done.values()))
    return done


def _stop(running: list[subprocess.Popen[bytes]]) -> set[subprocess.Popen[bytes]]:
    for proc in running:
        proc.send_signal(signal.SIGUSR1)  # faulthandler: every thread's Python stack into the log
    time.sleep(2)
    for proc in running:
        proc.kill()  # the JVM child goes with its parent's stdin closing (pyspark's gateway watches it)
        proc.wait(timeout=60)
    return set(running)


def enable_stack_dumps() -> None:
    """In a job process: dump every thread's stack on SIGUSR1 (what run_side_by_side sends before stopping it)."""
    import faulthandler

    faulthandler.register(signal.SIGUSR1, all_threads=True)
