"""Delta carrier at 10,000 files: attest, read back, verify files / bytes, and the attestation commit's size.

Run on demand: ``.venv/bin/python benchmarks/bench_delta_carrier.py [n_files]``. Times are reported with a ratio
against a reference measured in the same run (a plain DeltaTable load + listing its add actions), so numbers
from different machines can be compared.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
from _timing import timed  # benchmarks run as scripts: their folder is on sys.path
from deltalake import DeltaTable, write_deltalake

from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write

PROGRAM = "a" * 64


def main(n_files: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "bench"
        # One partition per row gives n_files tiny files in one commit.
        data = pa.table({"p": list(range(n_files)), "v": list(range(n_files))})
        timed(f"write_deltalake, {n_files} files", lambda: write_deltalake(str(table), data, partition_by=["p"]))

        def reference() -> int:
            return len(pa.table(DeltaTable(str(table)).get_add_actions()))

        ref, count = timed("reference: DeltaTable load + add actions", reference)
        assert count == n_files
        timed("attest (hash every file, commit)",
              lambda: attest_after_write(str(table), model="bench", program_hash=PROGRAM), ref)
        log = sorted((table / "_delta_log").glob("*.json"))[-1]
        print(f"{'attestation commit size':<44}{log.stat().st_size:9d} B  (limit 16384 B)")
        carrier = DeltaCarrier(str(table))
        timed("read back (properties + sidecar)", carrier.read, ref)
        _, report = timed("verify --level files", lambda: verify_table(carrier, level="files"), ref)
        assert report.passed, report.human()
        _, report = timed("verify --level bytes", lambda: verify_table(carrier, level="bytes"), ref)
        assert report.passed, report.human()
        write_deltalake(str(table), pa.table({"p": [-1], "v": [-1]}), partition_by=["p"], mode="append")
        timed("re-attest after a 1-file append (reuse)",
              lambda: attest_after_write(str(table), model="bench", program_hash=PROGRAM), ref)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
