"""Attacks on an Iceberg table's snapshot history (parent ids, snapshot ids, follow-up chains) by someone who can write
its metadata.json (and the sqlite catalog kept beside it). Verification walks that history to find the attestation in
force; every walk is linear, ends on a cycle, and a forged history is never VERIFIED.

pyiceberg is the reference engine: it reads the current snapshot's manifest list without walking any history (a
parent cycle does not stop a scan), while its ``ancestors_of`` (history, expiry, time travel by timestamp) follows
parent ids with no end on a cycle."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table
from pyiceberg.table.snapshots import ancestors_of

from carriers import properties as props
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, verify
from tests.adversarial.test_iceberg_attacks import REF, catalog, iceberg_env  # noqa: F401 (fixtures)
from tests.iceberg.conftest import rewrite_metadata, rows


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:  # noqa: F811
    """One append S, attested by its follow-up F (the head), verifying at bytes level."""
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    attest_after_write(t, model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["level"] == "bytes", doc
    return t


def _snap(doc: dict[str, Any], snapshot_id: int) -> dict[str, Any]:
    return next(s for s in doc["snapshots"] if s["snapshot-id"] == snapshot_id)


def _ids(table: Table) -> tuple[int, int]:
    """(the data snapshot S, its follow-up F = the head)."""
    head = table.current_snapshot()
    assert head is not None and head.parent_snapshot_id is not None
    return head.parent_snapshot_id, head.snapshot_id


def _empty_on_top(doc: dict[str, Any], snapshot_id: int, parent: int | None, summary: dict[str, str],
                  manifest_list: str | None = None) -> None:
    """A snapshot appended to the metadata on top of ``parent`` (the head's files unless ``manifest_list``), made
    current."""
    head = _snap(doc, doc["current-snapshot-id"])
    doc["last-sequence-number"] += 1
    doc["snapshots"].append({"snapshot-id": snapshot_id, "parent-snapshot-id": parent,
                             "sequence-number": doc["last-sequence-number"], "timestamp-ms": head["timestamp-ms"] + 1,
                             "manifest-list": manifest_list or head["manifest-list"], "summary": summary,
                             "schema-id": head.get("schema-id", 0)})
    doc["current-snapshot-id"] = snapshot_id
    doc["refs"] = {"main": {"snapshot-id": snapshot_id, "type": "branch"}}


# ---- parent cycles -------------------------------------------------------------------------------------------------
def test_the_attested_snapshot_made_a_child_of_its_follow_up_gets_no_verdict(catalog: SqlCatalog,  # noqa: F811
                                                                             table: Table) -> None:
    """S's parent set to F, F's is S: a two-snapshot loop. The head still holds S's files (pyiceberg reads them), but
    the history is forged and walking it never ends (VERIFIED before: the follow-up was found without a walk)."""
    data, follow_up = _ids(table)
    forged = rewrite_metadata(catalog, table, lambda doc: _snap(doc, data).update({"parent-snapshot-id": follow_up}))
    assert forged.scan().to_arrow().num_rows == 3  # the engine reads the table
    assert len(list(itertools.islice(ancestors_of(forged.current_snapshot(), forged.metadata), 10))) == 10
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "cycle" in json.dumps(doc)


@pytest.mark.parametrize("shape", ["self", "pair", "long"])
def test_a_parent_cycle_above_no_attestation_gets_no_verdict(catalog: SqlCatalog, table: Table,  # noqa: F811
                                                             shape: str) -> None:
    """Data snapshots whose parent ids loop (a snapshot its own parent, two, or 500 in a ring) on top of the attested
    history, the head among them: a walk from the head never reaches the attestation (unattested before, after a walk
    that stopped only because it remembered what it had seen)."""
    table.append(rows(3))
    size = {"self": 1, "pair": 2, "long": 500}[shape]
    ring = [9_000_000 + i for i in range(size)]

    def edit(doc: dict[str, Any]) -> None:
        added = _snap(doc, doc["current-snapshot-id"])
        for i, sid in enumerate(ring):
            _empty_on_top(doc, sid, ring[i - 1], dict(added["summary"]), added["manifest-list"])
    forged = rewrite_metadata(catalog, table, edit)
    assert forged.scan().to_arrow().num_rows == 6
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "cycle" in json.dumps(doc)


def test_a_cycle_off_the_verified_history_still_gets_no_verdict(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """Two orphan snapshots naming each other as parent, beside an untouched history: the metadata is forged (the
    spec's history is a forest), so no verdict is given on it, as for ids given twice."""
    def edit(doc: dict[str, Any]) -> None:
        head = _snap(doc, doc["current-snapshot-id"])
        for sid, parent in ((7_000_001, 7_000_002), (7_000_002, 7_000_001)):
            doc["snapshots"].insert(0, {**head, "snapshot-id": sid, "parent-snapshot-id": parent,
                                        "summary": {"operation": "append"}})
    rewrite_metadata(catalog, table, edit)
    assert_refused(REF, "table_inconsistent", "--level", "schema")


# ---- parents that are not in the table -----------------------------------------------------------------------------
def test_a_data_snapshot_whose_parent_is_missing_is_stale(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """A data commit on top of the attested history, its parent id pointing nowhere: the attestation below is out of
    its reach (an expired history looks the same). The retention tag names the follow-up carrying it, so the snapshot
    is judged against it: a data commit left after the cut is stale, never VERIFIED (unattested before the tag)."""
    table.append(rows(3))
    head = table.current_snapshot()
    assert head is not None
    rewrite_metadata(catalog, table, lambda doc: _snap(doc, head.snapshot_id).update({"parent-snapshot-id": 424242}))
    doc = assert_refused(REF, "stale", "--level", "schema")
    assert "has expired" in json.dumps(doc) and "recipe-attest" in json.dumps(doc)


def test_a_follow_up_whose_parent_is_missing_binds_nothing(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """The follow-up's parent id pointing nowhere while it still binds S (which is there): it is not a follow-up of
    S, nor on top of a chain of them."""
    _, follow_up = _ids(table)
    rewrite_metadata(catalog, table, lambda doc: _snap(doc, follow_up).update({"parent-snapshot-id": 424242}))
    assert_refused(REF, "carrier_tampered", "--level", "schema")


# ---- snapshot ids given twice ----------------------------------------------------------------------------------------
def test_a_follow_up_id_given_twice_with_another_parent(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """A re-record's chain (F1, F2) where F1's id is listed a second time with another parent and no attestation:
    pyiceberg takes the first, a reader indexing by id the last, so the chain resolves differently."""
    data, first = _ids(table)
    attest_after_write(table, model="orders", program_hash=PROGRAM)  # F2 on top of F1, binding S
    head = table.current_snapshot()
    assert head is not None and head.parent_snapshot_id == first
    assert props.attestation_keys(head.summary.additional_properties)[props.KEY_VERSION] == str(data)  # type: ignore[union-attr]

    def edit(doc: dict[str, Any]) -> None:
        doc["snapshots"].append({**_snap(doc, first), "parent-snapshot-id": None, "summary": {"operation": "append"}})
    rewrite_metadata(catalog, table, edit)
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "sharing an id" in json.dumps(doc)


# ---- forged follow-up chains (re-records put follow-ups on top of follow-ups) --------------------------------------
def test_a_chain_link_that_hides_an_added_file(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """An append of rows whose summary claims it changed no file and carries a copy of F's attestation (binding S),
    so it reads as a link of a re-record's chain: the head now holds a file S did not, which pyiceberg reads."""
    data, follow_up = _ids(table)
    keys = props.attestation_keys(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    table.append(rows(3))
    added = table.current_snapshot()
    assert added is not None and table.scan().to_arrow().num_rows == 6

    def edit(doc: dict[str, Any]) -> None:
        summary = _snap(doc, added.snapshot_id)["summary"]
        for k in list(summary):
            if k.startswith("added-"):
                summary[k] = "0"
        summary.update(keys)
    rewrite_metadata(catalog, table, edit)
    assert keys[props.KEY_VERSION] == str(data) and added.parent_snapshot_id == follow_up
    # Before: carrier_tampered (a binding of neither itself nor its parent); now a chain link, judged by what it holds.
    assert_refused(REF, "stale", "--level", "schema")


def test_a_follow_up_copy_on_top_of_another_producers_empty_commit(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """An empty append of someone else's (no attestation keys) on top of F, then a copy of F's attestation on top of
    it: only our own follow-ups form a chain, so the copy binds a snapshot that is neither its parent nor under a
    chain of follow-ups."""
    data, follow_up = _ids(table)
    keys = props.attestation_keys(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]

    def edit(doc: dict[str, Any]) -> None:
        _empty_on_top(doc, 8_000_001, follow_up, {"operation": "append"})
        _empty_on_top(doc, 8_000_002, 8_000_001, {"operation": "append", **keys})
    rewrite_metadata(catalog, table, edit)
    assert keys[props.KEY_VERSION] == str(data)
    assert_refused(REF, "carrier_tampered", "--level", "schema")


def test_a_chain_link_with_a_forged_program(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """A copy of F's attestation, its program hash changed, on top of F (a re-record's place): the sidecar's
    manifest identity gives it away."""
    keys = props.attestation_keys(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    keys[props.PREFIX + "program_hash"] = "f" * 64
    table.append(rows(0, 0), snapshot_properties=keys)  # binding S, on top of F: a chain link
    assert_refused(REF, "carrier_tampered", "--level", "schema")


def test_the_spark_hook_matching_its_commit_ends_on_a_parent_cycle() -> None:
    """The Spark listener matches an unstamped write to its commit by walking from a candidate down to the snapshot
    the command read, through our attestation snapshots: two attestation snapshots naming each other as parent made
    that walk spin forever in the listener's worker (before). Now it ends, and matches nothing."""
    import threading
    from types import SimpleNamespace

    from carriers.spark.hook import Hook, WriteEvent

    def snap(sid: int, parent: int, summary: dict[str, str], operation: str) -> Any:
        return SimpleNamespace(snapshot_id=sid, parent_snapshot_id=parent, sequence_number=sid,
                               summary=SimpleNamespace(additional_properties=summary, operation=operation))

    ours = {props.PREFIX + "model": "m"}
    snapshots = [snap(2, 3, ours, "append"), snap(3, 2, ours, "append"),
                 snap(4, 3, {"spark.app.id": "app"}, "append")]  # the write, on top of the loop
    hook = Hook.__new__(Hook)
    hook._app_id = "app"
    event = WriteEvent(command="AppendData", format="iceberg", table_name="t", location=None, read_version=1)
    found: list[int | None] = []
    worker = threading.Thread(target=lambda: found.append(hook._iceberg_commit(  # unstamped: AppendData's "append"
        SimpleNamespace(metadata=SimpleNamespace(snapshots=snapshots)), event)), daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "the walk never ended"
    assert found == [None]
