"""Round 16, tried and held: what Iceberg Java reads of a recorded snapshot through the table's name mapping
(``schema.name-mapping.default``) when a properties-only commit changes the mapping after ``record``.

Both readers resolve a file without field ids (``add_files``) through the mapping in the table's *current* metadata,
whatever snapshot they read (Spark's ``VERSION AS OF`` as pyiceberg's ``scan(snapshot_id=…)``), so a commit that swaps
two names' ids makes both read the other column's values for the attested snapshot. The mapping is in the snapshot's
reader view (carriers/iceberg/views.py ``READ_PROPERTIES``): ``verify`` says ``reader_view_changed`` for the current
snapshot and for an older one (measured with pyiceberg 0.12; Spark refuses or swaps alike:
tests/adversarial/test_iceberg_round16.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.test_iceberg_round16 import MAPPINGS, SOUND, _spark_rows
from tests.adversarial.test_spark_name_mapping import _added
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SWAPPED = [{"field-id": 2, "names": ["a"]}, {"field-id": 1, "names": ["b"]}]


def _catalog(warehouse: Path):  # type: ignore[no-untyped-def]
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    return SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))


def test_a_swapped_mapping_after_record(tmp_path: Path) -> None:
    """Snapshot 1 (one file, a=1,2 b=10,20) and snapshot 2 (a second file) recorded; a properties-only commit swaps
    the ids of ``a`` and ``b`` in the mapping: pyiceberg reads each snapshot with the columns swapped, and ``verify``
    of either says ``reader_view_changed``."""
    name, _ref, table = _added(tmp_path, SOUND)
    ident = name.removeprefix("iceberg.")
    ref = f"iceberg://iceberg/{ident}"
    first = table.current_snapshot().snapshot_id
    rc, doc = _cli(tmp_path, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    folder = local(table.location()) / "data"
    pq.write_table(pa.table({"a": [3], "b": [30]}), folder / "y.parquet")  # no field ids
    table.add_files([f"file://{folder}/y.parquet"])
    rc, doc = _cli(tmp_path, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    table = _catalog(tmp_path).load_table(ident)
    with table.transaction() as tx:
        tx.set_properties(**{"schema.name-mapping.default": json.dumps(SWAPPED)})
    table = _catalog(tmp_path).load_table(ident)
    got = sorted(tuple(r.values()) for r in table.scan(snapshot_id=first).to_arrow().to_pylist())
    assert got == [(10, 1), (20, 2)]  # the other column's values, for the attested snapshot
    for version in (str(first), None):
        rc, doc = _cli(tmp_path, "verify", ref, *(("--snapshot-id", version) if version else ()))
        assert rc != 0 and not doc["passed"] and "reader_view_changed" in codes(doc), (version, doc)


@pytest.mark.spark
def test_a_refused_mapping_set_after_the_attested_snapshot(spark: SparkSession, spark_warehouse: Path) -> None:
    """A table recorded under a sound mapping, then a properties-only commit (no new snapshot) sets one Java refuses
    (a dotted name across levels): ``verify`` of the attested snapshot, still the current one, said
    ``reader_view_changed`` before the whole-mapping check; now ``table_inconsistent`` (refused first)."""
    name, ref, table = _added(spark_warehouse, SOUND)
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
    table = _catalog(spark_warehouse).load_table(name.removeprefix("iceberg."))
    with table.transaction() as tx:
        tx.set_properties(**{"schema.name-mapping.default": json.dumps(MAPPINGS["a dotted name across levels"])})
    assert _spark_rows(spark, name) == "refused"
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc
    assert "table_inconsistent" in codes(doc), doc


@pytest.mark.spark
def test_iceberg_reads_ignore_the_lenient_read_confs(spark: SparkSession, spark_warehouse: Path) -> None:
    """``spark.sql.files.ignoreMissingFiles`` / ``ignoreCorruptFiles`` make Spark's file-source scans skip a file
    they cannot open; Iceberg's own reader does not honour them: with both on, a read of a table one of whose data
    files was deleted, or overwritten with garbage, failed (vectorized and not) — measured, Iceberg 1.12. The hook's
    ``read with ignoreMissingFiles`` downgrade of Iceberg reads (carriers/spark/plan.py) is a precaution only."""
    import uuid

    ns = f"lenient{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    confs = ("spark.sql.files.ignoreMissingFiles", "spark.sql.files.ignoreCorruptFiles",
             "spark.sql.iceberg.vectorization.enabled")
    before = {c: spark.conf.get(c, None) for c in confs}
    outcomes = {}
    try:
        for case in ("deleted", "garbage"):
            name = f"iceberg.{ns}.{case}"
            spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
            for lo in (0, 3):
                spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range({lo}, {lo + 3})")
            victim = sorted((spark_warehouse / "iceberg" / ns / case / "data").glob("*.parquet"))[0]
            if case == "deleted":
                victim.unlink()
            else:
                victim.write_bytes(b"garbage" * 100)
            spark.conf.set(confs[0], "true")
            spark.conf.set(confs[1], "true")
            for vectorized in ("true", "false"):
                spark.conf.set(confs[2], vectorized)
                spark.sql(f"REFRESH TABLE {name}")
                try:
                    outcomes[(case, vectorized)] = sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect())
                except Exception:  # the read failed, as it does without the confs
                    outcomes[(case, vectorized)] = "failed"
    finally:
        for c, v in before.items():
            if v is None:
                spark.conf.unset(c)
            else:
                spark.conf.set(c, v)
    assert set(outcomes.values()) == {"failed"} and len(outcomes) == 4, outcomes


@pytest.mark.spark
@pytest.mark.parametrize("transform", ["bucket(4, s.a)", "truncate(5, s.a)"])
def test_a_nested_source_under_a_transform(transform: str, spark: SparkSession, spark_warehouse: Path) -> None:
    """A table ``(id long, s struct<a long>)`` partitioned by a transform of the nested ``s.a`` (Spark DDL). Spark's
    own insert of ``s.a = 7`` attests and verifies, and its ``WHERE s.a = 7`` finds the row; a file appended by hand
    under another value of the transform is found by a full read and pruned from ``WHERE s.a = 7`` (Spark 4.1 /
    Iceberg 1.12, measured): ``record`` refuses it (``table_inconsistent``: the nested source is held as a top-level
    one, carriers/iceberg/content.py ``_source_column``)."""
    import uuid

    from pyiceberg.typedef import Record

    from tests.iceberg.rewrites import replace, write_file

    seen = {}
    for lie in (False, True):
        ns = f"nt{uuid.uuid4().hex[:8]}"
        name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
        spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRUCT<a: BIGINT>) USING iceberg PARTITIONED BY ({transform})")
        if not lie:
            spark.sql(f"INSERT INTO {name} SELECT 7, named_struct('a', CAST(7 AS BIGINT))")
        else:
            catalog = _catalog(spark_warehouse)
            table = catalog.load_table(f"{ns}.t")
            pf = table.spec().fields[0]
            value = pf.transform.transform(table.schema().find_field(pf.source_id).field_type)(7) + 1
            ids = {b"PARQUET:field_id": b"1"}, {b"PARQUET:field_id": b"2"}, {b"PARQUET:field_id": b"3"}
            schema = pa.schema([pa.field("id", pa.int64(), metadata=ids[0]),
                                pa.field("s", pa.struct([pa.field("a", pa.int64(), metadata=ids[2])]),
                                         metadata=ids[1])])
            rows = pa.table({"id": [7], "s": [{"a": 7}]}, schema=schema)
            added = write_file(table, rows, partition=Record(value), spec_id=table.spec().spec_id)
            replace(catalog, table, remove=[], data_files=[added], operation="append")
            spark.sql(f"REFRESH TABLE {name}")
        full = spark.sql(f"SELECT id FROM {name}").count()
        filtered = spark.sql(f"SELECT id FROM {name} WHERE s.a = 7").count()
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        if rc == 0:
            rc, doc = _cli(spark_warehouse, "verify", ref)
        seen[lie] = (full, filtered, rc, codes(doc))
    assert seen == {False: (1, 1, 0, []), True: (1, 0, 2, ["table_inconsistent"])}, seen


@pytest.mark.spark
def test_spark_table_bucketed_by_a_uuid_attests(spark: SparkSession, spark_warehouse: Path) -> None:
    """A table partitioned by ``bucket(4, u)`` of a uuid column, Spark's own insert: it attests and verifies (it was
    refused before, ``table_inconsistent``: pyarrow has no kernel for pyiceberg's ``arrow.uuid`` columns, so no tuple
    could be held to its rows); the bucket is held to the rows as pyiceberg's transform of their 16 bytes."""
    import uuid

    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType, NestedField, UUIDType

    from tests.adversarial.test_iceberg_round16 import HIGH, LOW, LOW2

    ns = f"ub{uuid.uuid4().hex[:8]}"
    catalog = _catalog(spark_warehouse)
    catalog.create_namespace(ns)
    catalog.create_table(f"{ns}.t", schema=Schema(NestedField(1, "id", LongType()), NestedField(2, "u", UUIDType())),
                         partition_spec=PartitionSpec(PartitionField(2, 1000, BucketTransform(4), "ub")),
                         properties={"format-version": "2"})
    spark.sql(f"INSERT INTO iceberg.{ns}.t VALUES (0, '{LOW}'), (1, '{HIGH}'), (2, '{LOW2}')")
    rc, doc = _cli(spark_warehouse, "record", f"iceberg://iceberg/{ns}.t", "--model", "orders",
                   "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", f"iceberg://iceberg/{ns}.t")
    assert rc == 0 and doc["passed"], doc
