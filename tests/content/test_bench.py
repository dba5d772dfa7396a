"""benchmarks/bench_content_digest.py runs end to end at a toy size (ratios are not asserted: benchmarks/ holds the
speed targets, not tests)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from attest.content import native


def test_bench_content_digest_runs(tmp_path: Path) -> None:
    from benchmarks import bench_content_digest

    out = io.StringIO()
    with redirect_stdout(out):
        code = bench_content_digest.main(["--rows", "1500", "--files", "3", "--rounds", "1", "--dir", str(tmp_path)])
    text = out.getvalue()
    assert code == 0, text
    assert "1,500 rows in 3 Parquet files" in text and "ratio read + digest (pure) / read:" in text, text
    paths = "both paths" if native.kernel() is not None else "one path"
    assert "hash (BLAKE3 XOF per row)" in text and f"1,500 rows ({paths})" in text, text
    assert ("ratio read + digest (native) / read:" in text) == (native.kernel() is not None), text
    assert ("native kernel (encode + XOF + lane sums)" in text) == (native.kernel() is not None), text
    assert len(list(tmp_path.glob("part-*.parquet"))) == 3
