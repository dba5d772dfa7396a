"""What recording content digests costs: ``attest record`` of a Delta table of a few hundred MB, with and without them.

Run on demand: ``.venv/bin/python benchmarks/bench_record_content.py [megabytes] [row bytes] [random|repeated]``. The
table (default 300 MB of Parquet; rows of an int64, a UTC timestamp, a string of ``row bytes`` characters and a
partition column; ``random``: each row's string drawn independently, so Parquet cannot compress it; ``repeated``:
overlapping slices of one random text, which Parquet compresses about 10×, i.e. many more rows per MB) is written
once and copied, so each record runs on an unattested table with cold hashes: one record with
content digests (every file's rows read and digested, the companion file written), one without (the format's
``file_content_digests`` switched off, as before content digests). docs/content-digest.md ("Cost of recording")
reports a run. Which digest path runs (the native kernel or pure Python) is printed first.
"""

from __future__ import annotations

import random
import shutil
import string
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from _timing import timed  # benchmarks run as scripts: their folder is on sys.path
from deltalake import write_deltalake

from attest.content import native
from carriers.core import AttestedTable
from carriers.delta.carrier import DeltaCarrier

PROGRAM = "a" * 64


def _rows(n: int, width: int, seed: int, shape: str) -> pa.Table:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    if shape == "random":
        payload = [rng.randbytes(width // 2).hex() for _ in range(n)]
    else:
        blob = "".join(rng.choices(alphabet, k=width + n))
        payload = [blob[i:i + width] for i in range(n)]
    return pa.table({
        "id": pa.array(range(seed * n, (seed + 1) * n), pa.int64()),
        "at": pa.array([1_700_000_000_000_000 + i for i in range(n)], pa.timestamp("us", tz="UTC")),
        "payload": payload,
        "p": [f"p{i % 4}" for i in range(n)],
    })


def main(megabytes: int = 300, width: int = 1000, shape: str = "random") -> None:
    print(f"content digest path: {native.status()}")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        rows_per_write = max(1, (32 << 20) // width)  # 32 MB of strings per write
        written, seed = 0, 0
        while written < megabytes << 20:
            write_deltalake(str(source), _rows(rows_per_write, width, seed, shape), mode="append",
                            partition_by=["p"])
            seed += 1
            written = sum(f.stat().st_size for f in source.rglob("*.parquet"))
        files = len(list(source.rglob("*.parquet")))
        print(f"table: {written / 2**20:.0f} MiB of Parquet, {files} files, {seed * rows_per_write:,} rows")

        def record(copy: str) -> Any:
            target = Path(tmp) / copy
            shutil.copytree(source, target)
            return DeltaCarrier(str(target)).record(model="bench", program_hash=PROGRAM)

        original = DeltaCarrier.file_content_digests
        DeltaCarrier.file_content_digests = AttestedTable.file_content_digests  # type: ignore[method-assign]
        try:
            without, result = timed("record without content digests", lambda: record("without"))
            assert result.content is None
        finally:
            DeltaCarrier.file_content_digests = original  # type: ignore[method-assign]
        with_digests, result = timed("record with content digests", lambda: record("with"), without)
        assert result.content is not None
        digests = sum(f.stat().st_size for f in (Path(tmp) / "with" / "_recipe_attest").glob("*.digests"))
        print(f"companion file: {digests:,} bytes for {files} files; extra time {with_digests - without:.1f} s, "
              f"{(with_digests - without) / (seed * rows_per_write) * 1e6:.1f} us a row")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]), *sys.argv[3:4])
