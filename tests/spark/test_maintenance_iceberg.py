"""Iceberg table maintenance through Spark's Iceberg runtime (1.12) on attested tables (docs/maintenance.md).

The attestation is written by pyiceberg (attest_after_write: a follow-up snapshot, plus its Puffin file registered in
the table's statistics, carriers/iceberg/kept.py); the maintenance is Spark's: ``remove_orphan_files`` with
``older_than`` = now, ``expire_snapshots``, ``rewrite_data_files``, ``rewrite_manifests``. Verification is the CLI in
a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_spark_attacks import _verify

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PROGRAM = "c" * 64


def _pyiceberg(warehouse: Path, name: str) -> Table:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    return SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse)).load_table(name.split(".", 1)[1])


def _table(spark: SparkSession, warehouse: Path, *inserts: int, retain_tag: bool = True) -> tuple[str, str]:
    """(Spark name, attest reference) of a Spark-written Iceberg table, attested by pyiceberg after the writes
    (``retain_tag=False``: without the retention tag, docs/iceberg.md "Expiry and tags")."""
    from carriers.iceberg.carrier import attest_after_write

    ns = f"mnt{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg")
    for rows in inserts or (50,):
        spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({rows})")
    attest_after_write(_pyiceberg(warehouse, name), model="orders", program_hash=PROGRAM, retain_tag=retain_tag)
    spark.sql(f"REFRESH TABLE {name}")
    return name, f"iceberg://iceberg/{ns}.t"


def _now(spark: SparkSession) -> str:
    """A timestamp literal just after every file written so far (Spark's session time zone)."""
    # Snapshot times, the literal and Java's clock are one wall clock at millisecond precision (file times, from the
    # kernel's coarse clock, are never ahead of it): a few milliseconds put every earlier write strictly before.
    time.sleep(0.05)
    return str(spark.sql("SELECT CAST(current_timestamp() AS STRING)").first()[0])


def _remove_orphans_now(spark: SparkSession, name: str) -> list[str]:
    """Iceberg's DeleteOrphanFiles action with olderThan(now) (the procedure refuses an interval under 24 hours)."""
    time.sleep(0.05)  # every file written so far strictly older than now, as in _now (no hook is pending here)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    result = jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession).deleteOrphanFiles(table) \
        .olderThan(int(time.time() * 1000)).execute()
    return [str(x) for x in result.orphanFileLocations()]


def _age(table: Table, days: float) -> None:
    """Every file of the table looks ``days`` old (the procedure's default cutoff is 3 days)."""
    from carriers.storage.base import local_path_of

    when = time.time() - days * 86400
    for path in Path(local_path_of(table.location()) or "").rglob("*"):
        if path.is_file():
            os.utime(path, (when, when))


def _ok(ref: str, warehouse: Path, *args: str) -> dict[str, Any]:
    rc, doc = _verify(ref, warehouse, "--level", "bytes", *args)
    assert rc == 0 and doc["level"] == "bytes", doc
    return doc


def _kept_dir(table: Table) -> Path:
    from carriers.storage.base import local_path_of

    return Path(local_path_of(table.metadata_location) or "").parent / "recipe_attest"


def test_remove_orphan_files_keeps_the_attestation(spark: SparkSession, spark_warehouse: Path) -> None:
    """Measured before: the sidecar under metadata/recipe_attest/ was deleted (no metadata references it),
    sidecar_missing. Now its Puffin copy is a registered statistics file, which Spark keeps."""
    name, ref = _table(spark, spark_warehouse)
    kept = _kept_dir(_pyiceberg(spark_warehouse, name))
    before = sorted(p.name for p in kept.iterdir())
    removed = _remove_orphans_now(spark, name)
    after = sorted(p.name for p in kept.iterdir())
    # Spark deleted the sidecar (orphan), kept the Puffin file the metadata registers.
    assert any(r.endswith(".json") and "recipe_attest" in r for r in removed), removed
    assert [n for n in after if n.endswith(".puffin")] == [n for n in before if n.endswith(".puffin")] != []
    assert not any(n.endswith(".json") for n in after)
    doc = _ok(ref, spark_warehouse)
    assert doc["attested"] is True


def test_remove_orphan_files_procedure_at_its_default_cutoff(spark: SparkSession, spark_warehouse: Path) -> None:
    name, ref = _table(spark, spark_warehouse, 10, 10)
    table = _pyiceberg(spark_warehouse, name)
    _age(table, 4)
    removed = spark.sql(f"CALL iceberg.system.remove_orphan_files(table => '{name.split('.', 1)[1]}')").collect()
    assert any(str(r[0]).endswith(".json") and "recipe_attest" in str(r[0]) for r in removed), removed
    _ok(ref, spark_warehouse)


def test_expire_snapshots_keeps_the_current_attestation(spark: SparkSession, spark_warehouse: Path) -> None:
    name, ref = _table(spark, spark_warehouse, 20, 30)
    table = name.split(".", 1)[1]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    meta = _pyiceberg(spark_warehouse, name).metadata
    assert len(meta.snapshots) == 1  # only the follow-up snapshot is left
    assert [s.snapshot_id for s in meta.statistics] == [meta.current_snapshot_id]
    _remove_orphans_now(spark, name)
    _ok(ref, spark_warehouse)


def test_expiring_the_follow_up_snapshot_does_not_lose_the_attestation(spark: SparkSession,
                                                                       spark_warehouse: Path) -> None:
    """The data snapshot S is kept (a later write follows the follow-up F), F is expired by id: F's summary carried the
    attestation (measured before: S unattested). S's statistics entry keeps it, and the Puffin file with it. Without
    the retention tag: with it, Java refuses to expire F ("Cannot expire ... still referenced by refs")."""
    name, ref = _table(spark, spark_warehouse, retain_tag=False)
    table = _pyiceberg(spark_warehouse, name)
    follow_up = table.current_snapshot()
    assert follow_up is not None and follow_up.parent_snapshot_id is not None
    data = follow_up.parent_snapshot_id
    spark.sql(f"INSERT INTO {name} VALUES (1000, 'later')")
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{name.split('.', 1)[1]}', "
              f"snapshot_ids => ARRAY({follow_up.snapshot_id}))").collect()
    _remove_orphans_now(spark, name)
    meta = _pyiceberg(spark_warehouse, name).metadata
    assert {s.snapshot_id for s in meta.snapshots} >= {data} and follow_up.snapshot_id not in \
        {s.snapshot_id for s in meta.snapshots}
    doc = _ok(ref, spark_warehouse, "--snapshot-id", str(data))
    assert doc["attested_version"] == str(data)
    assert any("statistics file" in n for n in doc["notes"]), doc
    # The current snapshot (an append after it) is not verified: its ancestry ends at the expired follow-up.
    rc, doc = _verify(ref, spark_warehouse)
    assert rc != 0 and doc["attested"] is False and any("expired" in n for n in doc["notes"]), doc


def _compacted(ref: str, warehouse: Path, at_least: int) -> dict[str, Any]:
    """VERIFIED at bytes level by content across Spark's rewrite into one file (issue 32), of at least `at_least`
    files (Spark writes one or more files per insert)."""
    import re

    doc = _ok(ref, warehouse)
    pattern = r"^VERIFIED \(content; compacted at snapshots? [\d, ]+: (\d+) files → 1, same rows"
    found = re.search(pattern, doc["verdict"])
    assert found is not None and int(found.group(1)) >= at_least, doc["verdict"]
    return doc


def test_rewrite_data_files_then_expire(spark: SparkSession, spark_warehouse: Path) -> None:
    """Measured before the content digest: compacted, then after expiry unattested. Now the rewrite verifies by
    content; `record` carries the attestation forward (the rewritten files' bytes, the same program and content),
    and after expire_snapshots(retain_last => 1) and remove_orphan_files the current snapshot verifies at bytes
    level."""
    from carriers.iceberg.carrier import attest_after_write

    name, ref = _table(spark, spark_warehouse, 10, 10, 10)
    table = name.split(".", 1)[1]
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2'))"
              ).collect()
    _compacted(ref, spark_warehouse, 3)
    result = attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    _remove_orphans_now(spark, name)
    meta = _pyiceberg(spark_warehouse, name).metadata
    assert len(meta.snapshots) == 1
    doc = _ok(ref, spark_warehouse)
    assert doc["attested_version"] == result.attested_version and "compacted" not in doc["verdict"], doc
    assert spark.sql(f"SELECT count(*) FROM {name}").first()[0] == 30


def test_rewrite_position_delete_files_and_data_files(spark: SparkSession, spark_warehouse: Path) -> None:
    """A merge-on-read DELETE writes a position delete file before the attestation; rewrite_position_delete_files
    then rewrites it (a replace snapshot adding and removing delete files only: the data files' rows as readers get
    them are read again), and rewrite_data_files applies it into new files: both verify by content."""
    ns = f"mnt{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg TBLPROPERTIES ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read')")
    for start in (0, 10):
        spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({start}, {start + 10})")
    spark.sql(f"DELETE FROM {name} WHERE id IN (3, 13)")
    from carriers.iceberg.carrier import attest_after_write

    attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    summary = _pyiceberg(spark_warehouse, name).current_snapshot()
    assert summary is not None
    table = name.split(".", 1)[1]
    spark.sql(f"CALL iceberg.system.rewrite_position_delete_files(table => '{table}', "
              "options => map('rewrite-all', 'true'))").collect()
    snap = _pyiceberg(spark_warehouse, name).current_snapshot()
    assert snap is not None and snap.summary is not None and snap.summary.operation.value == "replace"
    assert snap.snapshot_id != summary.snapshot_id
    doc = _ok(ref, spark_warehouse)
    assert doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), doc["verdict"]
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2', "
              "'delete-file-threshold', '1'))").collect()
    _compacted(ref, spark_warehouse, 2)
    assert spark.sql(f"SELECT count(*) FROM {name}").first()[0] == 18


@pytest.mark.parametrize("never_current", [False, True])
def test_rewrite_data_files_after_an_equality_delete(spark: SparkSession, spark_warehouse: Path,
                                                     never_current: bool) -> None:
    """An equality delete file (what Flink's upserts write; Spark writes position deletes for merge-on-read, so it is
    written by hand, its column stored with field id 1, and committed through Iceberg Java's RowDelta) hides
    ids 3 and 13 before the attestation. Measured: Spark's Iceberg runtime reads 18 rows without them, pyiceberg
    0.12 refuses the scan. The attestation binds the digest of Spark's 18 rows (before: none, unsupported_table),
    and rewrite_data_files, which applies the delete into the new file, verifies by content (before: compacted).
    The rewrite's commit drops the equality delete (older than every live data file), and with it the view's
    equality fields as Java types them: reader_view_changed before they were compared on the fields both views hold.
    ``never_current``: a column added then dropped, so Java makes the first schema current again and keeps the other,
    of a higher id (its equality field typed alike), which Java's delete index reads the field from."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from carriers.iceberg.carrier import attest_after_write
    from carriers.storage.base import local_path_of

    ns = f"mnt{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg TBLPROPERTIES ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read')")
    for start in (0, 10):
        spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({start}, {start + 10})")
    if never_current:
        spark.sql(f"ALTER TABLE {name} ADD COLUMN x STRING")
        spark.sql(f"ALTER TABLE {name} DROP COLUMN x")
    table = _pyiceberg(spark_warehouse, name)
    if never_current:  # Java reused the first schema's id: the one with x is of a higher id and not current
        assert table.schema().schema_id < max(s.schema_id for s in table.metadata.schemas)
    path = Path(local_path_of(table.location()) or "") / "data" / "eq.parquet"
    pq.write_table(pa.table({"id": pa.array([3, 13], pa.int32())}, schema=pa.schema(
        [pa.field("id", pa.int32(), metadata={b"PARQUET:field_id": b"1"})])), path)
    # Committed through Iceberg Java's RowDelta, as Flink commits it: pyiceberg 0.12's manifest writer stores
    # equality_ids as longs, which Iceberg Java 1.12 fails to read (ClassCastException, measured).
    jvm = spark._jvm  # type: ignore[attr-defined]
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)  # type: ignore[union-attr]
    ids[0] = 1
    delete = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(java_table.spec()).ofEqualityDeletes(ids) \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size).withRecordCount(2).build()
    java_table.newRowDelta().addDeletes(delete).commit()
    spark.sql(f"REFRESH TABLE {name}")
    got = sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect())
    assert got == [i for i in range(20) if i not in (3, 13)]
    with pytest.raises((NotImplementedError, ValueError), match="equality deletes"):
        _pyiceberg(spark_warehouse, name).scan().to_arrow()
    attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    doc = _ok(ref, spark_warehouse)
    assert doc.get("content_digest_bound") is not False, doc
    table_name = name.split(".", 1)[1]
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table_name}', options => map('min-input-files', "
              "'2', 'delete-file-threshold', '1'))").collect()
    _compacted(ref, spark_warehouse, 2)
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()) == got


def test_rewrite_manifests(spark: SparkSession, spark_warehouse: Path) -> None:
    name, ref = _table(spark, spark_warehouse, 10, 10)
    spark.sql(f"CALL iceberg.system.rewrite_manifests(table => '{name.split('.', 1)[1]}')").collect()
    snapshot = _pyiceberg(spark_warehouse, name).current_snapshot()
    assert snapshot is not None and snapshot.summary is not None and snapshot.summary.operation.value == "replace"
    # Measured before: compacted (every replace was). The manifests changed, not one data file: it verifies, and
    # no rewrite is named (rewrites_between lists the snapshots that touched files: none).
    doc = _ok(ref, spark_warehouse)
    assert "compacted" not in doc["verdict"], doc["verdict"]


def test_compute_table_stats_on_the_carrier_snapshot(spark: SparkSession, spark_warehouse: Path) -> None:
    """Spark's compute_table_stats registers its own statistics file for the current (follow-up) snapshot, replacing
    ours there; the entry for the attested snapshot remains, so orphan removal keeps the attestation."""
    name, ref = _table(spark, spark_warehouse)
    table = name.split(".", 1)[1]
    spark.sql(f"CALL iceberg.system.compute_table_stats(table => '{table}')").collect()
    meta = _pyiceberg(spark_warehouse, name).metadata
    ours = [s for s in meta.statistics if "/recipe_attest/" in s.statistics_path]
    theirs = [s for s in meta.statistics if "/recipe_attest/" not in s.statistics_path]
    current = meta.current_snapshot_id
    assert [s.snapshot_id for s in theirs] == [current] and len(ours) == 1 and ours[0].snapshot_id != current
    _remove_orphans_now(spark, name)
    _ok(ref, spark_warehouse)


def test_a_hand_made_rewrite_that_loses_a_column_is_refused(spark: SparkSession, spark_warehouse: Path) -> None:
    """A dishonest replace snapshot made by hand on a Spark table: the new file names the column `s` right but
    gives it an unknown field id (the public compaction bug: a column written by name after a rename). Spark and
    pyiceberg resolve columns by id and read nulls; the content check refuses it."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.conftest import codes
    from tests.iceberg.rewrites import replace, with_ids

    name, ref = _table(spark, spark_warehouse, 10)
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    table = catalog.load_table(name.split(".", 1)[1])
    data = pa.table({"id": pa.array(range(10), pa.int32()), "s": [str(i) for i in range(10)]})
    replace(catalog, table, [with_ids(data, [1, 99])])
    spark.sql(f"REFRESH TABLE {name}")
    assert spark.sql(f"SELECT count(*), count(s) FROM {name}").first()[:] == (10, 0)  # Spark reads s as null
    rc, doc = _verify(ref, spark_warehouse)
    assert rc != 0 and "content_changed" in codes(doc), doc


def test_rewrites_then_expiry_and_orphan_removal_keep_the_attestation_without_the_hook(
        spark: SparkSession, spark_warehouse: Path) -> None:
    """Issue 32: two rewrite_data_files, then expire_snapshots(older_than => now, retain_last => 1) and
    DeleteOrphanFiles olderThan(now), with no `attest record` and no hook in between. Measured before: UNATTESTED
    ("ancestry ends at expired snapshots"). The retention tag set with the attestation keeps the follow-up carrying it
    (Java's expiry keeps what a ref names), so the current rows are judged against the attested content digest."""
    name, ref = _table(spark, spark_warehouse, 10, 10, 10)
    table = name.split(".", 1)[1]
    tagged = _pyiceberg(spark_warehouse, name).metadata.refs["recipe-attest"].snapshot_id
    for _ in range(2):
        spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}', options => map('rewrite-all', "
                  "'true'))").collect()
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    _remove_orphans_now(spark, name)
    meta = _pyiceberg(spark_warehouse, name).metadata
    assert {s.snapshot_id for s in meta.snapshots} == {meta.current_snapshot_id, tagged}
    doc = _ok(ref, spark_warehouse)
    assert doc["verdict"].startswith("VERIFIED (content; history since snapshot "), doc["verdict"]
    assert any("recipe-attest" in n and "has expired" in n for n in doc["notes"]), doc["notes"]
    assert spark.sql(f"SELECT count(*) FROM {name}").first()[0] == 30


def test_java_expiry_of_a_re_records_first_follow_up(spark: SparkSession, spark_warehouse: Path) -> None:
    """docs/maintenance.md: a re-record (follow-ups F1, F2 of one data snapshot D), then Java's
    expire_snapshots(snapshot_ids => ARRAY(F1)). Measured: Java leaves F2's parent id naming the expired F1 (pyiceberg
    clears it); that shape was refused as carrier_tampered on an honest table. F2 binds D and holds exactly D's files:
    it verifies at bytes level."""
    from carriers.iceberg.carrier import attest_after_write

    name, ref = _table(spark, spark_warehouse, 10)
    first = _pyiceberg(spark_warehouse, name).current_snapshot()
    assert first is not None and first.parent_snapshot_id is not None
    data = first.parent_snapshot_id
    attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{name.split('.', 1)[1]}', "
              f"snapshot_ids => ARRAY({first.snapshot_id}))").collect()
    table = _pyiceberg(spark_warehouse, name)
    second = table.current_snapshot()
    assert second is not None and table.snapshot_by_id(first.snapshot_id) is None
    assert second.parent_snapshot_id == first.snapshot_id  # measured: Java keeps the expired parent's id
    doc = _ok(ref, spark_warehouse)
    assert doc["attested_version"] == str(data), doc


def test_each_branch_s_retention_tag_survives_java_expiry(spark: SparkSession, spark_warehouse: Path) -> None:
    """One retention tag per branch (docs/iceberg.md "Expiry and tags"): main's `recipe-attest` and the branch's
    `recipe-attest@audit`, set by pyiceberg. Spark resolves each as a ref (VERSION AS OF takes a string that does not
    parse as a long for a ref name; the identifier selector `tag_…` too), and Java's expiry keeps both: after two
    rewrite_data_files on main and expire_snapshots(older_than => now, retain_last => 1), main verifies by content
    through its own tag and the branch at its head."""
    from carriers.iceberg.carriage import RETAIN_TAG, retain_tag_name
    from carriers.iceberg.carrier import attest_after_write

    name, ref = _table(spark, spark_warehouse, 10, 10)
    table = name.split(".", 1)[1]
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {name}.branch_audit SELECT id, CAST(id AS STRING) FROM range(100, 105)")
    attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM, branch="audit")
    spark.sql(f"REFRESH TABLE {name}")
    refs = _pyiceberg(spark_warehouse, name).metadata.refs
    tagged = {refs[RETAIN_TAG].snapshot_id, refs[retain_tag_name("audit")].snapshot_id}
    assert refs[retain_tag_name("audit")].snapshot_id == refs["audit"].snapshot_id and len(tagged) == 2
    count = "SELECT count(*) FROM {} VERSION AS OF '{}'"
    assert spark.sql(count.format(name, RETAIN_TAG)).first()[0] == 20
    assert spark.sql(count.format(name, retain_tag_name("audit"))).first()[0] == 25
    assert spark.sql(f"SELECT count(*) FROM {name}.`tag_{retain_tag_name('audit')}`").first()[0] == 25
    for _ in range(2):
        spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{table}', options => map('rewrite-all', "
                  "'true'))").collect()
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    meta = _pyiceberg(spark_warehouse, name).metadata
    assert tagged <= {s.snapshot_id for s in meta.snapshots}
    doc = _ok(ref, spark_warehouse)
    assert doc["verdict"].startswith("VERIFIED (content; history since snapshot "), doc["verdict"]
    assert any(f"tag {RETAIN_TAG!r}" in n for n in doc["notes"]), doc["notes"]
    doc = _ok(ref, spark_warehouse, "--snapshot-id", "audit")
    assert doc["passed"] and doc["verdict"].startswith("VERIFIED"), doc["verdict"]


def test_a_dropped_branch_s_tag_released_then_java_expiry_frees_it(spark: SparkSession,
                                                                  spark_warehouse: Path) -> None:
    """`ALTER TABLE … DROP BRANCH audit` leaves `recipe-attest@audit` (Iceberg drops no tag with a branch), and Java's
    expiry keeps its snapshot; `release_stale_tags` (`attest release-tags`) removes it, and the next expiry frees the
    branch's snapshots; main still verifies."""
    from carriers.iceberg.carriage import retain_tag_name
    from carriers.iceberg.carrier import attest_after_write, release_stale_tags

    name, ref = _table(spark, spark_warehouse, 10)
    table = name.split(".", 1)[1]
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {name}.branch_audit SELECT id, CAST(id AS STRING) FROM range(100, 105)")
    attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM, branch="audit")
    spark.sql(f"REFRESH TABLE {name}")
    tagged = _pyiceberg(spark_warehouse, name).metadata.refs[retain_tag_name("audit")].snapshot_id
    spark.sql(f"ALTER TABLE {name} DROP BRANCH audit")

    def expire() -> set[int]:
        spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP "
                  f"'{_now(spark)}', retain_last => 1)").collect()
        return {s.snapshot_id for s in _pyiceberg(spark_warehouse, name).metadata.snapshots}

    assert tagged in expire()  # measured before: the dropped branch's tag kept its snapshot at every expiry
    assert release_stale_tags(_pyiceberg(spark_warehouse, name)) == [retain_tag_name("audit")]
    spark.sql(f"REFRESH TABLE {name}")
    assert tagged not in expire()
    doc = _ok(ref, spark_warehouse)
    assert doc["passed"] and doc["verdict"].startswith("VERIFIED"), doc["verdict"]


@pytest.mark.parametrize("version", ["2", "3"])
def test_rewrite_data_files_after_a_nested_field_added_since_the_last_write(spark: SparkSession,
                                                                           spark_warehouse: Path, version: str) -> None:
    """A struct's field added after the last write (``ALTER TABLE … ADD COLUMN st.c``: no snapshot), then the
    attestation: the attested head is read under its own schema-id by time travel and under the table's by a plain
    read. Spark's rewrite_data_files commits under the table's schema, the one its rows are checked under. Measured
    before: ``reader_view_changed`` ("the schemas readers of the snapshot resolve changed"), format v2 and v3 alike,
    though Spark read the same rows after it."""
    from carriers.iceberg.carrier import attest_after_write

    ns = f"mnt{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, st STRUCT<a: INT, b: STRING>) USING iceberg "
              f"TBLPROPERTIES ('format-version' = '{version}')")
    for start in (0, 10, 20):
        spark.sql(f"INSERT INTO {name} SELECT id, named_struct('a', id * 2, 'b', CAST(id AS STRING)) "
                  f"FROM range({start}, {start + 10})")
    spark.sql(f"ALTER TABLE {name} ADD COLUMN st.c INT")
    attest_after_write(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    before = sorted(map(str, spark.sql(f"SELECT * FROM {name}").collect()))
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{ns}.t', options => map('min-input-files', '2'))"
              ).collect()
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(map(str, spark.sql(f"SELECT * FROM {name}").collect())) == before  # the rewrite is honest
    _compacted(ref, spark_warehouse, 3)


# ---- format v3: detached attestations kept by a metadata-only commit (issue 32.3) -----------------------------------

def test_a_v3_detached_attestation_survives_expiry_and_orphan_removal(spark: SparkSession,
                                                                      spark_warehouse: Path) -> None:
    """A format-v3 table is attested detached (pyiceberg 0.12 writes no v3 manifest list, nor v3 table metadata). The
    hook's attestation now registers its Puffin file as the attested snapshot's statistics file and tags it, through
    Java's Iceberg API. Measured before: a rewrite then expire_snapshots with no record between, and Java's
    DeleteOrphanFiles olderThan(now) (which deleted the pointer files), each left the table UNATTESTED.

    Table A: attested, rewritten with the hook off (no record between), expired (retain_last => 1), orphans removed:
    the rewrite is judged by content against the kept attestation. Table B: the hook carries the attestation across
    its rewrite (a detached carry-forward, kept the same way), then the same maintenance: bytes level."""
    from attest.spark import install
    from carriers.iceberg.carriage import RETAIN_TAG

    hook = install(spark, policy="required")
    names: list[tuple[str, str]] = []
    try:
        for _ in range(2):
            ns = f"v3k{uuid.uuid4().hex[:6]}"
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
            name = f"iceberg.{ns}.t"
            spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg TBLPROPERTIES ('format-version'='3')")
            for rows in (30, 20):
                spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({rows})")
            hook.flush()
            names.append((name, f"iceberg://iceberg/{ns}.t"))
        assert hook.failed == 0 and hook.attested == 4, hook.errors
        for name, _ref in names:
            table = _pyiceberg(spark_warehouse, name)
            head = table.current_snapshot()
            assert head is not None and table.metadata.format_version == 3
            # The metadata-only commit: no snapshot added, the head's statistics entry and the tag on the head.
            assert len(table.metadata.snapshots) == 2
            assert head.snapshot_id in {s.snapshot_id for s in table.metadata.statistics}
            assert table.metadata.refs[RETAIN_TAG].snapshot_id == head.snapshot_id
        (name_a, ref_a), (name_b, ref_b) = names
        hook.uninstall()
        spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{name_a.split('.', 1)[1]}', "
                  "options => map('rewrite-all', 'true'))").collect()
        hook = install(spark, policy="required")
        spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{name_b.split('.', 1)[1]}', "
                  "options => map('rewrite-all', 'true'))").collect()
        hook.flush()
        assert hook.failed == 0 and hook.carried == 1, hook.errors
    finally:
        hook.uninstall()
    for name, _ref in names:
        spark.sql(f"REFRESH TABLE {name}")
        spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{name.split('.', 1)[1]}', "
                  f"older_than => TIMESTAMP '{_now(spark)}', retain_last => 1)").collect()
    removed = [r for name, _ref in names for r in _remove_orphans_now(spark, name)]
    # Java deleted the pointers (no metadata names them) and kept every Puffin file the statistics name.
    assert any("recipe_attest/snapshots/" in r for r in removed), removed
    assert not any(r.endswith(".puffin") for r in removed), removed
    for name, _ref in names:
        assert spark.sql(f"SELECT count(*) FROM {name}").first()[0] == 50  # Java still reads the table
    rc, doc = _verify(ref_a, spark_warehouse, "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content"), doc  # the rewrite judged by its rows
    doc = _ok(ref_b, spark_warehouse)
    assert doc["verdict"].startswith("VERIFIED"), doc



def test_a_v3_attestation_recorded_by_the_cli_in_a_sql_catalog_survives_java_maintenance(
        spark: SparkSession, spark_warehouse: Path) -> None:
    """`attest record` (the CLI, pyiceberg: no Spark in it) on a v3 table Spark wrote, in the JDBC/sqlite catalog Spark
    uses: the keep is committed at the JSON level and the catalog row swapped (carriers/iceberg/sql_keep.py). Java
    then reads the new metadata (through the catalog, and the file loaded by path) with the same rows; a rewrite with
    no record between, Java's expire_snapshots(older_than => now, retain_last => 1) and DeleteOrphanFiles
    olderThan(now) (which deleted the pointer) leave the verdict what it was before them: VERIFIED (content), and
    the attested snapshot VERIFIED at bytes level. Measured before: nothing was committed and the table was
    UNATTESTED after them (docs/maintenance.md, the issue's matrix)."""
    from carriers.iceberg.carriage import RETAIN_TAG
    from tests.spark.test_hook import _attest

    ns = f"v3s{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name, ref = f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg TBLPROPERTIES ('format-version'='3')")
    for rows in (30, 20):
        spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({rows})")
    before = sorted(map(str, spark.sql(f"SELECT * FROM {name}").collect()))
    table = _pyiceberg(spark_warehouse, name)
    attested = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    old_location = table.metadata_location
    proc = _attest("record", ref, "--model", "orders", "--program-hash", PROGRAM, "--json",
                   warehouse=spark_warehouse)
    assert proc.returncode == 0 and "warning" not in proc.stderr.lower(), proc.stdout + proc.stderr
    table = _pyiceberg(spark_warehouse, name)
    assert table.metadata_location != old_location and table.metadata.format_version == 3
    assert len(table.metadata.snapshots) == 2  # metadata only
    assert [s.snapshot_id for s in table.metadata.statistics] == [attested]
    assert table.metadata.refs[RETAIN_TAG].snapshot_id == attested
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(map(str, spark.sql(f"SELECT * FROM {name}").collect())) == before  # Java, through the catalog
    by_path = spark.read.format("iceberg").load(table.metadata_location)  # Java, the file itself
    assert sorted(map(str, by_path.collect())) == before
    tags = spark.sql(f"SELECT name, snapshot_id FROM {name}.refs WHERE type = 'TAG'").collect()
    assert [(r[0], r[1]) for r in tags] == [(RETAIN_TAG, attested)]
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{ns}.t', options => map('rewrite-all', 'true'))"
              ).collect()
    rc, doc = _verify(ref, spark_warehouse, "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content"), doc
    verdict = doc["verdict"].split(";")[0]
    at = _ok(f"{ref}@{attested}", spark_warehouse)["verdict"]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{ns}.t', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    removed = _remove_orphans_now(spark, name)
    assert any("recipe_attest/snapshots/" in r for r in removed), removed  # the pointer went
    assert not any(r.endswith(".puffin") for r in removed), removed
    table = _pyiceberg(spark_warehouse, name)
    assert attested in {s.snapshot_id for s in table.metadata.snapshots}  # the tag kept it
    rc, doc = _verify(ref, spark_warehouse, "--level", "bytes")
    assert rc == 0 and doc["verdict"].split(";")[0] == verdict, doc
    assert _ok(f"{ref}@{attested}", spark_warehouse)["verdict"] == at
    assert sorted(map(str, spark.sql(f"SELECT * FROM {name}").collect())) == before
    # Then `attest record` carries it forward (detached, kept the same way) and the same maintenance runs again: the
    # carry-forward's pointer is deleted, its Puffin file kept, the current snapshot verifies at bytes level.
    proc = _attest("record", ref, "--model", "orders", "--program-hash", PROGRAM, "--json",
                   warehouse=spark_warehouse)
    assert proc.returncode == 0 and "warning" not in proc.stderr.lower(), proc.stdout + proc.stderr
    assert json.loads(proc.stdout).get("continues"), proc.stdout
    spark.sql(f"REFRESH TABLE {name}")
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{ns}.t', older_than => TIMESTAMP '{_now(spark)}', "
              "retain_last => 1)").collect()
    removed = _remove_orphans_now(spark, name)
    assert any("recipe_attest/snapshots/" in r for r in removed), removed
    doc = _ok(ref, spark_warehouse)
    assert doc["verdict"].startswith("VERIFIED"), doc
    assert sorted(map(str, spark.sql(f"SELECT * FROM {name}").collect())) == before
