#!/usr/bin/env python3
"""Tables of many small files: ``attest verify --level files`` and ``attest record`` against the engine's own listing.

A Delta table of N files (statistics on every add, a checkpoint every 100 commits as delta-rs writes them, the last
version checkpointed) is built fast: the ``_delta_log`` JSON commits and checkpoint Parquet are written directly with
pyarrow, and the data files hold one byte (``--level files`` reads none of them; ``record`` hashes each, so they must
exist). Then, each as a fresh process, in the same run:

- the reference: delta-rs ``DeltaTable(T).file_uris()`` (the engine's listing of the version);
- the floor of ``--level files``: that listing, then an lstat of every listed file (its size on storage);
- the floor of a record: every data file read (and BLAKE3-hashed) in a plain Python loop, and ``b3sum`` over them when
  it is on PATH;
- ``attest record T`` (attests the version: the sidecar of N file identities is written);
- ``attest verify T --level files`` (the table read back, the log replayed and cross-checked, the files compared).

Prints per step the wall time and peak memory (max RSS of the process, from ``wait4``) and both as ratios to the
reference. Goal (issue 35.2): ≤ 1.5× the time, ≤ 2× the memory.

    python benchmarks/bench_million_files.py [--files N] [--full] [--dir D] [--rounds R] [--against ROOT]

``--full`` builds 1,000,000 files (default 200,000); ``--against ROOT`` verifies the same table with another checkout's
code too (before / after in one run). Exit status is non-zero only when a step fails or a verdict is
not VERIFIED, never because of a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks run as scripts: their folder is on sys.path
from _timing import PYTHON, RECORD, ROOT, add_run_options, compare, record_no_content

FILES_PER_COMMIT = 1000
CHECKPOINT_INTERVAL = 100  # delta-rs's default delta.checkpointInterval
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "name", "type": "string", "nullable": True, "metadata": {}}]}


def _checkpoint_schema() -> object:
    """The checkpoint schema delta-rs writes (taken from a checkpoint it writes of a two-row table)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    with tempfile.TemporaryDirectory() as tmp:
        write_deltalake(tmp, pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
        DeltaTable(tmp).create_checkpoint()
        return pq.read_schema(next((Path(tmp) / "_delta_log").glob("*.checkpoint.parquet")))


def _add(i: int, now: int) -> dict[str, object]:
    stats = json.dumps({"numRecords": 1, "minValues": {"id": i, "name": f"n{i}"},
                        "maxValues": {"id": i, "name": f"n{i}"}, "nullCount": {"id": 0, "name": 0}},
                       separators=(",", ":"))
    return {"path": f"d{i // 10000:04d}/part-{i:08d}.parquet", "partitionValues": {}, "size": 1,
            "modificationTime": now, "dataChange": True, "stats": stats}


def build_delta(root: Path, files: int, per_commit: int = FILES_PER_COMMIT, after: int = 0,
                checkpoints: bool = True) -> int:
    """A Delta table of ``files`` one-byte data files, ``per_commit`` adds a commit; returns its last version. The
    last checkpoint is ``after`` commits before the last version (0: at it); none at all without ``checkpoints``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = root / "_delta_log"
    log.mkdir(parents=True)
    now = int(time.time() * 1000)
    table_id = str(uuid.uuid4())
    protocol = {"minReaderVersion": 1, "minWriterVersion": 2}
    metadata = {"id": table_id, "name": None, "description": None, "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(SCHEMA, separators=(",", ":")), "partitionColumns": [],
                "createdTime": now, "configuration": {}}
    info = {"timestamp": now, "operation": "WRITE", "operationParameters": {"mode": "Append"},
            "engineInfo": "bench_million_files"}
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in (
        {"commitInfo": {**info, "operationParameters": {"mode": "ErrorIfExists"}}}, {"protocol": protocol},
        {"metaData": metadata})) + "\n")
    schema = _checkpoint_schema()
    commits = (files + per_commit - 1) // per_commit
    last_checkpoint = commits - after if checkpoints else 0
    for d in range((files + 9999) // 10000):
        (root / f"d{d:04d}").mkdir()
    head = [{"protocol": {**protocol, "readerFeatures": None, "writerFeatures": None}},
            {"metaData": {**metadata, "format": {"provider": "parquet", "options": []}, "configuration": []}}]
    for version in range(1, commits + 1):
        first, last = (version - 1) * per_commit, min(files, version * per_commit)
        adds = [_add(i, now) for i in range(first, last)]
        lines = [json.dumps({"commitInfo": info})] + [json.dumps({"add": a}) for a in adds]
        (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
        for a in adds:
            fd = os.open(root / str(a["path"]), os.O_CREAT | os.O_WRONLY, 0o644)
            os.write(fd, b"x")
            os.close(fd)
        if version <= last_checkpoint and (version % CHECKPOINT_INTERVAL == 0 or version == last_checkpoint):
            rows = last
            # The checkpoint of `version`: protocol, metaData, then every add so far, written in row groups.
            name = log / f"{version:020d}.checkpoint.parquet"
            with pq.ParquetWriter(name, schema) as writer:  # type: ignore[arg-type]
                writer.write_table(pa.Table.from_pylist(head, schema=schema))  # type: ignore[arg-type]
                for start in range(0, rows, 100_000):
                    batch = [_add(i, now) for i in range(start, min(rows, start + 100_000))]
                    for a in batch:
                        a["partitionValues"] = []
                    writer.write_table(pa.Table.from_pylist([{"add": a} for a in batch],
                                                            schema=schema))  # type: ignore[arg-type]
            (log / "_last_checkpoint").write_text(json.dumps({"version": version, "size": rows + 2}))
    return commits


REFERENCE_DELTA = "import sys; from deltalake import DeltaTable; print(len(DeltaTable(sys.argv[1]).file_uris()))"
# The floor of `verify --level files`, which must also look at every file the version lists (its size on storage): the
# reference's listing, then an lstat of each of its files in a plain Python loop.
FLOOR_FILES = ("import os, sys\n"
               "from deltalake import DeltaTable\n"
               "uris, lstat = DeltaTable(sys.argv[1]).file_uris(), os.lstat\n"
               "print(len(uris), sum(lstat(u.removeprefix('file://')).st_size for u in uris))\n")
# The floor of a record, which must read and hash every data file: every file under the table's data folders opened,
# read to its end through one reused buffer and closed (argv[2] "read"), and BLAKE3-hashed on the way ("blake3"), in
# a plain Python loop; b3sum over the same files when it is on PATH.
FLOOR = ("import os, sys\n"
         "from blake3 import blake3\n"
         "root, hashing = sys.argv[1], sys.argv[2] == 'blake3'\n"
         "view, count = memoryview(bytearray(1 << 20)), 0\n"
         "for d in sorted(os.scandir(root), key=lambda e: e.name):\n"
         "    if d.name.startswith('_') or not d.is_dir():\n"
         "        continue\n"
         "    for e in os.scandir(d.path):\n"
         "        fd, h = os.open(e.path, os.O_RDONLY), blake3() if hashing else None\n"
         "        while n := os.readv(fd, (view,)):\n"
         "            if h is not None:\n"
         "                h.update(view[:n])\n"
         "        if h is not None:\n"
         "            h.hexdigest()\n"
         "        os.close(fd)\n"
         "        count += 1\n"
         "print(count)\n")
B3SUM = "find \"$0\" -name '_*' -prune -o -type f -print0 | xargs -0 b3sum --no-names > /dev/null"
# The table's one-byte files are not Parquet: `attest record` without content digests (of the rows, which it could not
# read), as a carrier computing none records — the sidecar and every per-file view are the same.
RECORD_NO_CONTENT = record_no_content("carriers.delta.carrier.DeltaCarrier")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=None, help="data files of the Delta table (default 200,000)")
    parser.add_argument("--full", action="store_true", help="1,000,000 files")
    add_run_options(parser)
    parser.add_argument("--per-commit", type=int, default=FILES_PER_COMMIT,
                        help=f"adds per commit (default {FILES_PER_COMMIT})")
    parser.add_argument("--after", type=int, default=0,
                        help="JSON commits after the last checkpoint (default 0: the last version is checkpointed)")
    parser.add_argument("--no-checkpoint", action="store_true", help="no checkpoint: the whole log is JSON commits")
    parser.add_argument("--build-only", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    files = args.files or (1_000_000 if args.full else 200_000)
    if args.build_only:
        build_delta(Path(args.build_only), files, args.per_commit, args.after, not args.no_checkpoint)
        return 0
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        table = Path(scratch) / "delta"
        start = time.perf_counter()
        # Built in a process of its own: a started program's peak memory (max RSS) counts from this process's at the
        # time it starts, which building here would raise.
        shape = ["--per-commit", str(args.per_commit), "--after", str(args.after)] + \
            (["--no-checkpoint"] if args.no_checkpoint else [])
        subprocess.run([PYTHON, __file__, "--files", str(files), *shape, "--build-only", str(table)], check=True)
        last = (files + args.per_commit - 1) // args.per_commit
        where = "no checkpoint" if args.no_checkpoint else (
            f"the last checkpoint {args.after} commits before it" if args.after else "the last version checkpointed")
        print(f"built a Delta table of {files:,} files in {last} commits ({where}): "
              f"{time.perf_counter() - start:.1f} s (load {os.getloadavg()[0]:.1f})")
        verify = [PYTHON, "-m", "attest.cli", "verify", str(table), "--level", "files"]
        steps = {
            "reference: delta-rs file_uris()": ([PYTHON, "-c", REFERENCE_DELTA, str(table)], ROOT),
            "floor: + lstat of every file": ([PYTHON, "-c", FLOOR_FILES, str(table)], ROOT),
            "floor: read every data file": ([PYTHON, "-c", FLOOR, str(table), "read"], ROOT),
            "floor: + BLAKE3 (Python loop)": ([PYTHON, "-c", FLOOR, str(table), "blake3"], ROOT),
            **({"floor: b3sum": (["sh", "-c", B3SUM, str(table)], ROOT)} if shutil.which("b3sum") else {}),
            RECORD: ([PYTHON, "-c", RECORD_NO_CONTENT, str(table)], ROOT),
            "attest verify --level files": (verify, ROOT),
        }
        failed = compare(steps, verify, args)
        for p in sorted((table / "_recipe_attest").glob("*.json")):
            print(f"sidecar {p.name}: {p.stat().st_size / 1e6:.1f} MB")
    return failed


if __name__ == "__main__":
    sys.exit(main())
