#!/usr/bin/env python3
"""The ``attest`` command line end to end, as a process, side by side with ``b3sum`` on the same bytes in one run.

Four shapes, each timed as a fresh process (start-up, imports, parsing, listing, confinement and hashing included):

- ``attest verify small.json --artifacts-dir small`` vs ``b3sum`` over the same 2,000 files of 512 KiB;
- ``attest verify big.json --artifacts-dir big`` vs ``b3sum big.bin`` (1 GiB);
- ``attest verify TABLE --level bytes`` on a Delta table of 2,000 files of ~512 KiB vs ``b3sum`` over its files;
- the same on a Delta table of one ~1 GiB file.

    python benchmarks/bench_cli.py [--dir D] [--keep] [--rounds N] [--editable] [--against REV] [--fast-off]

Ratios are b3sum's time / attest's time (>= 1: attest is faster), best of N rounds with the median in brackets;
the order of the runs alternates from round to round. Targets (issue 12): >= 1.0 on the 2,000 files, >= 0.8 on the
1 GiB file. The interpreter compiles the modules once before timing (bytecode caches, as any install has them).

``attest`` runs as a user installs it: the two packages copied into a scratch virtual environment (the files a wheel
holds, compiled), whose dependencies are this environment's, and the console script pip writes. A development
checkout's editable install adds an import hook that costs every start ~10 ms (measured here); ``--editable`` times
this environment's own ``attest`` instead.
``--against REV`` installs the packages of another git revision (``git archive``) the same way, beside this one, and
times both in the same rounds (alternating with ``b3sum``): the way to tell a change from the host's noise, which moves
every ratio by 10-20 % between hours here.
``--fast-off`` also times this ``attest`` with its start-up fast path switched off (``ATTEST_FAST=0``, attest/fast/) in
the same rounds: what the fast path buys, measured as a unit.
Exit status is non-zero only on an error (a verification that fails, no b3sum), never because of a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MiB = 1 << 20
PROGRAM = "a" * 64
# What a user's environment has: bytecode caches are written (a developer shell may turn them off).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def write_random(path: Path, size: int) -> None:
    with path.open("wb") as f:
        for offset in range(0, size, 8 * MiB):
            f.write(os.urandom(min(8 * MiB, size - offset)))


def make_data(root: Path, small_count: int, small_kib: int, big_mib: int) -> None:
    """Files + manifests, and two attested Delta tables holding the same shapes (skipped when already there)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from attest.build import build_manifest
    from attest.hashing import hash_files
    from carriers.delta.carrier import attest_after_write

    marker = root / f".complete-{small_count}-{small_kib}-{big_mib}"
    if marker.exists():
        return
    for d in ("small", "big", "tsmall", "tbig"):
        shutil.rmtree(root / d, ignore_errors=True)
    (root / "small").mkdir(parents=True)
    (root / "big").mkdir()
    for i in range(small_count):
        write_random(root / "small" / f"f{i:05}.bin", small_kib * 1024)
    write_random(root / "big" / "big.bin", big_mib * MiB)
    for d in ("small", "big"):
        names = sorted(os.listdir(root / d))
        hashes = hash_files([root / d / n for n in names])
        manifest = build_manifest(model=d, program_hash=PROGRAM, env_hash=PROGRAM,
                                  outputs=[(n, hashes[str(root / d / n)]) for n in names])
        (root / f"{d}.json").write_text(json.dumps(manifest.to_dict()))
    # Random payloads do not compress: each Parquet file is about its payload's size.
    payload = small_kib * 1024 - 600
    write_deltalake(str(root / "tsmall"), pa.table({"p": list(range(small_count)),
                                                    "b": [os.urandom(payload) for _ in range(small_count)]}),
                    partition_by=["p"])
    attest_after_write(str(root / "tsmall"), model="tsmall", program_hash=PROGRAM)
    write_deltalake(str(root / "tbig"), pa.table({"b": pa.array([os.urandom(MiB) for _ in range(big_mib)],
                                                                pa.binary())}))
    attest_after_write(str(root / "tbig"), model="tbig", program_hash=PROGRAM)
    marker.touch()


def warm(folder: Path) -> None:
    for p in folder.rglob("*"):
        if p.is_file():
            with p.open("rb", buffering=0) as f:
                while f.read(8 * MiB):
                    pass


def parquet_files(table: Path) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in table.rglob("*.parquet"))


def installed_attest(root: Path, source: Path = ROOT, name: str = "venv") -> list[str]:
    """``attest`` installed as from a wheel into a scratch venv ``root / name`` from the checkout at ``source``
    (dependencies: this environment's)."""
    import compileall
    import sysconfig
    import venv

    env = root / name
    if not (env / "bin" / "python").exists():
        venv.create(env, with_pip=False, symlinks=True)
    site = Path(subprocess.run([str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for package in ("attest", "carriers"):
        shutil.rmtree(site / package, ignore_errors=True)
        shutil.copytree(source / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))
        compileall.compile_dir(site / package, quiet=1)
    script = env / "bin" / "attest"
    # What pip writes for the [project.scripts] entry point.
    script.write_text(f"#!{env / 'bin' / 'python'}\nimport sys\nfrom attest.cli import run\n"
                      "if __name__ == '__main__':\n    sys.exit(run())\n")
    script.chmod(0o755)
    return [str(script)]


def revision_sources(root: Path, revision: str) -> Path:
    """The ``attest`` and ``carriers`` packages of git ``revision``, extracted under ``root``."""
    target = root / "against"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision, "attest", "carriers"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise RuntimeError(f"git archive {revision}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process), with ``env`` added to the environment."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env={**ENV, **(env or {})}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {proc.returncode}: {proc.stdout}{proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None, help="where the data goes (default: a fresh temp dir); "
                        "an existing complete data set there is reused")
    parser.add_argument("--keep", action="store_true", help="keep the data")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--small-count", type=int, default=2000)
    parser.add_argument("--small-kib", type=int, default=512)
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--editable", action="store_true", help="time this environment's attest (editable "
                        "install: ~10 ms more start-up) instead of an installed copy")
    parser.add_argument("--against", metavar="REV", help="also time the attest of this git revision, installed the "
                        "same way, in the same rounds")
    parser.add_argument("--fast-off", action="store_true", help="also time this attest with ATTEST_FAST=0 (its "
                        "start-up fast path off), in the same rounds")
    args = parser.parse_args(argv)
    b3sum = shutil.which("b3sum")
    if b3sum is None:
        print("error: b3sum is not on PATH (make b3sum)", file=sys.stderr)
        return 1
    attest = [str(Path(sys.executable).with_name("attest"))]
    if not Path(attest[0]).exists():
        attest = [sys.executable, "-m", "attest.cli"]
    root = args.dir if args.dir is not None else Path(tempfile.mkdtemp(prefix="attest-bench-cli-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        version = subprocess.run([b3sum, "--version"], capture_output=True, text=True).stdout.strip()
        print(f"machine : {os.cpu_count()} cores (shared: other jobs run beside this one), load "
              f"{os.getloadavg()[0]:.1f}; {version}")
        make_data(root, args.small_count, args.small_kib, args.big_mib)
        if not args.editable:
            attest = installed_attest(root)
            print(f"attest  : installed copy in {root / 'venv'} (--editable: this environment's)")
        tools = {"attest": attest}
        if args.against:
            tools[f"@{args.against}"] = installed_attest(root, revision_sources(root, args.against), "venv-against")
            print(f"against : {args.against}, installed in {root / 'venv-against'}")
        envs = {}  # a tool's environment over ENV
        if args.fast_off:
            tools["ATTEST_FAST=0"] = tools["attest"]
            envs["ATTEST_FAST=0"] = {"ATTEST_FAST": "0"}
        small = [b3sum, "--no-names", *(f"small/{n}" for n in sorted(os.listdir(root / "small")))]
        tsmall = [b3sum, "--no-names", *(f"tsmall/{p}" for p in parquet_files(root / "tsmall"))]
        tbig = [b3sum, "--no-names", *(f"tbig/{p}" for p in parquet_files(root / "tbig"))]
        shapes = {  # name: (the verify arguments, b3sum over the same files)
            f"manifest, {args.small_count} x {args.small_kib} KiB": (
                ["verify", "small.json", "--artifacts-dir", "small"], small),
            f"manifest, 1 x {args.big_mib} MiB": (
                ["verify", "big.json", "--artifacts-dir", "big"], [b3sum, "--no-names", "big/big.bin"]),
            f"Delta table, {args.small_count} files": (["verify", "tsmall", "--level", "bytes"], tsmall),
            "Delta table, 1 file": (["verify", "tbig", "--level", "bytes"], tbig),
        }
        # Issue 12's targets: >= 1.0 on the many small files, >= 0.8 on the one big file.
        targets = dict(zip(shapes, (1.0, 0.8, 1.0, 0.8), strict=True))
        python = sys.executable if args.editable else str(root / "venv" / "bin" / "python")
        start_up = {"python -c pass": [python, "-c", "pass"], "attest --version": [*attest, "--version"]}
        # Bytecode compiled: every command once before timing.
        for verify_args, ref in shapes.values():
            for tool, prefix in tools.items():
                run([*prefix, *verify_args], root, envs.get(tool))
            run(ref, root)
        times: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        # One shape at a time, its files re-read before every round: on a shared machine other jobs evict the page
        # cache, and a round that reads from the disk measures the disk, not the tools.
        for name, (verify_args, ref) in shapes.items():
            folder = root / ref[-1].split("/")[0]
            for r in range(args.rounds):
                warm(folder)
                order = [*((tool, [*prefix, *verify_args]) for tool, prefix in tools.items()), ("b3sum", ref)]
                for tool, cmd in (order if r % 2 else order[::-1]):
                    wall, used = run(cmd, root, envs.get(tool))
                    times.setdefault(f"{name}|{tool}", []).append(wall)
                    cpu.setdefault(f"{name}|{tool}", []).append(used)
        for _ in range(args.rounds):
            for name, cmd in start_up.items():
                wall, used = run(cmd, root)
                times.setdefault(name, []).append(wall)
                cpu.setdefault(name, []).append(used)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        print(f"\nbest of {args.rounds} [median], seconds; ratio = b3sum / attest (>= 1: attest faster); bound = the "
              f"best ratio attest's CPU time allows (b3sum's best time x {cores} cores / attest's CPU seconds: even "
              "perfectly overlapped, a process cannot finish before its CPU time spread over every core)")
        print(f"{'shape':<32}{'b3sum':>16}{'attest':>16}{'ratio':>15}   CPU s: b3sum, attest   bound   target")
        for name in shapes:
            for tool in tools:
                b3, us = times[f"{name}|b3sum"], times[f"{name}|{tool}"]
                ratio = min(b3) / min(us)
                used = min(cpu[f"{name}|{tool}"])
                label = name if tool == "attest" else f"  {tool}"
                print(f"{label:<32}{min(b3):8.3f} [{statistics.median(b3):.3f}]{min(us):8.3f} "
                      f"[{statistics.median(us):.3f}]{ratio:7.2f} [{statistics.median(b3) / statistics.median(us):.2f}]"
                      f"   {min(cpu[f'{name}|b3sum']):.3f}, {used:.3f}{min(b3) * cores / used:13.2f}"
                      f"   >= {targets[name]:.1f}: {'met' if ratio >= targets[name] else 'missed'}")
        for name in start_up:
            print(f"{name:<32}{'':>16}{min(times[name]):8.3f} [{statistics.median(times[name]):.3f}]"
                  f"{'':>15}   -, {min(cpu[name]):.3f}")
        print(f"load    : {os.getloadavg()[0]:.1f} at the end (CPU seconds are less sensitive to it than wall time)")
    except (OSError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep or args.dir is not None:
            print(f"\ndata    : {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
