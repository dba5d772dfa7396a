"""Round 17, variants tried on Iceberg and held (pinned so they stay held)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_iceberg_round17 import FORGED, _filtered, _table_with_delete
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    local,
)

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table



def test_data_column_metrics_written_after_the_record_change_the_view(catalog: SqlCatalog) -> None:
    """A delete file's entry is in its view, so its metrics forged after the record (the delete manifest rewritten in
    place, pyiceberg's filtered read of id 1 then returning the deleted row) were caught before this round too."""
    table = _table_with_delete(catalog, None)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    _rewrite_delete_metrics(catalog.load_table("ns.t"), FORGED["bounds above the deleted id"])
    table = catalog.load_table("ns.t")
    assert _filtered(table, "id = 1") == [1]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and not doc["passed"], json.dumps(doc)
    assert set(codes(doc)) & {"reader_view_changed", "table_inconsistent"}, json.dumps(doc)


def _rewrite_delete_metrics(table: Table, metrics: dict[str, Any]) -> None:
    """The current snapshot's delete manifest rewritten in place, its one entry given ``metrics``."""
    import shutil

    from pyiceberg.manifest import DataFile, ManifestContent, ManifestEntry

    from tests.iceberg.conftest import manifest_writer

    snap = table.current_snapshot()
    assert snap is not None
    (manifest,) = [m for m in snap.manifests(table.io) if m.content == ManifestContent.DELETES]
    (entry,) = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    old = entry.data_file
    fields = ("content", "file_path", "file_format", "partition", "record_count", "file_size_in_bytes",
              "column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds",
              "key_metadata", "split_offsets", "equality_ids", "sort_order_id")
    new = DataFile.from_args(**{**{f: getattr(old, f) for f in fields}, **metrics})
    rewritten = ManifestEntry.from_args(status=entry.status, snapshot_id=entry.snapshot_id,
                                        sequence_number=entry.sequence_number,
                                        file_sequence_number=entry.file_sequence_number, data_file=new)
    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with manifest_writer(table.spec(), table.schema(), table.io.new_output(f"file://{tmp}"), entry.snapshot_id,
                         deletes=True) as writer:
        writer.add_entry(rewritten)
    shutil.move(tmp, path)


def test_equal_file_path_bounds_that_are_not_utf8_are_refused(catalog: SqlCatalog) -> None:
    """A position delete file whose ``file_path`` bounds are equal bytes that are not UTF-8: Iceberg Java scopes a
    delete file by equal bounds after decoding them (``ContentFileUtil.referencedDataFile``, whose strict decoder
    throws: no read planned), pyiceberg falls back to the partition and then fails evaluating the bounds. Refused at
    record (the readers' planning of its metrics fails), never attested."""
    from attest.errors import AttestError
    from tests.adversarial.test_iceberg_delete_physical_types import PATH_ID

    table = _table_with_delete(catalog, {"lower_bounds": {PATH_ID: b"\xff"}, "upper_bounds": {PATH_ID: b"\xff"}})
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message


def test_a_branch_whose_head_rewrites_the_attested_snapshot_with_other_rows(catalog: SqlCatalog) -> None:
    """Time travel by branch: a branch ``b`` made at main's attested head, then a hand-made ``replace`` on it whose
    file drops a row. ``main`` verifies (its readers get the attested rows); ``--snapshot-id b`` (Spark's
    ``VERSION AS OF 'b'``) is judged by content against the attestation its ancestry carries: not verified."""
    from tests.adversarial.test_iceberg_delete_physical_types import _rows
    from tests.iceberg.rewrites import replace, with_ids

    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2, 3]))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    head = table.current_snapshot()
    assert head is not None
    table.manage_snapshots().create_branch(head.snapshot_id, "b").commit()
    table = replace(catalog, catalog.load_table("ns.t"), [with_ids(_rows([1, 2]), [1, 2, 3])], branch="b")
    assert sorted(table.scan().use_ref("b").to_arrow().column("id").to_pylist()) == [1, 2]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--snapshot-id", "b")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert set(codes(doc)) & {"content_changed", "compacted", "stale"}, json.dumps(doc)
