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
    assert [r.location for r in expand(str(tables["good"]))] == [str(tables["good"])]


def test_audit_reports_every_table_and_fails_when_one_fails(tmp_path: Path) -> None:
    _lakehouse(tmp_path)
    result = run_cli("audit", str(tmp_path / "lake"))
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert any(line.startswith("VERIFIED") and line.rstrip().endswith("good") for line in lines)
    assert any(line.startswith("STALE") and "(stale)" in line for line in lines)
    assert any(line.startswith("UNATTESTED") and "bare" in line for line in lines)
    # The "_hidden" table is not walked (hidden from readers of the folders above) but listed, with its reason.
    assert any(line.startswith("SKIPPED") and "_hidden (table_not_audited): a delta table" in line for line in lines)
    assert lines[-1] == ("4 table(s): 2 verified, 1 stale, 0 compacted, 1 unattested, 0 not verified, 0 error; "
                         "1 place(s) skipped (listed above)")
    report = json.loads(run_cli("audit", str(tmp_path / "lake"), "--json").stdout)
    assert report["passed"] is False and report["counts"]["VERIFIED"] == 2 and len(report["tables"]) == 4
    assert report["counts"]["STALE"] == 1 and report["counts"]["UNATTESTED"] == 1


def test_audit_passes_when_all_verify(tmp_path: Path) -> None:
    tables = _lakehouse(tmp_path)
    result = run_cli("audit", str(tables["good"]), str(tables["nested"]), "--level", "bytes")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("2 table(s): 2 verified, 0 stale")


def test_audit_of_nothing_is_an_error_row_with_a_summary(tmp_path: Path) -> None:
    result = run_cli("audit", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout.strip().splitlines()[-1].endswith("1 error")
    doc = json.loads(run_cli("audit", str(tmp_path), "--json").stdout)
    assert doc["counts"]["ERROR"] == 1 and doc["tables"][0]["code"] == "table_not_found"


def test_an_unreadable_table_is_an_outcome_and_the_audit_goes_on(tmp_path: Path) -> None:
    tables = _lakehouse(tmp_path)
    broken = tmp_path / "lake" / "broken"
    (broken / "_delta_log").mkdir(parents=True)
    (broken / "_delta_log" / f"{0:020d}.json").write_text("{not json\n")
    result = run_cli("audit", str(tmp_path / "lake"), "--json")
    assert result.returncode == 2, result.stdout + result.stderr  # the worst outcome: an ERROR
    doc = json.loads(result.stdout)
    assert len(doc["tables"]) == 5 and doc["counts"]["ERROR"] == 1 and doc["counts"]["VERIFIED"] == 2
    row = next(t for t in doc["tables"] if t["table"] == str(broken))
    assert row["outcome"] == "ERROR" and row["code"]
    assert str(tables["good"]) in {t["table"] for t in doc["tables"]}


def test_a_folder_named_like_a_version_is_audited_as_itself(tmp_path: Path) -> None:
    """``orders@7`` found under a folder is that folder, never version 7 of ``orders``."""
    lake = tmp_path / "lake"
    orders = lake / "orders"
    for i in range(3):
        write_deltalake(str(orders), pa.table({"x": [i]}), mode="append")
    assert run_cli("record", str(orders), "--model", "orders", "--sql", "SELECT 1").returncode == 0
    write_deltalake(str(lake / "orders@1"), pa.table({"x": [9]}))  # another, unattested table
    doc = json.loads(run_cli("audit", str(lake), "--json").stdout)
    by = {t["table"]: t["outcome"] for t in doc["tables"]}
    assert by == {str(orders): "VERIFIED", str(lake / "orders@1"): "UNATTESTED"}
    # Typed by a user, the same text is ambiguous (a folder and a version of another table): refused.
    typed = run_cli("verify", str(lake / "orders@1"), "--json")
    assert typed.returncode == 2 and json.loads(typed.stdout)["errors"][0]["code"] == "invalid_argument"


def test_overlapping_targets_audit_a_table_once(tmp_path: Path) -> None:
    """``attest audit lake lake/good``: the table both name is one line, counted once (it was two)."""
    tables = _lakehouse(tmp_path)
    report = json.loads(run_cli("audit", str(tmp_path / "lake"), str(tables["good"]), "--json").stdout)
    assert [t["table"] for t in report["tables"]].count(str(tables["good"])) == 1, report
    assert len(report["tables"]) == 4 and report["counts"]["VERIFIED"] == 2, report


def test_audit_json_chunks_are_to_json_with_warnings_and_kept() -> None:
    """The streamed JSON is ``to_json``'s text with the tail keys (``warnings``, ``kept``) in any combination."""
    from attest.cli.audit import AuditResult
    from attest.verify.audit import AuditReport, AuditRow

    audit = AuditReport.streaming(spool=True)
    audit.add(AuditRow(table="t", outcome="VERIFIED", report={"signature": {"required": False}}))
    for kept in (None, "/x version 3"):
        for globs in (None, ("s3://x/*",)):
            result = AuditResult(audit, streamed=False, format="json", kept=kept, require_signed=globs)
            assert "".join(result.json_chunks()) == json.dumps(result.to_json(), ensure_ascii=False, indent=2)
            assert ("warnings" in result.to_json()) == (globs is not None)


def test_a_folder_walk_says_how_it_goes(tmp_path: Path) -> None:
    """A walk of many folders (minutes on a store) said nothing until it ended: ``discover`` tells its ``progress``
    after each folder, and the CLI prints it as a line every few seconds when progress is shown."""
    import io
    from types import SimpleNamespace

    from attest.cli.audit_pool import walk_progress
    from carriers.discovery import discover

    tables = _lakehouse(tmp_path)
    told: list[tuple[int, int]] = []
    found = discover(str(tmp_path / "lake"), None, lambda listed, n: told.append((listed, n)))
    assert [n for n, _ in told] == list(range(1, len(told) + 1)) and told[-1][1] <= len(found.tables) == len(tables)
    err = io.StringIO()
    tell = walk_progress(SimpleNamespace(stderr=err), "s3://b/lake/", True, every=0.0)
    tell(1200, 3)
    assert err.getvalue() == "walking s3://b/lake/: 1200 folder(s) listed, 3 table(s) found\n"
    assert walk_progress(SimpleNamespace(stderr=err), "x", False) is None
