"""A trust policy follows an Iceberg table under every catalog name it is reached by.

``require_signed = ["iceberg://prod/*"]`` left the same table reached under another catalog name outside the policy:
registered in a second catalog entry of the same SQLite database (``iceberg://prod2/db.t``, ``register_table`` on
prod's metadata file, as a migration or a second team's catalog does), or found by its folder when another configured
catalog sorts first and owns it too. ``attest verify`` and ``attest audit`` passed the unsigned table (exit 0,
``signature.required`` false) unless the policy also named its storage path. A table's policy names now include every
configured catalog's name for it (carriers/iceberg/static.py ``same_table_names``): the same catalog configured under
another name (same REST server and warehouse, same metastore), and every catalog whose table of the storage location
is this one.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.cli import main
from carriers.iceberg.carrier import attest_after_write
from carriers.iceberg.static import catalog_identity, same_table_names
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.test_policy_names import _policy
from tests.iceberg.conftest import catalog_properties


def _configure(monkeypatch: pytest.MonkeyPatch, catalogs: dict[str, dict[str, str]]) -> None:
    """pyiceberg's configuration (``PYICEBERG_CATALOG__<NAME>__*``) naming exactly ``catalogs``."""
    import os

    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    for key in list(os.environ):
        if key.startswith("PYICEBERG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", "/nonexistent-pyiceberg-home")  # no ~/.pyiceberg.yaml of the machine's
    for name, properties in catalogs.items():
        for key, value in properties.items():
            monkeypatch.setenv(f"PYICEBERG_CATALOG__{name.upper()}__{key.upper()}", value)
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())


def _prod_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **sign: Any) -> tuple[Table, dict[str, str]]:
    """Catalog ``prod`` (SQLite) holding ``db.t``, attested (``sign``: ``attest_after_write``'s ``signer``). Also
    configured: ``prod2`` and ``aaa`` on the same database and warehouse (a SQL catalog keeps its tables under its own
    name: they hold nothing yet)."""
    (tmp_path / "warehouse").mkdir()
    p = {"type": "sql", **catalog_properties(tmp_path)}
    _configure(monkeypatch, {"prod": p, "prod2": p, "aaa": p})
    cat = SqlCatalog("prod", **catalog_properties(tmp_path))
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema=pa.schema([("x", pa.int64())]))
    table.append(pa.table({"x": [1, 2, 3]}))
    attest_after_write(table, model="t", program_hash=PROGRAM, **sign)
    return cat.load_table("db.t"), p


@pytest.fixture
def unsigned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Table, dict[str, str]]:
    """``_prod_table`` unsigned."""
    return _prod_table(tmp_path, monkeypatch)


def _register(name: str, p: dict[str, str], table: Table, identifier: str = "db.t") -> None:
    other = SqlCatalog(name, **{k: v for k, v in p.items() if k != "type"})
    other.create_namespace(identifier.rsplit(".", 1)[0])
    other.register_table(identifier, table.metadata_location)


def test_control_the_table_under_its_own_name_is_required(unsigned: tuple[Table, dict[str, str]],
                                                         tmp_path: Path) -> None:
    rc, doc = verify("iceberg://prod/db.t", "--policy", _policy(tmp_path, ["iceberg://prod/*"]))
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = verify("iceberg://prod/db.t", "--policy", _policy(tmp_path, ["iceberg://other/*"]))
    assert rc == 0 and doc["signature"]["required"] is False, doc  # a policy covering none of its names


@pytest.mark.parametrize("identifier", ["db.t", "renamed.copy"])
def test_the_table_registered_under_another_catalog_name(unsigned: tuple[Table, dict[str, str]], tmp_path: Path,
                                                         identifier: str) -> None:
    """``iceberg://prod2/<id>`` reads prod's table (its metadata file): the policy on ``iceberg://prod/*`` covers it.
    Old code: exit 0, ``signature.required`` false."""
    table, p = unsigned
    _register("prod2", p, table, identifier)
    rc, doc = verify(f"iceberg://prod2/{identifier}", "--policy", _policy(tmp_path, ["iceberg://prod/*"]))
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    assert "iceberg://prod/db.t" in doc["errors"][0]["message"], doc  # the name the policy covers is said


def test_an_audit_of_the_alias_catalog_requires_the_signature(unsigned: tuple[Table, dict[str, str]],
                                                              tmp_path: Path) -> None:
    table, p = unsigned
    _register("prod2", p, table)
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["audit", "iceberg://prod2", "--policy", _policy(tmp_path, ["iceberg://prod/*"]), "--json"])
    rows = {t["table"]: t for t in json.loads(out.getvalue())["tables"]}
    assert rc == 1 and rows["iceberg://prod2/db.t"]["code"] == "signature_missing", rows


def test_the_table_folder_owned_by_another_catalog_name_first(unsigned: tuple[Table, dict[str, str]],
                                                              tmp_path: Path) -> None:
    """The folder is opened through the first configured catalog owning it (``aaa``, where it is registered too):
    the policy on ``prod`` covers it still. Old code: opened as ``iceberg://aaa/db.t``, exit 0 unsigned."""
    table, p = unsigned
    _register("aaa", p, table)
    folder = tmp_path / "warehouse" / "db" / "t"
    assert folder.is_dir()
    rc, doc = verify(str(folder), "--policy", _policy(tmp_path, ["iceberg://prod/*"]))
    assert rc == 1 and codes(doc) == ["signature_missing"], doc


def test_a_metadata_file_path_is_not_taken_as_the_table(unsigned: tuple[Table, dict[str, str]],
                                                         tmp_path: Path) -> None:
    """The command line takes no table by its metadata file (it is not a manifest either): never a pass."""
    table, _ = unsigned
    from carriers.storage.base import local_path_of

    metadata = local_path_of(table.metadata_location)
    assert metadata is not None
    rc, doc = verify(metadata, "--policy", _policy(tmp_path, ["iceberg://prod/*"]))
    assert rc != 0 and doc.get("errors"), doc


def _searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The identifiers every later search for a table's other catalog names (``same_table_names``) is made for."""
    import carriers.iceberg.static as static

    calls: list[str] = []
    real = static.same_table_names

    def counted(catalog_name: str, properties: Any, identifier: str, locations: tuple[str, ...]) -> tuple[str, ...]:
        calls.append(f"{catalog_name}/{identifier}")
        return real(catalog_name, properties, identifier, locations)

    monkeypatch.setattr(static, "same_table_names", counted)
    return calls


def test_no_catalog_search_unless_a_policy_matches_names(unsigned: tuple[Table, dict[str, str]], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The other catalog names are searched for only when a policy matches them: a verify without a policy asks no
    catalog (before: every Iceberg verify searched). A policy naming only the other name still finds it."""
    table, p = unsigned
    _register("prod2", p, table)
    calls = _searches(monkeypatch)
    rc, doc = verify("iceberg://prod/db.t")
    assert rc == 0 and doc["passed"] is True and calls == [], (calls, doc)
    rc, doc = verify("iceberg://prod/db.t", "--policy", _policy(tmp_path, ["iceberg://prod2/*"]))
    assert rc == 1 and codes(doc) == ["signature_missing"] and calls == ["prod/db.t"], (calls, doc)


@pytest.mark.parametrize("require", [[], ["iceberg://prod/*"], ["*"]])
def test_no_catalog_search_when_the_own_names_decide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     require: list[str]) -> None:
    """A signed table under a policy with no ``require_signed`` glob, or whose globs cover it by a name it has
    without a search: nothing a search finds could change the verdict, and none is made."""
    from tests.adversarial.test_signing_attacks import _signer

    table, p = _prod_table(tmp_path, monkeypatch, signer=_signer())
    _register("prod2", p, table)
    calls = _searches(monkeypatch)
    rc, doc = verify("iceberg://prod/db.t", "--policy", _policy(tmp_path, require))
    assert rc == 0 and doc["signature"]["passed"] is True and calls == [], (calls, doc)
    assert doc["signature"]["required"] is bool(require) and doc["signature"]["required_by"] == require, doc


def _rest(uri: str, warehouse: str) -> dict[str, str]:
    return {"type": "rest", "uri": uri, "warehouse": warehouse}


def test_a_rest_catalog_configured_under_two_names_is_one_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two entries naming one REST server and warehouse are one catalog: each one's table is the other's (no server
    is asked). Another warehouse on that server, or another server, is another catalog."""
    _configure(monkeypatch, {"prod": _rest("https://cat.example:8181", "prod-wh"),
                             "other": _rest("https://cat.example:8181", "dev-wh"),
                             "elsewhere": _rest("https://other.example:8181", "prod-wh")})
    alias = _rest("HTTPS://Cat.Example:8181/", "prod-wh")
    assert same_table_names("prod2", alias, "db.t", ()) == ("iceberg://prod/db.t",)
    assert same_table_names("prod2", _rest("https://cat.example:8181", "x"), "db.t", ()) == ()


def test_catalog_identity() -> None:
    sql: dict[str, Any] = {"type": "sql", "uri": "sqlite:////tmp/a/../a/c.db"}
    assert catalog_identity("prod", sql) == ("sql", "sqlite:////tmp/a/c.db", "prod")
    assert catalog_identity("prod", sql) != catalog_identity("prod2", sql)  # SQL rows are keyed by catalog name
    assert catalog_identity("x", {"uri": "thrift://hms:9083"}) == catalog_identity("y", {"uri": "thrift://HMS:9083/"})
    assert catalog_identity("x", {"type": "glue"}) is None  # nothing says which catalog it is: no alias is assumed
