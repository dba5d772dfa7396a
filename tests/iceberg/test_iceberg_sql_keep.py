"""Format-v3 detached attestations kept in a SQL catalog (carriers/iceberg/sql_keep.py, docs/maintenance.md): the
statistics entry and the retention tag committed at the JSON level and the catalog row swapped by compare-and-swap,
because pyiceberg 0.12 writes no v3 table metadata. Measured before: nothing committed, and once orphan removal
deleted the pointer the table was UNATTESTED.

The v3 tables here are pyiceberg-written tables upgraded by a hand commit (``format-version`` 3, ``next-row-id``), as
pyiceberg cannot create one; tests/spark/test_maintenance_iceberg.py runs the same on a table Spark wrote.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.verify.table import verify_table
from carriers.iceberg.carriage import POINTER_DIR, RETAIN_TAG, SIDECAR_DIR
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.json_keep import CHANGED, KeepRaced
from carriers.iceberg.sql_keep import SqlKeeper, sql_keeper
from tests.iceberg.conftest import CATALOG, PROGRAM, local, rows
from tests.iceberg.test_iceberg_cli import _attest


def hand_commit(catalog: SqlCatalog, table: Table, edit: Any) -> Table:
    """A commit as another writer makes it: the edited metadata in the next numbered file, the previous one in the
    metadata log, the catalog row swapped only while it names the file read (the CAS every Iceberg catalog makes)."""
    current = local(table.metadata_location)
    doc = json.loads(current.read_text())
    edit(doc)
    doc["metadata-log"] = [*doc.get("metadata-log", []), {"timestamp-ms": doc["last-updated-ms"],
                                                          "metadata-file": table.metadata_location}]
    doc["last-updated-ms"] += 1
    version = int(current.name.split("-", 1)[0]) + 1
    new = current.with_name(f"{version:05d}-{uuid.uuid4()}.metadata.json")
    new.write_text(json.dumps(doc))
    with sqlite3.connect(catalog.properties["uri"][len("sqlite:///"):]) as conn:
        done = conn.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                            "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND "
                            "metadata_location = ?", (f"file://{new}", table.metadata_location, CATALOG, "ns", "t",
                                                      table.metadata_location)).rowcount
    assert done == 1
    return catalog.load_table("ns.t")


def v3_table(catalog: SqlCatalog, table: Table, **extra: Any) -> Table:
    """``table`` with two appends, upgraded to format v3 (as Java upgrades: ``next-row-id`` from 0), ``extra``
    members added to its metadata."""
    table.append(rows(0))
    table.append(rows(3))

    def upgrade(doc: dict[str, Any]) -> None:
        doc.update({"format-version": 3, "next-row-id": 0, **extra})

    table = hand_commit(catalog, catalog.load_table("ns.t"), upgrade)
    assert table.metadata.format_version == 3
    return table


def catalog_row(catalog: SqlCatalog) -> tuple[str, str]:
    with sqlite3.connect(catalog.properties["uri"][len("sqlite:///"):]) as conn:
        return conn.execute("SELECT metadata_location, previous_metadata_location FROM iceberg_tables "
                            "WHERE table_name = 't'").fetchone()  # type: ignore[no-any-return]


def test_record_keeps_a_v3_attestation_through_orphan_removal(catalog: SqlCatalog, table: Table,
                                                               tmp_path: Path) -> None:
    """`attest record` (the CLI) on a v3 table of a sqlite catalog: one new metadata file, named as Iceberg names it
    (the next version), holding the attested snapshot's statistics entry and the tag and otherwise the very members
    read (an unknown member included); the catalog row swapped, the old file its previous location. Then every file
    under metadata/recipe_attest/ but the registered Puffin file deleted (what orphan removal deletes): VERIFIED at
    bytes level. Before: nothing committed, then UNATTESTED."""
    table = v3_table(catalog, table, **{"x-vendor-extension": {"kept": [1, 2.5, "x"]}})
    old_location = table.metadata_location
    old_doc = json.loads(local(old_location).read_text())
    attested = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    ref = f"iceberg://{CATALOG}/ns.t"
    done = _attest(tmp_path, "record", ref, "--model", "orders", "--program-hash", PROGRAM, "--json")
    assert done.returncode == 0, done.stderr
    assert "warnings" not in json.loads(done.stdout), done.stdout
    location, previous = catalog_row(catalog)
    assert previous == old_location and location != old_location
    name, old_name = location.rsplit("/", 1)[1], old_location.rsplit("/", 1)[1]
    version = f"{int(old_name.split('-', 1)[0]) + 1:05d}-"
    assert old_name.startswith("00003-") and name.startswith(version) and name.endswith(".metadata.json")
    uuid.UUID(name[len(version):-len(".metadata.json")])
    assert Path(local(location)).parent == Path(local(old_location)).parent
    new_doc = json.loads(local(location).read_text())
    assert {k: v for k, v in new_doc.items() if k not in CHANGED} == \
        {k: v for k, v in old_doc.items() if k not in CHANGED}
    assert new_doc["metadata-log"] == [*old_doc["metadata-log"], {"timestamp-ms": old_doc["last-updated-ms"],
                                                                  "metadata-file": old_location}]
    assert new_doc["last-updated-ms"] > old_doc["last-updated-ms"]
    assert new_doc["refs"] == {**old_doc["refs"], RETAIN_TAG: {"type": "tag", "snapshot-id": attested}}
    [entry] = new_doc["statistics"]
    assert entry["snapshot-id"] == attested and entry["blob-metadata"] == []
    assert f"/{SIDECAR_DIR}/" in entry["statistics-path"] and entry["statistics-path"].endswith(".puffin")
    fresh = catalog.load_table("ns.t")
    assert fresh.metadata.format_version == 3 and len(fresh.metadata.snapshots) == 2  # no snapshot added
    assert fresh.scan().to_arrow().sort_by("id").equals(table.scan().to_arrow().sort_by("id"))
    kept = local(entry["statistics-path"])
    folder = kept.parent
    removed = [p for p in folder.rglob("*") if p.is_file() and p != kept]
    assert any(POINTER_DIR in str(p) for p in removed)
    for path in removed:
        path.unlink()
    done = _attest(tmp_path, "verify", ref, "--level", "bytes", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"] and report["level"] == "bytes", done.stdout + done.stderr
    assert report["attested_version"] == str(attested)


def test_a_concurrent_commit_between_read_and_swap_is_kept_and_the_keep_retried(catalog: SqlCatalog,
                                                                                table: Table) -> None:
    """Another writer commits between our read of the metadata and our compare-and-swap: the swap updates no row, the
    keep is planned again on the other writer's metadata and committed on top of it. Its change stays, ours is
    added; the file of the lost attempt is left in place (nothing deleted), referenced by nothing."""
    table = v3_table(catalog, table)
    raced: list[str] = []

    def other_writer(_location: str) -> None:
        if not raced:
            fresh = catalog.load_table("ns.t")
            raced.append(hand_commit(catalog, fresh, lambda d: d["properties"].update({"other.writer": "1"}))
                         .metadata_location)

    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    keeper = SqlKeeper(table, before_swap=other_writer)
    carrier.detached_keeper = keeper
    attested = carrier.record(model="orders", program_hash=PROGRAM).attested_version
    assert carrier.kept_note is None
    assert len(keeper.written) == 2 and all(local(p).exists() for p in keeper.written)
    location, previous = catalog_row(catalog)
    assert location == keeper.written[1] and previous == raced[0]
    fresh = catalog.load_table("ns.t")
    assert fresh.metadata.properties.get("other.writer") == "1"  # the other commit is kept
    assert [s.snapshot_id for s in fresh.metadata.statistics] == [int(str(attested))]
    assert fresh.metadata.refs[RETAIN_TAG].snapshot_id == int(str(attested))
    assert keeper.written[0] not in {e.metadata_file for e in fresh.metadata.metadata_log}


def test_a_pyiceberg_append_racing_the_keep_is_kept(catalog: SqlCatalog, table: Table) -> None:
    """The same race with pyiceberg's own commit (its compare-and-swap on the same row) on a v2 table attested
    detached as v3 tables are: the appended snapshot stays the current one, the older snapshot keeps its
    attestation."""

    class Detached(IcebergCarrier):
        @property
        def writes_detached(self) -> bool:
            return True

    table.append(rows(0))
    table = catalog.load_table("ns.t")
    appended: list[int] = []

    def other_writer(_location: str) -> None:
        if not appended:
            fresh = catalog.load_table("ns.t")
            fresh.append(rows(10))
            appended.append(fresh.current_snapshot().snapshot_id)  # type: ignore[union-attr]

    carrier = Detached(table, catalog_name=CATALOG)
    carrier.detached_keeper = keeper = SqlKeeper(table, before_swap=other_writer)
    attested = int(str(carrier.record(model="orders", program_hash=PROGRAM).attested_version))
    assert carrier.kept_note is None and len(keeper.written) == 2
    fresh = catalog.load_table("ns.t")
    assert fresh.current_snapshot().snapshot_id == appended[0] != attested  # type: ignore[union-attr]
    assert fresh.scan().to_arrow().num_rows == 6
    assert [s.snapshot_id for s in fresh.metadata.statistics] == [attested]
    assert fresh.metadata.refs[RETAIN_TAG].snapshot_id == attested


def always_racing(catalog: SqlCatalog, table: Table, monkeypatch: pytest.MonkeyPatch
                  ) -> tuple[Table, list[str], Callable[[str], None]]:
    """``table`` made v3, retries without backoff, and another writer for ``SqlKeeper(before_swap=...)`` that commits
    (a property edit) before every one of our swaps; the metadata locations it committed, in order."""
    from carriers.iceberg import commit

    monkeypatch.setattr(commit, "COMMIT_BACKOFF_S", 0.0)
    table = v3_table(catalog, table)
    theirs: list[str] = []

    def other_writer(_location: str) -> None:
        fresh = catalog.load_table("ns.t")
        theirs.append(hand_commit(catalog, fresh, lambda d: d["properties"].update({"n": str(len(theirs))}))
                      .metadata_location)

    return table, theirs, other_writer


def test_losing_every_race_warns_with_a_code_and_deletes_nothing(catalog: SqlCatalog, table: Table,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that commits before every one of our swaps: the bounded retries end in a warning coded
    ``commit_conflict``; every file we wrote is still there, the catalog names the other writer's last commit, and
    the attestation (its pointer) stands."""
    from carriers.iceberg import commit

    table, theirs, other_writer = always_racing(catalog, table, monkeypatch)

    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    carrier.detached_keeper = keeper = SqlKeeper(table, before_swap=other_writer)
    attested = carrier.record(model="orders", program_hash=PROGRAM).attested_version
    assert carrier.kept_note is not None and carrier.kept_note.startswith("commit_conflict: "), carrier.kept_note
    assert "nothing was deleted" in carrier.kept_note
    assert len(keeper.written) == commit.COMMIT_RETRIES + 1 and all(local(p).exists() for p in keeper.written)
    assert catalog_row(catalog)[0] == theirs[-1]
    fresh = catalog.load_table("ns.t")
    assert not fresh.metadata.statistics and RETAIN_TAG not in fresh.metadata.refs
    assert verify_table(IcebergCarrier(fresh, catalog_name=CATALOG)).passed  # the pointer stands
    assert attested is not None


def test_a_keep_planned_on_older_metadata_writes_nothing(catalog: SqlCatalog, table: Table) -> None:
    """The keeper commits only onto the metadata the request was planned on: another one is a race (retried by the
    carrier), before any file is written."""
    from carriers.iceberg.commit import DetachedKeep

    table = v3_table(catalog, table)
    head = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    keeper = sql_keeper(table)
    assert keeper is not None
    stale = table.metadata_location
    hand_commit(catalog, table, lambda d: d["properties"].update({"moved": "1"}))
    with pytest.raises(KeepRaced):
        keeper(DetachedKeep(head, None, RETAIN_TAG, (), base=stale))
    assert keeper.written == []


def test_gzip_metadata_is_read_and_written_as_java_names_it(catalog: SqlCatalog, table: Table) -> None:
    """``write.metadata.compression-codec`` gzip: the new file is ``NNNNN-<uuid>.gz.metadata.json``, gzip-compressed,
    and pyiceberg loads it."""
    table = v3_table(catalog, table, properties={"write.metadata.compression-codec": "gzip"})
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    attested = carrier.record(model="orders", program_hash=PROGRAM).attested_version
    assert carrier.kept_note is None
    location = catalog_row(catalog)[0]
    assert location.endswith(".gz.metadata.json") and local(location).read_bytes()[:2] == b"\x1f\x8b"
    fresh = catalog.load_table("ns.t")
    assert fresh.metadata.refs[RETAIN_TAG].snapshot_id == int(str(attested))
    assert fresh.metadata.properties["write.metadata.compression-codec"] == "gzip"


def test_no_keeper_for_a_catalog_that_is_not_sql(catalog: SqlCatalog, table: Table) -> None:
    from pyiceberg.table import StaticTable

    table.append(rows(0))
    table = catalog.load_table("ns.t")
    assert sql_keeper(table) is not None
    assert sql_keeper(StaticTable.from_metadata(table.metadata_location)) is None


def test_what_the_keep_leaves_alone_reads_the_same_and_json_it_cannot_rewrite_is_refused() -> None:
    """Members the keep does not change keep their meaning through the JSON round trip (doubles, 64-bit ids,
    non-ASCII text, members no reader here knows); a number no double holds, or NaN, is refused rather than
    written back as something that is not JSON. A tag whose name is a branch is never moved."""
    from attest.errors import CarrierError
    from carriers.iceberg.commit import DetachedKeep
    from carriers.iceberg.json_keep import _parse, apply_keep

    text = ('{"format-version":3,"location":"file:///t","last-updated-ms":5,"current-snapshot-id":9223372036854775807,'
            '"snapshots":[{"snapshot-id":9223372036854775807}],"refs":{"main":{"snapshot-id":9223372036854775807,'
            '"type":"branch"}},"x":{"d":0.1,"e":1E-7,"z":-0.0,"u":"\\u00e9\\u2028\\ud800"}}')
    doc = _parse(text, "m")
    new = apply_keep(doc, DetachedKeep(2**63 - 1, None, "recipe-attest", ()), "m", now_ms=1)
    assert new is not None and new["last-updated-ms"] == 6  # never before the metadata read
    assert new["metadata-log"] == [{"timestamp-ms": 5, "metadata-file": "m"}]
    written = json.loads(json.dumps(new))
    assert {k: v for k, v in written.items() if k not in CHANGED} == {k: v for k, v in doc.items() if k not in CHANGED}
    assert str(written["x"]["z"]) == "-0.0" and written["x"]["u"] == "\u00e9\u2028\ud800"
    assert apply_keep(new, DetachedKeep(2**63 - 1, None, "recipe-attest", ()), "m2", now_ms=9) is None  # no change
    for bad in ('{"format-version":3,"location":"l","x":1e400}', '{"format-version":3,"location":"l","x":NaN}'):
        with pytest.raises(CarrierError):
            _parse(bad, "m")
    with pytest.raises(CarrierError, match="not a tag"):
        apply_keep(doc, DetachedKeep(2**63 - 1, None, "main", ()), "m", now_ms=1)
    with pytest.raises(CarrierError, match="no longer in the table metadata"):
        apply_keep(doc, DetachedKeep(1, None, "recipe-attest", ()), "m", now_ms=1)
