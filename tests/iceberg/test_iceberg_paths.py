"""Iceberg locations are literal strings: pyiceberg (and Java's HadoopFileIO) read ``.../p=x%2Fy/f.parquet`` from a
folder literally named ``p=x%2Fy``. Attest must read the same file, never a percent-decoded other one."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.table import Table

from attest.verify.table import verify_table
from carriers.iceberg import IcebergCarrier, attest_after_write
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
