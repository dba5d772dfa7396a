"""Round 34: ``attest record`` of an Iceberg snapshot digested rows Iceberg Java reads otherwise.

A rewrite's added file is held to how every reader resolves and decodes it (``_check_field_ids``: field ids given to
some columns and not others; ``_check_representation``: each leaf stored as Iceberg's writers store its type),
since pyiceberg — the digest's reader — and Iceberg Java (Spark) differ on such files. A file *appended* so (a
migrated table's, ``add_files``, another writer's) was not: ``attest record`` digested what pyiceberg read, and the
attestation's content digest then named rows Spark does not read (measured with Spark 4.1 / Iceberg 1.12 below: a
column without a field id read as nulls, a timestamp stored in milliseconds read as microseconds); a later rewrite
writing pyiceberg's rows would verify as ``same rows`` while Spark's changed. Now ``record`` holds a recorded file
to the same two rules: ``table_inconsistent``, nothing written. (A nested shape other than Iceberg's writers' is
still refused in rewrites only: a migrated table's legacy lists were not measured.)
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.cli import main

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

IDS = pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([10, 20], pa.int64())})
TIMES = pa.table({"a": pa.array([1, 2], pa.int64()),
                  "ts": pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(2021, 1, 1)], pa.timestamp("us"))})
DECIMALS = pa.table({"a": pa.array([1, 2], pa.int64()),
                     "d": pa.array([decimal.Decimal("12.34"), decimal.Decimal("1.00")], pa.decimal128(10, 2))})


def stored_as(case: str) -> tuple[pa.Table, pa.Table]:
    """The table's rows, and the file holding them otherwise than Iceberg's writers do: ``b`` without a field id
    (``a`` with one), ``ts`` in milliseconds, ``d`` at scale 3."""
    from tests.iceberg.rewrites import with_ids

    if case == "one column of no field id":
        return IDS, IDS.cast(pa.schema([IDS.schema.field(0).with_metadata({b"PARQUET:field_id": b"1"}),
                                        IDS.schema.field(1)]))
    if case == "timestamp in milliseconds":
        return TIMES, with_ids(TIMES.cast(pa.schema([TIMES.schema.field(0), pa.field("ts", pa.timestamp("ms"))])),
                               [1, 2])
    return DECIMALS, with_ids(DECIMALS.cast(pa.schema([DECIMALS.schema.field(0), pa.field("d", pa.decimal128(10, 3))])),
                              [1, 2])


def appended(catalog: Any, name: str, case: str) -> Any:
    """Table ``name`` (with a name mapping) whose one snapshot appends a file of ``stored_as(case)``."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from tests.iceberg.rewrites import local, replace

    rows, stored = stored_as(case)
    table = catalog.create_table(name, schema=rows.schema)
    mapping = table.metadata.schema().name_mapping.model_dump_json()
    table.transaction().set_properties({"schema.name-mapping.default": mapping}).commit_transaction()
    table = catalog.load_table(name)
    path = local(table.location()) / "data" / "appended.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(stored, path)
    data_file = DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}",
                                   file_format=FileFormat.PARQUET, partition=Record(), record_count=rows.num_rows,
                                   file_size_in_bytes=path.stat().st_size, spec_id=0)
    table = replace(catalog, table, remove=[], data_files=[data_file], operation="append")
    assert table.scan().to_arrow().sort_by("a").equals(rows)  # pyiceberg: the table's rows
    return table


CASES = ["one column of no field id", "timestamp in milliseconds", "decimal at another scale"]


@pytest.mark.parametrize("case", CASES)
def test_record_refuses_a_file_readers_read_otherwise(catalog: SqlCatalog, capsys: Any, case: str) -> None:
    from tests.iceberg.conftest import CATALOG

    table = appended(catalog, "ns.t", case)
    rc = main(["record", f"iceberg://{CATALOG}/ns.t", "--model", "orders", "--sql", "select 1", "--json"])
    out = capsys.readouterr().out
    assert rc == 2 and '"table_inconsistent"' in out, out
    assert ("gives field ids to some of its columns" in out) if case == CASES[0] else \
        ("not as Iceberg's writers store" in out), out
    assert "added by a rewrite" not in out, out
    assert catalog.load_table("ns.t").current_snapshot().snapshot_id == table.current_snapshot().snapshot_id


def test_record_of_files_as_iceberg_writes_them_still_records(catalog: SqlCatalog, capsys: Any) -> None:
    """pyiceberg's own append (ids on every column, the types as Iceberg writes them), and an int column promoted to
    long over a file storing INT32 (read widened alike)."""
    from pyiceberg.types import LongType

    from tests.iceberg.conftest import CATALOG

    schema = pa.schema([pa.field("a", pa.int32()), DECIMALS.schema.field("d")])
    table = catalog.create_table("ns.ok", schema=schema)
    table.append(pa.table({"a": pa.array([1], pa.int32()), "d": DECIMALS.column("d").slice(0, 1)}))
    with table.update_schema() as update:
        update.update_column("a", LongType())
    rc = main(["record", f"iceberg://{CATALOG}/ns.ok", "--model", "orders", "--sql", "select 1", "--json"])
    out = capsys.readouterr().out
    assert rc == 0 and '"content_digest_rows": 1' in out, out


@pytest.mark.spark
def test_spark_reads_such_files_otherwise(spark: SparkSession, spark_warehouse: Path) -> None:
    """Measured: the column without a field id read as nulls, the milliseconds as microseconds (1970)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.r34r")
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    appended(catalog, "r34r.ids", CASES[0])
    appended(catalog, "r34r.ms", CASES[1])
    spark.sql("REFRESH TABLE iceberg.r34r.ids")
    spark.sql("REFRESH TABLE iceberg.r34r.ms")
    assert sorted(tuple(r) for r in spark.sql("SELECT a, b FROM iceberg.r34r.ids").collect()) == [(1, None), (2, None)]
    years = sorted(r[0].year for r in spark.sql("SELECT ts FROM iceberg.r34r.ms").collect())
    assert years == [1970, 1970]
