"""Round 31: a trust policy naming an Iceberg tag.

Spark reads ``t.tag_release_1`` (and ``VERSION AS OF 'release_1'``) as the snapshot the tag names. A policy written
as Spark and an audit name such reads, ``require_signed = ["iceberg://c/ns.t.tag_release*"]``, matched no name of any
table state: the tag's snapshot, attested unsigned, printed ``VERIFIED (… unsigned)`` by tag and by id. A tag names
one snapshot, so a glob naming the tag now covers every check of that snapshot, by whatever name it was asked for
(the plan Spark's read gate sees has only the snapshot id); other snapshots, main's head among them, are not named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write, tags_at
from tests.adversarial.test_iceberg_branch_names_round30 import TABLE, _attested, _flags, _json
from tests.iceberg.conftest import PROGRAM, rows


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    return catalog.create_table("ns.t", schema=rows(0).schema)


def _policy(tmp_path: Path, glob: str) -> list[str]:
    from attest.signing.keys import generate_keypair

    (tmp_path / "ci.pub").write_bytes(generate_keypair("ecdsa-p256").public_pem)
    (tmp_path / "policy.toml").write_text(f'require_signed = ["{glob}"]\n[[keys]]\npublic_key = "ci.pub"\n')
    return ["--policy", str(tmp_path / "policy.toml"), *_flags(tmp_path)]


@pytest.mark.parametrize("glob", [f"{TABLE}.tag_release_1", f"{TABLE}.tag_release*", f"{TABLE}.tag_*"])
def test_a_glob_naming_a_tag_covers_its_snapshot(catalog: SqlCatalog, table: Table, tmp_path: Path,
                                                 glob: str) -> None:
    policy = _policy(tmp_path, glob)
    tagged = _attested(table)  # unsigned
    catalog.load_table("ns.t").manage_snapshots().create_tag(tagged, "release_1").commit()
    table = catalog.load_table("ns.t")
    table.append(rows(1, 1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)  # main moves on, unsigned
    for asked in ("release_1", str(tagged)):  # by the tag, and by the snapshot's id (as Spark's gate checks it)
        code, out = _json("verify", TABLE, "--snapshot-id", asked, *policy)
        assert code == 1 and [e["code"] for e in out["errors"]] == ["signature_missing"], (asked, out)
    # Main's head: no tag of a reader's names it (recipe-attest's own retention tag does: no reader's name), so the
    # glob does not cover it.
    assert "recipe-attest" in catalog.load_table("ns.t").metadata.refs
    code, out = _json("verify", TABLE, *policy)
    assert code == 0 and out["verdict"].startswith("VERIFIED"), out


def test_a_tag_at_main_s_head_brings_main_in_scope(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """Main's head is the tagged snapshot: reading main reads the tag's rows, so the glob covers main's check too."""
    policy = _policy(tmp_path, f"{TABLE}.tag_*")
    data = _attested(table)
    catalog.load_table("ns.t").manage_snapshots().create_tag(data, "v1").commit()
    assert tags_at(catalog.load_table("ns.t"), data) == ["v1"]
    code, out = _json("verify", TABLE, "--snapshot-id", str(data), *policy)
    assert code == 1 and [e["code"] for e in out["errors"]] == ["signature_missing"], out


def test_a_tag_s_glob_covers_its_table_read_by_folder(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """The table's folder, which a configured catalog owns, is checked as that catalog's table: the glob naming the
    tag by the catalog's name covers it; one naming ``<folder>.tag_*``, a path of its own, does not."""
    data = _attested(table)
    catalog.load_table("ns.t").manage_snapshots().create_tag(data, "v1").commit()
    folder = catalog.load_table("ns.t").location().removeprefix("file://")
    for glob, code in ((f"{TABLE}.tag_*", 1), (f"{folder}.tag_*", 0)):
        policy = _policy(tmp_path, glob)
        got, out = _json("verify", folder, "--snapshot-id", str(data), *policy[:2])  # by its folder
        assert got == code, (glob, out)


def test_a_tag_at_the_follow_up_snapshot_is_in_scope(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """``CREATE TAG v1`` right after an attested write tags main's head, the follow-up snapshot carrying the
    attestation (its rows are the data snapshot's): a glob naming the tag covers reads of it, and of main."""
    policy = _policy(tmp_path, f"{TABLE}.tag_*")
    data = _attested(table)
    table = catalog.load_table("ns.t")
    head = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert head != data  # the follow-up
    table.manage_snapshots().create_tag(head, "v1").commit()
    for asked in (("--snapshot-id", "v1"), ("--snapshot-id", str(head)), ()):
        code, out = _json("verify", TABLE, *asked, *policy)
        assert code == 1 and [e["code"] for e in out["errors"]] == ["signature_missing"], (asked, out)
