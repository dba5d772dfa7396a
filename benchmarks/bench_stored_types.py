"""The stored-type check of ``verify --level bytes`` on a Delta table of many one-row files (docs/verify.md,
"Stored types"): the bytes level with the check and with it switched off, medians of five, for a table whose files
store a ``long`` column (the footer alone is read) and one whose files store a ``short`` column (INT(16): its values
are read too).

Run on demand: ``.venv/bin/python benchmarks/bench_stored_types.py [n_files]`` (default 2,000).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
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


def main(n_files: int = 2_000) -> None:
    for kind in (pa.int64(), pa.int16()):
        with tempfile.TemporaryDirectory() as tmp:
            table = Path(tmp) / "t"
            data = pa.table({"p": list(range(n_files)), "v": pa.array([i % 1000 for i in range(n_files)], kind)})
            write_deltalake(str(table), data, partition_by=["p"])  # one file per row
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
