"""The summary key mapping: what an attestation puts in a snapshot summary and how it reads back."""

from __future__ import annotations

import json

from pyiceberg.table import Table

from attest.build import build_manifest
from carriers.iceberg.carrier import SUMMARY_BUDGET, IcebergCarrier, attest_after_write
from carriers.iceberg.write import write_content_addressed
from carriers.properties import (
    CARRIER_KEYS,
    INLINE_OUTPUTS_MAX,
    KEY_OUTPUTS_COUNT,
    KEY_SIDECAR_HASH,
    KEY_VERSION,
    PREFIX,
    attestation_keys,
    from_properties,
)
from tests.iceberg.conftest import PROGRAM, rows, summary_of

# Keys Iceberg reserves or computes in a summary: an attestation must never write one.
_RESERVED_PREFIXES = ("operation", "added-", "deleted-", "removed-", "total-", "changed-", "replace-partitions",
                      "partition-summaries-included", "engine-", "iceberg-version", "spark.", "wap.")


def _attestation_keys(summary: dict[str, str]) -> dict[str, str]:
    return attestation_keys(summary)


def test_follow_up_summary_round_trips_to_the_manifest(table: Table, carrier: IcebergCarrier) -> None:
    table.append(rows(0))
    result = attest_after_write(table, model="orders", program_hash=PROGRAM, run_id="run-1")
    follow_up = table.current_snapshot()
    assert follow_up is not None and result.manifest is not None
    summary = summary_of(table, follow_up.snapshot_id)
    keys = _attestation_keys(summary)
    assert all(isinstance(v, str) for v in summary.values())
    assert not any(k.startswith(_RESERVED_PREFIXES) for k in keys)
    assert keys[KEY_VERSION] == result.attested_version == str(follow_up.parent_snapshot_id)
    assert not any(k.startswith(PREFIX + "output_hashes") for k in keys)  # the file list is in the sidecar only
    document, legacy = from_properties({k: v for k, v in keys.items() if k.startswith(PREFIX)})
    assert legacy == {}
    assert document == {k: v for k, v in result.manifest.to_dict().items() if k != "output_hashes"}
    assert {k for k in keys if not k.startswith(PREFIX)} <= CARRIER_KEYS
    assert {KEY_VERSION, KEY_SIDECAR_HASH} <= set(keys)
    read = carrier.read()
    assert read is not None and not read.problems
    assert read.document == result.manifest.to_dict()
    assert read.attested_version == result.attested_version
    # pyiceberg itself still reads the summaries (it breaks on non-string values).
    assert table.inspect.snapshots().num_rows == 2


def test_many_outputs_move_to_the_sidecar(table: Table, carrier: IcebergCarrier) -> None:
    for start in range(0, 3 * (INLINE_OUTPUTS_MAX + 2), 3):
        table.append(rows(start))
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    keys = _attestation_keys(summary_of(table, table.current_snapshot().snapshot_id))  # type: ignore[union-attr]
    assert keys[KEY_OUTPUTS_COUNT] == str(INLINE_OUTPUTS_MAX + 2)
    assert not any(k.startswith(PREFIX + "output_hashes") for k in keys)
    assert len(json.dumps(keys)) < SUMMARY_BUDGET
    read = carrier.read()
    assert read is not None and not read.problems
    # The reconstituted manifest carries the full list again.
    assert read.document == result.manifest.to_dict()  # type: ignore[union-attr]
    assert len(read.document["output_hashes"]) == INLINE_OUTPUTS_MAX + 2


def test_content_addressed_summary_binds_its_own_snapshot(table: Table, carrier: IcebergCarrier) -> None:
    result = write_content_addressed(table, rows(0), model="orders", program_hash=PROGRAM)
    snap = table.current_snapshot()
    assert snap is not None and result.attested_version == str(snap.snapshot_id)
    keys = _attestation_keys(summary_of(table, snap.snapshot_id))
    assert keys[KEY_VERSION] == str(snap.snapshot_id)
    assert summary_of(table, snap.snapshot_id)["added-data-files"] == "1"  # the data and the attestation: one commit
    read = carrier.read()
    assert read is not None and read.document == result.manifest.to_dict()  # type: ignore[union-attr]


def test_write_for_another_version_is_refused(table: Table, carrier: IcebergCarrier) -> None:
    import pytest

    from attest.errors import UnsupportedTableError

    table.append(rows(0))
    first = table.current_snapshot()
    table.append(rows(3))
    manifest = build_manifest(model="m", program_hash=PROGRAM, env_hash=carrier.env_hash(), outputs=[])
    with pytest.raises(UnsupportedTableError, match="written at commit"):
        carrier.write(manifest, version=first.snapshot_id)  # type: ignore[union-attr]


def test_empty_snapshot_round_trips_an_empty_output_list(table: Table, carrier: IcebergCarrier) -> None:
    from attest.verify.table import verify_table

    table.append(rows(0, 0))  # a snapshot with no file
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    keys = _attestation_keys(summary_of(table, table.current_snapshot().snapshot_id))  # type: ignore[union-attr]
    assert keys[KEY_OUTPUTS_COUNT] == "0"
    read = carrier.read()
    assert read is not None and not read.problems
    assert read.document == result.manifest.to_dict()  # type: ignore[union-attr]
    assert read.document["output_hashes"] == []
    report = verify_table(carrier, level="files")
    assert report.passed and report.files_checked == 0, report.human()
