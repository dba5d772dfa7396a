"""Iceberg v3 column default values (``initial-default``): a data file written before a column was added is read with
the column's initial default. Measured here with Spark (Iceberg 1.12, defaults set through Iceberg's Java API: Spark
SQL refuses ``DEFAULT``) and pyiceberg 0.12: both read a binary default the same (the digest's reading is the
engines'); the attested table's metadata rewritten in place with another initial default made Spark read other bytes
in every row, which the reader view (defaults are in the schema's view) catches. It held before this file, which
keeps it held; so are nested defaults (below)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_an_initial_default_changed_in_place_is_reader_view_changed(spark: SparkSession,
                                                                    spark_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    ns = f"def{uuid.uuid4().hex[:6]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(0, 3)")
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    update = table.updateSchema()
    update.addColumn("b", jvm.org.apache.iceberg.types.Types.BinaryType.get(), "added later",
                     jvm.org.apache.iceberg.expressions.Literal.of(jvm.java.nio.ByteBuffer.wrap(bytearray(b"\x0a\x0b"))))
    update.commit()
    spark.sql(f"REFRESH TABLE {name}")
    spark_rows = {int(r["id"]): bytes(r["b"]) for r in spark.sql(f"SELECT id, b FROM {name}").collect()}
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}",
                         warehouse=(spark_warehouse / "iceberg").as_uri())
    pyiceberg_rows = {r["id"]: r["b"] for r in catalog.load_table(f"{ns}.t").scan().to_arrow().to_pylist()}
    assert spark_rows == pyiceberg_rows == {0: b"\n\x0b", 1: b"\n\x0b", 2: b"\n\x0b"}  # both read the default
    ref = f"iceberg://iceberg/{ns}.t"
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    current = local(str(catalog.load_table(f"{ns}.t").metadata_location))
    text, n = re.subn(r'("initial-default"\s*:\s*)"0A0B"', r'\1"0A0C"', current.read_text())
    assert n == 1
    current.write_text(text)  # in place: someone with write access to the storage
    for crc in current.parent.glob(f".{current.name}.crc"):
        crc.unlink()
    spark.sql(f"REFRESH TABLE {name}")
    assert {bytes(r["b"]) for r in spark.sql(f"SELECT b FROM {name}").collect()} == {b"\n\x0c"}  # other bytes
    rc, doc = _cli(spark_warehouse, "verify", ref, "--level", "bytes")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc


def test_a_nested_field_default_is_read_alike(spark: SparkSession, spark_warehouse: Path) -> None:
    """Held, pinned: a field added with an initial default (5) to a struct column its data file already holds —
    Spark and pyiceberg both read 5 there, so the recorded rows are both engines'. (An ``initial-default`` of ``{}``
    on the struct itself is refused by both parsers, Java's "Cannot create expression literal" and pyiceberg's
    "Cannot deserialize": no rows are read, measured.)"""
    from pyiceberg.catalog.sql import SqlCatalog

    ns = f"ndef{uuid.uuid4().hex[:6]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRUCT<y: INT>) USING iceberg TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, named_struct('y', 1) FROM range(0, 3)")
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    update = table.updateSchema()
    update.addColumn("s", "x", jvm.org.apache.iceberg.types.Types.IntegerType.get(), "added later",
                     jvm.org.apache.iceberg.expressions.Literal.of(5))
    update.commit()
    spark.sql(f"REFRESH TABLE {name}")
    spark_rows = {int(r["id"]): r["s"].asDict() for r in spark.sql(f"SELECT id, s FROM {name}").collect()}
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}",
                         warehouse=(spark_warehouse / "iceberg").as_uri())
    pyiceberg_rows = {r["id"]: r["s"] for r in catalog.load_table(f"{ns}.t").scan().to_arrow().to_pylist()}
    assert spark_rows == pyiceberg_rows == {i: {"y": 1, "x": 5} for i in range(3)}
    ref = f"iceberg://iceberg/{ns}.t"
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref, "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
