"""Iceberg carrier at 10,000 files: attest, read back, verify files / bytes, and the summary growth.

Run on demand: ``.venv/bin/python benchmarks/bench_iceberg_carrier.py [n_files]``. Times are reported with a
ratio against a reference measured in the same run (a plain catalog load_table + scan planning of every file),
so numbers from different machines can be compared.
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _timing import timed  # benchmarks run as scripts: their folder is on sys.path
from pyiceberg.catalog.sql import SqlCatalog

from attest.verify.table import verify_table
from carriers.iceberg.carrier import SUMMARY_BUDGET, IcebergCarrier, attest_after_write
from carriers.properties import PREFIX

PROGRAM = "a" * 64


def main(n_files: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "wh").mkdir()
        catalog = SqlCatalog("bench", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'wh'}")
        catalog.create_namespace("ns")
        data = pa.table({"id": pa.array([1], pa.int64())})
        table = catalog.create_table("ns.t", schema=data.schema)
        buffer = io.BytesIO()
        pq.write_table(data, buffer)
        files = root / "wh" / "ns" / "t" / "data"
        files.mkdir(parents=True)
        paths = []
        for i in range(n_files):
            (files / f"part-{i:05d}.parquet").write_bytes(buffer.getvalue())
            paths.append(f"file://{files}/part-{i:05d}.parquet")
        timed(f"add_files, {n_files} files", lambda: table.add_files(paths, check_duplicate_files=False))

        def reference() -> int:
            return len(list(catalog.load_table("ns.t").scan().plan_files()))

        ref, count = timed("reference: load_table + scan planning", reference)
        assert count == n_files
        before = Path(table.metadata_location[len("file://"):]).stat().st_size
        timed("attest (hash every file, follow-up commit)",
              lambda: attest_after_write(table, model="bench", program_hash=PROGRAM), ref)
        after = Path(table.metadata_location[len("file://"):]).stat().st_size
        snap = table.current_snapshot()
        assert snap is not None and snap.summary is not None
        keys = {k: v for k, v in snap.summary.additional_properties.items() if k.startswith(PREFIX)}
        size = sum(len(k) + len(v) for k, v in keys.items())
        print(f"{'attestation summary keys':<46}{size:9d} B  (budget {SUMMARY_BUDGET} B)")
        print(f"{'metadata.json growth for the snapshot':<46}{after - before:9d} B")
        carrier = IcebergCarrier(table, catalog_name="bench")
        timed("read back (summary + sidecar)", carrier.read, ref)
        _, report = timed("verify --level files", lambda: verify_table(carrier, level="files"), ref)
        assert report.passed, report.human()
        _, report = timed("verify --level bytes", lambda: verify_table(carrier, level="bytes"), ref)
        assert report.passed, report.human()
        table.append(pa.table({"id": pa.array([2], pa.int64())}))
        timed("re-attest after a 1-file append (reuse)",
              lambda: attest_after_write(table, model="bench", program_hash=PROGRAM), ref)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
