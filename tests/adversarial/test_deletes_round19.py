"""Round 19, delete applicability: which deleted rows each engine hides, by the sequence numbers readers plan with.

pyiceberg 0.12 skips a delete manifest whose manifest-list ``sequence_number`` is below the smallest
``min_sequence_number`` of the data manifests it plans (``DataScan._check_sequence_number``), and it computes that
smallest *after* pruning manifests by the query's partition filter (``_min_sequence_number`` of the manifests step 1
kept). The model (carriers/iceberg/deletes.py) took the smallest over every data manifest, the full read's.

The forgery: a position delete file hiding a row of the second data file (``p = 2``, sequence number 2), its manifest
entry given its sequence number (3) explicitly, and the delete manifest's list ``sequence_number`` then lowered to 1.
Every entry and file view stays as it was (the entry's data sequence number is still 3) and the full read's plan is
unchanged (the smallest data manifest number is 1, the first file's); but ``p = 2`` prunes the first data manifest,
the smallest becomes 2 and pyiceberg skips the delete manifest. Measured (pyiceberg 0.12): the full scan read ids 1,
2, 4 (id 3 hidden), ``p = 2`` read the deleted id 3 back; Spark applied the delete to both reads. ``record`` made over
the forged table attested and ``verify`` after the forgery said VERIFIED. No writer writes an entry whose data
sequence number is above its manifest's (added entries inherit it, existing ones are older): now
``table_inconsistent``.

A manifest's partition tuple renumbered: Iceberg Java projects it by the spec's field ids, pyiceberg (and the
carrier's reader) take it by position. A delete (or data) manifest rewritten with its partition field numbered 1001
rather than 1000: Spark returned the deleted row, pyiceberg hid it, and it was attested (VERIFIED before); now
``table_inconsistent``.

Delta: an inline deletion vector whose ``sizeInBytes`` stops short of its bitmap: delta-rs reads every decoded byte,
Spark the stated ones (its read failed; measured in test_spark_deletes_round19.py) — VERIFIED before; now
``table_inconsistent``.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_lists import edit_manifest_list
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    commit_delete_entry,
    local,
    manifest_writer,
)

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

PATH_ID, POS_ID = 2147483546, 2147483545


def partitioned(catalog: SqlCatalog, ident: str = "ns.t") -> Table:
    """ids 1, 2 (p = 1) then 3, 4 (p = 2) in two appends, partitioned by identity(p); a position delete file of
    partition p = 2 hiding id 3 (row 0 of the second file), in a delete manifest of its own (sequence number 3)."""
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64())])
    table = catalog.create_table(ident, schema=schema)
    with table.update_spec() as spec:
        spec.add_identity("p")
    table.append(pa.table({"id": [1, 2], "p": [1, 1]}, schema=schema))
    table.append(pa.table({"id": [3, 4], "p": [2, 2]}, schema=schema))
    (second,) = [t.file for t in table.scan(row_filter="p = 2").plan_files()]
    path = local(table.location()) / "data" / "pos.parquet"

    def fid(name: str, t: pa.DataType, i: int) -> pa.Field:
        return pa.field(name, t, nullable=False, metadata={b"PARQUET:field_id": str(i).encode()})

    spec_schema = pa.schema([fid("file_path", pa.string(), PATH_ID), fid("pos", pa.int64(), POS_ID)])
    pq.write_table(pa.table({"file_path": [second.file_path], "pos": pa.array([0], pa.int64())}, schema=spec_schema),
                   path)
    df = DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path=f"file://{path}",
                            file_format=FileFormat.PARQUET, partition=Record(2), record_count=1,
                            file_size_in_bytes=path.stat().st_size)
    commit_delete_entry(table, df)
    return catalog.load_table(ident)


def explicit_then_lowered(table: Table, *, listed: int = 1, entry: int | None = None) -> None:
    """The delete manifest's entry given its data sequence number explicitly (``entry``, default the one it
    inherits), then the list's ``sequence_number`` of that manifest set to ``listed`` (both rewritten in place)."""
    from pyiceberg.manifest import ManifestContent, ManifestEntry

    snap = table.current_snapshot()
    assert snap is not None
    (manifest,) = [m for m in snap.manifests(table.io) if m.content == ManifestContent.DELETES]
    (old,) = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    rewritten = ManifestEntry.from_args(status=old.status, snapshot_id=old.snapshot_id,
                                        sequence_number=old.sequence_number if entry is None else entry,
                                        file_sequence_number=old.file_sequence_number, data_file=old.data_file)
    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with manifest_writer(table.spec(), table.schema(), table.io.new_output(f"file://{tmp}"), old.snapshot_id,
                         deletes=True) as writer:
        writer.add_entry(rewritten)
    shutil.move(tmp, path)

    def edit(manifests: list[Any], names: list[str]) -> None:
        for m in manifests:
            if m.content == ManifestContent.DELETES:
                m._data[names.index("sequence_number")] = listed

    edit_manifest_list(local(snap.manifest_list), 2, edit)


def ids(table: Table, expr: str | None = None) -> list[int]:
    scan = table.scan() if expr is None else table.scan(row_filter=expr)
    return sorted(scan.to_arrow().column("id").to_pylist())


def test_pyiceberg_filtered_read_skips_the_lowered_delete_manifest(catalog: SqlCatalog) -> None:
    table = partitioned(catalog)
    assert ids(table) == [1, 2, 4] and ids(table, "p = 2") == [4]
    explicit_then_lowered(table)
    table = catalog.load_table("ns.t")
    assert ids(table) == [1, 2, 4]  # the full read: the first data manifest's number (1) keeps the delete manifest
    assert ids(table, "p = 2") == [3, 4]  # pruned to the second, whose 2 is above the lowered 1: the row is back


def test_record_refuses_a_delete_manifest_listed_below_its_entries(catalog: SqlCatalog) -> None:
    table = partitioned(catalog)
    explicit_then_lowered(table)
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "sequence number" in refused.value.message


def test_verify_refuses_the_list_lowered_after_the_record(catalog: SqlCatalog) -> None:
    table = partitioned(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)
    explicit_then_lowered(catalog.load_table("ns.t"))
    assert ids(catalog.load_table("ns.t"), "p = 2") == [3, 4]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "table_inconsistent" in codes(doc), json.dumps(doc)


def renumbered_partition(table: Table, field_id: int = 1001, *, content: int = 1) -> None:
    """The current snapshot's manifest of ``content`` (1 deletes, 0 data) holding partition p = 2 rewritten in
    place with its entries as they were, its Avro partition struct's field given id ``field_id`` rather than the
    spec's (the manifest's header spec says so too)."""
    from pyiceberg.manifest import ManifestContent, clear_manifest_cache
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    snap = table.current_snapshot()
    assert snap is not None
    (manifest, entries), *_ = [(m, es) for m in snap.manifests(table.io) if int(m.content.value) == content
                               for es in [m.fetch_manifest_entry(table.io, discard_deleted=False)]
                               if any(e.data_file.partition[0] == 2 for e in es)]
    spec = PartitionSpec(PartitionField(source_id=2, field_id=field_id, transform=IdentityTransform(), name="p"),
                         spec_id=table.spec().spec_id)
    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with manifest_writer(spec, table.schema(), table.io.new_output(f"file://{tmp}"), entries[0].snapshot_id,
                         deletes=content == int(ManifestContent.DELETES.value)) as writer:
        for entry in entries:
            writer.add_entry(entry)
    shutil.move(tmp, path)
    clear_manifest_cache()


@pytest.mark.parametrize("content", [1, 0], ids=["delete manifest", "data manifest"])
def test_record_refuses_a_manifest_whose_partition_field_is_renumbered(catalog: SqlCatalog, content: int) -> None:
    """pyiceberg reads the tuple by position (the deleted row stays hidden); Java by field id, as null (measured with
    Spark: test_spark_deletes_round19.py)."""
    table = partitioned(catalog)
    renumbered_partition(table, content=content)
    assert ids(catalog.load_table("ns.t")) == [1, 2, 4]
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "field ids [1001]" in refused.value.message


def test_verify_refuses_a_partition_field_renumbered_after_the_record(catalog: SqlCatalog) -> None:
    table = partitioned(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    renumbered_partition(catalog.load_table("ns.t"))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "table_inconsistent" in codes(doc), json.dumps(doc)


def test_a_manifest_rewritten_with_the_specs_ids_verifies(catalog: SqlCatalog) -> None:
    table = partitioned(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    renumbered_partition(catalog.load_table("ns.t"), 1000)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)


# ---- Delta: an inline deletion vector stating fewer bytes than its bitmap takes ------------------------------------
def inline_vector(path: Path, *, short: int = 0, rows: tuple[int, ...] = (1,)) -> None:
    """A ``dataChange: false`` rewrite of the attested Delta file (tests/adversarial/test_delta_dv_cardinality.py)
    with its vector of ``rows`` inline in the log, its ``sizeInBytes`` ``short`` bytes below the bitmap's length."""
    from carriers.delta.log import z85_encode
    from tests.adversarial import test_delta_dv_cardinality as cardinality
    from tests.delta.dv import MAGIC, _roaring32

    data = struct.pack("<i", MAGIC) + struct.pack("<QI", 1, 0) + _roaring32(list(rows))
    cardinality._rewrite(path, buckets=[(0, list(rows))])
    log = sorted(path.glob("_delta_log/*.json"))[-1]
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["deletionVector"] = {"storageType": "i", "sizeInBytes": len(data) - short,
                                               "cardinality": len(rows),
                                               "pathOrInlineDv": z85_encode(data + b"\0" * (-len(data) % 4))}
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    shutil.rmtree(path / "cd")


@pytest.fixture
def delta(tmp_path: Path) -> Path:
    from tests.adversarial.test_content_rewrite_delta import _attested

    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    return path


def test_an_inline_vector_stated_short_is_not_verified(delta: Path) -> None:
    """delta-rs reads every decoded byte (row 1 deleted: the attested rows); Spark reads the stated bytes and fails the
    read (measured: test_spark_deletes_round19.py) — ``VERIFIED (content; compacted …, same rows)`` before."""
    inline_vector(delta, short=2)
    rc, doc = verify(str(delta), "--level", "bytes")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "table_inconsistent" in codes(doc), json.dumps(doc)


def test_record_refuses_an_inline_vector_stated_short(delta: Path) -> None:
    from carriers.delta.carrier import attest_after_write as delta_attest

    inline_vector(delta, short=2)
    with pytest.raises(AttestError) as refused:
        delta_attest(str(delta), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message


def test_the_same_vector_inline_verifies(delta: Path) -> None:
    inline_vector(delta)
    rc, doc = verify(str(delta), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), json.dumps(doc)
