"""fake-gcs-server: the GCS JSON API on a free loopback port, objects in a temp folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.servers import tools
from tests.servers.gcs_xml import XmlShim
from tests.servers.process import HOST, Server, ServerError, free_port, http_answers


@dataclass
class FakeGcs:
    server: Server
    port: int
    service_account: Path  # what delta-rs (object_store) reads: the base URL (the XML shim), no OAuth
    shim: XmlShim

    @property
    def endpoint(self) -> str:
        """The JSON API (pyarrow's GcsFileSystem, pyiceberg)."""
        return f"http://{HOST}:{self.port}"

    def stop(self) -> None:
        self.shim.stop()
        self.server.stop()


def start(workdir: Path) -> FakeGcs:
    port = free_port()
    argv = [str(tools.fake_gcs_server()), "-scheme", "http", "-host", HOST, "-port", str(port), "-backend",
            "filesystem", "-filesystem-root", str(workdir / "objects"), "-public-host", f"{HOST}:{port}",
            "-external-url", f"http://{HOST}:{port}", "-log-level", "warn"]
    server = Server("fake-gcs-server", argv, workdir / "fake-gcs.log", cwd=workdir)
    shim = XmlShim(port, workdir / "gcs-xml-shim.log")
    # object_store's own way to an emulator: a service-account file naming the base URL and turning OAuth off.
    account = workdir / "service-account.json"
    account.write_text(json.dumps({"gcs_base_url": f"http://{HOST}:{shim.port}", "disable_oauth": True,
                                   "client_email": "", "private_key": "", "private_key_id": ""}), encoding="utf-8")
    out = FakeGcs(server, port, account, shim)
    try:
        server.wait_ready(lambda: http_answers(f"{out.endpoint}/storage/v1/b"))
    except ServerError:
        shim.stop()
        raise
    return out
