"""The Iceberg many-files benchmark (benchmarks/bench_million_files_iceberg.py) runs at a toy size: its table, built
from manifest entries without an engine write, is the one pyiceberg plans and ``attest`` records and verifies."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from benchmarks import bench_million_files_iceberg as bench


@pytest.mark.slow
def test_the_iceberg_benchmark_runs_at_a_toy_size(tmp_path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        code = bench.main(["--files", "1500", "--per-commit", "600", "--dir", str(tmp_path)])
    text = out.getvalue()
    assert code == 0, text  # every step succeeded: the record, and a VERIFIED verdict
    assert "1,500 files in 3 fast appends" in text, text
    for step in ("reference: pyiceberg plan_files()", "attest record", "attest verify --level files", "sidecar "):
        assert step in text, text
