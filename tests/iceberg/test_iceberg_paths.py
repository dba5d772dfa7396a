"""Iceberg locations are literal strings: pyiceberg (and Java's HadoopFileIO) read ``.../p=x%2Fy/f.parquet`` from a
folder literally named ``p=x%2Fy``. Attest must read the same file, never a percent-decoded other one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from tests.iceberg.conftest import PROGRAM, local


def test_partition_values_that_need_encoding_verify_at_bytes_level(table: Table) -> None:
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["x/y", "a b", "50%"]})
    with table.update_spec() as update:
        update.add_identity("v")
    table.append(data)
    carrier = IcebergCarrier(table)
    locations = [f.location for f in carrier.list_files()]
    assert any("%2F" in loc for loc in locations) and any("%25" in loc for loc in locations)
    assert all(local(loc).is_file() for loc in locations)  # literally named folders
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    report = verify_table(IcebergCarrier(table))
    assert report.passed and report.level == "bytes", report.human()
    victim = local(next(loc for loc in locations if "%2F" in loc))
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 1
    victim.write_bytes(bytes(raw))
    report = verify_table(IcebergCarrier(table))
    assert [p.code.value for p in report.errors] == ["artifact_hash_mismatch"], report.human()


def test_partition_summaries_of_every_transform_and_type_agree_with_their_manifests(catalog: SqlCatalog) -> None:
    """The manifest list's partition bounds are checked against the manifests (a narrowed one hides rows from
    filtered queries): what pyiceberg writes for identity partitions of longs, strings, dates, timestamps, decimals,
    booleans, binary values and nulls verifies (the time and bucket transforms need pyiceberg-core to write; Spark
    writes them in tests/spark)."""
    import datetime
    import decimal

    ts = [datetime.datetime(2026, 1, d, h) for d, h in ((1, 3), (2, 4), (9, 5))]
    data = pa.table({
        "id": pa.array([1, 2, None], pa.int64()),
        "s": ["apple", "banana", None],
        "d": pa.array([t.date() for t in ts], pa.date32()),
        "t": pa.array(ts, pa.timestamp("us")),
        "n": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.25"), None], pa.decimal128(9, 2)),
        "b": pa.array([True, False, None], pa.bool_()),
        "x": pa.array([b"\x00\x01", b"\xff", None], pa.binary()),
    })
    table = catalog.create_table("ns.parts", schema=data.schema)
    with table.update_spec() as update:
        for column in ("id", "s", "d", "t", "n", "b", "x"):
            update.add_identity(column)
    table.append(data)
    table.append(data.slice(0, 1))
    attest_after_write(table, model="parts", program_hash=PROGRAM)
    report = verify_table(IcebergCarrier(table))
    assert report.passed and report.level == "bytes", report.human()
    # ... and each field's bounds are really compared: narrowed to its upper bound, every field is caught.
    from pyiceberg.manifest import clear_manifest_cache, write_manifest_list

    snap = table.current_snapshot()
    assert snap is not None
    listing = local(snap.manifest_list)
    original = listing.read_bytes()
    names = [f.name for f in table.spec().fields]
    for i, name in enumerate(names):
        manifests = snap.manifests(table.io)
        for m in manifests:
            m.partitions[i]._data[2] = m.partitions[i].upper_bound  # lower_bound (pyiceberg has no setter)
        with write_manifest_list(format_version=table.metadata.format_version,
                                 output_file=table.io.new_output(f"file://{listing}.new"), snapshot_id=snap.snapshot_id,
                                 parent_snapshot_id=snap.parent_snapshot_id, sequence_number=snap.sequence_number,
                                 avro_compression="null") as writer:
            writer.add_manifests(manifests)
        Path(f"{listing}.new").replace(listing)
        report = verify_table(IcebergCarrier(table), level="schema")
        assert any(p.code.value == "table_inconsistent" and f"{name} partition values" in p.message
                   for p in report.errors), (name, report.human())
        listing.write_bytes(original)
        clear_manifest_cache()  # the next round edits fresh objects, as read from the file
