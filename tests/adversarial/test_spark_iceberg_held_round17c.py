"""Round 17 (second pass), Iceberg Java's side (Spark 4.1 / Iceberg 1.12): variants tried and held, pinned.

- **A partition-scoped position delete under the other signed zero** (``x = -0.0`` naming a file of ``x = 0.0``, or
  the reverse; no ``file_path`` bounds): Spark read ids 0, 1, 2 (Java's partition map compares with
  ``Double.compare``), as pyiceberg and the model do; the same zero on both sides: 1, 2. Attested, VERIFIED.
- **A delete manifest the v3 manifest list gives a ``first_row_id``** (the list rewritten in place after the
  attestation): Spark read the same rows and ``_row_id``s (Java assigns row ids to data manifests only), VERIFIED.
- **Data manifests whose ``first_row_id``s overlap** (both 0, the list rewritten before ``record``): Spark read the
  second file's rows with ``_row_id`` 0, 1, 2 again; ``record`` binds them as Java reads them, so the list put back
  (ids 3, 4, 5 again) is ``reader_view_changed``.
- **``date`` promoted to ``timestamp`` (``_ntz`` or not)**: Iceberg 1.12's ``ALTER COLUMN d TYPE TIMESTAMP[_NTZ]``
  refuses it; promoted by a hand-made metadata commit after the attestation, Spark's read of the old files fails
  (``ClassCastException``: a timestamp vector cast to a date one), pyiceberg's too, and verify says
  ``reader_view_changed``.
- **Spark's own files of signed zeros** (``float`` and ``double``; ``-0.0`` stored, checked by its bits): their bounds
  hold both zeros in Java's order, so the signed-zero bounds check of ``test_iceberg_round17c.py`` attests them.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.iceberg_lists import edit_manifest_list
from tests.adversarial.spark_iceberg import pyiceberg_ids, spark_ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _catalog(warehouse: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(
        "iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}", warehouse=(warehouse / "iceberg").as_uri()
    )


def _record(warehouse: Path, ref: str) -> tuple[int, dict[str, Any]]:
    return _cli(warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)


def _edit_manifest_list(path: str, edit: Callable[[list[Any], int], None]) -> None:
    """The v3 manifest list at ``path`` rewritten in place after ``edit(manifests, first_row_id position)``."""
    edit_manifest_list(path, 3, lambda manifests, names: edit(manifests, names.index("first_row_id")))


def _current_list(spark: SparkSession, name: str) -> str:
    from carriers.storage.base import local_path_of

    listing = spark.sql(f"SELECT manifest_list FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()
    path = local_path_of(listing[0][0])
    assert path is not None
    return str(path)


def _row_ids(spark: SparkSession, name: str) -> list[Any]:
    spark.sql(f"REFRESH TABLE {name}")
    return [(r[0], r[1]) for r in spark.sql(f"SELECT id, _row_id FROM {name} ORDER BY id").collect()]


def test_a_delete_under_the_other_signed_zero_is_applied_by_neither_reader(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    from tests.adversarial.test_iceberg_held_round17c import zero_partition_table

    ns = f"z17c{uuid.uuid4().hex[:6]}"
    catalog = _catalog(spark_warehouse)
    catalog.create_namespace(ns)
    for i, (delete_zero, data_zero, read) in enumerate(
        ((-0.0, 0.0, [0, 1, 2]), (0.0, -0.0, [0, 1, 2]), (0.0, 0.0, [1, 2]))
    ):
        zero_partition_table(catalog, f"{ns}.t{i}", delete_zero=delete_zero, data_zero=data_zero)
        assert spark_ids(spark, f"iceberg.{ns}.t{i}") == read, (delete_zero, data_zero)
        assert pyiceberg_ids(spark_warehouse, f"{ns}.t{i}") == read, (delete_zero, data_zero)
        ref = f"iceberg://iceberg/{ns}.t{i}"
        rc, doc = _record(spark_warehouse, ref)
        assert rc == 0, doc
        rc, doc = _cli(spark_warehouse, "verify", ref)
        assert rc == 0 and doc["passed"], doc


def test_row_ids_given_to_a_delete_manifest_or_overlapping(spark: SparkSession, spark_warehouse: Path) -> None:
    from pyiceberg.manifest import ManifestContent

    ns = f"r17c{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name, ref = f"iceberg.{ns}.dv", f"iceberg://iceberg/{ns}.dv"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='3', "
        "'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(0, 5)")
    spark.sql(f"DELETE FROM {name} WHERE id = 1")
    before = _row_ids(spark, name)
    assert before == [(0, 0), (2, 2), (3, 3), (4, 4)]
    rc, doc = _record(spark_warehouse, ref)
    assert rc == 0, doc

    def give(manifests: list[Any], position: int) -> None:
        deletes = [m for m in manifests if m.content == ManifestContent.DELETES]
        assert deletes
        for m in deletes:
            m._data[position] = 0

    _edit_manifest_list(_current_list(spark, name), give)
    assert _row_ids(spark, name) == before
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc

    name, ref = f"iceberg.{ns}.ov", f"iceberg://iceberg/{ns}.ov"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(0, 3)")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(3, 6)")
    assert _row_ids(spark, name) == [(i, i) for i in range(6)]
    kept: list[Any] = []

    def overlap(manifests: list[Any], position: int) -> None:
        kept.extend(m._data[position] for m in manifests)
        for m in manifests:
            m._data[position] = 0

    listing = _current_list(spark, name)
    _edit_manifest_list(listing, overlap)
    assert _row_ids(spark, name) == [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1), (5, 2)]  # Java: the list's ids
    rc, doc = _record(spark_warehouse, ref)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc

    def restore(manifests: list[Any], position: int) -> None:
        for m, first in zip(manifests, kept, strict=True):
            m._data[position] = first

    _edit_manifest_list(listing, restore)
    assert _row_ids(spark, name) == [(i, i) for i in range(6)]
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and "reader_view_changed" in codes(doc), doc


@pytest.mark.parametrize(("spark_type", "iceberg_type"), [("TIMESTAMP_NTZ", "timestamp"), ("TIMESTAMP", "timestamptz")])
def test_a_date_promoted_to_a_timestamp(
    spark: SparkSession, spark_warehouse: Path, spark_type: str, iceberg_type: str
) -> None:
    ns = f"d17c{uuid.uuid4().hex[:6]}"
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, d DATE) USING iceberg TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {name} VALUES (1, DATE'2024-01-05'), (2, DATE'1969-12-31')")
    rc, doc = _record(spark_warehouse, ref)
    assert rc == 0, doc
    with pytest.raises(Exception):  # noqa: B017 - Iceberg 1.12 allows no date promotion
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN d TYPE {spark_type}")
    _promote_by_hand(spark_warehouse, ns, "t", iceberg_type)
    spark.sql(f"REFRESH TABLE {name}")
    with pytest.raises(Exception, match="ClassCastException"):
        spark.sql(f"SELECT id, d FROM {name}").collect()
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and "reader_view_changed" in codes(doc), doc


def _promote_by_hand(warehouse: Path, ns: str, table: str, to: str) -> None:
    from carriers.storage.base import local_path_of

    db = warehouse / "iceberg_catalog.db"
    with sqlite3.connect(db) as conn:
        (loc,) = conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?", (ns, table)
        ).fetchone()
    current = Path(str(local_path_of(loc)))
    doc = json.loads(current.read_text())
    sch = copy.deepcopy(next(s for s in doc["schemas"] if s["schema-id"] == doc["current-schema-id"]))
    sch["schema-id"] = max(s["schema-id"] for s in doc["schemas"]) + 1
    for f in sch["fields"]:
        if f["name"] == "d":
            f["type"] = to
    doc["schemas"].append(sch)
    doc["current-schema-id"] = sch["schema-id"]
    new = current.with_name(f"99999-{uuid.uuid4()}.metadata.json")
    new.write_text(json.dumps(doc))
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE "
            "table_namespace = ? AND table_name = ?",
            (new.as_uri(), loc, ns, table),
        )


def test_spark_own_files_of_signed_zeros_attest(spark: SparkSession, spark_warehouse: Path) -> None:
    """Spark's own writes of float / double zeros (each zero alone, both, beside other values; one file each): its
    bounds keep both zeros in Java's order, so the signed-zero bounds check (test_iceberg_round17c.py) attests them."""
    ns = f"zb17c{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    for t in ("FLOAT", "DOUBLE"):
        name, ref = f"iceberg.{ns}.t{t.lower()}", f"iceberg://iceberg/{ns}.t{t.lower()}"
        spark.sql(f"CREATE TABLE {name} (id BIGINT, x {t}) USING iceberg")
        for values in ("(0.0)", "(-0.0)", "(0.0), (-0.0)", "(-1.0), (-0.0)", "(-0.0), (1.0)", "(0.0), (1.0)"):
            rows = ", ".join(f"(1, CAST({v.strip('()')}D AS {t}))" for v in values.split(", "))
            spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES {rows}")
        bits = "java_method('java.lang.Double', 'doubleToRawLongBits', CAST(x AS DOUBLE))"
        assert spark.sql(f"SELECT id FROM {name} WHERE {bits} = -9223372036854775808").count() == 4  # -0.0 stored
        rc, doc = _record(spark_warehouse, ref)
        assert rc == 0, doc
        rc, doc = _cli(spark_warehouse, "verify", ref)
        assert rc == 0 and doc["passed"], doc
