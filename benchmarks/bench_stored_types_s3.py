"""The stored-type check of ``verify --level bytes`` on an Iceberg table on S3 (SeaweedFS, loopback): each data
file's footer read through a random-access input of the table's FileIO (``FileIOStorage.open_footer_location``),
against main's path, where the FileIO's stream did not seek and no footer was read ("stored types not checked").
Alternated in one process, medians of five: the whole bytes level and the check alone, for ``n_files`` files of
``rows`` rows of 1 KiB each (docs/verify.md, "Stored types").

Run on demand: ``.venv/bin/python benchmarks/bench_stored_types_s3.py [n_files] [rows]`` (default 200, 2).
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog

    import carriers.content_store as cs
    from attest.verify.table import verify_table
    from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
    from carriers.storage.base import Storage
    from carriers.storage.fileio import FileIOStorage
    from tests.servers import seaweed
    from tests.servers.stores import s3_bucket

    n_files = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    work = Path(tempfile.mkdtemp(prefix="bench-stored-s3-"))
    server = seaweed.start(work / "seaweed")
    try:
        bucket = s3_bucket(server)
        catalog = SqlCatalog(
            "bench", uri=f"sqlite:///{work / 'c.db'}", warehouse=bucket.uri("wh"), **bucket.iceberg_properties
        )
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64()), ("v", pa.binary())]))
        uris, size = [], 0
        for i in range(n_files):
            buf = io.BytesIO()
            pq.write_table(
                pa.table(
                    {
                        "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                        "v": pa.array([os.urandom(1024) for _ in range(rows)], pa.binary()),
                    }
                ),
                buf,
                compression="none",
            )
            key = f"{table.location().split(f'{bucket.name}/', 1)[1]}/data/f{i:05d}.parquet"
            bucket.put(key, buf.getvalue())
            uris.append(bucket.uri(key))
            size = len(buf.getvalue())
        table.add_files(uris)
        attest_after_write(catalog.load_table("ns.t"), model="bench", program_hash="a" * 64)
        table = catalog.load_table("ns.t")
        real = cs.stored_type_problems
        times: dict[str, list[float]] = {"main": [], "branch": [], "check main": [], "check branch": []}

        def timed(name: str) -> Any:
            def run(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return real(*args, **kwargs)
                finally:
                    times[name].append(time.perf_counter() - start)

            return run

        ours = FileIOStorage.open_footer_location
        for _ in range(5):
            for name, opener in (("main", Storage.open_footer_location), ("branch", ours)):
                FileIOStorage.open_footer_location = opener  # type: ignore[method-assign]
                cs.stored_type_problems = timed(f"check {name}")
                start = time.perf_counter()
                report = verify_table(IcebergCarrier(table), level="bytes")
                times[name].append(time.perf_counter() - start)
                assert report.passed and bool(report.stored_types_unchecked) == (name == "main"), report.human()
        FileIOStorage.open_footer_location = ours  # type: ignore[method-assign]
        cs.stored_type_problems = real
        print(f"{n_files} files of {size} bytes; loadavg {Path('/proc/loadavg').read_text().split()[:3]}")
        for name, got in times.items():
            print(f"  {name:13s} median {statistics.median(got):.3f} s  {[round(t, 3) for t in got]}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
