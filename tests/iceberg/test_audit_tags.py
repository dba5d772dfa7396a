"""``attest audit`` gives each tag of an Iceberg table at a snapshot no branch's head is a line of its own (round 31).

Readers of ``ns.t.tag_release`` (and ``VERSION AS OF 'release'``) read the snapshot the tag names. Tags were left out
of an audit as time travel: a table tagged ``release`` at rows no attestation binds passed, exit 0, while Spark's
readers of the tag read them. Each such tag is now a line, named as Spark names the read (``<table>.tag_<x>``), which
``attest verify`` reads as that tag; ``--no-branches`` leaves them out with the branches."""

from __future__ import annotations

import shlex
from pathlib import Path

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.test_iceberg_branch_names_round30 import _flags, _json
from tests.iceberg.conftest import CATALOG, PROGRAM, rows

TABLE = f"iceberg://{CATALOG}/ns.t"


def _tagged(catalog: SqlCatalog, table: Table) -> tuple[int, int]:
    """A snapshot of a row (666) no attestation binds, tagged ``release``; then main's own rows, attested. Returns the
    tagged snapshot and main's attested data snapshot."""
    table.append(rows(666, 1))
    tagged = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.manage_snapshots().create_tag(tagged, "release").commit()
    table = catalog.load_table("ns.t")
    table.overwrite(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return tagged, data


def test_a_tag_at_unattested_rows_is_a_line_of_its_own(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    tagged, _ = _tagged(catalog, table)
    read = catalog.load_table("ns.t").scan().use_ref("release").to_arrow().column("id").to_pylist()
    assert read == [666]  # what the tag's readers get
    code, out = _json("audit", f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    lines = {row["table"]: row for row in out["tables"]}
    assert code == 1 and set(lines) == {TABLE, f"{TABLE}.tag_release"}, out  # was: exit 0, main's line alone
    assert lines[TABLE]["outcome"] == "VERIFIED"
    line = lines[f"{TABLE}.tag_release"]
    assert (line["outcome"], line["version"]) == ("UNATTESTED", str(tagged)), line
    [note] = [n for n in line["notes"] if "checks it alone" in n]
    command = shlex.split(note.split("`")[1])[1:]
    assert command == ["verify", TABLE, "--snapshot-id", str(tagged)], command
    code, again = _json(*command, *_flags(tmp_path))
    assert code == 1 and again["version"] == str(tagged), again
    # The line's own name is that tag, as Spark reads it: the verdict names the tag.
    code, named = _json("verify", f"{TABLE}.tag_release", *_flags(tmp_path))
    assert code == 1 and named["tag"] == "release" and named["version"] == str(tagged), named
    assert f"{TABLE} tag 'release' at snapshot {tagged}" in named["verdict"], named


def test_tags_at_checked_snapshots_have_no_line(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """A tag at main's head reads what main's line checked (recipe-attest's retention tag is one); one at an attested
    older snapshot has its line, which verifies; ``--no-branches`` leaves every tag out."""
    table.append(rows(0))
    first = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    table.manage_snapshots().create_tag(first, "v1").commit()
    table = catalog.load_table("ns.t")
    table.append(rows(1, 1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    table.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, "v2").commit()  # type: ignore[union-attr]
    refs = catalog.load_table("ns.t").metadata.refs
    assert {"recipe-attest", "v1", "v2"} <= set(refs)
    code, out = _json("audit", f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    lines = {row["table"]: (row["outcome"], row["version"]) for row in out["tables"]}
    assert (code, lines) == (0, {TABLE: ("VERIFIED", str(refs["main"].snapshot_id)),
                                 f"{TABLE}.tag_v1": ("VERIFIED", str(first))}), out
    code, out = _json("audit", f"iceberg://{CATALOG}/ns", "--no-branches", *_flags(tmp_path))
    assert code == 0 and [row["table"] for row in out["tables"]] == [TABLE], out


def test_a_tag_is_never_written_through(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """``attest record`` of a tag's name is refused: a tag names a fixed snapshot (a follow-up attestation would have
    been committed on main)."""
    _tagged(catalog, table)
    before = catalog.load_table("ns.t").metadata.refs["main"].snapshot_id
    code, out = _json("record", f"{TABLE}.tag_release", "--model", "m", "--sql", "select 1", *_flags(tmp_path))
    assert code == 2 and out["errors"][0]["code"] == "unsupported_table", out
    assert "fixed snapshot" in out["errors"][0]["message"], out
    assert catalog.load_table("ns.t").metadata.refs["main"].snapshot_id == before  # nothing committed


def test_a_missing_tag_or_a_branch_named_as_one_is_no_tag(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    _tagged(catalog, table)
    catalog.load_table("ns.t").manage_snapshots().create_branch(
        catalog.load_table("ns.t").current_snapshot().snapshot_id, "b").commit()  # type: ignore[union-attr]
    for name in ("tag_nope", "tag_b", "branch_release", "tag_"):
        code, out = _json("verify", f"{TABLE}.{name}", *_flags(tmp_path))
        assert code == 2 and out["errors"][0]["code"] == "table_not_found", (name, out)


def test_a_retention_tag_has_no_line(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """Main gone stale past its attestation: recipe-attest's retention tag names the older snapshot carrying it, which
    the verification follows itself — no line of its own (it would have read VERIFIED beside main's STALE)."""
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    catalog.load_table("ns.t").append(rows(1, 1))  # no attestation
    refs = catalog.load_table("ns.t").metadata.refs
    assert refs["recipe-attest"].snapshot_id != refs["main"].snapshot_id
    code, out = _json("audit", f"iceberg://{CATALOG}/ns", *_flags(tmp_path))
    assert (code, [(r["table"], r["outcome"]) for r in out["tables"]]) == (1, [(TABLE, "STALE")]), out
