"""An attested Iceberg data file whose partition tuple, under a transform other than identity (year, month, day, hour,
bucket, truncate), is not what its rows map to — in the attested snapshot itself (an append), not a rewrite.

Readers read a transformed column's values from the file (a full read of the table returns its rows alike), but prune
files by the tuple: a filtered read (``WHERE ts = …``, ``WHERE id = …``) skips the file and misses the rows a full read
returns. Measured below with pyiceberg 0.12 and Spark 4.1 (Iceberg 1.12): each returned the lying file's row on a full
read and not on the filtered one. ``attest record`` attested such a table before (its claim then held for full reads
only, unstated); the tuple was held to the rows only for a rewrite's added files (``content_changed``,
test_rewrite_statistics.py). Now every digested file is held to it: ``record`` refuses ``table_inconsistent``
(carriers/iceberg/content.py ``_check_transforms``), the honest tuple attests and verifies. The check reads no more
than the digest does: monotonic transforms by the column's least and greatest value, bucket of integer-like columns
by Murmur3 over whole columns (checked against pyiceberg's per-value transform here).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.iceberg.conftest import CATALOG, iceberg_env, ns_catalog  # noqa: F401
from tests.iceberg.rewrites import replace, with_ids, write_file

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("v", pa.string())])
ROW = {"id": 7, "ts": datetime(2024, 3, 5, 10, 30, tzinfo=UTC), "v": "abcdef"}
# (transform, source column, the filter a reader prunes by)
CASES = {
    "year": ("ts", f"ts = '{ROW['ts'].isoformat()}'"),
    "month": ("ts", f"ts = '{ROW['ts'].isoformat()}'"),
    "day": ("ts", f"ts = '{ROW['ts'].isoformat()}'"),
    "hour": ("ts", f"ts = '{ROW['ts'].isoformat()}'"),
    "bucket": ("id", "id = 7"),
    "truncate_long": ("id", "id = 7"),
    "truncate_string": ("v", "v = 'abcdef'"),
}


def _transform(name: str) -> Any:
    from pyiceberg.transforms import (
        BucketTransform,
        DayTransform,
        HourTransform,
        MonthTransform,
        TruncateTransform,
        YearTransform,
    )

    return {"year": YearTransform(), "month": MonthTransform(), "day": DayTransform(), "hour": HourTransform(),
            "bucket": BucketTransform(4), "truncate_long": TruncateTransform(5),
            "truncate_string": TruncateTransform(3)}[name]


def _appended(catalog: SqlCatalog, ns: str, name: str, *, lie: bool) -> Any:
    """A table partitioned by ``name``'s transform, one row appended by hand (pyiceberg's append needs pyiceberg-core
    for these transforms) under its true tuple, or ``lie``: another value of the same transform."""
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "ts", TimestamptzType(), required=False),
                    NestedField(3, "v", StringType(), required=False))
    table = catalog.create_table(f"{ns}.t", schema=schema)
    source, _ = CASES[name]
    transform = _transform(name)
    with table.update_spec() as update:
        update.add_field(source, transform, f"{source}_{name}")
    table = catalog.load_table(f"{ns}.t")
    rows = pa.table({k: [v] for k, v in ROW.items()}, schema=SCHEMA)
    raw = int(rows.column("ts").cast(pa.int64())[0].as_py()) if source == "ts" else ROW[source]
    value = transform.transform(table.schema().find_field(source).field_type)(raw)
    if lie:
        value = "zz" if isinstance(value, str) else value + 1
    added = write_file(table, with_ids(rows, [1, 2, 3]), partition=Record(value), spec_id=table.spec().spec_id)
    return replace(catalog, table, remove=[], data_files=[added], operation="append")


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_transform_tuple_the_rows_do_not_map_to_is_not_attested(name: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = _appended(catalog, "ns", name, lie=True)
    _, query = CASES[name]
    assert table.scan().to_arrow().num_rows == 1  # pyiceberg: a full read returns the row ...
    assert table.scan(row_filter=query).to_arrow().num_rows == 0  # ... a filtered one prunes the file
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent" and "readers prune files by it" in refused.value.message

    catalog.drop_table("ns.t")  # the control: the true tuple
    table = _appended(catalog, "ns", name, lie=False)
    assert table.scan(row_filter=query).to_arrow().num_rows == 1
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.parametrize("arrow_type", [pa.int32(), pa.int64()])
def test_the_bucket_hash_is_icebergs(arrow_type: pa.DataType) -> None:
    """The whole-column Murmur3 gives pyiceberg's bucket of each value, extremes and negatives included."""
    import random

    import pyarrow.compute as pc
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import IntegerType, LongType

    from carriers.iceberg.content import _murmur3_longs

    bits = 32 if arrow_type == pa.int32() else 64
    rng = random.Random(7)
    values = [rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for _ in range(5000)]
    values += [0, 1, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), *range(-300, 300)]
    hashed = _murmur3_longs(pa.array(values, arrow_type))
    for n in (1, 4, 16, 1000):
        apply = BucketTransform(n).transform(IntegerType() if bits == 32 else LongType())
        assert pc.remainder(hashed, pa.scalar(n, pa.int64())).to_pylist() == [apply(v) for v in values]


@pytest.mark.spark
@pytest.mark.parametrize("name", ["day", "bucket", "truncate_string"])
def test_spark_prunes_a_lying_transform_tuple(name: str, spark: SparkSession, spark_warehouse: Path) -> None:
    """Spark (Iceberg 1.12) reads the lying file's row on a full read and prunes it on the filtered one; ``attest
    record`` (the CLI) refuses the table, and attests the honest one."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    for lie in (True, False):
        ns = f"tp{uuid.uuid4().hex[:8]}"
        catalog.create_namespace(ns)
        _appended(catalog, ns, name, lie=lie)
        full = f"iceberg.{ns}.t"
        spark.sql(f"REFRESH TABLE {full}")
        _, query = CASES[name]
        assert spark.sql(f"SELECT id FROM {full}").count() == 1
        assert spark.sql(f"SELECT id FROM {full} WHERE {query}").count() == (0 if lie else 1)
        rc, doc = _cli(spark_warehouse, "record", f"iceberg://iceberg/{ns}.t", "--model", "orders",
                       "--program-hash", PROGRAM)
        if lie:
            assert rc != 0 and codes(doc) == ["table_inconsistent"] and "prune" in json.dumps(doc), doc
        else:
            assert rc == 0, doc
