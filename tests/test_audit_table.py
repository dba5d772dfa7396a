"""A queryable audit: `attest audit --to PATH` appends one row per table version checked to a Delta table that
deltalake and Spark read back; `--format json|csv|table` for one-off runs; never appended to user data."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.verify.audit import COLUMNS
from carriers.audit_table import LAYOUT, LAYOUT_KEY
from tests.conftest import run_cli
from tests.delta.conftest import PROGRAM, special_table
from tests.servers.stores import Bucket
from tests.test_audit import _lakehouse


def _rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (str(r["checked_at"]), r["table"]))


def test_audit_is_kept_as_a_delta_table(tmp_path: Path) -> None:
    tables = _lakehouse(tmp_path)
    kept = tmp_path / "audits"
    first = run_cli("audit", str(tmp_path / "lake"), "--to", str(kept))
    assert first.returncode == 1 and f"audit appended to {kept} version" in first.stderr
    rows = _rows(kept)
    assert [f.name for f in DeltaTable(str(kept)).schema().fields] == list(COLUMNS)
    assert sorted((r["table"], r["outcome"]) for r in rows) == sorted([
        (str(tables["good"]), "VERIFIED"), (str(tables["stale"]), "STALE"), (str(tables["bare"]), "UNATTESTED"),
        (str(tables["nested"]), "VERIFIED")])
    good = next(r for r in rows if r["table"] == str(tables["good"]))
    shown = json.loads(run_cli("show", str(tables["good"])).stdout)
    assert good["program_hash"] == shown["program_hash"] and good["model"] == "good"
    assert good["version"] == "1" and good["attested_version"] == "0" and good["level"] == "bytes"
    assert good["code"] is None and good["checked_at"].tzinfo is not None
    stale = next(r for r in rows if r["outcome"] == "STALE")
    assert stale["code"] == "stale" and stale["version"] == "2"
    assert len({r["audit_id"] for r in rows}) == 1
    config = DeltaTable(str(kept)).metadata().configuration
    assert config[LAYOUT_KEY] == LAYOUT and config["delta.appendOnly"] == "true"
    # A second audit appends: the history is queryable by run.
    assert run_cli("audit", str(tables["good"]), "--to", str(kept), "--json").returncode == 0
    again = _rows(kept)
    assert len(again) == 5 and len({r["audit_id"] for r in again}) == 2


def test_the_audit_table_is_not_audited_by_the_run_writing_it(tmp_path: Path) -> None:
    _lakehouse(tmp_path)
    kept = tmp_path / "lake" / "_audits_are_hidden_anyway"
    inside = tmp_path / "lake" / "audits"
    run_cli("audit", str(tmp_path / "lake" / "good"), "--to", str(inside))
    result = run_cli("audit", str(tmp_path / "lake"), "--to", str(inside), "--json")
    tables = [t["table"] for t in json.loads(result.stdout)["tables"]]
    assert str(inside) not in tables and len(tables) == 4
    assert not kept.exists()


@pytest.mark.parametrize("kind", ["user table", "file", "folder with content", "symlink to a table"])
def test_never_appended_to_anything_else(tmp_path: Path, kind: str) -> None:
    tables = _lakehouse(tmp_path)
    target = tmp_path / "target"
    before: Any = None
    if kind == "user table":
        write_deltalake(str(target), pa.table({"table": ["x"], "outcome": ["y"]}))
        before = DeltaTable(str(target)).version()
    elif kind == "file":
        target.write_text("not a table")
    elif kind == "folder with content":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    else:
        os.symlink(tables["good"], target)
        before = DeltaTable(str(tables["good"])).version()
    result = run_cli("audit", str(tmp_path / "lake"), "--to", str(target), "--json")
    assert result.returncode == 2 and json.loads(result.stdout)["errors"][0]["code"] == "audit_table_refused"
    text = run_cli("audit", str(tmp_path / "lake"), "--to", str(target))
    assert text.returncode == 2 and text.stdout == "" and "audit_table_refused" in text.stderr
    if kind == "user table":
        assert DeltaTable(str(target)).version() == before
    if kind == "symlink to a table":
        assert DeltaTable(str(tables["good"])).version() == before


def test_formats_for_one_off_runs(tmp_path: Path) -> None:
    _lakehouse(tmp_path)
    lake = str(tmp_path / "lake")
    rows = list(csv.DictReader(io.StringIO(run_cli("audit", lake, "--format", "csv").stdout)))
    assert len(rows) == 4 and list(rows[0]) == list(COLUMNS)
    assert sorted(r["outcome"] for r in rows) == ["STALE", "UNATTESTED", "VERIFIED", "VERIFIED"]
    table = run_cli("audit", lake, "--format", "table").stdout.splitlines()
    assert table[0].split() == ["OUTCOME", "VERSION", "LEVEL", "CODE", "TABLE"] and len(table) == 7
    assert table[-2].startswith("SKIPPED") and "_hidden (table_not_audited)" in table[-2]  # listed, as the summary says
    assert table[-1].startswith("4 table(s): 2 verified, 1 stale")
    as_format = json.loads(run_cli("audit", lake, "--format", "json").stdout)
    assert as_format["counts"]["VERIFIED"] == 2 and len(as_format["tables"]) == 4
    both = run_cli("audit", lake, "--json", "--format", "csv")
    assert both.returncode == 2 and json.loads(both.stdout)["errors"][0]["code"] == "invalid_argument"


def test_csv_cells_are_never_formulas(tmp_path: Path) -> None:
    table = tmp_path / "lake" / "t"
    write_deltalake(str(table), pa.table({"x": [1]}))
    model = "=HYPERLINK(\"http://evil\",\"x\")"
    assert run_cli("record", str(table), "--model", model, "--sql", "SELECT 1").returncode == 0
    out = run_cli("audit", str(tmp_path / "lake"), "--format", "csv").stdout
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["model"] == "'" + model and row["table"] == str(table)
    assert not any(v.startswith(("=", "+", "-", "@")) for v in row.values())


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reads_the_kept_audit(tmp_path: Path, spark: Any) -> None:
    _lakehouse(tmp_path)
    kept = tmp_path / "audits"
    assert run_cli("audit", str(tmp_path / "lake"), "--to", str(kept)).returncode == 1
    frame = spark.read.format("delta").load(str(kept))
    assert frame.columns == list(COLUMNS)
    counts = {r["outcome"]: r["n"] for r in frame.groupBy("outcome").count().withColumnRenamed("count", "n")
              .collect()}
    assert counts == {"VERIFIED": 2, "STALE": 1, "UNATTESTED": 1}
    assert run_cli("audit", str(tmp_path / "lake" / "good"), "--to", str(kept)).returncode == 0
    # The query docs/audit.md shows: what was not verified in the last audit run.
    last = spark.sql(f"SELECT table, version, outcome, code FROM delta.`{kept}` WHERE audit_id = (SELECT "
                     f"max_by(audit_id, checked_at) FROM delta.`{kept}`) AND outcome <> 'VERIFIED'").collect()
    assert last == []
    first = spark.sql(f"SELECT outcome, code FROM delta.`{kept}` WHERE audit_id = (SELECT min_by(audit_id, "
                      f"checked_at) FROM delta.`{kept}`) AND outcome <> 'VERIFIED'").collect()
    assert sorted((r["outcome"], r["code"]) for r in first) == [("STALE", "stale"), ("UNATTESTED", "unattested")]


# ---- kept on an object store: the audit table on S3 (SeaweedFS started by tests/servers) ---------------------------


def test_the_audit_is_kept_on_s3(s3: Bucket, tmp_path: Path) -> None:
    options = [a for k, v in s3.storage_options.items() for a in ("--storage-option", f"{k}={v}")]
    write_deltalake(s3.uri("lake/t"), special_table(), storage_options=s3.storage_options)
    assert run_cli("record", s3.uri("lake/t"), "--model", "m", "--program-hash", PROGRAM, *options).returncode == 0
    kept = s3.uri("audits/lake")
    done = run_cli("audit", s3.uri("lake") + "/", "--to", kept, "--json", *options)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["counts"]["VERIFIED"] == 1  # --to leaves --json one object on stdout
    rows = DeltaTable(kept, storage_options=s3.storage_options).to_pyarrow_table().to_pylist()
    assert [(r["table"], r["outcome"], r["level"]) for r in rows] == [(s3.uri("lake/t"), "VERIFIED", "bytes")]
    # A bucket prefix holding someone else's Delta table is refused like a local one; nothing is appended to it.
    other = s3.uri("other")
    write_deltalake(other, special_table(), storage_options=s3.storage_options)
    before = DeltaTable(other, storage_options=s3.storage_options).version()
    refused = run_cli("audit", s3.uri("lake") + "/", "--to", other, "--json", *options)
    assert refused.returncode == 2, refused.stdout
    assert json.loads(refused.stdout)["errors"][0]["code"] == "audit_table_refused", refused.stdout
    assert DeltaTable(other, storage_options=s3.storage_options).version() == before
    assert s3.secret not in refused.stdout + refused.stderr + done.stdout + done.stderr


def test_a_kept_row_holds_its_notes(tmp_path: Path) -> None:
    """A line's notes (how its table was found, what its verdict is not of) are kept with it, one per line: the row
    of a table nested in another's folder says so, as its printed line does."""
    outer, inner = tmp_path / "lake" / "outer", tmp_path / "lake" / "outer" / "inner"
    for table in (outer, inner):
        write_deltalake(str(table), pa.table({"x": [1]}))
        assert run_cli("record", str(table), "--model", "m", "--sql", "SELECT 1").returncode == 0
    kept = tmp_path / "audits"
    printed = run_cli("audit", str(tmp_path / "lake"), "--to", str(kept))
    assert printed.returncode == 0, printed.stdout + printed.stderr
    rows = {r["table"]: r for r in _rows(kept)}
    assert rows[str(outer)]["notes"] is None
    note = rows[str(inner)]["notes"]
    assert note is not None and note.startswith(f"nested inside table {outer}") and f"note: {note}" in printed.stdout
    csv_rows = {r["table"]: r for r in csv.DictReader(io.StringIO(
        run_cli("audit", str(tmp_path / "lake"), "--format", "csv").stdout))}
    assert csv_rows[str(inner)]["notes"] == note and csv_rows[str(outer)]["notes"] == ""


def test_an_audit_kept_before_the_notes_column_gains_it(tmp_path: Path) -> None:
    """A kept audit written before the notes column (its fifteen columns) is appended to: the column is added by the
    append, the rows kept before read null there, and no kept row is rewritten (the table is append-only)."""
    from attest.verify.audit import COLUMNS_BEFORE_NOTES

    kept = tmp_path / "audits"
    old = pa.schema([pa.field(c, pa.timestamp("us", tz="UTC") if c == "checked_at" else pa.string())
                     for c in COLUMNS_BEFORE_NOTES])
    made = DeltaTable.create(str(kept), old, configuration={"delta.appendOnly": "true"})
    made.alter.set_table_properties({LAYOUT_KEY: LAYOUT}, raise_if_not_exists=False)
    before = {c: [None] for c in COLUMNS_BEFORE_NOTES} | {"audit_id": ["earlier"], "table": ["/lake/old"],
                                                           "outcome": ["VERIFIED"]}
    write_deltalake(str(kept), pa.table(before, schema=old), mode="append")
    files_before = set(DeltaTable(str(kept)).file_uris())
    outer, inner = tmp_path / "lake" / "outer", tmp_path / "lake" / "outer" / "inner"
    for table in (outer, inner):
        write_deltalake(str(table), pa.table({"x": [1]}))
    for _ in range(2):  # the append adding the column, then one to the table as it now is
        done = run_cli("audit", str(tmp_path / "lake"), "--to", str(kept))
        assert done.returncode == 1 and "audit appended to" in done.stderr, done.stderr
    assert [f.name for f in DeltaTable(str(kept)).schema().fields] == list(COLUMNS)
    assert files_before <= set(DeltaTable(str(kept)).file_uris())  # the earlier row's file is still live, as it was
    rows = _rows(kept)
    assert [(r["audit_id"], r["notes"]) for r in rows if r["table"] == "/lake/old"] == [("earlier", None)]
    nested = [r["notes"] for r in rows if r["table"] == str(inner)]
    assert len(nested) == 2 and all(n and n.startswith("nested inside table") for n in nested), nested
