"""``attest audit`` gives each branch of an Iceberg table at another snapshot than main's a line of its own (round 29).

Readers of ``ns.t.branch_audit`` read that branch's head. Until round 28 an audit checked main's head only and said
nothing of the branches; round 28 named them in a note, the line still VERIFIED and the audit's exit 0 while the
branch's readers read rows no attestation binds. Each branch is now audited as ``attest verify <table> --snapshot-id
<branch>`` checks it; ``--no-branches`` keeps the note alone."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.cli import main
from carriers.iceberg.carrier import attest_after_write
from tests.iceberg.conftest import CATALOG, PROGRAM, rows


def _flags(root: Path) -> list[str]:
    return ["--uri", f"sqlite:///{root / 'catalog.db'}", "--warehouse", f"file://{root / 'warehouse'}"]


def _audit(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["audit", *args, "--json"])
    return code, json.loads(out.getvalue())


def _attested_with_branch(catalog: SqlCatalog, table: Table) -> int:
    """main attested; branch ``audit`` made at main's data snapshot, then given rows no attestation covers. Returns
    the branch's head."""
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    catalog.load_table("ns.t").manage_snapshots().create_branch(data, "audit").commit()
    catalog.load_table("ns.t").append(rows(666, 1), branch="audit")
    return catalog.load_table("ns.t").metadata.refs["audit"].snapshot_id


def test_an_unattested_branch_is_a_line_of_its_own(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    head = _attested_with_branch(catalog, table)
    read = catalog.load_table("ns.t").scan().use_ref("audit").to_arrow().column("id").to_pylist()
    assert 666 in read  # what the branch's readers get (Spark's: tests/adversarial/test_spark_audit_branches.py)
    code, out = _audit(f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    assert code == 1, out  # the branch's readers read unattested rows: not a passing audit
    lines = {row["table"]: row for row in out["tables"]}
    assert set(lines) == {f"iceberg://{CATALOG}/ns.t", f"iceberg://{CATALOG}/ns.t.branch_audit"}
    main_line, branch = lines[f"iceberg://{CATALOG}/ns.t"], lines[f"iceberg://{CATALOG}/ns.t.branch_audit"]
    assert main_line["outcome"] == "VERIFIED"
    assert any("are audited on lines of their own" in n for n in main_line["notes"]), main_line["notes"]
    assert not any("not the 1 other branch" in n for n in main_line["notes"])
    assert branch["outcome"] == "STALE" and branch["code"] == "stale", branch
    assert branch["version"] == str(head)  # the branch's head was checked, not main's
    assert any("--branch audit` checks it alone" in n for n in branch["notes"]), branch["notes"]


def test_no_branches_keeps_the_note_alone(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    head = _attested_with_branch(catalog, table)
    code, out = _audit(f"iceberg://{CATALOG}/ns", "--no-branches", *_flags(tmp_path))
    assert code == 0, out
    [line] = out["tables"]
    assert f"not the 1 other branch(es) at other snapshots: 'audit' (snapshot {head})" in " ".join(line["notes"])


def test_an_attested_branch_verifies_on_its_line(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """A write-audit-publish branch attested where it was written (``attest_after_write(branch=…)``, as the Spark hook
    and ``attest record --branch`` do): both lines pass."""
    _attested_with_branch(catalog, table)
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")
    code, out = _audit(f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    assert code == 0, out
    assert [(r["table"], r["outcome"]) for r in out["tables"]] == [
        (f"iceberg://{CATALOG}/ns.t", "VERIFIED"), (f"iceberg://{CATALOG}/ns.t.branch_audit", "VERIFIED")]


def test_a_branch_at_main_s_head_has_no_line(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    head = catalog.load_table("ns.t").current_snapshot().snapshot_id  # type: ignore[union-attr]
    catalog.load_table("ns.t").manage_snapshots().create_branch(head, "same").commit()
    code, out = _audit(f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    assert code == 0 and [r["table"] for r in out["tables"]] == [f"iceberg://{CATALOG}/ns.t"], out


def test_a_branch_named_with_digits_is_the_branch(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """A branch named ``123``: its line checks the branch's head (a reference ``@123`` would be snapshot 123, which
    does not exist: an ERROR line instead of the branch's verdict)."""
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    catalog.load_table("ns.t").manage_snapshots().create_branch(data, "123").commit()
    catalog.load_table("ns.t").append(rows(666, 1), branch="123")
    head = catalog.load_table("ns.t").metadata.refs["123"].snapshot_id
    code, out = _audit(f"iceberg://{CATALOG}/ns.t", *_flags(tmp_path))
    branch = {r["table"]: r for r in out["tables"]}[f"iceberg://{CATALOG}/ns.t.branch_123"]
    assert (code, branch["outcome"], branch["version"]) == (1, "STALE", str(head)), branch


def test_a_table_folder_s_branch_is_audited_too(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """A table found by its folder (no catalog): its branch's line is named after the folder, ``(branch audit)``."""
    _attested_with_branch(catalog, table)
    folder = str(tmp_path / "warehouse" / "ns" / "t")
    code, out = _audit(folder)
    lines = {r["table"]: r["outcome"] for r in out["tables"]}
    assert (code, lines) == (1, {folder: "VERIFIED", f"{folder} (branch audit)": "STALE"}), out


def test_the_kept_audit_holds_the_branch_s_row(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    head = _attested_with_branch(catalog, table)
    kept = tmp_path / "kept"
    with redirect_stdout(io.StringIO()):
        assert main(["audit", f"iceberg://{CATALOG}/ns", "--to", str(kept), *_flags(tmp_path)]) == 1
    got = {(r["table"], r["version"], r["outcome"]) for r in DeltaTable(str(kept)).to_pyarrow_table().to_pylist()}
    assert (f"iceberg://{CATALOG}/ns.t.branch_audit", str(head), "STALE") in got, got


def test_a_trust_policy_covers_the_branch_s_line(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """The policy scope of a branch's line is its table's: main signed and the branch attested unsigned — the branch's
    line is refused (``signature_missing``), not passed for main's signature."""
    from attest.signing.keys import PemSigner, generate_keypair

    pair = generate_keypair("ecdsa-p256")
    (tmp_path / "ci.pub").write_bytes(pair.public_pem)
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM, signer=PemSigner.load(pair.private_pem))
    catalog.load_table("ns.t").manage_snapshots().create_branch(data, "audit").commit()
    catalog.load_table("ns.t").append(rows(666, 1), branch="audit")
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")  # unsigned
    code, out = _audit(f"iceberg://{CATALOG}/ns", "--key", str(tmp_path / "ci.pub"), *_flags(tmp_path))
    lines = {r["table"]: (r["outcome"], r["code"]) for r in out["tables"]}
    assert lines == {f"iceberg://{CATALOG}/ns.t": ("VERIFIED", None),
                     f"iceberg://{CATALOG}/ns.t.branch_audit": ("NOT VERIFIED", "signature_missing")}, out
    assert code == 1


def test_a_branch_typed_after_an_at_sign_says_how_to_name_it(catalog: SqlCatalog, table: Table,
                                                              tmp_path: Path) -> None:
    """``iceberg://c/ns.t@audit``: ``@`` takes snapshot ids; the error says how a branch is named."""
    from tests.conftest import cli_in_process

    _attested_with_branch(catalog, table)
    code, _, err = cli_in_process("verify", f"iceberg://{CATALOG}/ns.t@audit", *_flags(tmp_path))
    assert code == 2 and "table_not_found" in err, err
    assert f"for a tag or branch of ns.t: iceberg://{CATALOG}/ns.t --snapshot-id audit" in err, err
    code, _, err = cli_in_process("verify", f"iceberg://{CATALOG}/ns.nothing@audit", *_flags(tmp_path))
    assert code == 2 and "table_not_found" in err and "tag or branch" not in err, err  # no table to name a ref of


def test_a_table_printed_as_the_branch_is_named_so(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """A table ``branch_audit`` of namespace ``ns.t`` prints as the branch's line does (and Spark reads it for
    ``ns.t.branch_audit``: measured with Spark 4.1 / Iceberg 1.12, a stream's ``toTable`` of that name made the table):
    both are checked, a line each, and the branch's says so."""
    _attested_with_branch(catalog, table)
    catalog.create_namespace(("ns", "t"))
    shadow = catalog.create_table(("ns", "t", "branch_audit"), schema=rows(0).schema)
    shadow.append(rows(7, 1))
    code, out = _audit(f"iceberg://{CATALOG}", *_flags(tmp_path))
    name = f"iceberg://{CATALOG}/ns.t.branch_audit"
    lines = [(r["table"], r["outcome"], any("a table is named" in n for n in r["notes"])) for r in out["tables"]]
    assert sorted(lines) == sorted([(f"iceberg://{CATALOG}/ns.t", "VERIFIED", False), (name, "UNATTESTED", False),
                                    (name, "STALE", True)]), lines
    assert code == 1


def test_a_branch_of_a_table_whose_main_has_no_snapshot_is_a_line(catalog: SqlCatalog, table: Table,
                                                                   tmp_path: Path) -> None:
    """A write-audit-publish into a new table writes its branch alone: main has no snapshot (here: main dropped with
    pyiceberg, the metadata Spark's ``spark.wap.branch`` write into an empty table leaves), and the branch's readers
    read its rows. Before, the audit's one line was main's ``UNATTESTED (no snapshot)``: the branch went unnamed."""
    _attested_with_branch(catalog, table)
    catalog.load_table("ns.t").manage_snapshots().remove_branch("main").commit()
    after = catalog.load_table("ns.t")
    assert after.metadata.current_snapshot_id is None and 666 in after.scan().use_ref("audit").to_arrow().column(
        "id").to_pylist()
    code, out = _audit(f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    assert code == 1, out
    lines = {row["table"]: row for row in out["tables"]}
    assert set(lines) == {f"iceberg://{CATALOG}/ns.t", f"iceberg://{CATALOG}/ns.t.branch_audit"}, lines
    assert lines[f"iceberg://{CATALOG}/ns.t"]["outcome"] == "UNATTESTED"
    assert lines[f"iceberg://{CATALOG}/ns.t.branch_audit"]["outcome"] in {"STALE", "UNATTESTED"}, lines
    # attested where it was written: the branch's line passes; main, with no rows, stays unattested as any empty table
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")
    code, out = _audit(f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    assert [(r["table"], r["outcome"]) for r in out["tables"]] == [
        (f"iceberg://{CATALOG}/ns.t", "UNATTESTED"), (f"iceberg://{CATALOG}/ns.t.branch_audit", "VERIFIED")], out
