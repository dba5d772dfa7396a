"""Round 17b, Iceberg: integers stored past their Parquet annotation's width (the Delta attack of
``test_delta_round17.py``, measured for Iceberg).

A Parquet INT32 column annotated INT(8) or INT(16) holds 32-bit values: a file may store 300 under INT(8) (pyarrow
writes an ``int8`` column so, and pyiceberg's ``add_files`` takes such a file for an ``int`` column). Measured with
Spark 4.1 / Iceberg 1.12 (``test_spark_iceberg_round17b.py``): Iceberg Java read the stored values, vectorized and
not — 300 under INT(8), 70000 under INT(16) — while pyiceberg 0.12 read them through pyarrow truncated (44, 4464),
as the content digest did. ``record`` bound the digest of 44 and verify said VERIFIED while Spark returned 300. Now
such a file is ``table_inconsistent`` at record, and a rewrite adding one is ``content_changed`` (it was
``table_inconsistent`` before, as any INT(8) file a rewrite adds: ``_representation_problem``). A file whose INT(8)
values fit still records, its digest bound.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog_properties, local  # noqa: F401
from tests.iceberg.rewrites import replace

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

REF = f"iceberg://{CATALOG}/ns.t"



def narrow_file(path: Path, values: list[int], kind: pa.DataType | None = None, field_id: int | None = None) -> Path:
    """A Parquet file of one column ``v`` (INT32 annotated INT(8), or INT(16) for ``kind`` int16), storing ``values``
    as int32: plain and uncompressed, each value's four bytes written over the ones pyarrow wrote for its low 7 bits.
    Tagged with Parquet field id ``field_id`` when given."""
    kind = kind or pa.int8()
    low = [v & 0x7F for v in values]
    field = pa.field("v", kind, metadata=None if field_id is None else {b"PARQUET:field_id": str(field_id).encode()})
    pq.write_table(
        pa.table({"v": pa.array(low, kind)}).cast(pa.schema([field])),
        path,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
    )
    data = path.read_bytes()
    at = data.index(b"".join(struct.pack("<i", v) for v in low))
    path.write_bytes(data[:at] + b"".join(struct.pack("<i", v) for v in values) + data[at + 4 * len(values) :])
    return path


def narrow_table(catalog: SqlCatalog, values: list[int], kind: pa.DataType | None = None) -> Table:
    """A table ``ns.t`` (v int) whose one data file, added by pyiceberg's ``add_files``, stores ``values``."""
    table = catalog.create_table("ns.t", schema=pa.schema([pa.field("v", pa.int32())]))
    folder = local(table.location()) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = narrow_file(folder / "narrow.parquet", values, kind)
    table.add_files([f"file://{path}"])
    return catalog.load_table("ns.t")


@pytest.mark.parametrize(
    ("kind", "values", "truncated"), [(pa.int8(), [300, 1], [44, 1]), (pa.int16(), [70000, 1], [4464, 1])]
)
def test_record_refuses_integers_past_their_annotation(
    catalog: SqlCatalog, kind: pa.DataType, values: list[int], truncated: list[int]
) -> None:
    table = narrow_table(catalog, values, kind)
    assert table.scan().to_arrow().column("v").to_pylist() == truncated  # pyiceberg truncates
    with pytest.raises(AttestError) as caught:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "past the width" in str(caught.value), caught.value


def test_record_binds_a_digest_of_narrow_integers_that_fit(catalog: SqlCatalog) -> None:
    table = narrow_table(catalog, [100, -1])
    written = attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert written.content is not None
    rc, doc = verify(REF, "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc


def narrow_rewrite(catalog: SqlCatalog) -> Table:
    """``ns.t`` (v int) of 44 and 1 written by pyiceberg, recorded; then a ``replace`` snapshot of its one file by a
    file storing 300 and 1 under an INT(8) annotation (field id 1), which pyiceberg reads as 44 and 1."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    table = catalog.create_table("ns.t", schema=pa.schema([pa.field("v", pa.int32())]))
    table.append(pa.table({"v": pa.array([44, 1], pa.int32())}))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    path = narrow_file(local(table.location()) / "data" / "rewritten-narrow.parquet", [300, 1], field_id=1)
    added = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f"file://{path}",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=2,
        file_size_in_bytes=path.stat().st_size,
        spec_id=0,
    )
    return replace(catalog, table, data_files=[added])


def test_a_rewrite_storing_integers_past_their_annotation_is_content_changed(catalog: SqlCatalog) -> None:
    table = narrow_rewrite(catalog)
    assert table.scan().to_arrow().column("v").to_pylist() == [44, 1]  # the attested rows, as pyiceberg reads them
    rc, doc = verify(REF, "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "past the width" in str(doc), doc
