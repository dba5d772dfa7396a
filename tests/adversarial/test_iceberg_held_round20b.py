"""Round 20b, Iceberg variants that held — measured with Spark 4.1 / Iceberg 1.12 and pyiceberg 0.12
(test_spark_iceberg_round20b.py):

- **A partition value stored in another type than its spec's, left from round 19**: a ``date`` or ``timestamp``
  identity partition stored in the data manifest as an Avro ``string`` (``"2024-01-02"``, ``"2024-01-02T03:04:05"``),
  a ``decimal(10, 2)`` stored as ``decimal(10, 3)`` (``2.500``). The strings: pyiceberg's full read returns every
  row and its filtered read prunes the file (``d = '2024-01-02'``: no row where id 3 is), while Spark fails every
  read selecting ``d`` (``ClassCastException``: an identity partition is a constant from the manifest) and the
  filtered one (``IllegalArgumentException``) — the readers differ, ``record``'s refusal (``table_inconsistent``,
  round 19) is right. The decimal: both read the same rows, filtered alike (measured) — an over-refusal, kept: Spark
  rounds the manifest's decimal to the column's scale (``Decimal.set``), so a value the spec's scale cannot hold
  would read otherwise (reasoned from the source, not measured).
- **Dates and timestamps outside Python's years 1–9999** (Spark writes ``+10002-09-26``, ``-0002-04-07``, timestamps
  of year 11476 and -249; pyiceberg cannot even append them, ``OverflowError``): ``record`` attests them (their
  footer bounds are held as the integers Parquet stores) and they verify, or, under a ``years`` partition, refuses
  with a coded error (the partition value "cannot be held to its rows (date value out of range)"), never
  ``internal_error``; an attested table whose manifest bounds or
  partition value are edited to such a date is ``reader_view_changed`` / ``table_inconsistent`` at every level.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_lists import rewrite_manifest
from tests.iceberg.conftest import CATALOG, PROGRAM

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog

DAY = datetime.date(2024, 1, 2)
VALUES: dict[str, tuple[Any, Any, Any, str]] = {  # arrow type, the first append's value, the second's, a filter on it
    "date": (pa.date32(), datetime.date(2024, 1, 1), DAY, "d = '2024-01-02'"),
    "timestamp": (
        pa.timestamp("us"),
        datetime.datetime(2024, 1, 1),
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        "d = '2024-01-02T03:04:05'",
    ),
    "decimal": (pa.decimal128(10, 2), decimal.Decimal("1.00"), decimal.Decimal("2.50"), "d = 2.50"),
}


def retyped(catalog: SqlCatalog, ident: str, kind: str) -> Any:
    """ids 1, 2 then 3 in two appends, identity-partitioned by ``d`` of ``kind``; the second append's data manifest
    rewritten in place with ``d`` stored as a string (date, timestamp: ISO text) or ``decimal(10, 3)``."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DecimalType, LongType, NestedField, StringType

    arrow, first, second, _ = VALUES[kind]
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("d", arrow)])
    table = catalog.create_table(ident, schema=schema)
    with table.update_spec() as spec:
        spec.add_identity("d")
    table.append(pa.table({"id": [1, 2], "d": [first, first]}, schema=schema))
    table.append(pa.table({"id": [3], "d": [second]}, schema=schema))
    table = catalog.load_table(ident)
    snap = table.current_snapshot()
    assert snap is not None
    manifest = next(m for m in snap.manifests(table.io) if m.added_snapshot_id == snap.snapshot_id)
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    stored = DecimalType(10, 3) if kind == "decimal" else StringType()

    def edit(entry: Any) -> None:
        entry.data_file.partition[0] = (
            second.quantize(decimal.Decimal("0.001")) if kind == "decimal" else second.isoformat()
        )

    rewrite_manifest(
        table,
        manifest,
        entries,
        spec=table.spec(),
        schema=Schema(NestedField(1, "id", LongType()), NestedField(2, "d", stored)),
        deletes=False,
        edit=edit,
    )
    return catalog.load_table(ident)


def pyiceberg_ids(table: Any, where: str = "true") -> list[int]:
    return sorted(table.scan(row_filter=where).to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("kind", list(VALUES))
def test_a_partition_value_stored_in_another_type_is_refused(catalog: SqlCatalog, kind: str) -> None:
    """pyiceberg's side of the measurement, and ``record``'s refusal pinned (Spark: test_spark_iceberg_round20b.py)."""
    table = retyped(catalog, "ns.t", kind)
    assert pyiceberg_ids(table) == [1, 2, 3]
    assert pyiceberg_ids(table, VALUES[kind][3]) == ([3] if kind == "decimal" else [])  # the strings: pruned
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "its partition tuple's field 1000 is stored as" in refused.value.message


@pytest.mark.parametrize("where", ["lower", "upper", "partition"])
@pytest.mark.parametrize("days", [3_000_000, -800_000])  # year 10183, year -221
@pytest.mark.parametrize("kind", ["date", "timestamp"])
def test_bounds_and_partitions_outside_pythons_years_are_coded(
    catalog: SqlCatalog, where: str, days: int, kind: str
) -> None:
    """An attested table whose manifest's bound (or identity partition value) of ``d`` is edited to a date outside
    years 1–9999: a coded refusal at every level, never ``internal_error``, never VERIFIED."""
    from pyiceberg.transforms import IdentityTransform

    arrow, first, _, _ = VALUES[kind]
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "d": pa.array([first, first], arrow)})
    table = catalog.create_table("ns.t", schema=data.schema)
    if where == "partition":
        with table.update_spec() as spec:
            spec.add_field("d", IdentityTransform(), "dp")
    table.append(data)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    value = days if kind == "date" else days * 86_400_000_000
    encoded = struct.pack("<i", value) if kind == "date" else struct.pack("<q", value)
    snap = table.current_snapshot()
    assert snap is not None
    (manifest,) = [m for m in snap.manifests(table.io)]
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)

    def edit(entry: Any) -> None:
        if where == "partition":
            entry.data_file.partition[0] = value
        else:
            (entry.data_file.lower_bounds if where == "lower" else entry.data_file.upper_bounds)[2] = encoded

    rewrite_manifest(table, manifest, entries, spec=table.spec(), schema=table.schema(), deletes=False, edit=edit)
    for level in ("files", "bytes"):
        rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", level)
        assert rc != 0 and "internal_error" not in codes(doc), doc
        assert codes(doc) and set(codes(doc)) <= {"reader_view_changed", "table_inconsistent"}, doc
