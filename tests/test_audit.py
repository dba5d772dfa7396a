"""`attest audit`: many tables at once, each with its verdict, one summary, an honest exit code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from carriers.discovery import delta_tables_under, expand
from tests.conftest import run_cli


def _lakehouse(root: Path) -> dict[str, Path]:
    tables = {name: root / "lake" / name for name in ("good", "stale", "bare")}
    tables["nested"] = root / "lake" / "team" / "nested"
    for path in tables.values():
        write_deltalake(str(path), pa.table({"x": [1, 2]}), partition_by=None)
    for name in ("good", "stale", "nested"):
        assert run_cli("record", str(tables[name]), "--model", name, "--sql", "SELECT 1").returncode == 0
    write_deltalake(str(tables["stale"]), pa.table({"x": [3]}), mode="append")
    (root / "lake" / "_hidden" / "_delta_log").mkdir(parents=True)  # "_" folders are not walked
    return tables


def test_discovery_finds_tables_and_skips_hidden_and_links(tmp_path: Path) -> None:
    tables = _lakehouse(tmp_path)
    os.symlink(tmp_path / "lake", tmp_path / "lake" / "team" / "loop")  # a loop must not trap the walk
    found = sorted(delta_tables_under(tmp_path / "lake"))
    assert found == sorted(tables.values())
    assert expand(str(tables["good"])) == [str(tables["good"])]


def test_audit_reports_every_table_and_fails_when_one_fails(tmp_path: Path) -> None:
    _lakehouse(tmp_path)
    result = run_cli("audit", str(tmp_path / "lake"))
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert any(line.startswith("VERIFIED") and line.rstrip().endswith("good") for line in lines)
    assert any(line.startswith("NOT VERIFIED") and "(stale)" in line for line in lines)
    assert any(line.startswith("UNATTESTED") and "bare" in line for line in lines)
    assert lines[-1] == "4 table(s): 2 verified, 1 not verified, 1 unattested"
    report = json.loads(run_cli("audit", str(tmp_path / "lake"), "--json").stdout)
    assert report["passed"] is False and report["counts"]["VERIFIED"] == 2 and len(report["tables"]) == 4


def test_audit_passes_when_all_verify(tmp_path: Path) -> None:
    tables = _lakehouse(tmp_path)
    result = run_cli("audit", str(tables["good"]), str(tables["nested"]), "--level", "bytes")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "2 table(s): 2 verified"


def test_audit_of_nothing_exits_2(tmp_path: Path) -> None:
    assert run_cli("audit", str(tmp_path)).returncode == 2
