"""An Iceberg ``record`` lists the snapshot it attests once, and does not list the previous snapshot again to decide
whether the data commit built on it (issue 35: a second listing of the same manifests, ~25% of a record of 200,000
files): the manifests the two snapshots share give their files from the first listing, the others are read, paths
only. Counted, not timed. The decision is the one a full listing of the previous snapshot gave (the cases below pass
on the code before the change too)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pyiceberg.table import Table

from carriers.iceberg.carrier import IcebergCarrier
from tests.iceberg.conftest import PROGRAM, rows


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many snapshot listings (``_compute_live``) the carrier made, and how many manifests it read
    (``_manifest_entries``) for each snapshot (by id)."""
    counted: Counter[str] = Counter()
    compute, entries = IcebergCarrier._compute_live, IcebergCarrier._manifest_entries

    def counting_compute(self: IcebergCarrier, snapshot: Any, *args: Any) -> Any:
        counted["listings"] += 1
        return compute(self, snapshot, *args)

    def counting_entries(self: IcebergCarrier, snapshot: Any, **kwargs: Any) -> Any:
        records, problems = entries(self, snapshot, **kwargs)
        counted[str(snapshot.snapshot_id)] += len({str(r["manifest_path"]) for r in records})
        return records, problems

    monkeypatch.setattr(IcebergCarrier, "_compute_live", counting_compute)
    monkeypatch.setattr(IcebergCarrier, "_manifest_entries", counting_entries)
    return counted


def _inputs(carrier: IcebergCarrier) -> list[Any]:
    att = carrier.read()
    assert att is not None and att.inputs is not None and not att.problems
    return list(att.inputs)


def test_a_record_of_an_append_lists_the_snapshot_once(table: Table, carrier: IcebergCarrier,
                                                       listings: Counter[str]) -> None:
    table.append(rows(0))
    table.append(rows(3))
    table.append(rows(6))  # three manifests, two of them shared with the previous snapshot
    previous = str(table.snapshots()[-2].snapshot_id)
    carrier.record(model="orders", program_hash=PROGRAM)
    # One listing, of the attested snapshot; the previous snapshot (unattested: a heuristic input, not listed by
    # observe) is not listed again, nor any of its manifests read again (the content digests read the attested
    # snapshot's manifests for their plans: counted under its id, not the previous one's).
    assert listings["listings"] == 1 and listings[previous] == 0
    assert [i.snapshot_id for i in _inputs(carrier)] == [previous]


def test_an_append_that_merged_the_manifests_still_builds_on_the_previous_snapshot(
        table: Table, carrier: IcebergCarrier, listings: Counter[str]) -> None:
    """A merge append rewrites the previous manifests into a new one: none is shared, the previous snapshot's are
    read (paths only), and its files kept make it the input."""
    with table.transaction() as tx:
        tx.set_properties({"commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "2"})
    table.append(rows(0))
    with table.transaction() as tx, tx.update_snapshot().merge_append() as append:
        for data_file in _data_files(table, rows(3)):
            append.append_data_file(data_file)
    current = table.current_snapshot()
    previous = table.snapshots()[-2]
    assert current is not None
    shared = {m.manifest_path for m in current.manifests(table.io)} & \
        {m.manifest_path for m in previous.manifests(table.io)}
    assert not shared  # the case under test: nothing of the first listing to reuse
    carrier.record(model="orders", program_hash=PROGRAM)
    assert listings["listings"] == 1 and listings[str(previous.snapshot_id)] == 1  # its one manifest, paths only
    assert [i.snapshot_id for i in _inputs(carrier)] == [str(previous.snapshot_id)]


def test_an_append_onto_a_snapshot_whose_files_were_all_deleted_builds_on_nothing(
        table: Table, carrier: IcebergCarrier, listings: Counter[str]) -> None:
    table.append(rows(0))
    table.delete("id >= 0")  # every file of the first append removed
    table.append(rows(3))
    carrier.record(model="orders", program_hash=PROGRAM)
    assert listings["listings"] == 1
    assert _inputs(carrier) == []


def _data_files(table: Table, data: Any) -> list[Any]:
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    return list(_dataframe_to_data_files(table_metadata=table.metadata, df=data, io=table.io))
