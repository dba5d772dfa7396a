#!/usr/bin/env python3
"""`attest verify --level bytes` of a table on an object store against a plain parallel download of the same objects.

    python benchmarks/bench_object_store.py [--large-mib 1024] [--medium 16] [--medium-mib 64] [--rounds 3]
                                            [--against DIR] [--no-engine] [--format delta|iceberg]

Starts the SeaweedFS test server (tests/servers/seaweed.py: loopback ports, stopped at the end), writes a Delta table
of one large Parquet object and ``--medium`` medium ones (random bytes, uncompressed: 2 GiB by default) straight to
the bucket, converts it to Delta and attests it. Then, in turns, ``--rounds`` times each, in separate processes:

- **download**: obstore ``get`` of every object of the table at once (asyncio), streamed and dropped: no hashing, no
  table; the reference (its time counts from the first request, not from the interpreter's start);
- **hashing**: the same objects hashed as verification hashes them (``carriers.storage.hashing.hash_locations``),
  timed the same way: the read path alone, without the command's start-up and the table's reading;
- **verify**: ``attest verify T --level bytes --storage-option ...`` (the CLI, start-up and table reading included),
  hashing through obstore (carriers/storage/objects.py);
- **verify (engine reader)**: the same with obstore switched off (as for options it cannot take), the objects
  streamed through delta-rs's reader as before this path existed;
- **verify (before)**, with ``--against DIR``: the same command run from the code in DIR (an exported copy of an
  earlier commit: ``git archive COMMIT | tar -x -C DIR``), in turn with the others.

``--format iceberg``: the same objects under ``wh/ns/t/data/`` of an Iceberg table (a sqlite catalog beside the
benchmark, ``add_files``), verified as ``iceberg://bench/ns.t`` through pyiceberg's environment configuration; the
engine-reader runs are ``ATTEST_FAST=0`` (pyiceberg's FileIO reads the data objects, as before the obstore path read
them); the hashing-alone run is ``hash_locations`` on the table's ``FileIOStorage`` with the table's roots.

Prints the median time and throughput of each, the ratio download time / verify time (goal >= 0.9) and every
process's peak memory (ru_maxrss), with the machine's load beside each figure: on a shared machine the ratio says as
much about the neighbours as about the code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]

_DOWNLOAD = """
import asyncio, json, time
import obstore
from obstore.store import from_url
root, config, client, keys = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
store = from_url(root, config=config, client_options=client)

async def one(key):
    got = await obstore.get_async(store, key)
    n = 0
    async for chunk in got.stream(min_chunk_size=4 << 20):
        n += len(chunk)
    return n

async def every():
    return sum(await asyncio.gather(*(one(k) for k in keys)))

start = time.perf_counter()
total = asyncio.run(every())
print(json.dumps({"seconds": time.perf_counter() - start, "bytes": total}), flush=True)
atexit.unregister(_peak)
_peak()
sys.stderr.flush()
import os
os._exit(0)  # obstore's runtime has aborted the interpreter's exit after asyncio.run (SIGABRT, once in six)
"""

# Each process reports its own peak resident memory (VmHWM) on exit: ru_maxrss of a child counts the parent's memory
# at the fork (Linux keeps the high-water mark across exec).
_PEAK = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        kib = [line.split()[1] for line in status if line.startswith("VmHWM")][0]
    sys.stderr.write(f"\\nPEAK_KIB {kib}\\n")
atexit.register(_peak)
"""

_DOWNLOAD = _PEAK + _DOWNLOAD

_CLI = _PEAK + """
import runpy
sys.argv = ["attest", *sys.argv[1:]]
runpy.run_module("attest.cli", run_name="__main__")
"""

_HASH_ONLY = _PEAK + """
import json, time
from attest.tables import DataFile
from carriers.storage.delta import DeltaStorage
from carriers.storage.hashing import hash_locations
uri, options, keys = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
storage = DeltaStorage(uri, options)
files = [DataFile(path=k, size=n, kind="data", location=f"{uri}/{k}") for k, n in keys.items()]
start = time.perf_counter()
hashes = hash_locations(storage, files)
print(json.dumps({"seconds": time.perf_counter() - start, "bytes": sum(keys.values()) if len(hashes) == len(files)
                  else -1}))
"""

_HASH_ONLY_ICEBERG = _PEAK + """
import json, time
from pyiceberg.io.pyarrow import PyArrowFileIO
from attest.tables import DataFile
from carriers.storage.fileio import FileIOStorage
from carriers.storage.hashing import hash_locations
uri, props, keys = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
storage = FileIOStorage(uri + "/metadata", PyArrowFileIO(props))
files = [DataFile(path=k, size=n, kind="data", location=f"{uri}/{k}") for k, n in keys.items()]
start = time.perf_counter()
hashes = hash_locations(storage, files, roots=[uri])
print(json.dumps({"seconds": time.perf_counter() - start, "bytes": sum(keys.values()) if len(hashes) == len(files)
                  else -1}))
"""

_ENGINE_ONLY = _PEAK + """
import runpy
from carriers.storage.delta import DeltaStorage
DeltaStorage._object_store = lambda self: None  # as for options obstore cannot take: the engine's reader
sys.argv = ["attest", *sys.argv[1:]]
runpy.run_module("attest.cli", run_name="__main__")
"""


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def run_measured(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, int, str]:
    """(wall seconds, peak resident MiB, stdout) of one process; the benchmark fails when the process fails. ``cwd``:
    the code it imports first (``python -c`` puts the working folder first on its path)."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    peaks = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK_KIB ")]
    return seconds, int(peaks[-1]) // 1024, done.stdout


def write_parquet(fs: object, path: str, nbytes: int) -> None:
    """A Parquet object of ~``nbytes`` random bytes (one fixed-size binary column, uncompressed), in 64 MiB row
    groups, streamed to the store (never the whole object in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    width = 1024
    schema = pa.schema([("b", pa.binary(width))])
    rows_per_group = (64 << 20) // width
    left = nbytes // width
    with pq.ParquetWriter(path, schema, filesystem=fs, compression="none", use_dictionary=False,
                          write_statistics=False) as writer:
        while left > 0:
            rows = min(rows_per_group, left)
            column = pa.Array.from_buffers(pa.binary(width), rows, [None, pa.py_buffer(os.urandom(rows * width))])
            writer.write_table(pa.table({"b": column}, schema=schema), row_group_size=rows)
            left -= rows


def iceberg_table(bucket: object, work: Path, files: list[str]) -> tuple[str, dict[str, str]]:
    """An Iceberg table at ``wh/ns/t`` of ``bucket`` holding ``files`` (``add_files``), attested; its CLI name and
    the environment pyiceberg reads its catalog from."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import attest_after_write as iceberg_attest

    props: dict[str, str] = bucket.iceberg_properties  # type: ignore[attr-defined]
    wh = bucket.uri("wh")  # type: ignore[attr-defined]
    db = work / "catalog.db"
    catalog = SqlCatalog("bench", uri=f"sqlite:///{db}", warehouse=wh, **props)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("b", pa.binary(1024))]))
    table.add_files(files)
    iceberg_attest(table, model="bench", program_hash="a" * 64)
    prefix = "PYICEBERG_CATALOG__BENCH__"
    env = {f"{prefix}TYPE": "sql", f"{prefix}URI": f"sqlite:///{db}", f"{prefix}WAREHOUSE": wh}
    env.update({prefix + k.replace(".", "__").replace("-", "_").upper(): v for k, v in props.items()})
    return "iceberg://bench/ns.t", env


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--large-mib", type=int, default=1024)
    parser.add_argument("--medium", type=int, default=16)
    parser.add_argument("--medium-mib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-engine", action="store_true", help="skip the engine-reader runs (slower)")
    parser.add_argument("--against", type=Path, default=None,
                        help="also run the CLI from this directory (an exported copy of earlier code), in turn")
    parser.add_argument("--format", choices=("delta", "iceberg"), default="delta")
    args = parser.parse_args()

    from deltalake import convert_to_deltalake

    from carriers.delta.carrier import attest_after_write
    from carriers.storage.objects import PART, SLOTS
    from carriers.storage.options import obstore_config
    from tests.servers import seaweed
    from tests.servers.stores import s3_bucket

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    work = Path(tempfile.mkdtemp(prefix="bench-object-store-"))
    server = seaweed.start(work / "seaweed")
    try:
        bucket = s3_bucket(server)
        iceberg = args.format == "iceberg"
        table_key = "wh/ns/t" if iceberg else "t"
        folder = f"{table_key}/data" if iceberg else table_key
        uri = bucket.uri(table_key)
        start = time.perf_counter()
        sizes = [args.large_mib << 20] + [args.medium_mib << 20] * args.medium
        for i, size in enumerate(sizes):
            write_parquet(bucket.fs, f"{bucket.name}/{folder}/part-{i:05d}.parquet", size)
        env = {**os.environ, **bucket.env, "PYTHONPATH": str(ROOT)}
        if iceberg:
            target, env_more = iceberg_table(bucket, work, [bucket.uri(f"{folder}/part-{i:05d}.parquet")
                                                            for i in range(len(sizes))])
            env.update(env_more)
        else:
            convert_to_deltalake(uri, storage_options=bucket.storage_options)
            attest_after_write(uri, model="bench", program_hash="a" * 64, storage_options=bucket.storage_options)
            target = uri
        keys = {k: n for k, n in bucket.keys(f"{folder}/").items() if k.endswith(".parquet")}
        total = sum(keys.values())
        print(f"{args.format} table: {len(keys)} objects, {total / 2**30:.2f} GiB (largest "
              f"{max(keys.values()) / 2**20:.0f} MiB), written and attested in {time.perf_counter() - start:.0f} s; "
              f"obstore path: {SLOTS} pieces of {PART >> 20} MiB in flight")

        config, client = obstore_config("s3", bucket.storage_options) or ({}, {})
        bucket_root = f"s3://{bucket.name}"
        download = [sys.executable, "-c", _DOWNLOAD, bucket_root, json.dumps(config), json.dumps(client),
                    json.dumps(sorted(keys))]
        options = [] if iceberg else [a for k, v in bucket.storage_options.items()
                                      for a in ("--storage-option", f"{k}={v}")]
        verify = [sys.executable, "-c", _CLI, "verify", target, "--level", "bytes", *options]
        if iceberg:
            engine = verify
            hashing = [sys.executable, "-c", _HASH_ONLY_ICEBERG, uri, json.dumps(bucket.iceberg_properties),
                       json.dumps({k.removeprefix(f"{table_key}/"): n for k, n in keys.items()})]
        else:
            engine = [sys.executable, "-c", _ENGINE_ONLY, "verify", uri, "--level", "bytes", *options]
            hashing = [sys.executable, "-c", _HASH_ONLY, uri, json.dumps(bucket.storage_options),
                       json.dumps({k.removeprefix("t/"): n for k, n in keys.items()})]

        runs: dict[str, list[tuple[float, int, str]]] = {"download": [], "hashing": [], "verify": [], "before": [],
                                                         "engine": []}
        envs = {"before": {**env, "PYTHONPATH": str(args.against.resolve())}} if args.against else {}
        if iceberg:
            envs["engine"] = {**env, "ATTEST_FAST": "0"}
        for round_ in range(args.rounds):
            for name, argv in (("download", download), ("hashing", hashing), ("verify", verify), ("before", verify),
                               ("engine", engine)):
                if (name == "engine" and args.no_engine) or (name == "before" and args.against is None):
                    continue
                before = load()
                seconds, rss, out = run_measured(argv, envs.get(name, env),
                                                 args.against.resolve() if name == "before" and args.against else ROOT)
                if name in ("download", "hashing"):
                    got = json.loads(out)
                    assert got["bytes"] == total, (got, total)
                    seconds = got["seconds"]
                else:
                    assert "\nVERIFIED (bytes" in "\n" + out, out
                runs[name].append((seconds, rss, before))
                print(f"  round {round_ + 1} {name:8s} {seconds:6.2f} s  {total / seconds / 1e6:7.0f} MB/s  "
                      f"peak {rss:5d} MiB  ({before})", flush=True)

        def median(name: str) -> float:
            return statistics.median(s for s, _, _ in runs[name])

        print(f"\nmedian of {args.rounds} ({load()} now):")
        labels = {"download": "plain parallel download (obstore get, no hashing, from first request)",
                  "hashing": "the same objects hashed (hash_locations, from first request)",
                  "verify": "attest verify --level bytes (CLI, start-up included)",
                  "before": f"the same command from {args.against}",
                  "engine": "attest verify, engine reader (before this path)"}
        for name, label in labels.items():
            if runs[name]:
                peak = max(r for _, r, _ in runs[name])
                print(f"  {label:72s} {median(name):6.2f} s {total / median(name) / 1e6:6.0f} MB/s  "
                      f"peak {peak} MiB")
        print(f"ratio download / hashing the same objects: {median('download') / median('hashing'):.2f}")
        print(f"ratio download / verify: {median('download') / median('verify'):.2f} (goal >= 0.9)")
        if runs["before"]:
            print(f"ratio download / verify from {args.against}: {median('download') / median('before'):.2f}")
            paired = [b / v for (v, _, _), (b, _, _) in zip(runs["verify"], runs["before"], strict=True)]
            print("time before / time now, round by round (run one after the other): "
                  f"{', '.join(f'{r:.2f}' for r in paired)}; median {statistics.median(paired):.2f}")
        if runs["engine"]:
            print(f"ratio download / verify through the engine reader: "
                  f"{median('download') / median('engine'):.2f}")
        return 0
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
