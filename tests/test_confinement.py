"""Artifact resolution never leaves the artifacts directory: absolute paths, `..`, symlinks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.verify.manifest import verify_document

SECRET = b"secret outside the artifacts dir"
SECRET_HASH = blake3.blake3(SECRET).hexdigest()


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(SECRET)
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    return artifacts, outside


def _doc(valid_doc: dict[str, Any], path: str, h: str = SECRET_HASH) -> dict[str, Any]:
    valid_doc["output_hashes"] = [{"hash": h, "path": path}]
    return valid_doc


def codes(report: Any) -> list[str]:
    return [e.code.value for e in report.errors]


def test_absolute_path_is_never_followed(layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    artifacts, outside = layout
    report = verify_document(_doc(valid_doc, str(outside / "secret.bin")), subject="m", artifacts_dir=artifacts)
    # Only DIR/secret.bin was looked at, and it does not exist: the file outside was never read.
    assert codes(report) == ["artifact_missing"]


def test_dotdot_path_is_never_followed(layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    artifacts, _ = layout
    report = verify_document(_doc(valid_doc, "../outside/secret.bin"), subject="m", artifacts_dir=artifacts)
    assert codes(report) == ["artifact_missing"]


@pytest.mark.parametrize("name", ["..", ".", "a/..", "/", "./", "x/../..", "x\\..", "a\x00b"])
def test_a_path_naming_no_file_inside_is_never_followed(layout: tuple[Path, Path], valid_doc: dict[str, Any],
                                                         name: str) -> None:
    # As the reference: a path ending in `..` (or naming nothing) has no file name, and only the hash names are
    # tried; a backslash is part of a Unix file name, never a separator. Nothing outside DIR is read.
    artifacts, outside = layout
    report = verify_document(_doc(valid_doc, name), subject="m", artifacts_dir=artifacts)
    assert codes(report) == ["artifact_missing"]
    assert "tried" in report.errors[0].message and str(outside) not in report.errors[0].message
    # The content-addressed name still verifies, as rocky-verify does.
    (artifacts / f"{SECRET_HASH}.parquet").write_bytes(SECRET)
    assert verify_document(_doc(valid_doc, name), subject="m", artifacts_dir=artifacts).passed


def test_a_partitioned_path_resolves_under_the_directory_first(layout: tuple[Path, Path],
                                                                valid_doc: dict[str, Any]) -> None:
    artifacts, _ = layout
    (artifacts / "region=EU").mkdir()
    (artifacts / "region=EU" / "part-0.parquet").write_bytes(SECRET)
    (artifacts / "part-0.parquet").write_bytes(b"another partition's file of the same name")
    report = verify_document(_doc(valid_doc, "region=EU/part-0.parquet"), subject="m", artifacts_dir=artifacts)
    assert report.passed and report.files_checked == 1
    # Missing: the error names every candidate tried, in order.
    report = verify_document(_doc(valid_doc, "region=US/part-9.parquet", "e" * 64), subject="m",
                             artifacts_dir=artifacts)
    assert codes(report) == ["artifact_missing"]
    assert f"tried region=US/part-9.parquet, part-9.parquet, {'e' * 64}, {'e' * 64}.parquet" in report.errors[0].message


def test_symlink_escaping_the_directory_is_refused(layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    artifacts, outside = layout
    os.symlink(outside / "secret.bin", artifacts / "link.bin")
    report = verify_document(_doc(valid_doc, "link.bin"), subject="m", artifacts_dir=artifacts)
    assert codes(report) == ["artifact_outside_root"]
    # Also under the hash name: the fallback candidates are confined too.
    os.symlink(outside / "secret.bin", artifacts / f"{SECRET_HASH}.parquet")
    report = verify_document(_doc(valid_doc, "absent.bin"), subject="m", artifacts_dir=artifacts)
    assert codes(report) == ["artifact_outside_root"]


def test_symlinked_directory_escape_is_refused(layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    artifacts, outside = layout
    os.symlink(outside, artifacts / "sub")
    # A path through a symlinked folder that leads outside: refused, the file is never read.
    report = verify_document(_doc(valid_doc, "sub/secret.bin"), subject="m", artifacts_dir=artifacts)
    assert codes(report) == ["artifact_outside_root"]


def test_symlink_loop_is_not_a_crash(layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    artifacts, _ = layout
    os.symlink(artifacts / "loop", artifacts / "loop")
    report = verify_document(_doc(valid_doc, "loop/secret.bin"), subject="m", artifacts_dir=artifacts)
    assert codes(report) == ["artifact_missing"]


def test_symlink_inside_the_directory_is_fine(layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    artifacts, _ = layout
    (artifacts / "real.bin").write_bytes(SECRET)
    os.symlink(artifacts / "real.bin", artifacts / "alias.bin")
    report = verify_document(_doc(valid_doc, "alias.bin"), subject="m", artifacts_dir=artifacts)
    assert report.passed and report.level == "bytes"


def test_cli_reports_outside_root(tmp_path: Path, layout: tuple[Path, Path], valid_doc: dict[str, Any]) -> None:
    from tests.conftest import run_cli

    artifacts, outside = layout
    os.symlink(outside / "secret.bin", artifacts / "link.bin")
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(_doc(valid_doc, "link.bin")))
    result = run_cli("verify", str(manifest), "--artifacts-dir", str(artifacts))
    assert result.returncode == 1 and "artifact_outside_root" in result.stdout
