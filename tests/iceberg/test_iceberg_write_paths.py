"""Both write paths: attest-after-write (follow-up snapshot) and content-addressed (one snapshot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.table import Table

from attest.errors import CarrierError
from attest.identity.inputs import ObservedInput
from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from carriers.iceberg.write import write_content_addressed
from carriers.refs import open_table
from tests.iceberg.conftest import CATALOG, PROGRAM, commit_delete_file, local, rows, summary_of


def test_attest_after_append_commits_a_follow_up_that_changes_no_data(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    data = table.current_snapshot()
    assert data is not None
    before = carrier.list_files()
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    follow_up = table.current_snapshot()
    assert follow_up is not None
    assert result.attested_version == str(data.snapshot_id)
    assert follow_up.parent_snapshot_id == data.snapshot_id
    summary = summary_of(table, follow_up.snapshot_id)
    assert not any(k.startswith("added-") for k in summary)  # no file added
    assert summary["total-data-files"] == "1"
    assert carrier.list_files() == before
    assert result.sidecar is not None and local(result.sidecar).is_file()
    # Both the data snapshot and the follow-up verify at the bytes level.
    for version in (None, data.snapshot_id, follow_up.snapshot_id):
        report = verify_table(carrier, version=version)
        assert report.passed and report.level == "bytes", report.human()
        assert report.attested_version == str(data.snapshot_id)


def test_attest_after_write_from_sql(table: Table) -> None:
    table.append(rows(0))
    result = attest_after_write(table, model="orders", sql="select 1 as x", dialect="duckdb")
    assert result.manifest is not None and len(result.manifest.program_hash) == 64
    with pytest.raises(CarrierError, match="program_hash or sql"):
        attest_after_write(table, model="orders")


def test_overwrite_makes_two_snapshots_and_the_final_one_is_attested(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table.overwrite(rows(10))
    ops = [s.summary.operation.value for s in table.snapshots()[-2:]]  # type: ignore[union-attr]
    assert ops == ["delete", "append"]
    final = table.current_snapshot()
    assert final is not None
    assert not verify_table(carrier).passed  # stale until attested
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert result.attested_version == str(final.snapshot_id)
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    # The intermediate delete snapshot is not attested by it (its live state is the empty table).
    delete_snapshot = final.parent_snapshot_id
    assert not verify_table(carrier, version=delete_snapshot).passed


def test_record_after_append_observes_the_previous_snapshot(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    first = attest_after_write(table, model="orders", program_hash=PROGRAM)
    expected = carrier.observe(first.attested_version)
    assert expected.proof_class == "strong"
    table.append(rows(3))
    upstream = ObservedInput(table="delta:upstream", version="7")
    result = carrier.record(model="orders", program_hash=PROGRAM, inputs=[upstream])
    att = carrier.read()
    assert att is not None and att.inputs is not None
    assert {i.table for i in att.inputs} == {"delta:upstream", carrier.table_identity}
    # The append's parent is the follow-up snapshot, whose content is the attested snapshot's.
    assert expected.content in {i.content for i in att.inputs}
    assert result.manifest is not None and result.manifest.inputs_proof_class == "heuristic"


def test_record_reuses_hashes_of_attested_files(table: Table, carrier: IcebergCarrier,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    table.append(rows(0))
    carrier.record(model="orders", program_hash=PROGRAM)
    table.append(rows(3))
    hashed: list[str] = []
    original = carrier.hash_files

    def spy(files, *, progress=None):  # type: ignore[no-untyped-def]
        hashed.extend(f.path for f in files)
        return original(files, progress=progress)

    monkeypatch.setattr(carrier, "hash_files", spy)
    carrier.record(model="orders", program_hash=PROGRAM)
    assert len(hashed) == 1  # only the newly appended file
    monkeypatch.undo()
    assert verify_table(carrier).passed


def test_content_addressed_write_is_one_snapshot(table: Table, carrier: IcebergCarrier) -> None:
    result = write_content_addressed(table, rows(0, 30), model="orders", program_hash=PROGRAM, rows_per_file=10)
    assert len(table.snapshots()) == 1
    files = carrier.list_files()
    assert len(files) == 3
    assert result.manifest is not None
    for f, o in zip(files, sorted(result.manifest.output_hashes or (), key=lambda o: o.path or ""), strict=True):
        assert Path(f.path).name == f"{o.hash}.parquet" and f.path == o.path
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    assert table.scan().to_arrow().num_rows == 30


def test_content_addressed_append_covers_every_live_file(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    result = write_content_addressed(table, rows(100), model="orders", program_hash=PROGRAM)
    assert result.manifest is not None and len(result.manifest.output_hashes or ()) == 2
    assert verify_table(carrier).passed
    # The previous snapshot is its input.
    att = carrier.read()
    assert att is not None and att.inputs and att.inputs[0].table == carrier.table_identity


def test_content_addressed_append_onto_a_table_with_delete_files(table: Table, carrier: IcebergCarrier,
                                                                 tmp_path: Path) -> None:
    """With delete files in the table, every file's view holds its data sequence number: the new files' is the one
    their snapshot gets, so the one-snapshot write verifies, and the deleted row stays deleted."""
    table.append(rows(0))
    commit_delete_file(table, local(table.location()) / "data" / "deletes-0.parquet")
    write_content_addressed(table, rows(100), model="orders", program_hash=PROGRAM)
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    assert table.scan().to_arrow().num_rows == 5


def test_content_addressed_append_onto_a_table_with_an_equality_delete_binds_its_fields(table: Table,
                                                                                       carrier: IcebergCarrier) -> None:
    """The view holds the equality fields as Iceberg Java types them while an equality delete is live
    (``java_equality_fields``): the one-snapshot write binds them as the live view holds them. Before, the written
    view had none and the verdict said they were not bound (an attestation of an earlier release's)."""
    import pyarrow as pa

    table.append(rows(0))
    commit_delete_file(table, local(table.location()) / "data" / "eq.parquet",
                       deleted=pa.table({"id": pa.array([1], pa.int64())}), equality_ids=[1])
    write_content_addressed(table, rows(100), model="orders", program_hash=PROGRAM)
    att = carrier.read()
    assert att is not None and att.view is not None
    assert att.view.table.get("java_equality_fields") == {"1": ["long", False]}
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes" and not report.view_unbound, report.human()
    assert report.view_bound


def test_content_addressed_overwrite(table: Table, carrier: IcebergCarrier) -> None:
    write_content_addressed(table, rows(0), model="orders", program_hash=PROGRAM)
    table.append(rows(5))
    result = write_content_addressed(table, rows(50), model="orders", program_hash=PROGRAM, mode="overwrite")
    assert table.current_snapshot().summary.operation.value == "overwrite"  # type: ignore[union-attr]
    assert len(carrier.list_files()) == 1
    assert result.manifest is not None and len(result.manifest.output_hashes or ()) == 1
    assert verify_table(carrier).passed
    assert table.scan().to_arrow().column("id").to_pylist() == [50, 51, 52]


def test_content_addressed_refuses_identical_bytes_twice(table: Table) -> None:
    write_content_addressed(table, rows(0), model="orders", program_hash=PROGRAM)
    with pytest.raises(CarrierError, match="twice"):
        write_content_addressed(table, rows(0), model="orders", program_hash=PROGRAM)
    assert len(table.snapshots()) == 1


def test_reference_resolves_through_pyiceberg_config(table: Table, iceberg_env: str) -> None:
    table.append(rows(0))
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    carrier = open_table(f"iceberg://{CATALOG}/ns.t")
    assert isinstance(carrier, IcebergCarrier)
    assert carrier.reference == f"iceberg://{CATALOG}/ns.t"
    report = verify_table(carrier, version=result.attested_version)
    assert report.passed and report.level == "bytes", report.human()
    assert report.subject == f"iceberg://{CATALOG}/ns.t"


def test_unknown_catalog_and_table_are_explained(iceberg_env: str, table: Table) -> None:
    from attest.errors import TableNotFoundError, TableReferenceError

    with pytest.raises(TableNotFoundError):
        IcebergCarrier.from_reference(CATALOG, "ns.nope")
    with pytest.raises(TableReferenceError):
        IcebergCarrier.from_reference("no_such_catalog_configured", "ns.t")


def test_unattested_table(table: Table, carrier: IcebergCarrier) -> None:
    state = carrier.state()
    assert state.attestation is None and state.live_files == ()
    table.append(rows(0))
    assert carrier.read() is None
    report = verify_table(carrier)
    assert not report.attested and report.verdict().startswith("UNATTESTED")
    assert carrier.observe().proof_class == "heuristic"


@pytest.mark.parametrize(("change", "expects_input"), [("append", True), ("delete", True), ("overwrite", False)])
def test_previous_snapshot_is_an_input_when_the_commit_built_on_it(
        change: str, expects_input: bool, table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    table.append(rows(3))
    carrier.record(model="orders", program_hash=PROGRAM)
    if change == "append":
        table.append(rows(6))
    elif change == "delete":
        table.delete("id = 1")
    else:
        table.overwrite(rows(9))  # delete everything, then append: nothing of the previous state is kept
    carrier.record(model="orders", program_hash=PROGRAM)
    att = carrier.read()
    assert att is not None and att.inputs is not None
    assert bool(att.inputs) is expects_input
    if expects_input:
        assert att.inputs[0].table == carrier.table_identity and att.inputs[0].proof_class == "strong"
