# ruff: noqa
from __future__ import annotations
import json, sqlite3
from pathlib import Path
from typing import Any
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401
from tests.objectstore.test_stores import cli


def _row(sql, namespace, name, location, kind=None):
    with sqlite3.connect(sql.engine.url.database) as db:
        cols = [r[1] for r in db.execute("PRAGMA table_info(iceberg_tables)")]
        print("COLS", cols)
        db.execute("INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)",
                   (sql.name, namespace, name, location))


def test_probe(catalog: Any, table: Any, tmp_path: Path) -> None:
    loc = table.metadata_location
    _row(catalog, "", "emptyns", loc)
    _row(catalog, "ns", "", loc)
    _row(catalog, "a..b", "t2", loc)
    _row(catalog, "ns.", "t3", loc)
    print("NS", catalog.list_namespaces())
    for ns in catalog.list_namespaces():
        try:
            print(ns, catalog.list_tables(ns))
        except Exception as e:
            print(ns, "ERR", e)
        try:
            print(ns, "children", catalog.list_namespaces(ns))
        except Exception as e:
            print(ns, "children ERR", e)
    try:
        print("root tables", catalog.list_tables(()))
    except Exception as e:
        print("root tables ERR", e)
    name = catalog.name
    done = cli("audit", f"iceberg://{name}", "--json")
    d = json.loads(done.stdout)
    print("RC", done.returncode, [(t["table"], t["outcome"], t["code"], t["message"][:150]) for t in d["tables"]], d["skipped"], d["errors"])
    assert False
