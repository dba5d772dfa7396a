"""Time travel to an attested Iceberg snapshot through forged metadata that only time travel reads: the snapshot log
(what ``TIMESTAMP AS OF`` resolves a time with) and a snapshot's own ``schema-id`` (what a read of it by id, tag or
timestamp resolves its columns with). Tried and held: none of these is VERIFIED over rows other than the attested ones.

Engines, as read in their sources (Iceberg 1.12 ``SnapshotUtil.snapshotIdAsOfTime`` / ``schemaFor``, pyiceberg 0.12
``snapshot_as_of_timestamp`` / ``scan(snapshot_id=...)``): both pick the last snapshot-log entry at or before the time,
by the log alone (no snapshot's ``timestamp-ms`` is consulted); a snapshot without a ``schema-id`` is read under the
current schema by both; one whose ``schema-id`` names no schema is read under the current schema by pyiceberg and
refused by Iceberg Java."""

from __future__ import annotations

from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, verify
from tests.adversarial.test_iceberg_attacks import REF, _rewrite_manifest_list, catalog, iceberg_env  # noqa: F401 (fixtures)
from tests.iceberg.conftest import rewrite_metadata, rows


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:  # noqa: F811
    """S (one append) attested by its follow-up F, then an unattested append U on top: the head."""
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    attest_after_write(t, model="orders", program_hash=PROGRAM)
    t.append(rows(1))
    return t


def _snap(doc: dict[str, Any], snapshot_id: int) -> dict[str, Any]:
    return next(s for s in doc["snapshots"] if s["snapshot-id"] == snapshot_id)


def _ids(table: Table) -> tuple[int, int, int]:
    """(S, F, U)."""
    head = table.current_snapshot()
    assert head is not None and head.parent_snapshot_id is not None
    follow_up = table.snapshot_by_id(head.parent_snapshot_id)
    assert follow_up is not None and follow_up.parent_snapshot_id is not None
    return follow_up.parent_snapshot_id, follow_up.snapshot_id, head.snapshot_id


def _verified(*args: str) -> dict[str, Any]:
    rc, doc = verify(REF, *args)
    assert rc == 0, doc
    return doc


# ---- the snapshot log: what TIMESTAMP AS OF reads --------------------------------------------------------------------
def test_a_forged_snapshot_log_moves_time_travel_but_no_verdict(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """The log rewritten so that S's commit time names the unattested U, with an entry naming no snapshot: a read
    as of S's time now gets U's rows (pyiceberg; Iceberg Java's ``snapshotIdAsOfTime`` reads the same log), while
    every snapshot verifies as before. The log is no part of any snapshot, and a read *as of a time* is outside what an
    attestation binds (docs/security.md, "Changes between versions"): the verdicts name the snapshot they checked."""
    s, f, u = _ids(table)
    at_s = table.snapshot_by_id(s).timestamp_ms  # type: ignore[union-attr]
    assert table.snapshot_as_of_timestamp(at_s).snapshot_id == s  # type: ignore[union-attr]

    def forge(doc: dict[str, Any]) -> None:
        times = {e["snapshot-id"]: e["timestamp-ms"] for e in doc["snapshot-log"]}
        doc["snapshot-log"] = [{"snapshot-id": u, "timestamp-ms": times[s]},
                               {"snapshot-id": 4242, "timestamp-ms": times[f]},  # no such snapshot
                               {"snapshot-id": u, "timestamp-ms": times[u]}]

    forged = rewrite_metadata(catalog, table, forge)
    assert forged.snapshot_as_of_timestamp(at_s).snapshot_id == u  # type: ignore[union-attr]  # the attack works
    doc = _verified("--snapshot-id", str(s))
    assert f"snapshot {s}, attestation for snapshot {s}" in doc["verdict"], doc
    assert _verified("--snapshot-id", str(f))["passed"]
    assert_refused(REF, "stale")  # the head U, as before the forgery


# ---- a snapshot's schema-id: what time travel resolves its columns with ----------------------------------------------
@pytest.mark.parametrize("edit", ["dropped", "unknown"])
def test_a_snapshot_whose_schema_id_is_dropped_or_unknown_after_a_rename(catalog: SqlCatalog, table: Table,  # noqa: F811
                                                                      edit: str) -> None:
    """After a rename, S read by id is read under its own schema (VERIFIED). Its ``schema-id`` then removed (both
    engines read a snapshot without one under the current schema) or set to an id no schema has (pyiceberg: the
    current schema; Java refuses): time travel to S reads the renamed column."""
    s, _, _ = _ids(table)
    with table.update_schema() as update:
        update.rename_column("v", "renamed")
    renamed = catalog.load_table("ns.t")
    assert renamed.scan(snapshot_id=s).to_arrow().column_names == ["id", "v"]
    assert _verified("--snapshot-id", str(s))["passed"]

    def forge(doc: dict[str, Any]) -> None:
        if edit == "dropped":
            _snap(doc, s).pop("schema-id")
        else:
            _snap(doc, s)["schema-id"] = 77

    forged = rewrite_metadata(catalog, renamed, forge)
    assert forged.scan(snapshot_id=s).to_arrow().column_names == ["id", "renamed"]  # the attack works
    # unknown: Java refuses any read of the table (test_iceberg_metadata_java_refuses), so no verdict at all
    assert_refused(REF, "reader_view_changed" if edit == "dropped" else "table_inconsistent", "--snapshot-id", str(s),
                   "--level", "schema")


# ---- the partition spec a manifest is read with ----------------------------------------------------------------------
@pytest.mark.parametrize("spec_id", [5, 0])
def test_a_manifest_listed_under_another_or_no_partition_spec(catalog: SqlCatalog, spec_id: int) -> None:  # noqa: F811
    """A table partitioned by ``id`` after a first unpartitioned append (specs 0 and 1), attested; then the head's
    manifest list rewritten so that every manifest names spec 5 (none: pyiceberg's scan fails on it, Java finds no
    spec) or spec 0 (the partitioned files read as unpartitioned: their identity values, which Java reads from the
    tuple, and the manifest's partition summaries no longer line up with any field). Both change what readers plan
    with, every byte intact."""
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    with t.update_spec() as spec:
        spec.add_identity("id")
    t = catalog.load_table("ns.t")
    t.append(rows(3))
    attest_after_write(t, model="orders", program_hash=PROGRAM)
    assert _verified()["level"] == "bytes"

    def respec(m: Any) -> None:
        m._data[2] = spec_id  # partition_spec_id (pyiceberg has no setter)

    _rewrite_manifest_list(catalog.load_table("ns.t"), respec)
    if spec_id == 5:
        with pytest.raises(KeyError):
            catalog.load_table("ns.t").scan().to_arrow()
    assert_refused(REF, "reader_view_changed" if spec_id == 5 else "table_inconsistent", "--level", "schema")


# ---- format-version: a v2 table relabelled v1 ------------------------------------------------------------------------
@pytest.mark.parametrize("attested", ["before the relabel", "after it"])
def test_a_table_relabelled_format_version_1_keeps_its_delete_files_applied(catalog: SqlCatalog,  # noqa: F811
                                                                            attested: str) -> None:
    """v1 has no delete files (pyiceberg refuses to commit one there), but a v2 table holding a position delete file
    relabelled ``format-version: 1`` is read with the delete applied by pyiceberg and by Spark (measured,
    test_spark_view_attacks). Attested before the relabel, the view changed (``format_version`` is in it); attested
    after it (detached: pyiceberg commits nothing to such a table), it verifies: every reader gets the same rows."""
    from pathlib import Path

    from carriers.iceberg.carrier import IcebergCarrier
    from tests.iceberg.conftest import commit_delete_file

    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    data = Path(t.location()[len("file://"):]) / "data"
    data.mkdir(parents=True, exist_ok=True)
    commit_delete_file(t, data / "del.parquet")
    t = catalog.load_table("ns.t")
    if attested == "before the relabel":
        attest_after_write(IcebergCarrier(t, detached=True), model="orders", program_hash=PROGRAM)
        assert _verified()["level"] == "bytes"

    def v1(doc: dict[str, Any]) -> None:
        doc["format-version"] = 1
        doc["schema"] = doc["schemas"][0]
        doc["partition-spec"] = []
        # as test_spark_view_attacks relabels it: Java takes a v1 table's last sequence number as 0 and refuses a
        # snapshot numbered above it (table_inconsistent, test_iceberg_metadata_java_refuses)
        doc["last-sequence-number"] = 0
        for snapshot in doc["snapshots"]:
            snapshot.pop("sequence-number", None)

    relabelled = rewrite_metadata(catalog, t, v1)
    assert relabelled.metadata.format_version == 1
    assert sorted(relabelled.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    if attested == "before the relabel":
        assert_refused(REF, "reader_view_changed", "--level", "schema")
    else:
        attest_after_write(IcebergCarrier(relabelled, detached=True), model="orders", program_hash=PROGRAM)
        assert _verified()["level"] == "bytes"


def test_a_rewrite_naming_the_schema_before_a_drop_is_refused(catalog: SqlCatalog) -> None:  # noqa: F811
    """The attested head S was written before column ``v`` was dropped: a plain read gets ``id``, time travel to S
    (its own schema-id 0) ``id`` and ``v``. A hand-made ``replace`` R holding the same ids but other ``v`` values,
    named schema-id 0: a plain read of R gets the attested rows (the content check, under the current schema, passes),
    time travel to R gets the forged values (pyiceberg, measured). R is read under two schemas as S was, so the view's
    ``schemas`` matched: VERIFIED before. A rewrite commits under the current schema (one schema read), so two after a
    rewrite is refused."""
    import pyarrow as pa

    from tests.iceberg.rewrites import replace, with_ids

    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    t.append(rows(3))
    with t.update_schema() as update:
        update.delete_column("v")
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    forged = pa.table({"id": pa.array(range(6), pa.int64()), "v": [f"forged-{i}" for i in range(6)]})
    t = replace(catalog, catalog.load_table("ns.t"), [with_ids(forged, [1, 2])])
    head = t.current_snapshot()
    assert head is not None
    t = rewrite_metadata(catalog, t, lambda doc: _snap(doc, head.snapshot_id).update({"schema-id": 0}))
    assert t.scan().to_arrow().column_names == ["id"]
    assert t.scan(snapshot_id=head.snapshot_id).to_arrow().column("v").to_pylist()[0] == "forged-0"
    assert_refused(REF, "reader_view_changed")
