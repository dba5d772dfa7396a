"""A verification of an Iceberg table by its name checks main's head; readers of ``t.branch_b`` read another
snapshot. The verdict says which branches it did not check (round 28: the Spark hook's skips are scoped by branch;
a verify or an audit of the table said nothing of the branches, whose readers may read rows no attestation covers)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.cli import main
from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from tests.iceberg.conftest import CATALOG, PROGRAM, rows


def _notes(table: Table, version: str | None = None, branch: str | None = None) -> list[str]:
    carrier = IcebergCarrier(table, catalog_name=CATALOG, branch=branch)
    report = verify_table(carrier, version=version, level="files")
    assert report.passed, report.verdict()
    assert [n for n in report.notes if "other branch" in n] == list(filter(None, [report.other_heads_note()]))
    return [f"{b}@{s}" for b, s in report.other_heads]


def test_branches_at_other_snapshots_are_named_in_main_s_verdict(catalog: SqlCatalog, table: Table) -> None:
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    head = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.manage_snapshots().create_branch(head, "same").commit()  # main's own head: checked
    table = catalog.load_table("ns.t")
    assert _notes(table) == []
    table.manage_snapshots().create_branch(data, "audit").commit()
    table = catalog.load_table("ns.t")
    table.append(rows(3), branch="audit")  # rows no attestation covers, read by readers of t.branch_audit
    table = catalog.load_table("ns.t")
    audit = table.metadata.refs["audit"].snapshot_id
    assert _notes(table) == [f"audit@{audit}"]  # not 'same', at main's head
    assert _notes(table, version=str(head)) == []  # a snapshot asked for by id: nothing else was implied
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG), version="audit", level="files")
    assert not report.passed  # the branch itself: its head is unattested


def test_a_verification_of_a_branch_names_no_other(catalog: SqlCatalog, table: Table) -> None:
    table.append(rows(0))
    table.manage_snapshots().create_branch(table.current_snapshot().snapshot_id, "audit").commit()  # type: ignore[union-attr]
    table = catalog.load_table("ns.t")
    table.append(rows(3), branch="audit")
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")
    table = catalog.load_table("ns.t")
    assert _notes(table, branch="audit") == []


def test_the_audit_line_of_the_table_names_the_branch(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """``attest audit --no-branches`` prints the note on the table's line (a line's notes are otherwise how the table
    was found), and ``--json`` lists the branches (``other_branches``) in the table's report. Without the option each
    branch has a line of its own (tests/iceberg/test_audit_branches.py)."""
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    catalog.load_table("ns.t").manage_snapshots().create_branch(data, "audit").commit()
    catalog.load_table("ns.t").append(rows(3), branch="audit")
    audit = catalog.load_table("ns.t").metadata.refs["audit"].snapshot_id
    flags = ["--uri", f"sqlite:///{tmp_path / 'catalog.db'}", "--warehouse", f"file://{tmp_path / 'warehouse'}"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["audit", f"iceberg://{CATALOG}/ns", "--no-branches", *flags]) == 0  # the branch noted only
    assert f"note: main's head was checked, not the 1 other branch(es) at other snapshots: 'audit' (snapshot {audit})" \
        in out.getvalue(), out.getvalue()
    out = io.StringIO()
    with redirect_stdout(out):
        main(["verify", f"iceberg://{CATALOG}/ns.t", "--json", *flags])
    assert json.loads(out.getvalue())["other_branches"] == [{"branch": "audit", "snapshot": str(audit)}]
