"""Attacks on what ``attest audit`` checks of its target (round 16).

A view named as a table (Trino resolves a view before a table of the name, so a reader of ``ns.t`` gets the view's
SQL) failed only the audit of a namespace or a catalog: a single-table audit (``attest audit iceberg://c/ns.t``, a
snapshot ``ns.t@5``, ``--catalog c ns.t``) never looked for the view and passed, exit 0. And a view listing that
failed (the catalog's ``list_views`` erroring) was only listed: the twin check could not run, the audit passed.

A REST catalog entry whose namespace level holds a '.' (``("a.b",)`` table ``t``) was audited as ``iceberg://c/a.b.t``,
a name readers split at every '.': the audit opened ``("a", "b", "t")`` in its place and passed on it, the entry never
read. And a view ``NS.t`` (a namespace differing only by case) beside the table ``ns.t`` was looked for within one
namespace only: listed SKIPPED, exit 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from tests.adversarial.test_audit_rest_listing import SEP, Catalog, _handler
from tests.adversarial.test_audit_round14 import _entry
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)


def audit(uri: str, *args: str) -> tuple[int, dict[str, Any]]:
    """``attest audit ARGS --json``; ``uri``: the REST catalog ``stub``'s server (none: the environment's)."""
    stub = {"PYICEBERG_CATALOG__STUB__TYPE": "rest", "PYICEBERG_CATALOG__STUB__URI": uri} if uri else {}
    done = subprocess.run([sys.executable, "-m", "attest.cli", "audit", *args, "--json"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **stub})
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("target", ["ns.t", "ns.t@{snap}", "--catalog", "namespace_too"])
def test_a_single_table_audit_finds_the_view_named_as_it(catalog: Any, table: Any, target: str) -> None:  # noqa: F811
    """A SQL catalog holding the table ``ns.t`` and the view ``ns.T`` (iceberg-java's JdbcCatalog writes a view as a
    row of ``iceberg_type`` ``VIEW``; its key keeps one entry per exact name, so the twin differs by case). The audit
    of the catalog fails on the view (round 15); the audit of the table alone passed, exit 0. Now the view is its
    ERROR line (``table_not_audited``) there too, the table's line unchanged."""
    _entry(catalog, "ns", "T", "VIEW")
    name = catalog.name
    if target == "--catalog":
        args = ["--catalog", name, "ns.t"]
    elif target == "namespace_too":  # ``ns.t`` a table and a namespace: both audited, the namespace's views listed
        catalog.create_namespace(("ns", "t"))
        args = [f"iceberg://{name}/ns.t"]
    else:
        args = [f"iceberg://{name}/{target.format(snap=table.current_snapshot().snapshot_id)}"]
    rc, doc = audit("", *args)
    lines = {t["table"]: (t["outcome"], t["code"]) for t in doc["tables"]}
    assert lines[f"iceberg://{name}/ns.T"] == ("ERROR", "table_not_audited"), doc
    assert "named as a table" in {t["table"]: t["message"] for t in doc["tables"]}[f"iceberg://{name}/ns.T"], doc
    assert [o for t, o in lines.items() if t != f"iceberg://{name}/ns.T"] == [("VERIFIED", None)], doc
    assert rc == 2, doc


class Serving(Catalog):
    """The REST catalog stub serving real tables: ``tables`` maps ``(*namespace, name)`` to the metadata file its load
    answers with (a table of the SQL catalog, attested); ``views_fail``: the view listing answers ``500``."""

    def __init__(self, *args: Any, tables: dict[tuple[str, ...], str], views_fail: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tables, self.views_fail = tables, views_fail


@pytest.fixture
def serving() -> Iterator[Any]:
    """Start a ``Serving`` server; stopped at the end of the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(stub: Serving) -> str:
        base = _handler(stub)

        class Handler(base):  # type: ignore[valid-type, misc]
            def do_GET(self) -> None:
                parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
                if len(parts) == 4 and parts[:2] == ["v1", "namespaces"] and parts[3] == "views" and \
                        stub.views_fail:
                    stub.requests.append(self.path)
                    self.answer(500, {"error": {"message": "views are down", "type": "ServerError", "code": 500}})
                    return
                if len(parts) == 5 and parts[:2] == ["v1", "namespaces"] and parts[3] == "tables":
                    name = (*parts[2].split(SEP), parts[4])
                    if name in stub.tables:
                        location = stub.tables[name]
                        metadata = json.loads(Path(location.removeprefix("file://")).read_text())
                        self.answer(200, {"metadata-location": location, "metadata": metadata, "config": {}})
                        return
                super().do_GET()

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def served(attested: Any, views: dict[tuple[str, ...], list[str]] | None, **kwargs: Any) -> Serving:
    return Serving([("ns",)], {("ns",): [(("ns",), "t")]}, page=10, views=views,
                   tables={("ns", "t"): attested.metadata_location}, **kwargs)


def test_the_served_table_verifies(serving: Any, table: Any) -> None:  # noqa: F811
    """The stub serves the attested table: its audit verifies, exit 0 (what the attacks below start from)."""
    for target in ("iceberg://stub/ns", "iceberg://stub/ns.t"):
        rc, doc = audit(serving(served(table, {("ns",): ["v_other"]})), target)
        assert [(t["table"], t["outcome"]) for t in doc["tables"]] == [("iceberg://stub/ns.t", "VERIFIED")], doc
        assert rc == 0, doc


@pytest.mark.parametrize("target", ["iceberg://stub/ns.t", "iceberg://stub/ns.t@{snap}"])
def test_a_rest_view_named_as_the_audited_table_fails_its_audit(serving: Any, table: Any, target: str) -> None:  # noqa: F811
    """A REST catalog serving the table ``ns.t`` and a view ``ns.t``: the audit of the table alone verified it, exit
    0, while Trino's readers of ``ns.t`` get the view's SQL. Now the view is an ERROR line; other views are not
    listed by a single table's audit (they are not named by it)."""
    uri = serving(served(table, {("ns",): ["t", "v_other"]}))
    rc, doc = audit(uri, target.format(snap=table.current_snapshot().snapshot_id))
    lines = [(t["table"], t["outcome"], t["code"]) for t in doc["tables"]]
    assert ("iceberg://stub/ns.t", "ERROR", "table_not_audited") in lines, doc
    assert [o for _, o, _ in lines].count("VERIFIED") == 1 and len(lines) == 2, doc
    assert doc["skipped"] == [] and rc == 2, doc


@pytest.mark.parametrize("target", ["iceberg://stub/ns", "iceberg://stub", "iceberg://stub/ns.t"])
def test_a_view_listing_that_fails_fails_the_audit(serving: Any, table: Any, target: str) -> None:  # noqa: F811
    """A REST catalog that serves views (its config says so) answering the view listing with ``500``: the audit
    listed "the views could not be listed" as SKIPPED and passed, exit 0 — whether a view is named as the verified
    table was never known. Now that listing is an ERROR line (``table_not_audited``), exit 2."""
    stub = served(table, {("ns",): []}, views_fail=True)
    rc, doc = audit(serving(stub), target)
    assert any("/views" in r for r in stub.requests), stub.requests  # the listing was asked for, and failed
    errors = [(t["table"], t["code"]) for t in doc["tables"] if t["outcome"] == "ERROR"]
    assert errors == [("iceberg://stub/ns", "table_not_audited")], doc
    assert "could not be listed" in next(t["message"] for t in doc["tables"] if t["outcome"] == "ERROR"), doc
    assert [t["outcome"] for t in doc["tables"] if t["table"] == "iceberg://stub/ns.t"] == ["VERIFIED"], doc
    assert rc == 2, doc


def test_overlapping_targets_say_a_view_twin_once(serving: Any, table: Any) -> None:  # noqa: F811
    """``attest audit iceberg://stub/ns iceberg://stub/ns.t``: the namespace's audit and the table's both find the
    view ``ns.t``; it is one ERROR line, as the table is one line."""
    rc, doc = audit(serving(served(table, {("ns",): ["t"]})), "iceberg://stub/ns", "iceberg://stub/ns.t")
    assert sorted((t["table"], t["outcome"]) for t in doc["tables"]) == [
        ("iceberg://stub/ns.t", "ERROR"), ("iceberg://stub/ns.t", "VERIFIED")], doc
    assert rc == 2, doc


def verify(uri: str, *args: str) -> tuple[int, dict[str, Any]]:
    stub = {"PYICEBERG_CATALOG__STUB__TYPE": "rest", "PYICEBERG_CATALOG__STUB__URI": uri} if uri else {}
    done = subprocess.run([sys.executable, "-m", "attest.cli", "verify", *args, "--json"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **stub})
    return done.returncode, json.loads(done.stdout)


def test_verify_of_a_catalog_table_with_a_view_twin_is_not_verified(serving: Any, catalog: Any,  # noqa: F811
                                                                       table: Any) -> None:  # noqa: F811
    """``attest verify iceberg://stub/ns.t`` (and ``--catalog c ns.t`` of a SQL catalog with the view ``ns.T``) said
    VERIFIED, exit 0, while Trino's readers of the name get the view. Now NOT VERIFIED with ``table_not_audited``
    naming the view; the same table without the view still verifies."""
    rc, doc = verify(serving(served(table, {("ns",): ["v_other"]})), "iceberg://stub/ns.t")
    assert rc == 0 and doc["passed"], doc
    rc, doc = verify(serving(served(table, {("ns",): ["t"]})), "iceberg://stub/ns.t")
    assert not doc["passed"] and rc == 1, doc
    assert [e["code"] for e in doc["errors"]] == ["table_not_audited"] and "named as a table" in str(doc), doc
    _entry(catalog, "ns", "T", "VIEW")
    rc, doc = verify("", "--catalog", catalog.name, "ns.t")
    assert not doc["passed"] and rc == 1 and [e["code"] for e in doc["errors"]] == ["table_not_audited"], doc


def test_an_entry_with_a_dot_inside_a_level_is_not_audited_as_another(serving: Any, table: Any) -> None:  # noqa: F811
    """The server lists the single-level namespace ``a.b`` holding ``t``, and serves (unlisted) the nested ``a`` →
    ``b`` → ``t``, the attested table. Before: the entry was named ``iceberg://stub/a.b.t``, which opened the nested
    table: VERIFIED, exit 0, while the listed table was never read. Now the entry is an ERROR line: no name opens it."""
    stub = Serving([("a.b",)], {("a.b",): [(("a.b",), "t")]}, page=10, views=None,
                   tables={("a", "b", "t"): table.metadata_location})
    uri = serving(stub)
    rc, doc = audit(uri, "iceberg://stub")
    lines = [(t["table"], t["outcome"], t["code"]) for t in doc["tables"]]
    assert lines == [("iceberg://stub/a.b.t", "ERROR", "table_not_audited")], doc
    assert "no iceberg:// name opens it" in doc["tables"][0]["message"], doc
    assert rc == 2 and not doc["passed"], doc
    rc, doc = audit(uri, "iceberg://stub/a.b")  # the namespace cannot be named either: read as the nested a.b
    assert rc == 2 and not doc["passed"] and doc["counts"]["VERIFIED"] == 0, doc


def test_the_api_verify_says_what_the_command_says(catalog: Any, table: Any) -> None:  # noqa: F811
    """``attest.api.verify`` returns "the Report the command prints": with the view ``ns.T`` beside ``ns.t`` it said
    VERIFIED; now it fails with ``table_not_audited`` as the command does, by name and given the pyiceberg table."""
    from attest import api

    assert api.verify(f"iceberg://{catalog.name}/ns.t").passed
    _entry(catalog, "ns", "T", "VIEW")
    for given in (f"iceberg://{catalog.name}/ns.t", catalog.load_table("ns.t")):
        report = api.verify(given)
        assert not report.passed and [e.code.value for e in report.errors] == ["table_not_audited"], report.human()


@pytest.mark.parametrize("view", [("NS", "t"), ("NS", "T")])
def test_a_view_twin_in_a_namespace_named_otherwise(catalog: Any, table: Any, view: tuple[str, str]) -> None:  # noqa: F811
    """A SQL catalog holding the table ``ns.t`` and a view ``NS.t``: a namespace differing by case only, which a reader
    matching names by case alone cannot tell from ``ns``. The twin was looked for within one namespace only: the view
    was listed SKIPPED and the audit of the catalog passed, exit 0. Now an ERROR line, as ``ns.T`` is."""
    _entry(catalog, *view, "VIEW")
    name = catalog.name
    rc, doc = audit("", f"iceberg://{name}")
    lines = {t["table"]: (t["outcome"], t["code"]) for t in doc["tables"]}
    assert lines == {f"iceberg://{name}/ns.t": ("VERIFIED", None),
                     f"iceberg://{name}/{'.'.join(view)}": ("ERROR", "table_not_audited")}, doc
    assert doc["skipped"] == [] and rc == 2, doc
