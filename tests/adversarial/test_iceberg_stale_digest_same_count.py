"""A stale content digest of an Iceberg data file that counts as many rows as readers got (one deleted row swapped for
another): the gap test_iceberg_record_after_delete.py's row-count check leaves.

The table: one data file of ids 3, 4, 5; a position delete of id 4, attested (the file's digest: ids 3, 5). A later
snapshot drops that delete file and adds one deleting id 3 (readers get 4, 5), and is attested as the code before
``content_reuse_blocked`` did (every digest of the attestation in force reused): the file's recorded digest still
says 3, 5 — two rows, as many as readers got, so the judge's row count (``content_rows_read``) agreed. A ``replace``
then writing ids 3 and 5 (id 4 gone, the deleted id 3 back; pyiceberg reads 3, 5) was ``VERIFIED (content; …, same
rows)`` (measured on the code before). Now the judge re-digests each removed file that delete files apply to from its
attested bytes (held to their recorded BLAKE3, as are its delete files': ``IcebergCarrier.content_redigest``) and
holds the recorded digest to it: ``content_changed``. An honest record and rewrite of the same table verifies.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_records import attested_again
from tests.adversarial.test_iceberg_delete_physical_types import IDS, _read, _rows
from tests.iceberg.conftest import (
    CATALOG,
    PROGRAM,
    commit_delete_file,
    local,
)
from tests.iceberg.rewrites import live_data_files, replace, with_ids

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

REF = f"iceberg://{CATALOG}/ns.t"



def _at(pos: int) -> Any:
    """A position delete file's table edited to delete position ``pos`` (the field ids kept)."""
    return lambda t: t.set_column(1, t.schema.field(1), pa.array([pos], pa.int64()))


def _drop_delete_manifest(table: Table, keep_added_by: int | None, snapshot_id: int | None = None) -> None:
    """Rewrite the current snapshot's (or ``snapshot_id``'s) manifest list in place without the delete manifests
    other snapshots than ``keep_added_by`` added: its earlier delete file is no longer live (as a commit removing it
    leaves it), the one it added stays."""
    from pyiceberg.manifest import ManifestContent, clear_manifest_cache, read_manifest_list, write_manifest_list

    snap = table.current_snapshot() if snapshot_id is None else table.snapshot_by_id(snapshot_id)
    assert snap is not None
    manifests = [m for m in read_manifest_list(table.io.new_input(snap.manifest_list))
                 if m.content != ManifestContent.DELETES or m.added_snapshot_id == keep_added_by]
    path = local(snap.manifest_list)
    tmp = path.with_suffix(".new.avro")
    with write_manifest_list(format_version=table.metadata.format_version,
                             output_file=table.io.new_output(f"file://{tmp}"), snapshot_id=snap.snapshot_id,
                             parent_snapshot_id=snap.parent_snapshot_id, sequence_number=snap.sequence_number,
                             avro_compression="null") as writer:
        writer.add_manifests(manifests)
    shutil.move(tmp, path)
    clear_manifest_cache()


def _swapped(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch | None) -> Table:
    """The table above, its second attestation recorded as the code before the fix did (``monkeypatch`` given) or
    as now. Returns it reloaded."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([3, 4, 5]))
    (data,) = live_data_files(table)
    folder = local(table.location()) / "data"
    commit_delete_file(table, folder / "del4.parquet", target=data.file_path, stored=_at(1))
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    commit_delete_file(catalog.load_table("ns.t"), folder / "del3.parquet", target=data.file_path, stored=_at(0))
    table = catalog.load_table("ns.t")
    snap = table.current_snapshot()
    assert snap is not None
    _drop_delete_manifest(table, keep_added_by=snap.snapshot_id)
    table = catalog.load_table("ns.t")
    assert _read(table) == [4, 5]
    return attested_again(catalog, table, monkeypatch)


def test_a_stale_digest_of_as_many_rows_is_no_evidence(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    table = _swapped(catalog, monkeypatch)
    table = replace(catalog, table, [with_ids(_rows([3, 5]), IDS)])
    assert _read(table) == [3, 5]  # the deleted id 3 back, id 4 gone
    rc, doc = verify(REF)
    assert rc == 1 and codes(doc) == ["content_changed"], json.dumps(doc)
    assert "read again from its attested bytes" in json.dumps(doc), json.dumps(doc)


def test_the_honest_record_and_rewrite_verify(catalog: SqlCatalog) -> None:
    table = _swapped(catalog, None)
    table = replace(catalog, table, [with_ids(_rows([4, 5]), IDS)])
    assert _read(table) == [4, 5]
    rc, doc = verify(REF)
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), json.dumps(doc)


def test_a_removed_file_changed_in_place_is_no_evidence_either(catalog: SqlCatalog,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite's committer also overwrites the data file it removed (no reader of the current snapshot reads it,
    nothing verifies its bytes) with ids 9, 3, 5: read again under the delete of position 0, its rows are the stale
    digest's (3, 5). Its bytes are held to the BLAKE3 the attestation recorded, so it is not read as evidence."""
    import pyarrow.parquet as pq

    table = _swapped(catalog, monkeypatch)
    (data,) = live_data_files(table)
    replace(catalog, table, [with_ids(_rows([3, 5]), IDS)])
    pq.write_table(with_ids(_rows([9, 3, 5]), IDS), local(data.file_path))
    rc, doc = verify(REF)
    assert rc == 1 and codes(doc) == ["content_changed"], json.dumps(doc)
    assert "no longer holds the attested bytes" in json.dumps(doc), json.dumps(doc)


def test_the_attested_snapshot_made_delete_free_in_place_is_no_evidence_either(
        catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tried and held: the rewrite's committer also rewrites the attested snapshot's manifest list in place without
    its delete manifest (no reader of the current snapshot reads it), so that the file looks delete-free there and
    neither the row count nor the re-read holds its recorded digest to anything. The history walk already sees the
    delete file appear between the attested snapshot and the rewrite (no rewrite, ``compacted``); the re-read also
    holds the attested snapshot's listing and delete plan to the attestation's view before trusting it."""
    table = _swapped(catalog, monkeypatch)
    rc, doc = verify(REF)
    attested = int(doc["attested_version"])
    table = replace(catalog, table, [with_ids(_rows([3, 5]), IDS)])
    _drop_delete_manifest(table, None, snapshot_id=attested)
    rc, doc = verify(REF)
    assert rc == 1 and codes(doc) == ["compacted"], json.dumps(doc)


def test_the_re_read_trusts_no_listing_or_plan_other_than_the_attested_one(catalog: SqlCatalog) -> None:
    """The seam itself: the honest attestation re-reads the file to its recorded digest; the same attestation with
    another recorded delete plan, or another file list, gets a reason for every file instead (no digest)."""
    import dataclasses

    from carriers.iceberg.carrier import IcebergCarrier

    table = _swapped(catalog, None)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    att = carrier.read()
    assert att is not None and att.view is not None and att.files is not None and att.attested_version is not None
    attested = carrier._resolve(att.attested_version)
    (data,) = [f.path for f in att.files if f.kind == "data"]
    (got,) = carrier.content_redigest(att, attested, [data]).values()
    assert not isinstance(got, str) and got.rows == 2
    other_plan = dataclasses.replace(att, view=dataclasses.replace(att.view, table={**att.view.table, "deletes": "x"}))
    fewer_files = dataclasses.replace(att, files=tuple(f for f in att.files if f.kind == "data"))
    for forged in (other_plan, fewer_files):
        (why,) = carrier.content_redigest(forged, attested, [data]).values()
        assert isinstance(why, str) and "no longer lists the files" in why, why


@pytest.mark.parametrize("stale", [False, True])
def test_an_attestation_recorded_before_plans_were_bound_is_re_read_by_its_entries(
        catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, stale: bool) -> None:
    """An attestation whose view has no ``deletes`` (recorded before the plan was bound): measured before, every
    rewrite removing a file with deletes was ``content_changed`` ("re-attest"). While the attested snapshot lives, its
    plan is rebuilt from its metadata when every file's view entry and the partition specs are the recorded ones (Java
    plans from nothing else; pyiceberg's manifest-list shortcut must agree): the file is read again from its attested
    bytes, and that digest — not the recorded one — is what the judge compares (a stale recorded digest still fails).
    A file entry other than the recorded one (here: any, the recorded entry digests replaced) leaves it re-attest."""
    import dataclasses

    from carriers.iceberg.carrier import IcebergCarrier

    table = _swapped(catalog, monkeypatch if stale else None)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    att = carrier.read()
    assert att is not None and att.view is not None and att.files is not None and att.attested_version is not None
    attested = carrier._resolve(att.attested_version)
    (data,) = [f.path for f in att.files if f.kind == "data"]
    unbound = dataclasses.replace(att, view=dataclasses.replace(
        att.view, table={k: v for k, v in att.view.table.items() if k != "deletes"}))
    (got,) = carrier.content_redigest(unbound, attested, [data]).values()
    (bound,) = carrier.content_redigest(att, attested, [data]).values()
    assert not isinstance(got, str) and got == bound and got.rows == 2  # readers got ids 4, 5, stale or not
    other_entries = dataclasses.replace(unbound, view=dataclasses.replace(
        unbound.view, files={p: "0" * 64 for p in unbound.view.files}))
    (why,) = carrier.content_redigest(other_entries, attested, [data]).values()
    assert isinstance(why, str) and "re-attest" in why, why
