"""Attacks on what ``attest audit`` reads and lists (round 14).

The store's walk named each table it found by its key: ``<root>/<prefix>``. delta-rs reads a table URI through a URL
parser (Rust's ``url``): a percent-escape is decoded, ``#`` and ``?`` end the path, a trailing space is trimmed. So a
tampered table copied to the literal key ``lake/%6Frders/`` (or ``lake/orders#x/``, ``lake/orders?x/``,
``lake/orders /``) was audited as ``s3://b/lake/%6Frders``, which opens ``lake/orders``: the genuine table verified
twice, the copy never read, exit 0 — while a reader of the literal key (Spark's ``s3a://`` path, which Hadoop does not
decode; a listing) gets the copy. Measured on S3 (SeaweedFS), GCS (fake-gcs-server) and Azure (Azurite) alike. Now a
prefix whose key the parser would alter is named percent-encoded (``lake/%256Frders``), which delta-rs opens as that
key, and its line says so.

The views of a SQL catalog (iceberg-java's JdbcCatalog writes them in its database, as Spark does through
``attest.spark.local_session``) were said nothing of: pyiceberg's SqlCatalog lists none. They are listed now, as a
REST catalog's are.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.spark.session import CATALOG_DB, pyiceberg_catalog_properties
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket

# (the literal key of the copy, the name the audit gives it)
COPIES = {"%6Frders": "%256Frders", "orders#x": "orders%23x", "orders?x": "orders%3Fx", "orders ": "orders%20"}


def test_a_table_at_a_key_a_uri_would_decode_is_audited_as_itself(bucket: Bucket) -> None:
    opts = bucket.storage_options
    write_deltalake(bucket.uri("lake/orders"), special_table(), storage_options=opts)
    attest_after_write(bucket.uri("lake/orders"), model="orders", program_hash=PROGRAM, storage_options=opts)
    for key in [*COPIES, "a b"]:  # each a copy of the attested table, every one but "a b" tampered
        for name in bucket.keys("lake/orders/"):
            bucket.put(name.replace("lake/orders/", f"lake/{key}/", 1), bucket.get(name))
        if key != "a b":
            bucket.flip_byte(sorted(k for k in bucket.keys(f"lake/{key}/") if k.endswith(".parquet"))[0])
    done = cli("audit", bucket.uri("lake") + "/", "--json", *options_args(bucket))
    report = json.loads(done.stdout)
    got = {t["table"]: (t["outcome"], t["code"]) for t in report["tables"]}
    expected = {bucket.uri(f"lake/{named}"): ("NOT VERIFIED", "artifact_hash_mismatch") for named in COPIES.values()}
    expected |= {bucket.uri("lake/orders"): ("VERIFIED", None), bucket.uri("lake/a b"): ("VERIFIED", None)}
    # (the copies' mismatches say each was read: the genuine table at lake/orders is untouched)
    assert got == expected, done.stdout
    assert done.returncode == 1 and report["skipped"] == []
    notes = {t["table"]: t["notes"] for t in report["tables"]}
    assert any("percent-encoded" in n for n in notes[bucket.uri("lake/%256Frders")]), notes
    assert notes[bucket.uri("lake/a b")] == [] and notes[bucket.uri("lake/orders")] == []  # a space stays as it is


def _entry(sql: Any, namespace: str, name: str, kind: str) -> None:
    """A row of the catalog's table as iceberg-java's JdbcCatalog (schema V1) writes a view: ``iceberg_type``."""
    with sqlite3.connect(sql.engine.url.database) as db:
        db.execute("INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
                   "previous_metadata_location, iceberg_type) VALUES (?, ?, ?, ?, NULL, ?)",
                   (sql.name, namespace, name, f"file:///nowhere/{name}/metadata/00000-x.metadata.json", kind))


def test_the_views_of_a_sql_catalog_are_listed(catalog: Any, table: Any) -> None:  # noqa: F811
    """pyiceberg's SqlCatalog lists no views (``list_views`` is not implemented), while its database holds those
    iceberg-java's JdbcCatalog writes — Spark through ``attest.spark.local_session``, whose catalog is this one: a view
    ``ns.v`` and one in a namespace holding nothing else. An audit of the catalog or of ``ns`` said nothing of them
    (``skipped`` empty); a REST catalog's views were listed. Now they are listed as not audited (a listed place: the
    exit code is the tables' own), and so is an entry of a type no reader opens."""
    _entry(catalog, "ns", "v", "VIEW")
    _entry(catalog, "reports", "daily", "VIEW")
    _entry(catalog, "ns", "odd", "MATERIALIZED")
    name = catalog.name
    done = cli("audit", f"iceberg://{name}", "--json")
    report = json.loads(done.stdout)
    assert [(t["table"], t["outcome"]) for t in report["tables"]] == [(f"iceberg://{name}/ns.t", "VERIFIED")], done
    skipped = {s["path"]: s["message"] for s in report["skipped"]}
    assert set(skipped) == {f"iceberg://{name}/ns.v", f"iceberg://{name}/reports.daily", f"iceberg://{name}/ns.odd"}
    assert skipped[f"iceberg://{name}/ns.v"].startswith("an Iceberg view"), skipped
    assert "'MATERIALIZED'" in skipped[f"iceberg://{name}/ns.odd"], skipped
    assert done.returncode == 0
    done = cli("audit", f"iceberg://{name}/ns", "--json")
    assert {s["path"] for s in json.loads(done.stdout)["skipped"]} == {f"iceberg://{name}/ns.v",
                                                                        f"iceberg://{name}/ns.odd"}, done.stdout


@pytest.mark.spark
def test_a_view_spark_creates_in_the_local_catalog_is_listed(spark: Any, spark_warehouse: Path) -> None:
    """The view as Spark writes it (Iceberg's JdbcCatalog on the local session's SQLite database): the row the test
    above plants, and the audit of the catalog, configured as ``attest catalog-config`` prints it, lists it."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.r14")
    spark.sql("CREATE TABLE IF NOT EXISTS iceberg.r14.base (id BIGINT) USING iceberg")
    spark.sql("CREATE OR REPLACE VIEW iceberg.r14.v AS SELECT id FROM iceberg.r14.base")
    with sqlite3.connect(spark_warehouse / CATALOG_DB) as db:
        kinds = dict(db.execute("SELECT table_name, iceberg_type FROM iceberg_tables WHERE table_namespace = 'r14'"))
    assert kinds == {"base": "TABLE", "v": "VIEW"}, kinds
    env = {f"PYICEBERG_CATALOG__ICEBERG__{k.upper().replace('.', '__')}": str(v)
           for k, v in pyiceberg_catalog_properties(spark_warehouse).items()}
    done = cli("audit", "iceberg://iceberg/r14", "--json", env=env)
    report = json.loads(done.stdout)
    assert [s["path"] for s in report["skipped"]] == ["iceberg://iceberg/r14.v"], done.stdout
    assert [t["table"] for t in report["tables"]] == ["iceberg://iceberg/r14.base"], done.stdout


def _catalog_folder_with_hadoop_metadata(root: Path) -> tuple[Path, dict[str, str]]:
    """``W/iceberg/ns/t`` of the SQL catalog ``iceberg`` (attested, two rows), and a ``v1.metadata.json`` planted in its
    metadata folder: a copy of the table's first metadata file (no snapshot: no rows)."""
    from tests.test_audit_warehouse import warehouse

    wh = warehouse(root)
    props = pyiceberg_catalog_properties(wh["w"])
    env = {"PYICEBERG_CATALOG__ICEBERG__TYPE": "sql", "PYICEBERG_CATALOG__ICEBERG__URI": props["uri"],
           "PYICEBERG_CATALOG__ICEBERG__WAREHOUSE": props["warehouse"]}
    meta = wh["iceberg"] / "metadata"
    first = min(meta.glob("00000-*.metadata.json"))
    (meta / "v1.metadata.json").write_bytes(first.read_bytes())
    return wh["iceberg"], env


def test_hadoop_metadata_planted_in_a_catalogs_table_folder_is_not_passed(tmp_path: Path) -> None:
    """A folder a configured catalog owns was verified through the catalog alone: the catalog's current metadata file,
    two attested rows, VERIFIED, exit 0. A path reader of the folder (``spark.read.format("iceberg").load``:
    Iceberg's ``HadoopTables``) reads ``version-hint.text`` / ``v<N>.metadata.json``, which no catalog writes — here the
    planted ``v1``, no rows (the Spark test below reads it). Now the folder's line is ``unsupported_table``; the table
    through its catalog's name is audited as ever."""
    from tests.test_audit_warehouse import audit_json
    from tests.test_audit_warehouse import rows as by_name

    folder, env = _catalog_folder_with_hadoop_metadata(tmp_path)
    rc, doc = audit_json("W", "iceberg://iceberg/ns", cwd=tmp_path, env=env)
    row = by_name(doc)["W/iceberg/ns/t"]
    assert (row["outcome"], row["code"]) == ("ERROR", "unsupported_table"), doc
    assert "metadata/v1.metadata.json" in row["message"] and "catalog 'iceberg'" in row["message"], row
    assert by_name(doc)["iceberg://iceberg/ns.t"]["outcome"] == "VERIFIED" and rc == 2, doc
    # Control: without the planted file the folder verifies through its catalog.
    (folder / "metadata" / "v1.metadata.json").unlink()
    rc, doc = audit_json("W", cwd=tmp_path, env=env)
    assert rc == 0 and by_name(doc)["W/iceberg/ns/t"]["outcome"] == "VERIFIED", doc


@pytest.mark.spark
def test_spark_reads_the_planted_hadoop_metadata_of_a_catalogs_folder(tmp_path: Path, spark: Any) -> None:
    folder, _ = _catalog_folder_with_hadoop_metadata(tmp_path)
    assert spark.read.format("iceberg").load(str(folder)).count() == 0  # the catalog's current table has 2 rows
