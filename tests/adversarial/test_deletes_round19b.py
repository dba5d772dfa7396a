"""Round 19b, delete applicability: a manifest's partition tuple stored with other field *types* than its spec's.

Iceberg Java reads a manifest's partition tuple as its spec's partition type (an Avro int promoted to a long, a float
to a double); pyiceberg 0.12 reads it as the manifest's own Avro schema says (``data_file.partition`` is read with the
file's types), and matches position delete files to data files by comparing the two tuples. The forgery: the delete
manifest of tests/adversarial/test_deletes_round19.py rewritten in place, every entry as it was, its partition field
``p`` (a ``long``, id 1000) stored as a ``string`` ``"2"`` or a ``double`` ``2.0``; or the data manifest of p = 2 so
rewritten. Measured (pyiceberg 0.12, Spark 4.1 / Iceberg 1.12 in test_spark_deletes_round19b.py): the position delete
no longer applied in either engine (the full reads alike, id 3 back), but a read filtered on the partition split them
— Spark's ``p = 2`` failed (``IllegalArgumentException``) where pyiceberg read ids 3, 4, or, for the string data
manifest, no row at all (``"2"`` is not ``2``). ``record`` attested such a table (the round-19 check compares field
ids only); ``verify`` of one retyped after its record said ``reader_view_changed``. Now ``table_inconsistent`` at
``record`` and ``verify``; so is an ``int`` partition stored as a ``long`` (Spark's ``p = 2`` failed, pyiceberg's read
ids 3, 4). Stored types every reader widens alike (an int for the spec's long, as a manifest written
before a column's promotion keeps) still record (test_deletes_held_round19b.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_lists import rewrite_manifest
from tests.adversarial.test_deletes_round19 import ids, partitioned
from tests.iceberg.conftest import CATALOG, PROGRAM

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

KINDS = ("string", "double", "int", "date")


def retyped_partition(table: Table, kind: str, *, content: int = 1) -> None:
    """The current snapshot's manifest of ``content`` (1 deletes, 0 data) holding partition p = 2 rewritten in place,
    its entries as they were but for the partition value converted to ``kind``, its Avro partition field ``p`` (id
    1000, as the spec's) of that type."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, DoubleType, IntegerType, LongType, NestedField, StringType

    kinds: dict[str, tuple[Any, Any]] = {"string": (StringType(), str), "double": (DoubleType(), float),
                                         "int": (IntegerType(), int), "date": (DateType(), int)}
    iceberg_type, convert = kinds[kind]
    snap = table.current_snapshot()
    assert snap is not None
    (manifest, entries), *_ = [(m, es) for m in snap.manifests(table.io) if int(m.content.value) == content
                               for es in [m.fetch_manifest_entry(table.io, discard_deleted=False)]
                               if any(e.data_file.partition[0] == 2 for e in es)]
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "p", iceberg_type))

    def retype(entry: Any) -> None:
        entry.data_file.partition[0] = convert(entry.data_file.partition[0])

    rewrite_manifest(table, manifest, entries, spec=table.spec(), schema=schema, deletes=content == 1, edit=retype)


@pytest.mark.parametrize("kind", ["string", "double"])
def test_pyiceberg_reads_the_deleted_row_back(catalog: SqlCatalog, kind: str) -> None:
    table = partitioned(catalog)
    assert ids(table) == [1, 2, 4]
    retyped_partition(table, kind)
    table = catalog.load_table("ns.t")
    assert ids(table) == [1, 2, 3, 4] and ids(table, "p = 2") == [3, 4]


@pytest.mark.parametrize("content", [1, 0], ids=["delete manifest", "data manifest"])
@pytest.mark.parametrize("kind", ["string", "double"])
def test_record_refuses_a_partition_field_stored_as_another_type(catalog: SqlCatalog, kind: str,
                                                                 content: int) -> None:
    table = partitioned(catalog)
    retyped_partition(table, kind, content=content)
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "field 1000 is stored as" in refused.value.message


@pytest.mark.parametrize("kind", ["string", "double"])
def test_verify_refuses_a_partition_field_retyped_after_the_record(catalog: SqlCatalog, kind: str) -> None:
    table = partitioned(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)
    retyped_partition(catalog.load_table("ns.t"), kind)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "table_inconsistent" in codes(doc), json.dumps(doc)


def test_a_date_stored_for_a_long_is_refused_by_design(catalog: SqlCatalog) -> None:
    """pyiceberg reads the same rows (the days are the long's value); no writer writes a date for a long: refused."""
    table = partitioned(catalog)
    retyped_partition(table, "date")
    assert ids(catalog.load_table("ns.t")) == [1, 2, 4]
    with pytest.raises(AttestError) as refused:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message


def swapped(catalog: Any, ident: str) -> None:
    """A table partitioned by identity(p), identity(q) (ids 1000, 1001) of rows (1, p 1, q 10), (2, p 2, q 20); its
    data manifest rewritten in place with the two fields' ids swapped (the tuple's positions kept)."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64()), pa.field("q", pa.int64())])
    table = catalog.create_table(ident, schema=schema)
    with table.update_spec() as spec:
        spec.add_identity("p")
        spec.add_identity("q")
    table.append(pa.table({"id": [1, 2], "p": [1, 2], "q": [10, 20]}, schema=schema))
    table = catalog.load_table(ident)
    snap = table.current_snapshot()
    assert snap is not None
    (manifest,) = snap.manifests(table.io)
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    forged = PartitionSpec(PartitionField(source_id=2, field_id=1001, transform=IdentityTransform(), name="p"),
                           PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="q"),
                           spec_id=table.spec().spec_id)
    rewrite_manifest(table, manifest, entries, spec=forged, schema=table.schema(), deletes=False)


def int_stored_as_long(catalog: SqlCatalog, ident: str = "ns.i") -> Table:
    """ids 1, 2 (p = 1) then 3, 4 (p = 2) in two appends, partitioned by identity(p) of an ``int`` column; the second
    append's data manifest rewritten in place with p stored as an Avro ``long`` (the values unchanged)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int32())])
    table = catalog.create_table(ident, schema=schema)
    with table.update_spec() as spec:
        spec.add_identity("p")
    table.append(pa.table({"id": [1, 2], "p": [1, 1]}, schema=schema))
    table.append(pa.table({"id": [3, 4], "p": [2, 2]}, schema=schema))
    table = catalog.load_table(ident)
    snap = table.current_snapshot()
    assert snap is not None
    manifest = next(m for m in snap.manifests(table.io) if m.added_snapshot_id == snap.snapshot_id)
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    as_long = Schema(NestedField(1, "id", LongType()), NestedField(2, "p", LongType()))
    rewrite_manifest(table, manifest, entries, spec=table.spec(), schema=as_long, deletes=False)
    return catalog.load_table(ident)


def test_record_refuses_an_int_partition_stored_as_a_long(catalog: SqlCatalog) -> None:
    """pyiceberg reads the long as the int (``p = 2``: ids 3, 4); Spark's ``p = 2`` failed
    (``IllegalArgumentException``, test_spark_deletes_round19b.py). No writer writes a partition wider than its spec's
    type: recorded before."""
    table = int_stored_as_long(catalog)
    assert ids(table, "p = 2") == [3, 4]
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
