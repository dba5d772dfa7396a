"""Round 17 (second pass), Iceberg variants tried and held (pinned so they stay held).

- **A partition-scoped delete under the other signed zero**: a position delete file without equal ``file_path``
  bounds (scoped by its partition) in partition ``x = -0.0`` naming a data file of partition ``x = 0.0`` (or the
  reverse). Measured: pyiceberg 0.12 applied it to no data file (ids 0, 1, 2 read; its delete index keeps the zeros
  apart), as Iceberg Java does (its partition map compares with ``Double.compare``; Spark 4.1 / Iceberg 1.12 read ids
  0, 1, 2, ``test_spark_iceberg_round17c.py``); the model keys partitions by their JSON text (``-0.0`` apart from
  ``0.0``) and digests those rows: attested, VERIFIED. The same zero on both sides applies the delete (ids 1, 2).
- **``date`` promoted to ``timestamp`` / ``timestamp_ns``** by a hand-made metadata commit (Iceberg v3 lists the
  promotion): pyiceberg 0.12 cannot read the old files (``Cannot promote date to timestamp_ns``; for ``timestamp``
  its projection fails), so ``record`` refuses the promoted table (``table_unreadable``), and a promotion committed
  after the attestation is ``reader_view_changed`` (the schemas readers of the snapshot resolve changed).
"""

from __future__ import annotations

import copy
import datetime
import json
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    local,
    manifest_writer,
    rewrite_metadata,
)

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table



def zero_partition_table(catalog: Catalog, ident: str, *, delete_zero: float, data_zero: float = 0.0) -> Table:
    """A table partitioned by ``identity(x)`` (double), ids 0, 1, 2 in one data file of partition ``x = data_zero``,
    and a position delete file of row 0 (id 0) in partition ``x = delete_zero``, without ``file_path`` bounds (scoped
    by its partition, as Spark's ``write.delete.granularity=partition`` files span several data files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record
    from pyiceberg.types import DoubleType, LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "x", DoubleType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="x"))
    table = catalog.create_table(ident, schema=schema, partition_spec=spec, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "x": pa.array([data_zero] * 3, pa.float64())}))
    (data,) = [t.file for t in table.scan().plan_files()]
    path = local(table.location()) / "data" / "pos-zero.parquet"

    def fid(name: str, t: pa.DataType, i: int) -> pa.Field:
        return pa.field(name, t, nullable=False, metadata={b"PARQUET:field_id": str(i).encode()})

    spec_schema = pa.schema([fid("file_path", pa.string(), 2147483546), fid("pos", pa.int64(), 2147483545)])
    pq.write_table(
        pa.table({"file_path": [data.file_path], "pos": pa.array([0], pa.int64())}, schema=spec_schema), path
    )
    df = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=f"file://{path}",
        file_format=FileFormat.PARQUET,
        partition=Record(delete_zero),
        record_count=1,
        file_size_in_bytes=path.stat().st_size,
    )
    with table.transaction() as tx:
        producer: Any = tx.update_snapshot().fast_append()

        def delete_manifest_writer(spec: Any) -> Any:
            return manifest_writer(
                spec,
                producer._transaction.table_metadata.schema(),
                producer.new_manifest_output(),
                producer._snapshot_id,
                deletes=True,
            )

        producer.new_manifest_writer = delete_manifest_writer
        producer.append_data_file(df)
        producer.commit()
    return catalog.load_table(ident)


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


@pytest.mark.parametrize(
    ("delete_zero", "data_zero", "read"),
    [(-0.0, 0.0, [0, 1, 2]), (0.0, -0.0, [0, 1, 2]), (0.0, 0.0, [1, 2]), (-0.0, -0.0, [1, 2])],
)
def test_a_partition_scoped_delete_under_the_other_zero_applies_nowhere(
    catalog: SqlCatalog, delete_zero: float, data_zero: float, read: list[int]
) -> None:
    table = zero_partition_table(catalog, "ns.t", delete_zero=delete_zero, data_zero=data_zero)
    assert _ids(table) == read
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)


def _date_table(catalog: SqlCatalog) -> Table:
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "d", DateType(), required=False))
    table = catalog.create_table("ns.t", schema=schema)
    table.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "d": pa.array([datetime.date(2024, 1, 5), datetime.date(1969, 12, 31)]),
            }
        )
    )
    return catalog.load_table("ns.t")


def _promote(table_type: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        schema = copy.deepcopy(next(s for s in doc["schemas"] if s["schema-id"] == doc["current-schema-id"]))
        schema["schema-id"] = max(s["schema-id"] for s in doc["schemas"]) + 1
        for f in schema["fields"]:
            if f["name"] == "d":
                f["type"] = table_type
        doc["schemas"].append(schema)
        doc["current-schema-id"] = schema["schema-id"]

    return edit


@pytest.mark.parametrize("to", ["timestamp", "timestamptz", "timestamp_ns"])
def test_a_date_promoted_to_a_timestamp_is_refused_at_record(catalog: SqlCatalog, to: str) -> None:
    table = rewrite_metadata(catalog, _date_table(catalog), _promote(to))
    with pytest.raises(Exception):  # noqa: B017 - pyiceberg's own error, whichever it raises
        table.scan().to_arrow()
    with pytest.raises(AttestError) as exc:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert exc.value.code.value == "table_unreadable", exc.value


@pytest.mark.parametrize("to", ["timestamp", "timestamp_ns"])
def test_a_date_promoted_after_the_record_is_not_verified(catalog: SqlCatalog, to: str) -> None:
    table = _date_table(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rewrite_metadata(catalog, table, _promote(to))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "reader_view_changed" in codes(doc), json.dumps(doc)
