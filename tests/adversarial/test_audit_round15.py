"""Attacks on what ``attest audit`` reads and lists (round 15).

An Iceberg view's folder: Spark's ``CREATE VIEW`` through iceberg-java's JdbcCatalog (``attest.spark.local_session``)
writes ``<warehouse>/<ns>/<view>/metadata/00000-<uuid>.metadata.json``, view metadata (``view-uuid``, ``versions``)
and no table. The walk of the warehouse found the folder as an Iceberg table and read it: an ERROR row
``table_unreadable``, exit 2, on every warehouse holding a view — while the catalog's audit lists its views as not
audited. Now such a folder is listed the same way (SKIPPED, ``table_not_audited``, "an Iceberg view"). Only a folder
no reader can open a table in is: a view's metadata beside a table's, a table metadata file that merely carries
``view-uuid``, a data folder beside the view metadata, are audited as tables as before (never skipped).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_audit_rest_listing import Catalog, rest  # noqa: F401  (fixture)
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.test_audit_warehouse import audit_json, warehouse
from tests.test_audit_warehouse import rows as by_name


def view_doc(location: Path) -> dict[str, Any]:
    """View metadata as the Iceberg view spec (format version 1) and iceberg-java's ViewMetadataParser write it."""
    return {"view-uuid": str(uuid.uuid4()), "format-version": 1, "location": f"file:{location}",
            "current-version-id": 1, "properties": {"create_command": "CREATE VIEW"},
            "versions": [{"version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {"engine-name": "spark"},
                          "default-catalog": "iceberg", "default-namespace": ["ns"],
                          "representations": [{"type": "sql", "sql": "SELECT x FROM ns.t", "dialect": "spark"}]}],
            "version-log": [{"version-id": 1, "timestamp-ms": 1}],
            "schemas": [{"type": "struct", "schema-id": 0,
                         "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}]}


def plant_view(folder: Path, name: str = "00000", *, as_spark: bool = False) -> Path:
    """A view metadata file; ``as_spark``: gzip-compressed as ``<name>-<uuid>.gz.metadata.json`` with Hadoop's
    ``.crc`` checksum beside it, as Spark writes a view's."""
    (folder / "metadata").mkdir(parents=True, exist_ok=True)
    text = json.dumps(view_doc(folder)).encode()
    path = folder / "metadata" / f"{name}-{uuid.uuid4()}{'.gz' if as_spark else ''}.metadata.json"
    path.write_bytes(gzip.compress(text) if as_spark else text)
    if as_spark:
        (path.parent / f".{path.name}.crc").write_bytes(b"crc\0")
    return path


def test_a_view_folder_in_a_warehouse_is_listed_not_an_error(tmp_path: Path) -> None:
    """Before: ``W/iceberg/ns/v`` an ERROR row (``table_unreadable``: cannot be read as Iceberg table metadata), exit
    2, with every table of W verified. Now listed as a view, exit 0; ``attest verify`` of the folder says what it is."""
    wh = warehouse(tmp_path)
    view = wh["w"] / "iceberg" / "ns" / "v"
    plant_view(view)
    plant_view(view, "00001", as_spark=True)  # a CREATE OR REPLACE VIEW: a second metadata file
    rc, doc = audit_json(str(wh["w"]))
    assert sorted((t["table"], t["outcome"]) for t in doc["tables"]) == [
        (str(wh["iceberg"]), "VERIFIED"), (str(wh["delta"]), "VERIFIED")], doc
    assert [(s["path"], s["code"]) for s in doc["skipped"]] == [(str(view), "table_not_audited")], doc
    assert doc["skipped"][0]["message"].startswith("an Iceberg view, not a table (2 view metadata file(s)"), doc
    assert rc == 0, doc
    from tests.conftest import run_cli

    done = run_cli("verify", str(view))
    assert done.returncode == 2 and "unsupported_table" in done.stderr and "an Iceberg view" in done.stderr, done


@pytest.mark.parametrize("forgery", ["view_beside_table", "table_with_view_uuid", "view_with_data", "view_link",
                                     "view_with_hint", "view_with_extra_key", "deeply_nested", "gzip_bomb"])
def test_a_folder_that_only_looks_like_a_view_is_audited_as_a_table(tmp_path: Path, forgery: str) -> None:
    """A forged folder cannot use "looks like a view" to escape its audit: each is a table row (never SKIPPED)."""
    wh = warehouse(tmp_path)
    own, meta = wh["iceberg"], wh["iceberg"] / "metadata"
    target = own
    if forgery == "view_beside_table":  # the newest metadata file is a view's: readers of the table fail or differ
        plant_view(own, "00009")
    elif forgery == "table_with_view_uuid":  # a table metadata file that carries view-uuid as an extra key
        newest = max(meta.glob("*.metadata.json"))
        doc = json.loads(newest.read_text())
        doc["view-uuid"], doc["versions"], doc["current-version-id"] = str(uuid.uuid4()), [], 1
        newest.write_text(json.dumps(doc))
    else:
        target = wh["w"] / "iceberg" / "ns" / "v"
        plant_view(target)
        if forgery == "view_with_data":  # a folder of data files beside the view metadata
            shutil.copytree(own / "data", target / "data")
        elif forgery == "view_link":  # the view metadata file a link (to a file that may change under the audit)
            real = next((target / "metadata").glob("*.metadata.json"))
            moved = tmp_path / "elsewhere.metadata.json"
            real.rename(moved)
            real.symlink_to(moved)
        elif forgery == "view_with_hint":  # Hadoop readers start from version-hint.text
            (target / "metadata" / "version-hint.text").write_text("1")
        elif forgery in ("deeply_nested", "gzip_bomb"):  # files that must not end the walk (RecursionError, memory)
            path = next((target / "metadata").glob("*.metadata.json"))
            text = b"[" * 200_000 + b"]" * 200_000 if forgery == "deeply_nested" else b" " * (64 << 20)
            path.write_bytes(text if forgery == "deeply_nested" else gzip.compress(text))
        elif forgery == "view_with_extra_key":  # a key of table metadata beside the view's
            path = next((target / "metadata").glob("*.metadata.json"))
            doc = json.loads(path.read_text())
            doc["snapshots"] = []
            path.write_text(json.dumps(doc))
    rc, doc = audit_json(str(wh["w"]))
    assert str(target) in by_name(doc), doc
    assert str(target) not in [s["path"] for s in doc["skipped"]], doc
    if target != own or forgery == "view_beside_table":
        assert by_name(doc)[str(target)]["outcome"] == "ERROR" and rc == 2, doc


@pytest.mark.spark
def test_the_view_folder_spark_writes_is_listed(spark: Any, spark_warehouse: Path) -> None:
    """The folder as Spark writes it (``CREATE VIEW`` through the local session's JDBC catalog): its namespace's folder
    audited with no catalog configured and with the catalog configured (``attest catalog-config``'s variables) lists
    the view and audits the table; before, the view folder was an ERROR row (``table_unreadable``), exit 2."""
    from carriers.spark.session import pyiceberg_catalog_properties

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.r15v")
    spark.sql("CREATE TABLE IF NOT EXISTS iceberg.r15v.base (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO iceberg.r15v.base VALUES (1)")
    spark.sql("CREATE OR REPLACE VIEW iceberg.r15v.v AS SELECT id FROM iceberg.r15v.base")
    folder = spark_warehouse / "iceberg" / "r15v"
    names = sorted(p.name for p in (folder / "v" / "metadata").iterdir())
    written = [json.loads(gzip.decompress((folder / "v" / "metadata" / n).read_bytes())) for n in names
               if n.endswith(".gz.metadata.json")]  # Spark compresses a view's metadata, and checksums it (.crc)
    assert written and all("view-uuid" in d and "versions" in d for d in written), names  # Spark wrote a view here
    with pytest.raises(Exception, match=r"(?i)not exist|not.found|cannot be found"):  # no path reader opens it
        spark.read.format("iceberg").load(str(folder / "v")).count()
    env = {f"PYICEBERG_CATALOG__ICEBERG__{k.upper().replace('.', '__')}": str(v)
           for k, v in pyiceberg_catalog_properties(spark_warehouse).items()}
    for configured in ({}, env):
        rc, doc = audit_json(str(folder), env=configured)
        assert [(s["path"], s["code"]) for s in doc["skipped"]] == [(str(folder / "v"), "table_not_audited")], doc
        assert "an Iceberg view" in doc["skipped"][0]["message"], doc
        assert [(t["table"], t["outcome"]) for t in doc["tables"]] == [(str(folder / "base"), "UNATTESTED")], doc
        assert rc == 1, doc


def test_a_view_folder_in_a_hidden_folder_is_listed_as_a_view(tmp_path: Path) -> None:
    """Hidden folders are searched and what they hold listed (never audited): a view there is named a view."""
    wh = warehouse(tmp_path)
    plant_view(wh["w"] / "_old" / "v")
    rc, doc = audit_json(str(wh["w"]))
    said = {s["path"]: s["message"] for s in doc["skipped"]}
    assert said[str(wh["w"] / "_old" / "v")].startswith("an Iceberg view's folder under "), said
    assert rc == 0, doc


def rest_audit(uri: str, target: str) -> tuple[int, dict[str, Any]]:
    """``attest audit TARGET --json``; ``uri``: the REST catalog ``stub``'s server (none: the environment's)."""
    stub = {"PYICEBERG_CATALOG__STUB__TYPE": "rest", "PYICEBERG_CATALOG__STUB__URI": uri} if uri else {}
    env = {**os.environ, **stub}
    done = subprocess.run([sys.executable, "-m", "attest.cli", "audit", target, "--json"], capture_output=True,
                          text=True, timeout=120, env=env)
    return done.returncode, json.loads(done.stdout)


# ---- a view named as a table ----------------------------------------------------------------------------------------
def test_a_view_named_as_a_table_of_its_namespace_is_an_error(rest: Any) -> None:  # noqa: F811
    """A REST catalog serving a table ``sales.orders`` and a view ``sales.orders``: Trino resolves a view before a
    table of the name, so its readers of ``sales.orders`` get the view's SQL. Before, the view was only listed
    (SKIPPED, exit unchanged) beside the table's line: a VERIFIED table passed the audit while the name read the view.
    Now the view is an ERROR line (``table_not_audited``); a view of another name is listed as before."""
    served = Catalog([("sales",)], {("sales",): [(("sales",), "orders")]}, page=5,
                     views={("sales",): ["orders", "v_other"]})
    rc, doc = rest_audit(rest(served), "iceberg://stub/sales")
    errors = {(t["table"], t["code"]) for t in doc["tables"] if "named as a table" in t["message"]}
    assert errors == {("iceberg://stub/sales.orders", "table_not_audited")}, doc
    assert [s["path"] for s in doc["skipped"]] == ["iceberg://stub/sales.v_other"], doc
    assert rc == 2


def test_a_sql_catalog_view_named_as_a_verified_table_fails_the_audit(catalog: Any, table: Any) -> None:  # noqa: F811
    """The same in a SQL catalog (iceberg-java's JdbcCatalog writes a view as a row of ``iceberg_type`` ``VIEW``; its
    key keeps one entry per exact name, so the twin differs by case): ``ns.t`` VERIFIED and the view ``ns.T`` only
    listed, exit 0 before. Now exit 2 with the view's ERROR line; the table's line is unchanged."""
    from tests.adversarial.test_audit_round14 import _entry

    _entry(catalog, "ns", "T", "VIEW")
    rc, doc = rest_audit("", f"iceberg://{catalog.name}")
    lines = {t["table"]: (t["outcome"], t["code"]) for t in doc["tables"]}
    assert lines == {f"iceberg://{catalog.name}/ns.t": ("VERIFIED", None),
                     f"iceberg://{catalog.name}/ns.T": ("ERROR", "table_not_audited")}, doc
    assert doc["skipped"] == [] and rc == 2, doc
