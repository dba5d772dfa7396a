"""An Iceberg table re-attested after a merge-on-read delete: the content digests must be of the rows readers get.

``attest record`` reuses the digests the attestation in force recorded for the data files it covers, keyed by each
file's path and reader-view entry. An Iceberg data file's entry (its manifest fields, data sequence number and
location) does not change when a later snapshot adds a position delete file or deletion vector for it — the file is
the same, other rows are deleted. So once a table had a delete file (format v2, every v3 table), a record after a
merge-on-read ``DELETE`` reused the digest of the file's rows *before* the delete: the attestation's content counted
the deleted row (measured: pyiceberg read ids 2 and 4, the attestation said 3 rows), and a later ``replace`` writing
the deleted row back (ids 2, 3, 4) was ``VERIFIED (content; …, same rows)``. Now a digest is reused only when the
delete files each reader applies to the file are those it was recorded with.

Also here (pyiceberg-made, as it needs a manifest rewritten in place): a v2 delete manifest given a
``referenced_data_file`` after the attestation, which Iceberg Java scopes the delete file by (the Spark measurement is
tests/adversarial/test_spark_referenced_data_file.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_records import attested_again
from tests.adversarial.test_iceberg_delete_physical_types import IDS, _read, _rows
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    commit_delete_file,
    local,
)
from tests.iceberg.rewrites import live_data_files, replace, with_ids

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table



def _deleted_after_attestation(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch | None = None
                               ) -> tuple[Table, Any]:
    """ids 1, 2 and 3, 4 in two files; a position delete of id 1, attested; then a position delete of id 3 (the first
    row of the other file), attested again. Returns the table and the file of ids 3, 4."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2]))
    table.append(_rows([3, 4]))
    first, second = sorted(live_data_files(table), key=lambda f: f.file_path)
    by_first_id = {1: first, 3: second} if _first_id(table, first) == 1 else {1: second, 3: first}
    folder = local(table.location()) / "data"
    commit_delete_file(table, folder / "pos1.parquet", target=by_first_id[1].file_path)
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    commit_delete_file(catalog.load_table("ns.t"), folder / "pos3.parquet", target=by_first_id[3].file_path)
    table = catalog.load_table("ns.t")
    assert _read(table) == [2, 4]
    return attested_again(catalog, table, monkeypatch), by_first_id[3]


def _first_id(table: Table, data_file: Any) -> int:
    import pyarrow.parquet as pq

    return int(pq.read_table(local(data_file.file_path)).column("id")[0].as_py())


def test_a_rewrite_bringing_back_a_row_deleted_before_the_record_is_not_verified(catalog: SqlCatalog) -> None:
    table, _ = _deleted_after_attestation(catalog)
    table = replace(catalog, table, [with_ids(_rows([2, 3, 4]), IDS)])
    assert _read(table) == [2, 3, 4]  # id 3, deleted when the table was attested, is back
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and not doc["passed"] and codes(doc) == ["content_changed"], json.dumps(doc)


def test_an_honest_rewrite_after_the_delete_verifies(catalog: SqlCatalog) -> None:
    """The rows readers got (ids 2, 4), rewritten into one file: the same rows."""
    table, _ = _deleted_after_attestation(catalog)
    replace(catalog, table, [with_ids(_rows([2, 4]), IDS)])
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot"), json.dumps(doc)


def test_a_digest_recorded_before_the_fix_is_no_evidence(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """An attestation whose digest of the file of ids 3, 4 counts the deleted id 3 (recorded as before the fix): the
    judge holds a removed file's recorded row count to the rows readers of the attested snapshot got — its
    ``record_count`` less the positions its delete files delete (``content_rows_read``) — so the rewrite bringing id
    3 back is ``content_changed`` here too, naming the stale digest."""
    table, _ = _deleted_after_attestation(catalog, monkeypatch)
    table = replace(catalog, table, [with_ids(_rows([2, 3, 4]), IDS)])
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], json.dumps(doc)
    assert "recorded without the deletes applied" in json.dumps(doc), json.dumps(doc)


# ---- a v2 delete manifest rewritten in place with a referenced_data_file ------------------------------------------
def _rewrite_delete_manifest_with_reference(table: Table, referenced: str) -> None:
    """Rewrite the current snapshot's delete manifest in place, its one entry's file given ``referenced_data_file``
    (a field Iceberg Java's v2 manifests carry; pyiceberg's v2 writer has no such field, so the entry is written with
    the v3 data-file type in a v2 manifest, as Java's v2 writer lays it out)."""
    import shutil

    from pyiceberg.manifest import (
        DataFile,
        ManifestContent,
        ManifestEntry,
        ManifestWriterV2,
        data_file_with_partition,
        manifest_entry_schema_with_data_file,
    )

    class Writer(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

        def _with_partition(self, format_version: Any) -> Any:
            file_type = data_file_with_partition(format_version=3, partition_type=self._spec.partition_type(
                self._schema))
            return manifest_entry_schema_with_data_file(format_version=2, data_file=file_type)

    snap = table.current_snapshot()
    assert snap is not None
    (manifest,) = [m for m in snap.manifests(table.io) if m.content == ManifestContent.DELETES]
    (entry,) = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    old = entry.data_file
    fields = ("content", "file_path", "file_format", "partition", "record_count", "file_size_in_bytes",
              "column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds",
              "key_metadata", "split_offsets", "equality_ids", "sort_order_id")
    new = DataFile.from_args(_table_format_version=3, **{f: getattr(old, f) for f in fields},
                             referenced_data_file=referenced)
    rewritten = ManifestEntry.from_args(_table_format_version=2, status=entry.status, snapshot_id=entry.snapshot_id,
                                        sequence_number=entry.sequence_number,
                                        file_sequence_number=entry.file_sequence_number, data_file=new)
    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with Writer(table.spec(), table.schema(), table.io.new_output(f"file://{tmp}"), entry.snapshot_id,
                "null") as writer:
        writer.add_entry(rewritten)
    shutil.move(tmp, path)


def test_a_delete_file_given_a_reference_in_place_is_a_changed_view(catalog: SqlCatalog) -> None:
    """After the attestation, the v2 delete manifest rewritten in place: the delete file of id 1 (position 0 of the
    file of ids 1, 2) now references the file of ids 3, 4. Iceberg Java scopes it to that file, where it deletes
    nothing (measured with Spark on a file committed so: tests/adversarial/test_spark_referenced_data_file.py),
    pyiceberg still deletes id 1. The manifest was read with v2's schema, without the field: VERIFIED before."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2]))
    table.append(_rows([3, 4]))
    files = live_data_files(table)
    target = next(f for f in files if _first_id(table, f) == 1)
    other = next(f for f in files if f is not target)
    commit_delete_file(table, local(table.location()) / "data" / "pos1.parquet", target=target.file_path)
    table = catalog.load_table("ns.t")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0, json.dumps(doc)
    table = catalog.load_table("ns.t")
    _rewrite_delete_manifest_with_reference(table, other.file_path)
    from pyiceberg.manifest import clear_manifest_cache

    clear_manifest_cache()
    assert _read(catalog.load_table("ns.t")) == [2, 3, 4]  # pyiceberg: unchanged
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], json.dumps(doc)
