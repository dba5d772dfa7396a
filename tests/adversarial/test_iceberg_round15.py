"""Round 15, pyiceberg's side: a data file whose identity-partitioned float column holds a value ``==`` its partition
value but not bit for bit (``-0.0`` under partition ``0.0``, or the reverse). Iceberg Java reads an identity
partition's column from the partition tuple, pyiceberg from the file: the rows differ by reader. pyiceberg 0.12's own
partitioned ``append`` writes such files (rows of ``x`` 0.0 and -0.0 each go into the files of both partitions);
the check compared with ``==`` and ``record`` attested them, VERIFIED before. Likewise a partition source nested in
a struct (identity of ``s.a``): Java reads it from the tuple too (Spark returned the tuple's 10 where the file held
99), and the check passed nested sources over. Spark's rows: tests/adversarial/test_spark_iceberg_round15.py.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DoubleType, FloatType, LongType, NestedField, StructType

from attest.errors import AttestError, Code
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, verify
from tests.iceberg.conftest import CATALOG, iceberg_env, ns_catalog  # noqa: F401
from tests.iceberg.rewrites import replace, write_file


def signed_zero_table(catalog: SqlCatalog, name: str = "ns.t", *, single: bool = False) -> Table:
    """A table partitioned by ``x`` (identity), pyiceberg-appended rows id 1, 2, 3 with x 0.0, -0.0, 1.0."""
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "x", FloatType() if single else DoubleType(), required=False))
    table = catalog.create_table(name, schema, partition_spec=PartitionSpec(
        PartitionField(2, 1000, IdentityTransform(), "x")), properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                           "x": pa.array([0.0, -0.0, 1.0], pa.float32() if single else pa.float64())}))
    return catalog.load_table(name)


def bits(value: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", value))[0])


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("single", [False, True], ids=["double", "float"])
def test_a_signed_zero_under_the_other_zeros_partition_is_refused(tmp_path: Path, single: bool) -> None:
    table = signed_zero_table(ns_catalog(tmp_path), single=single)
    tuples = sorted(bits(t.file.partition[0]) for t in table.scan().plan_files())
    assert tuples == [0, bits(1.0), bits(-0.0)]  # a file for each zero, each holding both zeros' rows
    read = sorted((r["id"], bits(r["x"])) for r in table.scan().to_arrow().to_pylist())
    assert read == [(1, 0), (1, 0), (2, bits(-0.0)), (2, bits(-0.0)), (3, bits(1.0))]  # pyiceberg: the file's x
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code == Code.TABLE_INCONSISTENT and "partition value" in refused.value.message
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"], doc


def nested_partition_table(catalog: SqlCatalog, name: str = "ns.t", *, tuple_value: int = 10) -> Table:
    """A table ``(id, s struct<a>)`` partitioned by identity of ``s.a``, a file holding id 1, s.a 10 appended by hand
    under the partition tuple ``(tuple_value)``."""
    import pyarrow as pa

    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "s", StructType(NestedField(3, "a", LongType(), required=False)), required=False))
    table = catalog.create_table(name, schema, properties={"format-version": "2"})
    with table.update_spec() as update:
        update.add_field("s.a", IdentityTransform(), "s_a")
    table = catalog.load_table(name)
    struct = pa.struct([pa.field("a", pa.int64(), metadata={b"PARQUET:field_id": b"3"})])
    data = pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([{"a": 10}], struct)}).cast(pa.schema(
        [pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
         pa.field("s", struct, metadata={b"PARQUET:field_id": b"2"})]))
    added = write_file(table, data, partition=Record(tuple_value), spec_id=table.spec().spec_id)
    return replace(catalog, table, remove=[], data_files=[added], operation="append")


@pytest.mark.usefixtures("iceberg_env")
def test_a_nested_identity_source_other_than_its_tuple_is_refused(tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = nested_partition_table(catalog, tuple_value=11)
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "s": {"a": 10}}]  # pyiceberg: the file's value
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code == Code.TABLE_INCONSISTENT and "'s.a'" in refused.value.message, refused.value.message

    catalog.drop_table("ns.t")  # the control: the true tuple attests and verifies
    table = nested_partition_table(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
