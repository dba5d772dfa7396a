"""What holding Parquet bloom filters to a file's rows costs ``attest record`` (docs/delta.md, round 14k).

Run on demand: ``.venv/bin/python benchmarks/bench_record_bloom.py [rows a file] [files] [rounds] [both|bloom]``.
The Delta table (default 3 delta-rs appends of 1M rows: an int64 ``id``, a string ``s``, a double ``x``; bloom filters
on ``id`` and ``s``, every value distinct; ``both``: page indexes as delta-rs writes them, ``bloom``: none, chunk
statistics only, so the bloom filters are the only thing held) is written once and copied, so each record runs on
an unattested table: one record with every digested file's page index and bloom filters held to its rows, one with
that check switched off (``index_problems`` answering nothing, as before round 14k); first ``index_problems`` alone on
one file (its rows read once, outside the timing). Which path the bloom filter
check and the digest take (the native kernel or pure Python) is printed first: ``ATTEST_CONTENT_NATIVE=0`` runs both
in Python.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _timing import timed  # benchmarks run as scripts: their folder is on sys.path
from deltalake import BloomFilterProperties, ColumnProperties, WriterProperties, write_deltalake

import carriers.content_store as store
from attest.content import native
from carriers.delta.carrier import DeltaCarrier

PROGRAM = "a" * 64


def main(rows: int = 1_000_000, files: int = 3, rounds: int = 1, layout: str = "both") -> None:
    print(f"content digest / bloom filter check path: {native.status()}")
    level = "PAGE" if layout == "both" else "CHUNK"  # PAGE: delta-rs's default, which writes a page index
    bloom = ColumnProperties(statistics_enabled=level, bloom_filter_properties=BloomFilterProperties(True, ndv=rows))
    props = WriterProperties(default_column_properties=ColumnProperties(statistics_enabled=level),
                             column_properties={"id": bloom, "s": bloom})
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        for k in range(files):
            ids = pa.array(range(k * rows, (k + 1) * rows), pa.int64())
            table = pa.table({"id": ids, "s": pc.cast(ids, pa.string()),
                              "x": pc.multiply(pc.cast(ids, pa.float64()), 0.5)})
            write_deltalake(str(source), table, mode="append", writer_properties=props)
        parquet = sorted(source.rglob("*.parquet"))
        meta = pq.ParquetFile(parquet[0]).metadata.row_group(0)
        filtered = [meta.column(i).path_in_schema for i in range(meta.num_columns)
                    if meta.column(i).bloom_filter_offset is not None]
        indexed = [meta.column(i).path_in_schema for i in range(meta.num_columns) if meta.column(i).has_column_index]
        print(f"table: {len(parquet)} files, {rows * files:,} rows, bloom filters on {filtered}, page index on "
              f"{indexed}, "
              f"{sum(f.stat().st_size for f in parquet) / 2**20:.0f} MiB")

        # the check alone, on one file (as record calls it, the file's rows read once): no record around it
        with parquet[0].open("rb") as handle:
            indexes = store.read_parquet_indexes(handle)
        stored = pq.read_table(parquet[0])
        for r in range(rounds):
            timed(f"index_problems of one file (round {r + 1})",
                  lambda: store.index_problems(indexes, pq.ParquetFile(parquet[0]).metadata, stored, total_order=True))

        def record(copy: str) -> Any:
            target = Path(tmp) / copy
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
            return DeltaCarrier(str(target)).record(model="bench", program_hash=PROGRAM)

        for r in range(rounds):
            original = store.index_problems
            store.index_problems = lambda *args, **kwargs: []  # type: ignore[assignment]
            try:
                without, _ = timed(f"record, indexes not held (round {r + 1})", lambda: record("without"))
            finally:
                store.index_problems = original
            timed(f"record, page index and bloom filters held (round {r + 1})", lambda: record("with"), without)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]), *sys.argv[4:5])
