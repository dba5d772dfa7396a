"""``attest audit iceberg://<rest catalog>`` against a REST catalog server that pages its listings (the Iceberg REST
spec's ``next-page-token``) or answers a table listing with tables of another namespace. The server is a small one
on loopback, started and stopped by each test: it answers the listing endpoints and ``404`` for every table, so each
table found is one ``ERROR`` line naming it — what is asserted is which tables the audit found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

Namespace = tuple[str, ...]
SEP = "\x1f"  # the REST spec's namespace separator in a path or the ``parent`` parameter


class Catalog:
    """What the server answers: namespaces and the table listing of each (``listed``: entries as (namespace, name),
    which a hostile server may put in another namespace), ``page`` entries a page."""

    def __init__(self, namespaces: list[Namespace], listed: dict[Namespace, list[tuple[Namespace, str]]],
                 page: int, views: dict[Namespace, list[str]] | None = None) -> None:
        self.namespaces, self.listed, self.page = namespaces, listed, page
        self.views = views  # None: the server serves no views (its config says nothing of them)
        self.requests: list[str] = []

    def paged(self, items: list[Any], token: str | None, key: str) -> dict[str, Any]:
        start = int(token or 0)
        out: dict[str, Any] = {key: items[start:start + self.page]}
        if start + self.page < len(items):
            out["next-page-token"] = str(start + self.page)
        return out


def _handler(catalog: Catalog) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def answer(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            catalog.requests.append(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/")]
            if parts == ["v1", "config"]:
                served = {} if catalog.views is None else {"view-endpoints-supported": "true"}
                return self.answer(200, {"defaults": served, "overrides": {}})
            if len(parts) == 4 and parts[:2] == ["v1", "namespaces"] and parts[3] == "views":
                ns = tuple(parts[2].split(SEP))
                entries = [{"namespace": list(ns), "name": v} for v in (catalog.views or {}).get(ns, [])]
                return self.answer(200, catalog.paged(entries, query.get("pageToken"), "identifiers"))
            if parts == ["v1", "namespaces"]:
                parent = tuple(query["parent"].split(SEP)) if "parent" in query else ()
                below = [list(ns) for ns in catalog.namespaces
                         if len(ns) == len(parent) + 1 and ns[:len(parent)] == parent]
                return self.answer(200, catalog.paged(below, query.get("pageToken"), "namespaces"))
            if len(parts) == 4 and parts[:2] == ["v1", "namespaces"] and parts[3] == "tables":
                entries = [{"namespace": list(ns), "name": name}
                           for ns, name in catalog.listed.get(tuple(parts[2].split(SEP)), [])]
                return self.answer(200, catalog.paged(entries, query.get("pageToken"), "identifiers"))
            return self.answer(404, {"error": {"message": f"no such table {self.path}", "type": "NoSuchTableException",
                                               "code": 404}})

    return Handler


@pytest.fixture
def rest() -> Iterator[Any]:
    """Start a server for a given catalog; stopped at the end of the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(catalog: Catalog) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(catalog))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def audit(uri: str, target: str) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "PYICEBERG_CATALOG__STUB__TYPE": "rest", "PYICEBERG_CATALOG__STUB__URI": uri}
    done = subprocess.run([sys.executable, "-m", "attest.cli", "audit", target, "--json"], capture_output=True,
                          text=True, timeout=120, env=env)
    return done.returncode, json.loads(done.stdout)


def test_paged_listings_are_followed_to_the_last_page(rest: Any) -> None:
    """Held: pyiceberg 0.12 follows ``next-page-token`` for namespaces and tables. Seven tables over four pages in
    ``sales`` and one in the nested ``sales.eu`` (itself on the second page of namespaces): all eight are audited."""
    tables: list[tuple[Namespace, str]] = [(("sales",), f"t{i}") for i in range(7)]
    catalog = Catalog([("sales",), ("sales", "apac"), ("sales", "eu")],
                      {("sales",): tables, ("sales", "eu"): [(("sales", "eu"), "orders")]}, page=2)
    rc, doc = audit(rest(catalog), "iceberg://stub/sales")
    found = sorted(t["table"] for t in doc["tables"])
    assert found == sorted([*(f"iceberg://stub/sales.t{i}" for i in range(7)), "iceberg://stub/sales.eu.orders"])
    assert any("pageToken=6" in r for r in catalog.requests), catalog.requests  # the last page was asked for
    assert rc == 2  # every table a 404 here: ERROR lines, never a pass


def test_a_table_listed_in_another_namespace_is_not_audited_in_its_place(rest: Any) -> None:
    """A server answering the listing of ``sales`` with ``hr.payroll`` (a table of another namespace): before, the
    audit of ``iceberg://stub/sales`` audited ``hr.payroll`` in place of whatever ``sales`` holds and passed when it
    verified. Now the listing is refused as the nested-namespace listing is: ``ERROR (table_not_audited)``."""
    catalog = Catalog([("sales",), ("hr",)], {("sales",): [(("hr",), "payroll")], ("hr",): [(("hr",), "payroll")]},
                      page=10)
    rc, doc = audit(rest(catalog), "iceberg://stub/sales")
    assert [(t["outcome"], t["code"]) for t in doc["tables"]] == [("ERROR", "table_not_audited")], doc
    assert "hr.payroll" in doc["tables"][0]["message"] and "iceberg://stub/hr.payroll" not in \
        [t["table"] for t in doc["tables"]]
    assert rc == 2


def test_views_of_an_audited_namespace_are_listed_not_audited(rest: Any) -> None:
    """A view ``sales.v_orders`` (and ``sales.eu.v_late`` in a nested namespace) is a name its readers query: the rows
    come from whatever its SQL reads, which no attestation binds. The audit of ``iceberg://stub/sales`` said nothing
    of them; each is now listed ``SKIPPED (table_not_audited)``, the exit code unchanged."""
    catalog = Catalog([("sales",), ("sales", "eu")], {("sales",): [(("sales",), "orders")]}, page=1,
                      views={("sales",): ["v_orders"], ("sales", "eu"): ["v_late"]})
    rc, doc = audit(rest(catalog), "iceberg://stub/sales")
    assert [t["table"] for t in doc["tables"]] == ["iceberg://stub/sales.orders"], doc
    skipped = {s["path"]: s["code"] for s in doc["skipped"]}
    assert skipped == {"iceberg://stub/sales.v_orders": "table_not_audited",
                       "iceberg://stub/sales.eu.v_late": "table_not_audited"}, doc["skipped"]
    assert rc == 2  # the table is a 404 here: its ERROR line decides, the views change nothing
    without = Catalog([("sales",)], {("sales",): [(("sales",), "orders")]}, page=1)  # a server serving no views
    rc, doc = audit(rest(without), "iceberg://stub/sales")
    assert doc["skipped"] == [] and [t["table"] for t in doc["tables"]] == ["iceberg://stub/sales.orders"], doc


class Looping(Catalog):
    """A server whose ``which`` listing never ends: every page answers ``tokens`` in turn as its next-page-token
    (``["same"]``: the same token forever; ``["a", "b"]``: a cycle), with the first entry again each time."""

    def __init__(self, which: str, tokens: list[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.which, self.tokens, self.served = which, tokens, 0

    def paged(self, items: list[Any], token: str | None, key: str) -> dict[str, Any]:
        if key != self.which or not items:
            return super().paged(items, token, key)
        self.served += 1
        return {key: items[:1], "next-page-token": self.tokens[self.served % len(self.tokens)]}


@pytest.mark.parametrize("which, tokens", [("namespaces", ["same"]), ("identifiers", ["same"]),
                                           ("identifiers", ["a", "b"])])
def test_a_listing_whose_page_token_never_ends_is_an_error(rest: Any, which: str, tokens: list[str]) -> None:
    """A server answering the same ``next-page-token`` forever (or a cycle of them): pyiceberg 0.12 follows the token
    until the server omits it, so ``attest audit iceberg://stub/sales`` hung (measured: 10,000 requests in 20 s, its
    memory growing, never an answer). Now the repeated token stops the listing: ``ERROR (table_not_audited)``."""
    catalog = Looping(which, tokens, [("sales",), ("sales", "eu")], {("sales",): [(("sales",), "orders")]}, page=10)
    rc, doc = audit(rest(catalog), "iceberg://stub/sales")
    assert [(t["outcome"], t["code"]) for t in doc["tables"]] == [("ERROR", "table_not_audited")], doc
    assert "a second time" in doc["tables"][0]["message"]
    assert rc == 2 and len(catalog.requests) < 20, catalog.requests


def test_a_listing_paging_without_end_is_bounded(rest: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server answering a new token on every page (``1``, ``2``, …) never repeats one: the listing stops after
    ``MAX_LISTING_PAGES`` pages with the same coded error (lowered here to 5, in process)."""
    from attest.errors import AttestError
    from carriers import discovery
    from carriers.iceberg import catalogs

    class Endless(Catalog):
        def paged(self, items: list[Any], token: str | None, key: str) -> dict[str, Any]:
            if key != "identifiers":
                return super().paged(items, token, key)
            return {key: items[:1], "next-page-token": str(int(token or 0) + 1)}

    catalog = Endless([("sales",)], {("sales",): [(("sales",), "orders")]}, page=10)
    monkeypatch.setenv("PYICEBERG_CATALOG__STUB__TYPE", "rest")
    monkeypatch.setenv("PYICEBERG_CATALOG__STUB__URI", rest(catalog))
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())  # read once at import: read these variables
    monkeypatch.setattr(catalogs, "MAX_LISTING_PAGES", 5)
    with pytest.raises(AttestError) as caught:
        discovery.discover("iceberg://stub/sales")
    assert caught.value.code.value == "table_not_audited" and "after 5 pages" in caught.value.message
    assert len([r for r in catalog.requests if "/tables" in r]) == 7, catalog.requests  # the first page, 5, refused
