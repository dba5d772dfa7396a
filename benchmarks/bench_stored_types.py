"""The stored-type check of ``verify --level bytes`` on a Delta table of many one-row files (docs/verify.md,
"Stored types"): the bytes level with the check and with it switched off, medians of five, for a table whose files
store a ``long`` column (the footer alone is read), one whose files store a ``short`` column (INT(16): its values
are read too) and one whose files store a ``date`` column under a Spark 2.4.8 footer (Spark rebases it from the legacy
calendar: its dates, all after 1900, are read too).

Run on demand: ``.venv/bin/python benchmarks/bench_stored_types.py [n_files]`` (default 2,000).
"""

from __future__ import annotations

import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake

import attest.verify.table as verify
from carriers.delta.carrier import DeltaCarrier, attest_after_write


def bytes_level(table: Path) -> float:
    carrier = DeltaCarrier(str(table))
    start = time.perf_counter()
    report = verify.verify_table(carrier, level="bytes")
    elapsed = time.perf_counter() - start
    assert report.passed, report.human()
    return elapsed


def legacy_footers(table: Path) -> None:
    """Each data file written again with a Spark 2.4.8 footer (the same rows), its size restated in the log."""
    log = next((table / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            data = table / action["add"]["path"]
            rows = pq.ParquetFile(data).read()
            pq.write_table(rows.replace_schema_metadata({"org.apache.spark.version": "2.4.8"}), data)
            action["add"]["size"] = data.stat().st_size
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def main(n_files: int = 2_000) -> None:
    for kind in (pa.int64(), pa.int16(), pa.date32()):
        with tempfile.TemporaryDirectory() as tmp:
            table = Path(tmp) / "t"
            values = [datetime.date(2000, 1, 1) + datetime.timedelta(days=i) if kind == pa.date32() else i % 1000
                      for i in range(n_files)]
            data = pa.table({"p": list(range(n_files)), "v": pa.array(values, kind)})
            write_deltalake(str(table), data, partition_by=["p"])  # one file per row
            if kind == pa.date32():
                legacy_footers(table)
            attest_after_write(str(table), model="bench", program_hash="a" * 64)
            check = verify._check_stored_types
            try:
                verify._check_stored_types = lambda *_a, **_k: None  # type: ignore[assignment]
                without = statistics.median(bytes_level(table) for _ in range(5))
            finally:
                verify._check_stored_types = check
            with_check = statistics.median(bytes_level(table) for _ in range(5))
            print(f"{n_files} files, v {kind}: --level bytes {without:.3f} s without the check, {with_check:.3f} s "
                  f"with it (+{with_check - without:.3f} s, {(with_check - without) / n_files * 1e6:.0f} us a file)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000)
