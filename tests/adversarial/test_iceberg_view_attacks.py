"""Attacks on what an Iceberg reader of one snapshot resolves from the table metadata besides its files: the schema a
reader of the snapshot uses (time travel by id, tag or timestamp reads the snapshot's own ``schema-id``; a plain read
of the table, and Spark's read of a branch, the current schema), and which delete files apply to which data files
(decided by sequence numbers held in the manifests and in the manifest list)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from carriers.iceberg.write import write_content_addressed
from tests.adversarial import test_iceberg_attacks as base
from tests.adversarial.conftest import PROGRAM, assert_refused, codes, verify
from tests.adversarial.test_iceberg_attacks import REF, _rewrite_manifest_entries, _rewrite_manifest_list, _rows_read
from tests.iceberg.conftest import CATALOG, commit_delete_file, local, rewrite_metadata, rows

# The Iceberg attack suite's fixtures: a sqlite catalog named by pyiceberg's environment, an attested table.
catalog, iceberg_env, table, with_deletes = base.catalog, base.iceberg_env, base.table, base.with_deletes


@pytest.fixture
def ci(tmp_path: Path) -> tuple[KeyPair, str]:
    """A signing key pair, its public key written to a file for ``--key``."""
    pair = generate_keypair("ecdsa-p256")
    pub = tmp_path / "ci.pub"
    pub.write_bytes(pair.public_pem)
    return pair, str(pub)


def swap_names(doc: dict[str, Any], *, snapshots: tuple[int, ...] = (), current: bool = False) -> int:
    """A new schema in the metadata: the current one with its first two columns' names swapped (same field ids and
    types). ``snapshots`` are pointed at it (their ``schema-id``), and with ``current`` the table's current schema is.
    Returns the new schema id."""
    base = next(s for s in doc["schemas"] if s["schema-id"] == doc["current-schema-id"])
    forged = json.loads(json.dumps(base))
    forged["schema-id"] = max(s["schema-id"] for s in doc["schemas"]) + 1
    forged["fields"][0]["name"], forged["fields"][1]["name"] = base["fields"][1]["name"], base["fields"][0]["name"]
    doc["schemas"].append(forged)
    for snap in doc["snapshots"]:
        if snap["snapshot-id"] in snapshots:
            snap["schema-id"] = forged["schema-id"]
    if current:
        doc["current-schema-id"] = forged["schema-id"]
    return int(forged["schema-id"])


def _columns(table: Table, **scan: Any) -> dict[str, pa.DataType]:
    arrow = table.scan(**scan).to_arrow()
    return {f.name: f.type for f in arrow.schema}


def _honest(columns: dict[str, pa.DataType]) -> bool:
    return {k: str(t).replace("large_", "") for k, t in columns.items()} == {"id": "int64", "v": "string"}


# ---- the schema a reader of the snapshot uses ----------------------------------------------------------------------
def test_the_follow_up_snapshot_pointed_at_a_schema_with_two_names_swapped(catalog: SqlCatalog, table: Table) -> None:
    """The follow-up snapshot F (the current one) given a new schema-id whose two columns' names are swapped, the
    current schema unchanged: a plain read is as before, ``scan(snapshot_id=F)`` (and Spark's ``VERSION AS OF F``)
    reads the ids under ``v`` and the strings under ``id``. VERIFIED before (the current snapshot's view held only
    the current schema)."""
    follow_up = table.current_snapshot()
    assert follow_up is not None
    forged = rewrite_metadata(catalog, table, lambda d: swap_names(d, snapshots=(follow_up.snapshot_id,)))
    assert _honest(_columns(forged))
    swapped = _columns(forged, snapshot_id=follow_up.snapshot_id)
    assert str(swapped["id"]).endswith("string") and swapped["v"] == pa.int64()  # the attack works on a real reader
    for args in ((), ("--snapshot-id", str(follow_up.snapshot_id))):
        doc = assert_refused(REF, "reader_view_changed", "--level", "schema", *args)
        assert "schemas readers of the snapshot resolve changed" in json.dumps(doc), doc


def test_a_content_addressed_snapshot_pointed_at_a_schema_with_two_names_swapped(
        catalog: SqlCatalog, iceberg_env: str, ci: tuple[KeyPair, str]) -> None:
    """A content-addressed snapshot carries its own (signed) attestation and is the current one: pointing it at a
    schema with two names swapped changes what time travel to it reads; VERIFIED before, signed too."""
    pair, pub = ci
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    write_content_addressed(t, rows(0), model="orders", program_hash=PROGRAM, signer=PemSigner.load(pair.private_pem))
    t = catalog.load_table("ns.t")
    snap = t.current_snapshot()
    assert snap is not None
    assert verify(REF, "--key", pub)[0] == 0
    forged = rewrite_metadata(catalog, t, lambda d: swap_names(d, snapshots=(snap.snapshot_id,)))
    assert _honest(_columns(forged)) and not _honest(_columns(forged, snapshot_id=snap.snapshot_id))
    for args in ((), ("--snapshot-id", str(snap.snapshot_id)), ("--key", pub),
                 ("--key", pub, "--snapshot-id", str(snap.snapshot_id))):
        assert_refused(REF, "reader_view_changed", *args)


def test_the_attested_snapshot_pointed_at_a_schema_with_two_names_swapped(catalog: SqlCatalog, table: Table) -> None:
    """Time travel to the attested snapshot S (the follow-up's parent) reads S's own schema: checked as before."""
    follow_up = table.current_snapshot()
    assert follow_up is not None and follow_up.parent_snapshot_id is not None
    attested = follow_up.parent_snapshot_id
    forged = rewrite_metadata(catalog, table, lambda d: swap_names(d, snapshots=(attested,)))
    assert not _honest(_columns(forged, snapshot_id=attested))
    assert_refused(REF, "reader_view_changed", "--snapshot-id", str(attested), "--level", "schema")


def test_a_snapshot_whose_schema_id_the_metadata_no_longer_holds(catalog: SqlCatalog, table: Table) -> None:
    """After a column is added, time travel to the attested snapshot reads it under its own (older) schema and it
    verifies; that schema dropped from the metadata, pyiceberg reads the snapshot under the current schema (Java
    refuses to), with the new column: what the time travel reads changed, and Java refuses the table's snapshot that
    names the missing schema (test_iceberg_metadata_java_refuses): no verdict."""
    follow_up = table.current_snapshot()
    assert follow_up is not None and follow_up.parent_snapshot_id is not None
    attested = follow_up.parent_snapshot_id
    from pyiceberg.types import LongType

    with table.update_schema() as update:
        update.add_column("extra", LongType())
    assert verify(REF, "--snapshot-id", str(attested))[0] == 0
    assert set(_columns(catalog.load_table("ns.t"), snapshot_id=attested)) == {"id", "v"}

    def drop_the_attested_schema(doc: dict[str, Any]) -> None:
        own = next(s["schema-id"] for s in doc["snapshots"] if s["snapshot-id"] == attested)
        doc["schemas"] = [s for s in doc["schemas"] if s["schema-id"] != own]

    forged = rewrite_metadata(catalog, catalog.load_table("ns.t"), drop_the_attested_schema)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyiceberg warns that the schema id is missing, and reads the current one
        assert set(_columns(forged, snapshot_id=attested)) == {"id", "v", "extra"}
    assert_refused(REF, "table_inconsistent", "--snapshot-id", str(attested), "--level", "schema")


def test_a_tag_on_the_current_snapshot_reads_its_own_schema(catalog: SqlCatalog, table: Table) -> None:
    """A tag on the current snapshot: pyiceberg and Spark read a tag with the snapshot's own schema."""
    follow_up = table.current_snapshot()
    assert follow_up is not None
    table.manage_snapshots().create_tag(follow_up.snapshot_id, "release").commit()
    assert verify(REF, "--snapshot-id", "release")[0] == 0
    forged = rewrite_metadata(catalog, catalog.load_table("ns.t"),
                              lambda d: swap_names(d, snapshots=(follow_up.snapshot_id,)))
    tagged = forged.scan().use_ref("release").to_arrow()
    assert not _honest({f.name: f.type for f in tagged.schema})
    assert_refused(REF, "reader_view_changed", "--snapshot-id", "release", "--level", "schema")


def _audit_branch(catalog: SqlCatalog, signer: PemSigner) -> tuple[Table, int, int]:
    """main: data and its signed attestation; branch ``audit`` forked there, appended to and attested (signed) on
    the branch. Returns the table, main's head and the branch head."""
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    attest_after_write(IcebergCarrier(t, catalog_name=CATALOG), model="m", program_hash=PROGRAM, signer=signer)
    t = catalog.load_table("ns.t")
    fork = t.current_snapshot()
    assert fork is not None
    t.manage_snapshots().create_branch(fork.snapshot_id, "audit").commit()
    t.append(rows(3), branch="audit")
    attest_after_write(t, model="m", program_hash=PROGRAM, branch="audit", signer=signer)
    t = catalog.load_table("ns.t")
    head = t.snapshot_by_name("audit")
    assert head is not None
    return t, fork.snapshot_id, head.snapshot_id


def test_publish_checks_the_schema_mains_readers_get_after_the_fast_forward(
        catalog: SqlCatalog, iceberg_env: str, ci: tuple[KeyPair, str]) -> None:
    """The current schema swapped to one with two names swapped, the branch head's own schema-id left alone:
    ``publish --branch audit`` verified the head under its own schema and fast-forwarded main, whose readers then
    read the columns swapped (the current schema). Now refused, and main is not moved; so is a verify of the branch
    head, which Spark reads with the current schema too (test_spark_view_attacks)."""
    from tests.signing.test_iceberg_signing import cli

    pair, pub = ci
    t, fork, head = _audit_branch(catalog, PemSigner.load(pair.private_pem))
    assert verify(REF, "--snapshot-id", "audit", "--key", pub)[0] == 0
    forged = rewrite_metadata(catalog, t, lambda d: swap_names(d, current=True))
    assert _honest(_columns(forged, snapshot_id=head))  # a pyiceberg reader of the branch head: as attested
    rc, doc = cli("publish", REF, "--branch", "audit", "--key", pub)
    assert rc != 0 and doc.get("published") is not True, doc
    assert "reader_view_changed" in codes(doc.get("report", doc)) or doc["errors"][0]["code"] == "reader_view_changed"
    after = catalog.load_table("ns.t")
    assert after.current_snapshot() is not None and after.current_snapshot().snapshot_id == fork  # type: ignore[union-attr]
    assert_refused(REF, "reader_view_changed", "--snapshot-id", "audit", "--key", pub)
    # What main's readers would have got after the fast-forward: the branch head's rows under the swapped names.
    after.manage_snapshots().set_current_snapshot(snapshot_id=head).commit()
    assert not _honest(_columns(catalog.load_table("ns.t")))


# ---- which delete files apply to which data files ------------------------------------------------------------------
def _explicit_sequence_numbers(table: Table) -> None:
    """Every manifest entry rewritten to carry its data sequence number explicitly (the value it inherited): the same
    files, bytes, entries and rows; only where each number is written changes."""
    _rewrite_manifest_entries(table, lambda entry: None)


def _delete_manifest_sequence_number(value: int) -> Any:
    def edit(m: Any) -> None:
        if int(m.content.value) == 1:
            m.sequence_number = value
    return edit


def _signed_with_deletes(catalog: SqlCatalog, pair: KeyPair) -> Table:
    """Two appends and a position delete file hiding one row (data sequence numbers 1, 2; the delete 3), attested and
    signed by a follow-up snapshot."""
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    t.append(rows(3))
    commit_delete_file(t, local(t.location()) / "data" / "pos.parquet")
    t = catalog.load_table("ns.t")
    attest_after_write(t, model="orders", program_hash=PROGRAM, signer=PemSigner.load(pair.private_pem))
    return catalog.load_table("ns.t")


def test_a_delete_manifest_listed_below_the_data_so_pyiceberg_skips_it(
        catalog: SqlCatalog, iceberg_env: str, ci: tuple[KeyPair, str]) -> None:
    """pyiceberg skips a delete manifest whose manifest-list sequence number is below the data manifests' smallest
    minimum. With the entries carrying their sequence numbers explicitly (same values), the delete manifest's list
    sequence number set to 0 changes no entry: the deleted row came back for pyiceberg, and it was VERIFIED (signed
    too). Java readers go by the entries and still apply the delete (test_spark_view_attacks): readers differ."""
    pair, pub = ci
    table = _signed_with_deletes(catalog, pair)
    before = _rows_read(catalog)
    assert verify(REF, "--key", pub)[0] == 0
    _explicit_sequence_numbers(table)
    assert _rows_read(catalog) == before and verify(REF, "--key", pub)[0] == 0  # explicit numbers change nothing
    _rewrite_manifest_list(catalog.load_table("ns.t"), _delete_manifest_sequence_number(0))
    assert _rows_read(catalog) == before + 1  # the attack works on a real reader
    current = catalog.load_table("ns.t").current_snapshot()
    assert current is not None and current.parent_snapshot_id is not None
    # The attested snapshot's own manifest list was left alone: time travel to it still applies the delete.
    assert verify(REF, "--snapshot-id", str(current.parent_snapshot_id), "--key", pub)[0] == 0
    for args in (("--level", "schema"), ("--key", pub), ("--snapshot-id", str(current.snapshot_id), "--key", pub)):
        doc = assert_refused(REF, "table_inconsistent", *args)
        assert "pyiceberg skips delete manifest" in json.dumps(doc), doc


def test_data_manifests_claiming_a_higher_minimum_so_pyiceberg_skips_the_deletes(catalog: SqlCatalog,
                                                                                  with_deletes: Table) -> None:
    """The same skip from the other side: the data manifests' list ``min_sequence_number`` raised above the delete
    manifest's sequence number (refused before as a summary narrower than its manifest, and now as readers that
    differ)."""
    before = _rows_read(catalog)

    def claim(m: Any) -> None:
        if int(m.content.value) == 0:
            m.min_sequence_number = 10

    _rewrite_manifest_list(with_deletes, claim)
    assert _rows_read(catalog) == before + 1
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "pyiceberg skips delete manifest" in json.dumps(doc), doc


def test_a_delete_file_of_sequence_number_zero_that_only_pyiceberg_applies(catalog: SqlCatalog,
                                                                           with_deletes: Table) -> None:
    """Iceberg Java reads no delete entry of data sequence number 0 (``> minSequenceNumber``, 0); pyiceberg applies one
    to a data file of number 0. Data and delete entries rewritten to 0: pyiceberg still hides the row, Spark shows it
    (and the numbers are in the files' views)."""
    before = _rows_read(catalog)

    def zero(entry: Any) -> None:
        entry.sequence_number = entry.file_sequence_number = 0

    _rewrite_manifest_entries(with_deletes, zero)
    assert _rows_read(catalog) == before
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "Iceberg Java reads no delete of a sequence number below 1" in json.dumps(doc), doc


def test_the_deletes_readers_apply_are_bound(catalog: SqlCatalog, with_deletes: Table) -> None:
    """Which delete files each reader applies is in the view (the attestation binds the result, beside each deciding
    field): a manifest list that still keeps the delete manifest for pyiceberg's full read (its sequence number
    lowered to the data manifests' smallest minimum, the entries explicit) leaves the view as attested — but its
    filtered reads prune the data manifests first and then skip the delete manifest (round 19,
    ``test_deletes_round19.py``), so an entry above its manifest's listed number is refused all the same; one below
    that changes the view."""
    from carriers.iceberg.carrier import NO_DELETES

    def deletes() -> Any:
        live = IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG).live()
        assert live is not None
        return live.view.table["deletes"]

    attested = deletes()
    assert attested != NO_DELETES
    _explicit_sequence_numbers(with_deletes)
    smallest = min(m.min_sequence_number for m in catalog.load_table("ns.t").current_snapshot().manifests(  # type: ignore[union-attr]
        with_deletes.io) if int(m.content.value) == 0)
    _rewrite_manifest_list(catalog.load_table("ns.t"), _delete_manifest_sequence_number(smallest))
    assert deletes() == attested
    assert_refused(REF, "table_inconsistent", "--level", "schema")
    _rewrite_manifest_list(catalog.load_table("ns.t"), _delete_manifest_sequence_number(smallest - 1))
    assert deletes() != attested
    assert_refused(REF, "table_inconsistent", "--level", "schema")


def test_attestations_made_before_schemas_and_deletes_were_bound_say_so(
        catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A view attested without ``schemas`` and ``deletes`` is compared on what it bound, and the verdict names what it
    does not; readers that differ are refused all the same."""
    import carriers.iceberg.carrier as iceberg_carrier
    from attest.view import ReaderView

    def earlier(table: dict[str, Any], files: dict[str, str]) -> ReaderView:
        return ReaderView(table={k: v for k, v in table.items() if k not in ("schemas", "deletes")}, files=files)

    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    t.append(rows(3))
    commit_delete_file(t, local(t.location()) / "data" / "pos.parquet")
    with monkeypatch.context() as patch:
        patch.setattr(iceberg_carrier, "ReaderView", earlier)
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["passed"], doc
    assert "not bound: " in doc["verdict"] and "which delete files readers apply" in doc["verdict"], doc
    assert "the schemas readers of the snapshot resolve" in doc["verdict"], doc
    assert any("re-attest" in note and "schemas" in note for note in doc["notes"]), doc
    before = _rows_read(catalog)
    _explicit_sequence_numbers(catalog.load_table("ns.t"))
    _rewrite_manifest_list(catalog.load_table("ns.t"), _delete_manifest_sequence_number(0))
    assert _rows_read(catalog) == before + 1
    assert_refused(REF, "table_inconsistent", "--level", "schema")
