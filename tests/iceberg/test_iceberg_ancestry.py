"""Bounded cost: every walk over an Iceberg table's snapshots is linear in their number.

A table with tens of thousands of chained snapshots on top of an attested one (streaming writers commit every few
seconds; empty commits are common) is built by writing its metadata.json directly, not by 20,000 commits. The cost is
measured as an operation count, not wall-clock: every item any code iterates out of the metadata's snapshot list, and
every snapshot lookup and summary read of the carrier's index. pyiceberg's ``snapshot_by_id`` scans that list, so a
walk of N parents through it iterates ~N²/2 items (45,000 snapshots: 193 s of CPU before).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, SnapshotIndex, attest_after_write
from tests.iceberg.conftest import CATALOG, PROGRAM, rewrite_metadata, rows

FIRST_ID = 10**12


def chain(doc: dict[str, Any], count: int, *, summary: dict[str, str] | None = None) -> list[int]:
    """Append ``count`` chained snapshots to a metadata document, each an append of no file on top of the current
    one (they share its manifest list: the same live files), and make the last one current. Their ids."""
    head = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
    parent, sequence, ms = head["snapshot-id"], doc["last-sequence-number"], head["timestamp-ms"]
    plain = summary or {"operation": "append", **{k: v for k, v in head["summary"].items()
                                                  if k.startswith("total-")}}
    ids = []
    for i in range(count):
        sid = FIRST_ID + i
        doc["snapshots"].append({"snapshot-id": sid, "parent-snapshot-id": parent, "sequence-number": sequence + 1 + i,
                                 "timestamp-ms": ms + 1 + i, "manifest-list": head["manifest-list"],
                                 "summary": plain, "schema-id": head.get("schema-id", 0)})
        parent = sid
        ids.append(sid)
    doc["current-snapshot-id"] = parent
    doc["last-sequence-number"] = sequence + count
    doc["refs"] = {"main": {"snapshot-id": parent, "type": "branch"}}
    doc["snapshot-log"] = []  # one entry per snapshot would only make the file larger
    return ids


def attested_with_chain(catalog: SqlCatalog, table: Table, count: int) -> tuple[Table, int]:
    """An attested table (one append, its follow-up) under ``count`` chained no-file snapshots: (table, data id)."""
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="m", program_hash=PROGRAM)
    return rewrite_metadata(catalog, table, lambda doc: chain(doc, count)), data


class _CountingList(list[Any]):
    """The metadata's snapshot list, counting every item any code iterates out of it."""

    items = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _CountingList.items += 1
            yield item


def _cost(catalog: SqlCatalog, table: Table, count: int) -> tuple[int, int, int]:
    """Verify the head of a table with ``count`` chained snapshots over its attestation: (snapshot-list items
    iterated, index lookups, summaries read)."""
    loaded, data = attested_with_chain(catalog, table, count)
    object.__setattr__(loaded.metadata, "snapshots", _CountingList(loaded.metadata.snapshots))
    _CountingList.items = 0
    carrier = IcebergCarrier(loaded, catalog_name=CATALOG)
    reads = 0
    original = carrier._read_carried_by

    def counted(snapshot: Any) -> Any:
        nonlocal reads
        reads += 1
        return original(snapshot)

    carrier._read_carried_by = counted  # type: ignore[method-assign]
    report = verify_table(carrier)
    assert report.passed, report.human()
    assert report.attested_version == str(data)
    assert carrier.snapshot_index().meta is loaded.metadata  # what was counted is what was walked
    return _CountingList.items, carrier.snapshot_index().lookups, reads


def test_verify_over_thousands_of_snapshots_walks_each_once(catalog: SqlCatalog, tmp_path: Any) -> None:
    small = _cost(catalog, catalog.create_table("ns.small", schema=rows(0).schema), 2_000)
    large = _cost(catalog, catalog.create_table("ns.large", schema=rows(0).schema), 4_000)
    for n, (items, lookups, reads) in ((2_000, small), (4_000, large)):
        # A handful of whole-list passes (the index, the id and cycle checks, pyiceberg's current_snapshot), each
        # snapshot looked up and its summary read a bounded number of times: quadratic would be ~n²/2 items.
        assert items <= 10 * n, (n, items)
        assert lookups <= 3 * n, (n, lookups)
        assert reads <= n + 10, (n, reads)
    # Doubling the history doubles the work (quadratic: four times).
    assert large[0] <= 2.2 * small[0] and large[1] <= 2.2 * small[1], (small, large)


@pytest.mark.slow
def test_verify_over_twenty_thousand_snapshots_is_linear(catalog: SqlCatalog, table: Table) -> None:
    items, lookups, reads = _cost(catalog, table, 20_000)
    assert items <= 10 * 20_000 and lookups <= 3 * 20_000 and reads <= 20_010, (items, lookups, reads)


def test_record_over_a_long_history_attests_the_head_and_walks_linearly(
        catalog: SqlCatalog, table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """A data commit on top of 600 snapshots: record attests it (its input found by a walk), verify passes. Counted
    over every index record builds (it reloads the table metadata several times). pyiceberg's own commit, which
    copies the whole metadata several times, is most of the time taken."""
    n = 600
    loaded, _ = attested_with_chain(catalog, table, n)
    loaded.append(rows(10))
    data = loaded.current_snapshot().snapshot_id  # type: ignore[union-attr]
    counts = {"lookups": 0, "reads": 0}
    get, read = SnapshotIndex.get, IcebergCarrier._read_carried_by

    def counted_get(self: SnapshotIndex, snapshot_id: int | None) -> Any:
        counts["lookups"] += 1
        return get(self, snapshot_id)

    def counted_read(self: IcebergCarrier, snapshot: Any) -> Any:
        counts["reads"] += 1
        return read(self, snapshot)

    monkeypatch.setattr(SnapshotIndex, "get", counted_get)
    monkeypatch.setattr(IcebergCarrier, "_read_carried_by", counted_read)
    result = IcebergCarrier(loaded, catalog_name=CATALOG).record(model="m", program_hash=PROGRAM)
    assert result.attested_version == str(data)
    assert counts["lookups"] <= 4 * n and counts["reads"] <= 3 * n, counts  # quadratic: ~n²/2 = 180,000
    report = verify_table(IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG))
    assert report.passed and report.attested_version == str(data), report.human()


def test_a_long_chain_of_follow_ups_is_walked_once(catalog: SqlCatalog, table: Table) -> None:
    """2,000 follow-ups stacked on one data snapshot (re-records, or a writer copying the attestation on purpose):
    the head's data snapshot, and the follow-up in force for the data snapshot itself, are each found in one pass
    (each link's binding is checked against the chain under it, memoised)."""
    from carriers import properties as props

    n = 2_000
    table.append(rows(0))
    data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="m", program_hash=PROGRAM)
    head = table.current_snapshot()
    assert head is not None and head.summary is not None
    keys = props.attestation_keys(head.summary.additional_properties)
    summary = {"operation": "append", **keys}
    loaded = rewrite_metadata(catalog, table, lambda doc: chain(doc, n, summary=summary))
    for version in (None, str(data), str(FIRST_ID + n // 2)):
        carrier = IcebergCarrier(loaded, catalog_name=CATALOG)
        report = verify_table(carrier, version=version, level="files")
        assert report.passed and report.attested_version == str(data), report.human()
        assert carrier.snapshot_index().lookups <= 3 * n, (version, carrier.snapshot_index().lookups)
        assert len(carrier.snapshot_index().carried) <= n + 10
