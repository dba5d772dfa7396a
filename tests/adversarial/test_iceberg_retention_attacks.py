"""Attacks on the retention tag (docs/iceberg.md "Expiry and tags", carriers/iceberg/carriage.py ``_retained``).

Every attestation commit moves the tag ``recipe-attest`` to the snapshot carrying it; when the current snapshot's
ancestry ends at expired snapshots, the verifier judges the current rows against the attestation that tag names. An
attacker with write access to the table's storage and catalog points the tag elsewhere, forges what it names, or
changes the rows and expires the history that shows it: never VERIFIED. Each table is made with pyiceberg 0.12 (the
engine whose expiry clears the parent of the snapshots it keeps), the metadata edited by hand as a writer would.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers import properties as props
from carriers.iceberg.carriage import RETAIN_TAG, retain_tag_name
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog, iceberg_env, local, rows, table  # noqa: F401
from tests.iceberg.rewrites import replace, rewrite_metadata, with_ids

REF = f"iceberg://{CATALOG}/ns.t"
pytestmark = pytest.mark.usefixtures("iceberg_env")


def verify(ref: str = REF, *extra: str) -> tuple[int, dict[str, Any]]:
    from attest.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["verify", ref, "--level", "bytes", "--json", *extra])
    return rc, json.loads(out.getvalue())


def refused(code: str, ref: str = REF, *extra: str) -> dict[str, Any]:
    rc, doc = verify(ref, *extra)
    found = [e["code"] for e in doc.get("errors", [])]
    assert rc != 0 and not doc["passed"] and code in found, doc
    return doc


def expire_all(catalog: SqlCatalog, name: str = "ns.t") -> Table:  # noqa: F811
    catalog.load_table(name).maintenance.expire_snapshots().older_than(
        datetime.now(UTC) + timedelta(seconds=1)).commit()
    return catalog.load_table(name)


def attest(catalog: SqlCatalog, name: str = "ns.t") -> int:  # noqa: F811
    """Attest the current snapshot; the id of the follow-up carrying it (the tag's snapshot)."""
    attest_after_write(IcebergCarrier(catalog.load_table(name), catalog_name=CATALOG), model="m",
                       program_hash=PROGRAM)
    now = catalog.load_table(name)
    follow_up = now.current_snapshot()
    assert follow_up is not None and now.metadata.refs[RETAIN_TAG].snapshot_id == follow_up.snapshot_id
    return follow_up.snapshot_id


def retag(catalog: SqlCatalog, table: Table, snapshot_id: int, kind: str = "tag",  # noqa: F811
          name: str = RETAIN_TAG) -> Table:
    def edit(doc: dict[str, Any]) -> None:
        doc["refs"][name] = {"snapshot-id": snapshot_id, "type": kind}

    return rewrite_metadata(catalog, table, edit)


def test_the_tag_moved_to_another_attested_snapshot_with_other_rows(catalog: SqlCatalog,  # noqa: F811
                                                                    table: Table) -> None:  # noqa: F811
    """Two attestations (rows A, then A+B); B's rows replaced by others and the history expired; the attacker keeps
    the first follow-up (A's attestation) and points the tag at it: its rows are not the current ones: stale."""
    table.append(rows(0))
    first = attest(catalog)
    table = catalog.load_table("ns.t")
    table.manage_snapshots().create_tag(first, "keep-a").commit()  # the attacker keeps A's carrier alive
    table.append(rows(3))
    attest(catalog)
    table = replace(catalog, catalog.load_table("ns.t"), [with_ids(rows(10, 4), [1, 2])])
    table = replace(catalog, table)  # a second rewrite: expiry then cuts the current snapshot's ancestry
    table = expire_all(catalog)
    retag(catalog, table, first)
    doc = refused("stale")
    assert "cannot be excluded" in json.dumps(doc)


def test_the_tag_on_a_snapshot_copied_from_another_table(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """Another table U with the same rows, attested; its follow-up snapshot (summary, manifest list) and its
    attestation files copied into T's metadata and tagged: the sidecar names U, never T: carrier_tampered."""
    table.append(rows(0))
    other = catalog.create_table("ns.u", schema=rows(0).schema)
    other.append(rows(0))
    stolen = attest(catalog, "ns.u")
    other = catalog.load_table("ns.u")
    donor = next(s for s in json.loads(local(other.metadata_location).read_text())["snapshots"]
                 if s["snapshot-id"] == stolen)
    mine = local(catalog.load_table("ns.t").metadata_location).parent / "recipe_attest"
    mine.mkdir(exist_ok=True)
    for path in (local(other.metadata_location).parent / "recipe_attest").iterdir():
        shutil.copy(path, mine / path.name)
    table = replace(catalog, catalog.load_table("ns.t"))
    table = expire_all(catalog)

    def edit(doc: dict[str, Any]) -> None:
        doc["snapshots"].insert(0, {**donor, "parent-snapshot-id": None, "sequence-number": 1})
        doc["refs"][RETAIN_TAG] = {"snapshot-id": stolen, "type": "tag"}

    rewrite_metadata(catalog, table, edit)
    refused("carrier_tampered")


def test_the_tag_on_a_snapshot_carrying_forged_keys(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """After honest rewrites and expiry (VERIFIED), the tagged follow-up's summary edited to name another program:
    the manifest read back is not the recorded one: carrier_tampered."""
    table.append(rows(0))
    tagged = attest(catalog)
    replace(catalog, replace(catalog, catalog.load_table("ns.t")))  # two rewrites: expiry cuts the ancestry
    table = expire_all(catalog)
    rc, doc = verify()
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; history since snapshot "), doc

    def edit(doc: dict[str, Any]) -> None:
        snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == tagged)
        key = next(k for k in snap["summary"] if k.endswith("program_hash"))
        snap["summary"][key] = "f" * 64

    rewrite_metadata(catalog, table, edit)
    refused("carrier_tampered")


def test_the_tag_on_a_snapshot_whose_sidecar_hash_was_swapped(catalog: SqlCatalog,  # noqa: F811
                                                              table: Table) -> None:  # noqa: F811
    """The tagged follow-up's summary pointed at another sidecar (one written for other rows of this table): the
    bytes are not the ones the kept copy and statistics bind. Never VERIFIED."""
    table.append(rows(0))
    tagged = attest(catalog)
    table = catalog.load_table("ns.t")
    table.append(rows(3))
    attest(catalog)
    table = catalog.load_table("ns.t")
    later = dict(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    table = replace(catalog, table, [with_ids(rows(0), [1, 2])])  # A's rows back, under a "rewrite"
    table = replace(catalog, table)
    table = expire_all(catalog)

    def edit(doc: dict[str, Any]) -> None:
        doc["refs"][RETAIN_TAG] = {"snapshot-id": tagged, "type": "tag"}
        snap = next((s for s in doc["snapshots"] if s["snapshot-id"] == tagged), None)
        if snap is not None:
            snap["summary"][props.KEY_SIDECAR_HASH] = later[props.KEY_SIDECAR_HASH]

    rewrite_metadata(catalog, table, edit)
    rc, doc = verify()
    assert rc != 0 and not doc["passed"], doc


def test_a_branch_named_like_the_tag_is_never_followed_nor_moved(catalog: SqlCatalog,  # noqa: F811
                                                                 table: Table) -> None:  # noqa: F811
    """The same honest table verifies through the tag; the ref turned into a branch of that name (a user's, or an
    attacker's), it is not followed: unattested, never VERIFIED. `attest record` refuses to move it."""
    from attest.errors import UnsupportedTableError

    table.append(rows(0))
    tagged = attest(catalog)
    replace(catalog, replace(catalog, catalog.load_table("ns.t")))
    table = expire_all(catalog)
    rc, doc = verify()
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; history since snapshot "), doc
    table = retag(catalog, table, tagged, kind="branch")
    doc = refused("unattested")
    assert doc["attested"] is False
    try:
        attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash=PROGRAM)
    except UnsupportedTableError as exc:
        assert exc.code.value == "unsupported_table" and "branch" in exc.message
    else:
        raise AssertionError("record moved a branch named like the retention tag")
    assert catalog.load_table("ns.t").metadata.refs[RETAIN_TAG].snapshot_ref_type.value == "branch"


def test_rows_changed_then_the_history_expired(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """A `replace` whose new file changes one value (a dishonest rewrite), then an honest one on top, then expiry of
    every older snapshot (the dishonest one with it): the rows are not the attested ones: stale, never VERIFIED."""
    table.append(rows(0))
    table.append(rows(3))
    attest(catalog)
    table = catalog.load_table("ns.t")
    data = table.scan().to_arrow()
    values = data.column("v").to_pylist()
    values[0] = "forged"
    replace(catalog, table, [with_ids(data.set_column(1, "v", pa.array(values, pa.string())), [1, 2])])
    replace(catalog, catalog.load_table("ns.t"))
    expire_all(catalog)
    doc = refused("stale")
    assert doc["attested"] is True


def test_rows_changed_then_the_history_expired_on_a_format_v1_table(catalog: SqlCatalog) -> None:  # noqa: F811
    """The same on format v1, whose snapshots carry no sequence number: the oldest snapshot left, its parent cleared
    by pyiceberg's expiry, says by its summary that older ones expired; the tag is followed and the rows judged:
    stale, never VERIFIED. The honest sequence verifies (tests/iceberg/test_iceberg_retention.py)."""
    table = catalog.create_table("ns.t", schema=rows(0).schema, properties={"format-version": "1"})  # noqa: F811
    table.append(rows(0))
    table.append(rows(3))
    attest(catalog)
    table = catalog.load_table("ns.t")
    data = table.scan().to_arrow()
    values = data.column("v").to_pylist()
    values[-1] = "forged"
    replace(catalog, table, [with_ids(data.set_column(1, "v", pa.array(values, pa.string())), [1, 2])])
    replace(catalog, catalog.load_table("ns.t"))
    table = expire_all(catalog)
    assert all(s.parent_snapshot_id is None and not s.sequence_number for s in table.snapshots())
    doc = refused("stale")
    assert doc["attested"] is True and "differ from those attested" in json.dumps(doc), doc


def test_a_delete_file_hidden_in_a_rewrite_then_the_history_expired(catalog: SqlCatalog,  # noqa: F811
                                                                    table: Table) -> None:  # noqa: F811
    """A position delete file committed in a snapshot disguised as a rewrite (`replace`), then expiry: the rows
    readers get (deletes applied) are fewer than the attested ones: stale."""
    from tests.iceberg.conftest import commit_delete_file

    table.append(rows(0))
    attest(catalog)
    table = catalog.load_table("ns.t")
    commit_delete_file(table, local(table.location()) / "data" / "hidden-delete.parquet")
    table = catalog.load_table("ns.t")
    head = table.current_snapshot()
    assert head is not None

    def as_replace(doc: dict[str, Any]) -> None:
        next(s for s in doc["snapshots"] if s["snapshot-id"] == head.snapshot_id)["summary"]["operation"] = "replace"

    table = rewrite_metadata(catalog, table, as_replace)
    # An empty append on top (no file): the disguised snapshot expires with the rest, leaving no data operation.
    table.append(rows(0).slice(0, 0))
    expire_all(catalog)
    refused("stale")


def two_branches_expired(catalog: SqlCatalog, table: Table) -> tuple[Table, int, int]:  # noqa: F811
    """main attested (rows 0–2); branch `audit` forked from it, rows 3–5 appended and attested there; honest rewrites
    on both, then every older snapshot expired: both verify through their own tag. (table, main's tagged snapshot,
    audit's tagged snapshot)."""
    table.append(rows(0))
    main_tagged = attest(catalog)
    catalog.load_table("ns.t").manage_snapshots().create_branch(main_tagged, "audit").commit()
    catalog.load_table("ns.t").append(rows(3), branch="audit")
    attest_after_write(IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG), model="m",
                       program_hash=PROGRAM, branch="audit")
    table = catalog.load_table("ns.t")
    audit_tagged = table.metadata.refs[retain_tag_name("audit")].snapshot_id
    assert table.metadata.refs[RETAIN_TAG].snapshot_id == main_tagged
    for _ in range(2):
        table = replace(catalog, table)
        table = replace(catalog, table, branch="audit")
    table = expire_all(catalog)
    for extra in ((), ("--snapshot-id", "audit")):
        rc, doc = verify(REF, *extra)
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; history since snapshot "), doc
    return table, main_tagged, audit_tagged


def test_the_branch_tag_moved_onto_mains_attestation(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """The attacker points audit's tag at main's attested snapshot (rows 0–2, kept by main's tag): audit's rows
    (0–5) are not those: stale, read through the branch's name or a carrier opened on the branch."""
    table, main_tagged, _ = two_branches_expired(catalog, table)
    retag(catalog, table, main_tagged, name=retain_tag_name("audit"))
    doc = refused("stale", REF, "--snapshot-id", "audit")
    assert "differ from those attested" in json.dumps(doc), doc
    from attest.verify.table import verify_table

    report = verify_table(IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG, branch="audit"))
    assert not report.passed and [e.code.value for e in report.errors] == ["stale"], report.human()


def test_mains_tag_moved_onto_the_branch_attestation(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """The other way: main's tag pointed at audit's attestation (rows 0–5); main holds rows 0–2: stale."""
    table, _, audit_tagged = two_branches_expired(catalog, table)
    retag(catalog, table, audit_tagged)
    refused("stale")


def test_a_branch_named_like_the_branch_tag_is_never_followed(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """audit's tag turned into a branch of that name: not followed. main's tag is (a snapshot no tag of its own
    names falls back to it), whose rows are not audit's: stale, never VERIFIED; without main's tag, unattested."""
    table, _, audit_tagged = two_branches_expired(catalog, table)
    table = retag(catalog, table, audit_tagged, kind="branch", name=retain_tag_name("audit"))
    refused("stale", REF, "--snapshot-id", "audit")

    def untag(doc: dict[str, Any]) -> None:
        del doc["refs"][RETAIN_TAG]

    rewrite_metadata(catalog, table, untag)
    doc = refused("unattested", REF, "--snapshot-id", "audit")
    assert doc["attested"] is False
