"""Staleness, compaction, old snapshots, expiry and tags, and a table whose data lives elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _OverwriteFiles
from pyiceberg.types import StringType

from attest.errors import Code, VersionNotFoundError
from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write, classify_changes, tag_attested
from tests.iceberg.conftest import CATALOG, PROGRAM, commit_delete_file, rewrite_metadata, rows


@pytest.fixture
def attested(table: Table, carrier: IcebergCarrier) -> str:
    table.append(rows(0))
    table.append(rows(3))
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert result.attested_version is not None
    return result.attested_version


@pytest.mark.parametrize("change", ["append", "overwrite", "delete"])
def test_data_change_is_stale(change: str, attested: str, table: Table, carrier: IcebergCarrier) -> None:
    if change == "append":
        table.append(rows(10))
    elif change == "overwrite":
        table.overwrite(rows(10))
    else:
        table.delete("id = 1")
    state = carrier.state()
    assert state.changes == "data"
    report = verify_table(carrier)
    assert [p.code for p in report.errors] == [Code.STALE]
    assert state.attestation is not None and state.attestation.attested_version == attested
    # The attested snapshot itself still verifies, bytes included.
    old = verify_table(carrier, version=attested)
    assert old.passed and old.level == "bytes", old.human()


def _compact(table: Table, catalog: SqlCatalog) -> Table:
    """A rewrite of every file without a data change, recorded as a `replace` snapshot.

    pyiceberg 0.12 has no rewrite API and its summary builder refuses `replace`, so the files are rewritten with
    its lowest-level snapshot producer (as an overwrite) and the operation is then set to `replace` in a
    hand-written metadata.json, which is what Spark's rewrite_data_files commits.
    """
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    snapshot = table.current_snapshot()
    assert snapshot is not None
    data = table.scan().to_arrow()
    with table.transaction() as tx:
        producer = _OverwriteFiles(operation=Operation.OVERWRITE, transaction=tx, io=table.io)
        for manifest in snapshot.manifests(table.io):
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                producer.delete_data_file(entry.data_file)
        for data_file in _dataframe_to_data_files(table_metadata=tx.table_metadata, df=data, io=table.io,
                                                  write_uuid=producer.commit_uuid):
            producer.append_data_file(data_file)
        producer.commit()

    def as_replace(doc: dict[str, Any]) -> None:
        for snap in doc["snapshots"]:
            if snap["snapshot-id"] == doc["current-snapshot-id"]:
                snap["summary"]["operation"] = "replace"

    return rewrite_metadata(catalog, table, as_replace)


def test_replace_is_compaction(attested: str, table: Table, catalog: SqlCatalog) -> None:
    table = _compact(table, catalog)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    assert table.current_snapshot().summary.operation == Operation.REPLACE  # type: ignore[union-attr]
    assert table.scan().to_arrow().num_rows == 6
    state = carrier.state()
    assert state.changes == "compaction" and "replace@" in state.change_detail
    # The attestation binds a content digest: the rewrite's new file holds the attested rows (issue 32).
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    assert "compacted at snapshot" in report.human() and "2 files → 1, same rows" in report.human()
    assert verify_table(carrier, version=attested).passed  # the attested snapshot itself is intact
    assert classify_changes([table.current_snapshot(), *table.snapshots()[:1]])[0] == "data"  # type: ignore[list-item]


def test_classification_function(attested: str, table: Table) -> None:
    assert classify_changes([]) == ("none", "")
    table.append(rows(30))
    snap = table.current_snapshot()
    assert snap is not None
    assert classify_changes([snap])[0] == "data"
    # An empty append (no file added) changes nothing; the file-set check still guards the verdict.
    table.append(rows(0, 0))
    empty = table.current_snapshot()
    assert empty is not None and classify_changes([empty]) == ("none", "")


def test_old_snapshot_after_later_writes(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    first = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    table.append(rows(3))
    second = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    table.overwrite(rows(9))
    for version in (first, second):
        report = verify_table(carrier, version=version)
        assert report.passed and report.level == "bytes" and report.attested_version == version, report.human()
    assert not verify_table(carrier).passed


def test_expired_attested_snapshot(attested: str, table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(10))
    table.maintenance.expire_snapshots().by_id(int(attested)).commit()
    with pytest.raises(VersionNotFoundError) as info:
        carrier.state(attested)
    assert info.value.code == Code.SNAPSHOT_EXPIRED and "expired" in info.value.message
    # The follow-up snapshot still holds the attestation and the same files; the head is stale, not a crash.
    report = verify_table(carrier)
    assert [p.code for p in report.errors] == [Code.STALE]


def _unprotected(table: Table) -> list[int]:
    """Every snapshot but the current one and those a ref names (pyiceberg refuses to expire those)."""
    protected = {ref.snapshot_id for ref in table.metadata.refs.values()}
    return [s.snapshot_id for s in table.snapshots()[:-1] if s.snapshot_id not in protected]


def test_expired_attestation_and_its_follow_up(table: Table, carrier: IcebergCarrier) -> None:
    """Attested without the retention tag (retain_tag=False): expiring the attested snapshot and its follow-up loses
    the attestation (unattested, with a note)."""
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM, retain_tag=False)
    table.append(rows(10))
    table.maintenance.expire_snapshots().by_ids(_unprotected(table)).commit()
    state = carrier.state()
    assert state.attestation is None and any("expired" in n for n in state.notes)
    assert not verify_table(carrier).attested


def test_the_retention_tag_keeps_the_follow_up_and_a_later_write_is_stale(attested: str, table: Table,
                                                                            carrier: IcebergCarrier) -> None:
    """With the tag (the default) the follow-up survives the same expiry: the write after it is a data change."""
    table.append(rows(10))
    table.maintenance.expire_snapshots().by_ids(_unprotected(table)).commit()
    state = carrier.state()
    assert state.attestation is not None and state.changes == "data"
    report = verify_table(carrier)
    assert report.attested and [e.code.value for e in report.errors] == ["stale"], report.human()


def test_snapshot_that_never_existed(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    with pytest.raises(VersionNotFoundError) as info:
        carrier.state(12345)
    assert info.value.code == Code.VERSION_NOT_FOUND and "expired or never existed" in info.value.message


def test_expiry_known_only_from_the_metadata_log(attested: str, table: Table, carrier: IcebergCarrier,
                                                 catalog: SqlCatalog) -> None:
    # Expire everything but the head: no remaining snapshot names the attested one as parent.
    table.append(rows(10))
    table.maintenance.expire_snapshots().by_ids(_unprotected(table)).commit()
    with pytest.raises(VersionNotFoundError) as info:
        IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG).state(attested)
    assert info.value.code == Code.SNAPSHOT_EXPIRED


def test_tags_keep_attested_snapshots(attested: str, table: Table, carrier: IcebergCarrier) -> None:
    names = tag_attested(carrier, attested)
    assert names == [f"attested-{attested}", f"attested-{attested}-attestation"]
    table.append(rows(10))
    with pytest.raises(ValueError, match="protected"):
        table.maintenance.expire_snapshots().by_id(int(attested)).commit()
    # Tags name snapshots too.
    assert verify_table(carrier, version=f"attested-{attested}").passed
    with pytest.raises(Exception, match="not itself attested"):
        tag_attested(carrier, table.current_snapshot().snapshot_id)  # type: ignore[union-attr]


def test_data_under_a_different_location(catalog: SqlCatalog, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "data"
    table = catalog.create_table("ns.split", schema=rows(0).schema,
                                 properties={"write.data.path": f"file://{elsewhere}"})
    table.append(rows(0))
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    files = carrier.list_files()
    assert files and all(f.path.startswith(f"file://{elsewhere}/") for f in files)  # absolute: not under the table
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    next(elsewhere.glob("*.parquet")).write_bytes(b"not parquet")
    assert not verify_table(carrier).passed


def test_delete_files_are_listed_and_attested(table: Table, carrier: IcebergCarrier, tmp_path: Path) -> None:
    """A position-delete file (in a delete manifest, as Java writers commit one)."""
    table.append(rows(0))
    deletes = tmp_path / "warehouse" / "ns" / "t" / "data" / "deletes-0.parquet"
    commit_delete_file(table, deletes)
    kinds = {f.path: f.kind for f in carrier.list_files()}
    assert kinds["data/deletes-0.parquet"] == "delete"
    assert sorted(kinds.values()) == ["data", "delete"]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    att = carrier.read()
    assert att is not None and att.files is not None
    assert {f.kind for f in att.files} == {"data", "delete"}
    assert verify_table(carrier).passed
    deletes.unlink()
    assert [p.code for p in verify_table(carrier).errors] == [Code.FILE_MISSING]


def _schema_added_after_the_last_write(table: Table, catalog: SqlCatalog) -> Table:
    """Two appends, then a column added (no snapshot: the last data snapshot keeps schema-id 0, the table's is 1)."""
    table.append(rows(0))
    table.append(rows(3))
    with table.update_schema() as update:
        update.add_column("note", StringType())
    return catalog.load_table("ns.t")


def test_a_rewrite_after_a_column_added_since_the_last_write_verifies_by_content(table: Table,
                                                                                 catalog: SqlCatalog) -> None:
    """The attested head is read under two schemas (its own schema-id 0 by time travel, the table's 1 by a plain
    read); the rewrite's snapshot takes the table's schema-id, so every read of it is under schema 1, the schema its
    rows were checked under. Measured before: reader_view_changed ("the schemas readers of the snapshot resolve
    changed") after every honest rewrite of such a table (Spark's rewrite_data_files the same,
    tests/spark/test_maintenance_iceberg.py)."""
    table = _schema_added_after_the_last_write(table, catalog)
    attested = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    assert attested is not None
    table = _compact(table, catalog)
    assert table.current_snapshot().schema_id == table.metadata.current_schema_id == 1  # type: ignore[union-attr]
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert report.passed and report.level == "bytes", report.human()
    assert "compacted at snapshot" in report.human() and "same rows" in report.human()
    carried = attest_after_write(catalog.load_table("ns.t"), model="other", program_hash="d" * 64)
    assert carried.continues is not None  # a carry-forward, the producer's program kept
    report = verify_table(IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG))
    assert report.passed and report.content_check is None, report.human()  # bytes level, no rows read


def test_a_rewrite_read_under_a_schema_the_attested_snapshot_was_not_is_refused(table: Table,
                                                                                catalog: SqlCatalog) -> None:
    """The other direction stays refused: the attested snapshot was written after the column was added (read under
    schema 1 only), and the rewrite's snapshot names schema-id 0, so time travel to it reads the table without the
    column."""
    table = _schema_added_after_the_last_write(table, catalog)
    table.append(rows(6))
    table = catalog.load_table("ns.t")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = _compact(catalog.load_table("ns.t"), catalog)
    current = table.current_snapshot()
    assert current is not None

    def old_schema(doc: dict[str, Any]) -> None:
        for s in doc["snapshots"]:
            if s["snapshot-id"] == current.snapshot_id:
                s["schema-id"] = 0

    table = rewrite_metadata(catalog, table, old_schema)
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert not report.passed and [e.code for e in report.errors] == [Code.READER_VIEW_CHANGED], report.human()
