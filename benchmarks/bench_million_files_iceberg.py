#!/usr/bin/env python3
"""An Iceberg table of many small files: ``attest verify --level files`` and ``attest record`` against pyiceberg's own
planning of the same snapshot (issue 35.2; the Delta counterpart is ``bench_million_files.py``).

The table (a SQLite catalog, format version 2, unpartitioned, two columns) is built fast: the data files hold one byte
each (``--level files`` reads none of them, but the listing confines each one to its folder, and ``record`` hashes each,
so they must exist), and their manifest entries (a record count, a size, per-column bounds, value and null counts, as
a writer gives them) are added with pyiceberg's own writers in ``fast_append`` commits of ``--per-commit`` files
(default 50,000: one manifest each), without writing the files through an engine. Then, each as a fresh process, in
the same run:

- the reference: pyiceberg ``catalog.load_table(T).scan().plan_files()`` (the engine's planning of the snapshot);
- ``attest record`` (attests the snapshot: the sidecar of N file identities is written; without content digests,
  which would read the files' rows, and these one-byte files are not Parquet);
- ``attest verify --level files``.

Prints per step the wall time, the CPU time (user + system: the steadier figure on a loaded machine) and the peak
memory (max RSS, from ``wait4``), and the ratios to the reference. Goal: ≤ 1.5× the time, ≤ 2× the memory.

    python benchmarks/bench_million_files_iceberg.py [--files N] [--per-commit K] [--dir D] [--rounds R]
                                                     [--against ROOT]

Exit status is non-zero only when a step fails or a verdict is not VERIFIED, never because of a ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_million_files import PYTHON, ROOT, run_once  # benchmarks run as scripts: their folder is on sys.path

CATALOG = "bench"
TABLE = "ns.t"
FILES_PER_FOLDER = 10_000


def _environment(root: Path) -> dict[str, str]:
    """pyiceberg's configuration of the benchmark's SQLite catalog, for the processes of the run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_")}
    env.update({"PYICEBERG_HOME": str(root), f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE": "sql",
                f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI": f"sqlite:///{root / 'catalog.db'}",
                f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE": f"file://{root / 'wh'}"})
    return env


def build_iceberg(root: Path, files: int, per_commit: int) -> int:
    """An Iceberg table of ``files`` one-byte data files under ``root``; returns its snapshot count."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.conversions import to_bytes
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, StringType

    (root / "wh").mkdir(parents=True)
    catalog = SqlCatalog(CATALOG, uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'wh'}")
    catalog.create_namespace("ns")
    table = catalog.create_table(TABLE, schema=pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())]),
                                 properties={"format-version": "2"})
    data = root / "wh" / "ns" / "t" / "data"
    for d in range((files + FILES_PER_FOLDER - 1) // FILES_PER_FOLDER):
        (data / f"d{d:04d}").mkdir(parents=True)
    snapshots = 0
    for first in range(0, files, per_commit):
        entries = []
        for i in range(first, min(files, first + per_commit)):
            path = data / f"d{i // FILES_PER_FOLDER:04d}" / f"part-{i:08d}.parquet"
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
            os.write(fd, b"x")
            os.close(fd)
            name = f"n{i}"
            entries.append(DataFile.from_args(
                _table_format_version=2, content=DataFileContent.DATA, file_path=f"file://{path}",
                file_format=FileFormat.PARQUET, partition=Record(), record_count=1, file_size_in_bytes=1,
                column_sizes={1: 8, 2: len(name)}, value_counts={1: 1, 2: 1}, null_value_counts={1: 0, 2: 0},
                nan_value_counts={}, lower_bounds={1: to_bytes(LongType(), i), 2: to_bytes(StringType(), name)},
                upper_bounds={1: to_bytes(LongType(), i), 2: to_bytes(StringType(), name)}, key_metadata=None,
                split_offsets=[4], equality_ids=None, sort_order_id=None, spec_id=0))
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for entry in entries:
                append.append_data_file(entry)
        snapshots += 1
    return snapshots


REFERENCE_ICEBERG = (
    "import sys\n"
    "from pyiceberg.catalog import load_catalog\n"
    "print(len(list(load_catalog(sys.argv[1]).load_table(sys.argv[2]).scan().plan_files())))\n"
)
RECORD_NO_CONTENT = (
    "import sys\n"
    "from attest.errors import UnsupportedTableError\n"
    "from carriers.iceberg.carrier import IcebergCarrier\n"
    "def none(*_a, **_k): raise UnsupportedTableError('benchmark: one-byte files, no rows')\n"
    "IcebergCarrier.file_content_digests = none\n"
    "from attest.cli import main\n"
    "sys.exit(main(['record', '--catalog', sys.argv[1], sys.argv[2], '--model', 'bench',\n"
    "               '--program-hash', 'a' * 64]))\n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200_000, help="data files of the table (default 200,000)")
    parser.add_argument("--per-commit", type=int, default=50_000, help="files per fast_append (default 50,000)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of verify and the reference (best is shown)")
    parser.add_argument("--dir", help="where the table is built (default: a temporary folder)")
    parser.add_argument("--against", metavar="ROOT",
                        help="also verify with the code of another checkout ROOT (e.g. a `git worktree` of main)")
    parser.add_argument("--build-only", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_only:
        build_iceberg(Path(args.build_only), args.files, args.per_commit)
        return 0
    failed = 0
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        root = Path(scratch) / "iceberg"
        start = time.perf_counter()
        # Built in a process of its own (a started program's max RSS counts from this process's when it starts).
        subprocess.run([PYTHON, __file__, "--files", str(args.files), "--per-commit", str(args.per_commit),
                        "--build-only", str(root)], check=True)
        print(f"built an Iceberg table of {args.files:,} files in {-(-args.files // args.per_commit)} fast appends: "
              f"{time.perf_counter() - start:.1f} s (load {os.getloadavg()[0]:.1f})")
        env = _environment(root)
        verify = [PYTHON, "-m", "attest.cli", "verify", "--catalog", CATALOG, TABLE, "--level", "files"]
        steps: dict[str, tuple[list[str], Path]] = {
            "reference: pyiceberg plan_files()": ([PYTHON, "-c", REFERENCE_ICEBERG, CATALOG, TABLE], ROOT),
            "attest record": ([PYTHON, "-c", RECORD_NO_CONTENT, CATALOG, TABLE], ROOT),
            "attest verify --level files": (verify, ROOT),
        }
        if args.against:
            steps[f"  the same, code of {args.against}"] = (verify, Path(args.against).resolve())
        results: dict[str, tuple[float, int, float]] = {}
        for label, (cmd, code) in steps.items():
            rounds = 1 if label == "attest record" else args.rounds
            best: tuple[float, int, float] | None = None
            for _ in range(rounds):
                elapsed, status, rss, out, cpu = run_once(cmd, code, env=env)
                if status != 0:
                    print(f"{label}: exit {status}\n{out}")
                    failed = 1
                best = (elapsed, rss, cpu) if best is None or elapsed < best[0] else \
                    (best[0], max(best[1], rss), best[2])
            assert best is not None
            results[label] = best
            ref = results["reference: pyiceberg plan_files()"]
            print(f"{label:<36}{best[0]:8.2f} s {best[1] / 1024:8.0f} MiB {best[2]:8.2f} s CPU   "
                  f"{best[0] / ref[0]:5.2f}× time {best[1] / ref[1]:5.2f}× memory {best[2] / ref[2]:5.2f}× CPU  "
                  f"(load {os.getloadavg()[0]:.1f})")
        for p in sorted((root / "wh").rglob("recipe_attest/*.json")):
            print(f"sidecar {p.name}: {p.stat().st_size / 1e6:.1f} MB")
    return failed


if __name__ == "__main__":
    sys.exit(main())
