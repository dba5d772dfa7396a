"""Spark's snapshot-management procedures on an attested Iceberg table (Iceberg 1.12): ``rollback_to_snapshot``,
``set_current_snapshot`` and ``cherrypick_snapshot``, measured and pinned.

A rollback to the attested snapshot makes it the table's current state again: it IS that version, and verifies
(its follow-up attestation is a child, no longer an ancestor, of the head). A rollback or ``set_current_snapshot``
to a snapshot no attestation covers does not. ``cherrypick_snapshot`` of our follow-up attestation snapshot (an
append of no file carrying the ``recipe_*`` summary keys) onto another head: Iceberg Java commits a new append of
no file and copies none of the keys (measured: only ``source-snapshot-id``), so the head is ``unattested``. A
cherry-pick of a staged (write-audit-publish) data snapshot is a data change: ``stale``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.test_spark_attacks import _verify
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _rows(spark: SparkSession, name: str) -> list[int]:
    spark.sql(f"REFRESH TABLE iceberg.{name}")
    return sorted(r[0] for r in spark.sql(f"SELECT id FROM iceberg.{name}").collect())


def test_rollback_cherrypick_and_set_current(spark: SparkSession, spark_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    catalog.create_namespace("snapmgmt")
    name, ref = "snapmgmt.t", "iceberg://iceberg/snapmgmt.t"
    table = catalog.create_table(name, schema=_ids().schema)
    table.append(_ids(1))
    table.append(_ids(2))
    attested = int(str(attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version))
    follow_up = catalog.load_table(name).current_snapshot().snapshot_id  # type: ignore[union-attr]
    catalog.load_table(name).append(_ids(666))
    later = catalog.load_table(name).current_snapshot().snapshot_id  # type: ignore[union-attr]

    def verdict() -> tuple[int, dict[str, Any]]:
        return _verify(ref, spark_warehouse)

    rc, doc = verdict()
    assert rc == 1 and codes(doc) == ["stale"], doc

    # roll back to the attested snapshot: readers get it, and it verifies (it is that version)
    spark.sql(f"CALL iceberg.system.rollback_to_snapshot('{name}', {attested})").collect()
    assert _rows(spark, name) == [1, 2]
    rc, doc = verdict()
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc

    # set the current snapshot to the unattested one: not verified
    spark.sql(f"CALL iceberg.system.set_current_snapshot('{name}', {later})").collect()
    assert _rows(spark, name) == [1, 2, 666]
    rc, doc = verdict()
    assert rc == 1 and codes(doc) == ["stale"], doc

    # cherry-pick the follow-up attestation (an append of no file) onto another head made on the attested snapshot
    spark.sql(f"CALL iceberg.system.set_current_snapshot('{name}', {attested})").collect()
    catalog.load_table(name).append(_ids(9))
    moved = catalog.load_table(name).current_snapshot().snapshot_id  # type: ignore[union-attr]
    spark.sql(f"CALL iceberg.system.cherrypick_snapshot('{name}', {follow_up})").collect()
    picked = catalog.load_table(name).current_snapshot()
    assert picked is not None and picked.parent_snapshot_id == moved and picked.snapshot_id != follow_up
    # measured: Iceberg Java copies none of the source's summary keys (only source-snapshot-id is added)
    assert not any(k.startswith("recipe_") for k in picked.summary.additional_properties), picked.summary
    assert picked.summary.additional_properties.get("source-snapshot-id") == str(follow_up)
    assert _rows(spark, name) == [1, 2, 9]
    # The attestation of S is carried by its child F, not in this head's ancestry, but its Puffin is registered as S's
    # statistics file, which the walk back from any head reads (v3keep13): S + an append of 9 is a data change since
    # the attestation (it was "unattested": F not found)
    rc, doc = verdict()
    assert rc == 1 and codes(doc) == ["stale"], doc

    # a staged (write-audit-publish) data snapshot cherry-picked onto the attested head: a data change
    spark.sql(f"CALL iceberg.system.set_current_snapshot('{name}', {follow_up})").collect()
    rc, doc = verdict()
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
    spark.sql(f"ALTER TABLE iceberg.{name} SET TBLPROPERTIES ('write.wap.enabled'='true')")
    with session_conf(spark, "spark.wap.id", "audit-1"):
        spark.sql(f"INSERT INTO iceberg.{name} VALUES (7)")
    staged = [s for s in catalog.load_table(name).snapshots()
              if s.summary.additional_properties.get("wap.id") == "audit-1"]
    assert len(staged) == 1 and _rows(spark, name) == [1, 2]
    rc, doc = verdict()
    assert rc == 0, doc  # a staged snapshot changes nothing readers of main get
    spark.sql(f"CALL iceberg.system.cherrypick_snapshot('{name}', {staged[0].snapshot_id})").collect()
    assert _rows(spark, name) == [1, 2, 7]
    rc, doc = verdict()
    assert rc == 1 and codes(doc) == ["stale"], doc


def test_a_tag_named_as_a_snapshot_id(spark: SparkSession, spark_warehouse: Path) -> None:
    """A tag named as the attested snapshot's id (and as ``0<id>``, which Java's ``Long.parseLong`` reads as the id),
    pointing at a later snapshot: Spark's ``VERSION AS OF`` resolves the snapshot id first (measured), so it reads the
    version ``verify --snapshot-id <id>`` checked, which still verifies."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    catalog.create_namespace("snaptag")
    name = "snaptag.t"
    table = catalog.create_table(name, schema=_ids().schema)
    table.append(_ids(1))
    attested = int(str(attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version))
    catalog.load_table(name).append(_ids(666))
    table = catalog.load_table(name)
    later = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.manage_snapshots().create_tag(snapshot_id=later, tag_name=str(attested)).commit()
    catalog.load_table(name).manage_snapshots().create_tag(snapshot_id=later, tag_name=f"0{attested}").commit()
    spark.sql(f"REFRESH TABLE iceberg.{name}")
    for spelling in (str(attested), f"'{attested}'", f"'0{attested}'"):
        got = [r[0] for r in spark.sql(f"SELECT id FROM iceberg.{name} VERSION AS OF {spelling}").collect()]
        assert got == [1], (spelling, got)
    rc, doc = _verify(f"iceberg://iceberg/{name}", spark_warehouse, "--snapshot-id", str(attested))
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
