"""Round 30: Iceberg branches whose names a command line reads otherwise, and a table whose main has no snapshot.

An audit gives each branch at another snapshot than main's a line of its own (round 29) and a note saying which
command checks it alone. That note said ``attest verify <table> --snapshot-id <branch>``, which a branch's name can
turn into another check:

- a branch named with the digits of a snapshot id — here the attested snapshot's — is that *snapshot* to
  ``--snapshot-id`` (as to Spark's ``VERSION AS OF '<digits>'``), while readers of ``t.branch_<digits>`` (and
  pyiceberg's ``use_ref``) read the branch's head. Following the note printed ``VERIFIED``: the attested snapshot,
  not the unattested rows the branch's readers get;
- a branch named ``--flag`` made the note's command an argparse error (exit 2), ``-1`` a snapshot id (-1, missing).

``attest verify <table> --branch <name>`` now checks a branch's head by name whatever its spelling, and the notes
give it (joined by ``=`` when the name starts with "-"). A table whose main has no snapshot (a write-audit-publish
into a new table) said "the table has no snapshot yet" although its branches hold rows; it now says main has none."""

from __future__ import annotations

import io
import json
import shlex
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.cli import main
from carriers.iceberg.carrier import attest_after_write
from tests.conftest import cli_in_process
from tests.iceberg.conftest import CATALOG, PROGRAM, rows

TABLE = f"iceberg://{CATALOG}/ns.t"


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    return catalog.create_table("ns.t", schema=rows(0).schema)


def _flags(root: Path) -> list[str]:
    return ["--uri", f"sqlite:///{root / 'catalog.db'}", "--warehouse", f"file://{root / 'warehouse'}"]


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main([*args, "--json"])
    return code, json.loads(out.getvalue())


def _attested(table: Table) -> int:
    """main's data snapshot, attested (by a follow-up snapshot)."""
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return data


def _branch(catalog: SqlCatalog, at: int, name: str) -> int:
    """Branch ``name`` made at snapshot ``at``, then given a row (666) no attestation covers. Its head."""
    catalog.load_table("ns.t").manage_snapshots().create_branch(at, name).commit()
    catalog.load_table("ns.t").append(rows(666, 1), branch=name)
    return catalog.load_table("ns.t").metadata.refs[name].snapshot_id


def _note_command(notes: list[str]) -> list[str]:
    """The ``attest verify …`` command a branch line's note gives, as a shell splits it (without ``attest``)."""
    [note] = [n for n in notes if "checks it alone" in n]
    words = shlex.split(note.split("`")[1])
    assert words[:2] == ["attest", "verify"], note
    return words[1:]


def _audited_branches(root: Path) -> dict[str, dict[str, Any]]:
    code, out = _json("audit", f"iceberg://{CATALOG}/ns", *_flags(root))
    assert code == 1, out  # every case below has a branch of unattested rows
    return {row["table"]: row for row in out["tables"]}


def test_a_branch_named_as_the_attested_snapshot_is_checked_as_the_branch(catalog: SqlCatalog, table: Table,
                                                                          tmp_path: Path) -> None:
    data = _attested(table)
    head = _branch(catalog, data, str(data))
    read = catalog.load_table("ns.t").scan().use_ref(str(data)).to_arrow().column("id").to_pylist()
    assert 666 in read  # the branch's readers read the unattested row
    line = _audited_branches(tmp_path)[f"{TABLE}.branch_{data}"]
    assert (line["outcome"], line["version"]) == ("STALE", str(head)), line
    command = _note_command(line["notes"])
    assert command[-2:] == ["--branch", str(data)], command  # was: --snapshot-id <data>
    code, out = _json(*command, *_flags(tmp_path))
    assert code == 1 and not out["passed"] and [e["code"] for e in out["errors"]] == ["stale"], out
    # What the old note's command checked: snapshot <data> itself, attested — not what the branch's readers read
    code, out = _json("verify", TABLE, "--snapshot-id", str(data), *_flags(tmp_path))
    assert code == 0 and out["verdict"].startswith("VERIFIED"), out


def test_branches_named_like_options_are_checked_by_the_notes_command(catalog: SqlCatalog, table: Table,
                                                                      tmp_path: Path) -> None:
    data = _attested(table)
    heads = {name: _branch(catalog, data, name) for name in ("--flag", "-1", "a.b", "x'y")}
    lines = _audited_branches(tmp_path)
    for name, head in heads.items():
        line = lines[f"{TABLE}.branch_{name}"]
        assert line["outcome"] == "STALE", line
        command = _note_command(line["notes"])
        code, out = _json(*command, *_flags(tmp_path))  # was: exit 2 for --flag (argparse) and -1 (snapshot -1)
        assert code == 1 and [e["code"] for e in out["errors"]] == ["stale"], (name, command, out)
        assert str(head) in out["verdict"], (name, out["verdict"])  # the branch's head was the one checked


def test_branch_is_refused_where_it_names_nothing(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    _attested(table)
    flags = _flags(tmp_path)
    for args, words in (((f"{TABLE}@1", "--branch", "b"), "names a snapshot; --branch"),
                        ((TABLE, "--branch", "nope"), "has no branch named 'nope'"),
                        ((TABLE, "--branch", ""), "--branch needs a branch name"),
                        ((TABLE, "--branch", "b", "--snapshot-id", "1"), "not allowed with argument")):
        code, _, err = cli_in_process("verify", *args, *flags)
        assert code == 2 and words in err and "Traceback" not in err, (args, err)
    write_deltalake(tmp_path / "delta", rows(0))
    code, _, err = cli_in_process("verify", str(tmp_path / "delta"), "--branch", "b")
    assert code == 2 and "--branch applies to Iceberg tables" in err, err
    code, _, err = cli_in_process("verify", str(tmp_path / "m.json"), "--branch", "b")
    assert code == 2 and "apply to tables, not manifest files" in err, err


def test_a_ref_typed_after_an_at_sign_is_hinted_as_a_shell_takes_it(catalog: SqlCatalog, table: Table,
                                                                    tmp_path: Path) -> None:
    _attested(table)
    code, _, err = cli_in_process("verify", f"{TABLE}@--x", *_flags(tmp_path))
    assert code == 2 and f"{TABLE} --snapshot-id=--x)" in err, err  # was: "--snapshot-id --x", refused by argparse
    code, _, err = cli_in_process("verify", f"{TABLE}@-5", *_flags(tmp_path))
    assert code == 2 and "tag or branch" not in err, err  # "-5" is a snapshot id to every reader: no such hint


def test_main_without_a_snapshot_says_so_beside_its_branches(catalog: SqlCatalog, table: Table,
                                                            tmp_path: Path) -> None:
    data = _attested(table)
    _branch(catalog, data, "audit")
    catalog.load_table("ns.t").manage_snapshots().remove_branch("main").commit()
    code, out = _json("verify", TABLE, *_flags(tmp_path))
    assert code == 1 and out["verdict"].startswith("UNATTESTED"), out
    assert "main has no snapshot: the table's snapshots are on other branches" in out["notes"], out["notes"]
    assert not any("has no snapshot yet" in n for n in out["notes"]), out["notes"]  # was: said beside its branch
    assert any("--branch <branch>" in n for n in out["notes"]), out["notes"]
    code, out = _json("verify", TABLE, "--branch", "audit", *_flags(tmp_path))
    assert code == 1 and [e["code"] for e in out["errors"]] == ["stale"], out


def test_show_and_lineage_take_a_branch_by_name(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """``attest show`` and ``attest lineage`` name a branch as verify does: ``-1`` is the branch, not snapshot -1."""
    head = _branch(catalog, _attested(table), "-1")
    code, shown = _json("show", TABLE, "--branch=-1", *_flags(tmp_path))
    code_main, on_main = _json("show", TABLE, *_flags(tmp_path))
    assert code == code_main == 0 and shown == on_main, shown  # the attestation in force on the branch: main's
    code, walked = _json("lineage", TABLE, "--branch=-1", *_flags(tmp_path))
    assert code == 1 and (walked["version"], walked["code"]) == (str(head), "stale"), walked
    code, _, err = cli_in_process("show", TABLE, "--snapshot-id=-1", *_flags(tmp_path))
    assert code == 2 and "snapshot -1 is not in" in err, err  # the same text as --snapshot-id: a snapshot id


def test_a_branch_line_s_name_is_verified_as_spark_reads_it(catalog: SqlCatalog, table: Table,
                                                           tmp_path: Path) -> None:
    """The name an audit gives a branch's line, ``ns.t.branch_<b>``, is the branch to ``attest verify`` as to
    Spark's Iceberg catalog when no table has that name (before: ``table_not_found``); a table so named is read
    first, as Spark reads it; a tag (``tag_<x>``) is no branch (since round 31 it is the tag's snapshot)."""
    data = _attested(table)
    heads = {name: _branch(catalog, data, name) for name in ("-1", "a.b")}
    for name, head in heads.items():
        code, out = _json("verify", f"{TABLE}.branch_{name}", *_flags(tmp_path))
        assert code == 1 and [e["code"] for e in out["errors"]] == ["stale"], (name, out)
        assert str(head) in out["verdict"], (name, out["verdict"])
    code, out = _json("verify", f"{TABLE}.branch_-1", "--snapshot-id", str(data), *_flags(tmp_path))
    assert code == 0 and out["verdict"].startswith("VERIFIED"), out  # a snapshot asked for: that snapshot
    catalog.load_table("ns.t").manage_snapshots().create_tag(data, "x").commit()
    for missing in ("branch_nope", "branch_x", "branch_"):
        code, _, err = cli_in_process("verify", f"{TABLE}.{missing}", *_flags(tmp_path))
        assert code == 2 and "table_not_found" in err, (missing, err)
    code, out = _json("verify", f"{TABLE}.tag_x", *_flags(tmp_path))  # round 31: the tag's snapshot, as Spark reads
    assert code == 0 and out["tag"] == "x" and out["version"] == str(data), out
    code, _, err = cli_in_process("verify", f"{TABLE}.branch_-1", "--branch", "a.b", *_flags(tmp_path))
    assert code == 2 and "table_not_found" in err, err  # one branch at a time: the name is then no table's
    code, _, err = cli_in_process("record", f"{TABLE}.branch_-1", "--branch", "a.b", "--model", "m",
                                  "--program-hash", PROGRAM, *_flags(tmp_path))
    assert code == 2 and "table_not_found" in err, err  # as verify: with --branch, the name is then no table's
    # A table literally named branch_-1 in namespace ns.t: read as itself (unattested), as Spark reads it
    catalog.create_namespace(("ns", "t"))
    catalog.create_table(("ns", "t", "branch_-1"), schema=rows(0).schema).append(rows(0))
    code, out = _json("verify", f"{TABLE}.branch_-1", *_flags(tmp_path))
    assert code == 1 and out["verdict"].startswith("UNATTESTED"), out


def test_a_branch_named_by_its_line_is_in_its_table_s_policy_scope(catalog: SqlCatalog, table: Table,
                                                                  tmp_path: Path) -> None:
    """``require_signed`` naming the table covers its branch named ``ns.t.branch_<b>``: the branch's unsigned
    attestation is refused (``signature_missing``), never passed as a table the glob does not name."""
    from attest.signing.keys import generate_keypair

    pair = generate_keypair("ecdsa-p256")
    (tmp_path / "ci.pub").write_bytes(pair.public_pem)
    (tmp_path / "policy.toml").write_text(f'require_signed = ["{TABLE}"]\n[[keys]]\npublic_key = "ci.pub"\n')
    data = _attested(table)
    _branch(catalog, data, "audit")
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")  # unsigned
    for named in ((f"{TABLE}.branch_audit",), (TABLE, "--branch", "audit")):
        code, out = _json("verify", *named, "--policy", str(tmp_path / "policy.toml"), *_flags(tmp_path))
        assert code == 1 and [e["code"] for e in out["errors"]] == ["signature_missing"], (named, out)


@pytest.mark.parametrize("glob", [f"{TABLE}.branch_audit", f"{TABLE}.branch_*"])
def test_a_glob_naming_the_branch_s_line_covers_the_branch(catalog: SqlCatalog, table: Table, tmp_path: Path,
                                                           glob: str) -> None:
    """``require_signed`` naming a branch as an audit's line (and Spark) names it: the branch's unsigned attestation
    is refused. Before, the glob covered nothing — the branch VERIFIED unsigned, the audit exit 0 with a warning that
    the glob matched no table. Main, which the glob does not name, still passes unsigned."""
    from attest.signing.keys import generate_keypair

    (tmp_path / "ci.pub").write_bytes(generate_keypair("ecdsa-p256").public_pem)
    (tmp_path / "policy.toml").write_text(f'require_signed = ["{glob}"]\n[[keys]]\npublic_key = "ci.pub"\n')
    policy = ["--policy", str(tmp_path / "policy.toml"), *_flags(tmp_path)]
    _branch(catalog, _attested(table), "audit")
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")  # unsigned
    for named in ((f"{TABLE}.branch_audit",), (TABLE, "--branch", "audit")):
        code, out = _json("verify", *named, *policy)
        assert code == 1 and [e["code"] for e in out["errors"]] == ["signature_missing"], (named, out)
    code, out = _json("verify", TABLE, *policy)
    assert code == 0 and out["verdict"].startswith("VERIFIED"), out
    code, out = _json("audit", f"iceberg://{CATALOG}/ns", *policy)
    lines = {r["table"]: (r["outcome"], r["code"]) for r in out["tables"]}
    assert (code, lines) == (1, {TABLE: ("VERIFIED", None),
                                 f"{TABLE}.branch_audit": ("NOT VERIFIED", "signature_missing")}), out


def test_the_verdict_names_the_branch_it_checked(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """``--branch b`` (and the branch's line name) checks b's head: the verdict and JSON name the branch, not only the
    table and a snapshot id a reader cannot tell from main's. Main's verdict and a snapshot asked for name none."""
    data = _attested(table)
    head = _branch(catalog, data, "audit")
    for named in ((f"{TABLE}.branch_audit",), (TABLE, "--branch", "audit")):
        code, out = _json("verify", *named, *_flags(tmp_path))
        assert code == 1 and out["branch"] == "audit", out
        assert f"iceberg table {TABLE} branch 'audit' snapshot {head}" in out["verdict"], out
    for named in ((TABLE,), (TABLE, "--snapshot-id", str(head))):
        code, out = _json("verify", *named, *_flags(tmp_path))
        assert "branch" not in out and " branch " not in out["verdict"], out
