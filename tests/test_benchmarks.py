"""The CLI benchmark runs end to end at a toy size: its data, the installed copies (this checkout and, with
``--against``, another revision) and its table. Ratios are not asserted (benchmarks/ holds speed targets, not tests)."""

from __future__ import annotations

import io
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("b3sum") is None, reason="b3sum not on PATH (`make b3sum` builds it with cargo)")
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout: --against needs the history")
def test_bench_cli_runs_against_a_revision(tmp_path: Path) -> None:
    from benchmarks import bench_cli

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    out = io.StringIO()
    with redirect_stdout(out):
        code = bench_cli.main(["--dir", str(tmp_path), "--rounds", "1", "--small-count", "3", "--small-kib", "4",
                               "--big-mib", "1", "--against", head])
    text = out.getvalue()
    assert code == 0, text
    for shape in ("manifest, 3 x 4 KiB", "manifest, 1 x 1 MiB", "Delta table, 3 files", "Delta table, 1 file"):
        assert shape in text, text
    assert text.count(f"  @{head}") == 4, text
    assert (tmp_path / "venv-against" / "bin" / "attest").exists()


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout: --against needs the history")
def test_bench_cli_refuses_an_unknown_revision(tmp_path: Path) -> None:
    from benchmarks import bench_cli

    with pytest.raises(RuntimeError, match="git archive"):
        bench_cli.revision_sources(tmp_path, "no-such-revision-anywhere")


def test_bench_manifest_runs_with_the_reference_where_it_is_built(tmp_path: Path) -> None:
    from benchmarks import bench_manifest
    from tests.conformance.reference import binary, missing_reason

    out = io.StringIO()
    with redirect_stdout(out):
        code = bench_manifest.main(["--outputs", "300", "--rounds", "2", "--dir", str(tmp_path),
                                    "--reference", str(binary("rocky-verify"))])
    text = out.getvalue()
    assert code == 0, text
    assert "manifest: 300 output hashes" in text and "\nattest " in text, text
    if missing_reason() is None:  # CI builds the reference (.ci/run) and then requires it
        assert "\nrocky-verify " in text and "attest / reference:" in text, text
    else:
        assert "rocky-verify not built" in text, text
    assert (tmp_path / "manifest-300.json").stat().st_size > 300 * 64


def test_bench_manifest_reports_a_verifier_that_does_not_verify(tmp_path: Path) -> None:
    from benchmarks import bench_manifest

    with redirect_stdout(io.StringIO()):
        assert bench_manifest.main(["--outputs", "5", "--rounds", "1", "--dir", str(tmp_path)]) == 0
    manifest = tmp_path / "manifest-5.json"
    manifest.write_text(manifest.read_text().replace('"a', '"A', 1))  # no longer the published schema's hash
    out = io.StringIO()
    with redirect_stdout(out):
        code = bench_manifest.main(["--outputs", "5", "--rounds", "1", "--dir", str(tmp_path)])
    assert code == 1 and "did not verify" in out.getvalue(), out.getvalue()
