"""Fixtures for OpenLineage: a local HTTP endpoint that receives events, and an environment with OpenLineage
configured by its own variables (no openlineage.yml of the machine leaks in)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Endpoint:
    """A lineage backend on a free loopback port: ``url`` to give OpenLineage, ``events`` as received."""

    url: str
    events: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    status: int = 201  # what the endpoint answers (set 500 to play a failing backend)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    box: list[Endpoint] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            box[0].paths.append(self.path)
            box[0].events.append(json.loads(body))
            self.send_response(box[0].status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box.append(Endpoint(url=f"http://127.0.0.1:{server.server_address[1]}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def ol_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Variables for a child process (and this one) with no OpenLineage configuration but what a test sets: HOME and
    the working directory hold no openlineage.yml, OPENLINEAGE_* from the caller are dropped."""
    import os

    home = tmp_path / "home"
    home.mkdir()
    from tests.openlineage.spec import SPEC_ENV

    def configures(key: str) -> bool:  # where the spec schemas are is the tests' own setting, not OpenLineage's
        return key.startswith(("OPENLINEAGE", "ATTEST_OPENLINEAGE")) and key != SPEC_ENV

    env = {k: v for k, v in os.environ.items() if not configures(k)}
    env["HOME"] = str(home)
    for key in [k for k in os.environ if configures(k)]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return env
