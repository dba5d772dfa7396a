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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks run as scripts: their folder is on sys.path
from _timing import PYTHON, RECORD, ROOT, add_run_options, compare, record_no_content

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
RECORD_NO_CONTENT = record_no_content("carriers.iceberg.carrier.IcebergCarrier")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200_000, help="data files of the table (default 200,000)")
    parser.add_argument("--per-commit", type=int, default=50_000, help="files per fast_append (default 50,000)")
    add_run_options(parser)
    parser.add_argument("--build-only", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_only:
        build_iceberg(Path(args.build_only), args.files, args.per_commit)
        return 0
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        root = Path(scratch) / "iceberg"
        start = time.perf_counter()
        # Built in a process of its own (a started program's max RSS counts from this process's when it starts).
        subprocess.run([PYTHON, __file__, "--files", str(args.files), "--per-commit", str(args.per_commit),
                        "--build-only", str(root)], check=True)
        print(f"built an Iceberg table of {args.files:,} files in {-(-args.files // args.per_commit)} fast appends: "
              f"{time.perf_counter() - start:.1f} s (load {os.getloadavg()[0]:.1f})")
        verify = [PYTHON, "-m", "attest.cli", "verify", "--catalog", CATALOG, TABLE, "--level", "files"]
        steps = {
            "reference: pyiceberg plan_files()": ([PYTHON, "-c", REFERENCE_ICEBERG, CATALOG, TABLE], ROOT),
            RECORD: ([PYTHON, "-c", RECORD_NO_CONTENT, "--catalog", CATALOG, TABLE], ROOT),
            "attest verify --level files": (verify, ROOT),
        }
        failed = compare(steps, verify, args, env=_environment(root))
        for p in sorted((root / "wh").rglob("recipe_attest/*.json")):
            print(f"sidecar {p.name}: {p.stat().st_size / 1e6:.1f} MB")
    return failed


if __name__ == "__main__":
    sys.exit(main())
