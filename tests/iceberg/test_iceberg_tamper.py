"""Tampering at every level: bytes, the file set, the summary (a hand-made metadata.json), the sidecar."""

from __future__ import annotations

from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.errors import Code
from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from carriers.iceberg.write import write_content_addressed
from carriers.properties import KEY_SIDECAR_HASH, KEY_VERSION, PREFIX, attestation_keys
from tests.iceberg.conftest import CATALOG, PROGRAM, local, rewrite_metadata, rows


def _codes(carrier: IcebergCarrier, version: Any = None, level: Any = None) -> list[Code]:
    report = verify_table(carrier, version=version, level=level)
    assert not report.passed
    return [p.code for p in report.errors]


@pytest.fixture
def attested(table: Table, carrier: IcebergCarrier) -> IcebergCarrier:
    table.append(rows(0))
    table.append(rows(3))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert verify_table(carrier).passed
    return carrier


def _data_path(carrier: IcebergCarrier, index: int = 0) -> str:
    return carrier.list_files()[index].location


def test_byte_flipped(attested: IcebergCarrier) -> None:
    path = local(_data_path(attested))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    assert _codes(attested) == [Code.ARTIFACT_HASH_MISMATCH]
    assert verify_table(attested, level="files").passed  # same size: only bytes can tell


def test_file_removed(attested: IcebergCarrier) -> None:
    local(_data_path(attested)).unlink()
    assert _codes(attested) == [Code.FILE_MISSING]


def test_unattested_append_is_stale(attested: IcebergCarrier, table: Table) -> None:
    table.append(rows(6))
    codes = _codes(attested)
    assert codes == [Code.STALE]
    report = verify_table(attested)
    assert "append@" in report.errors[0].message


def test_follow_up_that_added_a_file_is_caught(table: Table, carrier: IcebergCarrier, catalog: SqlCatalog) -> None:
    table.append(rows(0))
    data = table.current_snapshot()
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    follow_up = table.current_snapshot()
    assert data is not None and follow_up is not None
    # A hand-made follow-up: same attestation keys, but it also appends a file.
    table.append(rows(3), snapshot_properties=attestation_keys(
        follow_up.summary.additional_properties) | {KEY_VERSION: str(follow_up.snapshot_id)})  # type: ignore[union-attr]
    codes = _codes(carrier)
    assert Code.CARRIER_TAMPERED in codes


def _edit_current_summary(key: str, value: str | None) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        current = doc["current-snapshot-id"]
        for snap in doc["snapshots"]:
            if snap["snapshot-id"] == current:
                if value is None:
                    del snap["summary"][key]
                else:
                    snap["summary"][key] = value
    return edit


def test_summary_output_hash_edited(attested: IcebergCarrier, catalog: SqlCatalog, table: Table) -> None:
    edited = rewrite_metadata(catalog, table, _edit_current_summary(PREFIX + "output_hashes.0.hash", "f" * 64))
    codes = _codes(IcebergCarrier(edited, catalog_name=CATALOG), level="files")
    assert codes == [Code.CARRIER_TAMPERED]  # the summary and the sidecar disagree


@pytest.mark.parametrize(("key", "value"), [("program_hash", "f" * 64), ("env_hash", "0" * 64),
                                            ("subject.model", "someone_else")])
def test_any_single_edited_summary_field_is_caught(attested: IcebergCarrier, catalog: SqlCatalog, table: Table,
                                                   key: str, value: str) -> None:
    edited = rewrite_metadata(catalog, table, _edit_current_summary(PREFIX + key, value))
    assert _codes(IcebergCarrier(edited, catalog_name=CATALOG), level="schema") == [Code.CARRIER_TAMPERED]


def test_summary_inputs_hash_edited(table: Table, carrier: IcebergCarrier, catalog: SqlCatalog) -> None:
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table.append(rows(3))
    attest_after_write(table, model="orders", program_hash=PROGRAM)  # observes the previous snapshot
    edited = rewrite_metadata(catalog, table, _edit_current_summary(PREFIX + "inputs_hash", "e" * 64))
    assert _codes(IcebergCarrier(edited, catalog_name=CATALOG)) == [Code.CARRIER_TAMPERED]


def test_summary_sidecar_hash_edited(attested: IcebergCarrier, catalog: SqlCatalog, table: Table) -> None:
    edited = rewrite_metadata(catalog, table, _edit_current_summary(KEY_SIDECAR_HASH, "d" * 64))
    codes = _codes(IcebergCarrier(edited, catalog_name=CATALOG))
    assert codes[0] == Code.CARRIER_TAMPERED  # the path no longer names the content address


def test_summary_binding_removed(attested: IcebergCarrier, catalog: SqlCatalog, table: Table) -> None:
    edited = rewrite_metadata(catalog, table, _edit_current_summary(KEY_VERSION, None))
    assert _codes(IcebergCarrier(edited, catalog_name=CATALOG))[0] == Code.CARRIER_TAMPERED


def test_summary_key_conflict(attested: IcebergCarrier, catalog: SqlCatalog, table: Table) -> None:
    edited = rewrite_metadata(catalog, table, _edit_current_summary(PREFIX + "program_hash.x", "y"))
    assert _codes(IcebergCarrier(edited, catalog_name=CATALOG))[0] == Code.CARRIER_TAMPERED


def test_sidecar_edited(attested: IcebergCarrier) -> None:
    att = attested.read()
    assert att is not None
    sidecar = next(local(attested._metadata_dir()).glob("recipe_attest/*.json"))
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"size":', b'"size": '))
    assert _codes(attested)[0] == Code.SIDECAR_MISMATCH


def test_sidecar_deleted(table: Table, carrier: IcebergCarrier) -> None:
    write_content_addressed(table, rows(0, 60), model="orders", program_hash=PROGRAM, rows_per_file=3)
    for sidecar in local(carrier._metadata_dir()).glob("recipe_attest/*.json"):
        sidecar.unlink()
    # What remove_orphan_files does: the copy kept in the registered statistics file still holds it (same BLAKE3).
    assert verify_table(carrier, level="bytes").passed
    for kept in local(carrier._metadata_dir()).glob("recipe_attest/*.puffin"):
        kept.unlink()
    carrier._forget()
    assert _codes(carrier)[0] == Code.SIDECAR_MISSING
