#!/usr/bin/env python3
"""A large standalone manifest, checked by ``attest verify`` and by the reference verifier in the same run.

An auditor's manifest of a big table lists every file: this times the part of a verification that grows with the
list and not with the bytes — reading, parsing (strict: duplicate keys, depth, numbers, surrogates) and checking the
schema and our semantic rules — as a fresh process, with the reference implementation of rocky-manifest v0.1
(``rocky-verify verify``, Rust) on the same file as the yardstick. No artifacts are hashed (schema level).

    python benchmarks/bench_manifest.py [--outputs N] [--rounds R] [--dir D] [--reference PATH]

Prints, per verifier, the best and median wall time of R rounds (alternating) and the peak memory (max RSS) of one
process, then attest's time over the reference's (< 1: attest faster). Linux counts a started program's peak from
the memory of the process that started it, so neither figure is below this script's own (~15 MiB). Both must say
the manifest holds; exit status is non-zero only on an error (a verdict that differs, a verifier that fails), never
because of a ratio. The reference binary is where .ci/run builds it (``$ATTEST_REFERENCE_TARGET/release/
rocky-verify``, by default ``~/.cache/recipe-attest/rocky-target``); without it only attest's figures are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_TARGET = Path.home() / ".cache" / "recipe-attest" / "rocky-target"


def reference_binary(given: str | None) -> Path | None:
    path = Path(given) if given else Path(os.environ.get("ATTEST_REFERENCE_TARGET") or DEFAULT_TARGET) / "release" \
        / "rocky-verify"
    return path if os.access(path, os.X_OK) else None


def make_manifest(path: Path, outputs: int) -> None:
    """A valid manifest of ``outputs`` partitioned output paths with distinct digests (skipped when already there)."""
    from attest.build import build_manifest

    if path.exists():
        return
    manifest = build_manifest(model="big", program_hash="a" * 64, env_hash="b" * 64,
                              outputs=[(f"p={i % 100}/part-{i:07d}.parquet", f"{i:064x}") for i in range(outputs)])
    path.write_text(manifest.to_json(), encoding="utf-8")


def run_once(argv: list[str]) -> tuple[float, int, int, str]:
    """(wall seconds, exit status, max RSS in KiB, stdout) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, process.returncode, usage.ru_maxrss, out.decode(errors="replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outputs", type=int, default=1_000_000, help="output hashes in the manifest")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="where the manifest is written and kept (default: a temporary folder)")
    parser.add_argument("--reference", help="the rocky-verify binary (default: where .ci/run builds it)")
    parser.add_argument("--write-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_only:
        make_manifest(Path(args.dir) / f"manifest-{args.outputs}.json", args.outputs)
        return 0

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.dir) if args.dir else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        manifest = folder / f"manifest-{args.outputs}.json"
        # Built in a process of its own: a started program's peak memory (max RSS) counts from this process's at the
        # fork, so this one stays small.
        subprocess.run([sys.executable, __file__, "--write-only", "--outputs", str(args.outputs), "--dir",
                        str(folder)], check=True)
        size = manifest.stat().st_size
        verifiers = {"attest": [sys.executable, "-m", "attest.cli", "verify", str(manifest)]}
        reference = reference_binary(args.reference)
        if reference is not None:
            verifiers["rocky-verify"] = [str(reference), "verify", str(manifest)]
        print(f"manifest: {args.outputs:,} output hashes, {size / 2**20:.1f} MiB; best of {args.rounds} [median]")
        if reference is None:
            print("reference: rocky-verify not built (.ci/run builds it with cargo); attest's figures only")
        times: dict[str, list[float]] = {name: [] for name in verifiers}
        memory: dict[str, int] = {}
        for round_ in range(args.rounds):
            order = list(verifiers) if round_ % 2 == 0 else list(reversed(verifiers))
            for name in order:
                elapsed, code, rss, out = run_once(verifiers[name])
                if code != 0 or "VERIFIED" not in out:
                    print(f"error: {name} did not verify the manifest (exit {code}): {out.strip()[:200]}")
                    return 1
                times[name].append(elapsed)
                memory[name] = max(memory.get(name, 0), rss)
        for name, samples in times.items():
            print(f"{name:<14}{min(samples):8.3f} s [{statistics.median(samples):.3f}]   "
                  f"max RSS {memory[name] / 1024:7.0f} MiB")
        if reference is not None:
            ratio = min(times["attest"]) / min(times["rocky-verify"])
            print(f"attest / reference: {ratio:.2f}x time, {memory['attest'] / memory['rocky-verify']:.2f}x memory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
