"""What Spark's Iceberg runtime reads where the table metadata gives a snapshot's readers a choice
(test_iceberg_view_attacks makes the same attacks on pyiceberg-written tables): the schema of time travel and of a
branch read, and the delete files that apply when the manifest list and the manifests' entries disagree."""

from __future__ import annotations

import glob
import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_iceberg_view_attacks import _delete_manifest_sequence_number, swap_names
from tests.adversarial.test_spark_attacks import _attested_iceberg, _refused, _verify
from tests.conftest import required_hook

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark

hook = required_hook  # attest.spark.install(spark, policy="required") for the test (tests/conftest.py)


def _pyiceberg(warehouse: Path, name: str) -> Table:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    return SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse)).load_table(name.split(".", 1)[1])


def _rewrite_metadata(spark: SparkSession, warehouse: Path, name: str, edit: Callable[[dict[str, Any]], Any]) -> None:
    """A hand-made commit of Spark's Iceberg table ``name``: an edited copy of its metadata.json, the JDBC catalog
    (sqlite, shared with pyiceberg) pointed at it, the table refreshed in Spark."""
    from carriers.spark.session import pyiceberg_catalog_properties
    from carriers.storage.base import local_path_of

    table = _pyiceberg(warehouse, name)
    current = Path(local_path_of(table.metadata_location) or table.metadata_location)
    doc = json.loads(current.read_text())
    edit(doc)
    new = current.with_name(f"99999-{uuid.uuid4()}.metadata.json")
    new.write_text(json.dumps(doc))
    db = pyiceberg_catalog_properties(warehouse)["uri"][len("sqlite:///"):]
    namespace, table_name = name.split(".")[1:]
    with sqlite3.connect(db) as conn:
        changed = conn.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE "
                               "catalog_name = 'iceberg' AND table_namespace = ? AND table_name = ?",
                               (new.as_uri(), table.metadata_location, namespace, table_name)).rowcount
    assert changed == 1
    spark.sql(f"REFRESH TABLE {name}")


def _types(spark: SparkSession, query: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.sql(query).schema.fields}


def test_spark_time_travel_and_branch_reads_resolve_their_schemas(spark: SparkSession, hook: Hook,
                                                                   spark_warehouse: Path) -> None:
    """Spark's ``VERSION AS OF`` reads a snapshot under its own schema-id, a plain read and a branch read under the
    current schema (pyiceberg reads a branch under the head's own): the follow-up snapshot pointed at a schema with two
    names swapped made Spark's time travel to it read the ids as ``s`` (measured), and a current schema swapped so made
    its read of a branch do it; both were VERIFIED."""
    name, ref = _attested_iceberg(spark, hook, spark_warehouse)
    hook.uninstall()
    spark.sql(f"REFRESH TABLE {name}")  # Spark's cached table predates the hook's follow-up snapshot
    follow_up = _pyiceberg(spark_warehouse, name).current_snapshot()
    assert follow_up is not None
    honest = {"id": "int", "s": "string"}
    assert _types(spark, f"SELECT * FROM {name} VERSION AS OF {follow_up.snapshot_id}") == honest
    _rewrite_metadata(spark, spark_warehouse, name, lambda d: swap_names(d, snapshots=(follow_up.snapshot_id,)))
    assert _types(spark, f"SELECT * FROM {name}") == honest
    assert _types(spark, f"SELECT * FROM {name} VERSION AS OF {follow_up.snapshot_id}") == {"s": "int", "id": "string"}
    for args in ((), ("--snapshot-id", str(follow_up.snapshot_id))):
        _refused(ref, spark_warehouse, "reader_view_changed", "--level", "schema", *args)

    # A branch at the attested data: Spark reads it under the current schema, pyiceberg under the head's own.
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit AS OF VERSION {follow_up.parent_snapshot_id}")
    attested = follow_up.parent_snapshot_id
    _rewrite_metadata(spark, spark_warehouse, name, lambda d: [s.update({"schema-id": d["current-schema-id"]})
                                                               for s in d["snapshots"]])
    rc, doc = _verify(ref, spark_warehouse, "--snapshot-id", "audit")
    assert rc == 0, doc
    _rewrite_metadata(spark, spark_warehouse, name, lambda d: swap_names(d, current=True))
    assert _types(spark, f"SELECT * FROM {name}.branch_audit") == {"s": "int", "id": "string"}
    assert _types(spark, f"SELECT * FROM {name} VERSION AS OF {attested}") == honest
    by_pyiceberg = _pyiceberg(spark_warehouse, name).scan().use_ref("audit").to_arrow()
    assert str(by_pyiceberg.schema.field("id").type) == "int32"  # pyiceberg: the head's own schema
    _refused(ref, spark_warehouse, "reader_view_changed", "--snapshot-id", "audit", "--level", "schema")
    rc, doc = _verify(ref, spark_warehouse, "--snapshot-id", str(attested), "--level", "schema")
    assert rc != 0, doc  # the attested snapshot is the branch's head too


def test_spark_applies_a_delete_file_pyiceberg_skips_by_its_manifest_list_sequence_number(
        spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    """The manifests rewritten with explicit sequence numbers (the values they inherited) and the delete manifest's
    manifest-list sequence number set to 0: pyiceberg skips the delete manifest and reads the deleted row, Spark goes
    by the entries and does not (measured). The same files and entries; VERIFIED before, now readers that differ."""
    from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_entries, _rewrite_manifest_list

    name, ref = _attested_iceberg(spark, hook, spark_warehouse, "5",
                                  properties="'format-version'='2', 'write.delete.mode'='merge-on-read'")
    spark.sql(f"DELETE FROM {name} WHERE id = 2")
    hook.flush()
    assert hook.failed == 0, hook.errors
    rc, doc = _verify(ref, spark_warehouse)
    assert rc == 0 and doc["level"] == "bytes", doc
    hook.uninstall()

    def ids_pyiceberg() -> list[int]:
        return sorted(_pyiceberg(spark_warehouse, name).scan().to_arrow().column("id").to_pylist())

    def ids_spark() -> list[int]:
        spark.sql(f"REFRESH TABLE {name}")
        return sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect())

    assert ids_pyiceberg() == ids_spark() == [0, 1, 3, 4]
    table = _pyiceberg(spark_warehouse, name)
    _rewrite_manifest_entries(table, lambda entry: None)
    _rewrite_manifest_list(_pyiceberg(spark_warehouse, name), _delete_manifest_sequence_number(0))
    for checksum in glob.glob(f"{table.location()[len('file:'):]}/metadata/.*.crc"):  # Hadoop's: dropped too
        os.unlink(checksum)
    assert ids_pyiceberg() == [0, 1, 2, 3, 4]
    assert ids_spark() == [0, 1, 3, 4]
    rc, doc = _verify(ref, spark_warehouse, "--level", "schema")
    assert rc != 0 and "table_inconsistent" in [e["code"] for e in doc["errors"]], doc
    assert "pyiceberg skips delete manifest" in json.dumps(doc), doc


def _count(spark: SparkSession, query: str) -> int | str:
    """The rows ``query`` reads, or the first line of the error Spark raised."""
    try:
        return int(spark.sql(query).count())
    except Exception as e:  # the measurement: the error Spark raised
        return str(e).splitlines()[0][:200]


def test_spark_time_travel_by_timestamp_reads_the_snapshot_log_and_by_id_the_snapshots_schema_id(
        spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    """What Iceberg 1.12 in Spark reads where only time travel looks (test_iceberg_time_travel_attacks makes the same
    edits on pyiceberg tables): ``TIMESTAMP AS OF`` takes the snapshot from the snapshot log, not from the snapshots'
    ``timestamp-ms``, so a forged log points a time at another snapshot (outside what an attestation binds, and no
    verdict moves); a snapshot stripped of its ``schema-id`` is read under the current schema (a rename shows), one
    naming no schema is refused."""
    name, ref = _attested_iceberg(spark, hook, spark_warehouse)
    hook.uninstall()
    spark.sql(f"REFRESH TABLE {name}")
    follow_up = _pyiceberg(spark_warehouse, name).current_snapshot()
    assert follow_up is not None and follow_up.parent_snapshot_id is not None
    attested = follow_up.parent_snapshot_id
    spark.sql(f"INSERT INTO {name} VALUES (999, 'unattested')")
    table = _pyiceberg(spark_warehouse, name)
    head = table.current_snapshot()
    assert head is not None
    at = table.snapshot_by_id(attested).timestamp_ms  # type: ignore[union-attr]
    as_of = f"SELECT * FROM {name} TIMESTAMP AS OF timestamp_millis({at})"
    assert _count(spark, as_of) == 50

    def forge(doc: dict[str, Any]) -> None:
        times = {e["snapshot-id"]: e["timestamp-ms"] for e in doc["snapshot-log"]}
        doc["snapshot-log"] = [{"snapshot-id": head.snapshot_id, "timestamp-ms": times[attested]},
                               {"snapshot-id": 4242, "timestamp-ms": times[follow_up.snapshot_id]},
                               {"snapshot-id": head.snapshot_id, "timestamp-ms": times[head.snapshot_id]}]

    _rewrite_metadata(spark, spark_warehouse, name, forge)
    assert _count(spark, as_of) == 51  # the unattested head's rows, as of the attested snapshot's commit time
    at_follow_up = table.snapshot_by_id(follow_up.snapshot_id).timestamp_ms  # type: ignore[union-attr]
    missing = _count(spark, f"SELECT * FROM {name} TIMESTAMP AS OF timestamp_millis({at_follow_up})")
    assert isinstance(missing, str) and "4242" in missing  # Java loads the log as it is; the read fails
    assert _count(spark, f"SELECT * FROM {name}") == 51
    rc, doc = _verify(ref, spark_warehouse, "--snapshot-id", str(attested))
    assert rc == 0 and f"snapshot {attested}, attestation for snapshot {attested}" in doc["verdict"], doc

    spark.sql(f"ALTER TABLE {name} RENAME COLUMN s TO label")
    by_id = f"SELECT * FROM {name} VERSION AS OF {attested}"
    assert _types(spark, by_id) == {"id": "int", "s": "string"}
    rc, doc = _verify(ref, spark_warehouse, "--snapshot-id", str(attested), "--level", "schema")
    assert rc == 0, doc

    def of(d: dict[str, Any]) -> dict[str, Any]:
        return next(s for s in d["snapshots"] if s["snapshot-id"] == attested)

    _rewrite_metadata(spark, spark_warehouse, name, lambda d: of(d).pop("schema-id"))
    assert _types(spark, by_id) == {"id": "int", "label": "string"}
    _refused(ref, spark_warehouse, "reader_view_changed", "--snapshot-id", str(attested), "--level", "schema")
    _rewrite_metadata(spark, spark_warehouse, name, lambda d: of(d).update({"schema-id": 77}))
    assert isinstance(_count(spark, by_id), str)  # Java: no schema 77 (pyiceberg reads the current one)
    _refused(ref, spark_warehouse, "table_inconsistent", "--snapshot-id", str(attested), "--level", "schema")


def test_spark_applies_the_delete_files_of_a_table_relabelled_format_version_1(spark: SparkSession,
                                                                                 spark_warehouse: Path) -> None:
    """A format-v2 table with a position delete file relabelled ``format-version: 1`` (v1 has no delete files;
    pyiceberg refuses to commit one): Spark and pyiceberg both still apply the delete (measured: 2 rows each), so no
    reader gets the deleted row back (test_iceberg_time_travel_attacks pins the verdict). Java refuses the relabel
    while a snapshot's sequence number exceeds ``last-sequence-number`` (0 in v1)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.iceberg.conftest import commit_delete_file, rows

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    ns = f"adv{uuid.uuid4().hex[:6]}"
    catalog.create_namespace(ns)
    table = catalog.create_table(f"{ns}.t", schema=rows(0).schema)
    table.append(rows(0))
    data = Path(table.location()[len("file://"):]) / "data"
    data.mkdir(parents=True, exist_ok=True)
    commit_delete_file(table, data / "del.parquet")
    name = f"iceberg.{ns}.t"
    assert _count(spark, f"SELECT * FROM {name}") == 2

    def v1(doc: dict[str, Any]) -> None:
        doc["format-version"] = 1
        doc["schema"] = doc["schemas"][0]
        doc["partition-spec"] = []
        doc["last-sequence-number"] = 0
        for s in doc["snapshots"]:
            s.pop("sequence-number", None)

    _rewrite_metadata(spark, spark_warehouse, name, v1)
    assert catalog.load_table(f"{ns}.t").metadata.format_version == 1
    assert sorted(r.id for r in spark.sql(f"SELECT * FROM {name}").collect()) == [1, 2]
    assert sorted(catalog.load_table(f"{ns}.t").scan().to_arrow().column("id").to_pylist()) == [1, 2]
