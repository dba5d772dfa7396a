"""Remote `verify --level bytes` throughput against "download the same objects, then b3sum them", on the local S3
server (SeaweedFS, started here on loopback ports, stopped at the end).

    python benchmarks/bench_remote_verify.py [--mib 256] [--files 16]

Writes a Delta table of ``--files`` Parquet-sized objects (random bytes, ``--mib`` MiB in all) straight to S3,
attests it, then times (a) `attest verify --level bytes` of the table (streams every object through delta-rs's object
store, a few in parallel) and (b) downloading the same objects with pyarrow's S3 client into a temp folder and
running `b3sum` on them; prints both throughputs and their ratio. Needs `b3sum` on PATH (`make b3sum`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--files", type=int, default=16)
    args = parser.parse_args()
    if shutil.which("b3sum") is None:
        print("bench_remote_verify: b3sum not on PATH (make b3sum)", file=sys.stderr)
        return 1
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write
    from tests.servers import seaweed
    from tests.servers.stores import s3_bucket

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    server = seaweed.start(work / "seaweed")
    try:
        bucket = s3_bucket(server)
        uri = bucket.uri("t")
        per_file = (args.mib << 20) // args.files
        rows = per_file // 1024
        for i in range(args.files):  # each append writes one object of ~per_file bytes (random, incompressible)
            blob = pa.array([os.urandom(1024) for _ in range(rows)], pa.binary())
            write_deltalake(uri, pa.table({"i": pa.array([i] * rows, pa.int32()), "b": blob}), mode="append",
                            storage_options=bucket.storage_options)
        attest_after_write(uri, model="bench", program_hash="a" * 64, storage_options=bucket.storage_options)
        keys = {k: n for k, n in bucket.keys("t/").items() if k.endswith(".parquet")}
        total = sum(keys.values())
        options = [a for k, v in bucket.storage_options.items() for a in ("--storage-option", f"{k}={v}")]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "attest.cli", "verify", uri, "--level", "bytes", *options],
                              capture_output=True, text=True)
        verify_s = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            return 1
        target = work / "download"
        target.mkdir()
        start = time.perf_counter()
        for key in keys:
            with bucket.fs.open_input_stream(f"{bucket.name}/{key}") as src, \
                    open(target / key.replace("/", "_"), "wb") as dst:
                shutil.copyfileobj(src, dst, 4 << 20)
        subprocess.run(["b3sum", *sorted(str(p) for p in target.iterdir())], check=True, capture_output=True)
        baseline_s = time.perf_counter() - start
        mb = total / 1e6
        print(f"remote verify --level bytes: {len(keys)} objects, {mb:,.1f} MB in {verify_s:.2f} s "
              f"({mb / verify_s:,.1f} MB/s, CLI start-up included)")
        print(f"download + b3sum:            {len(keys)} objects, {mb:,.1f} MB in {baseline_s:.2f} s "
              f"({mb / baseline_s:,.1f} MB/s)")
        print(f"ratio (verify / download+b3sum time): {verify_s / baseline_s:.2f}")
        return 0
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
