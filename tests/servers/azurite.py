"""Azurite's blob service: Azure Blob Storage on a free loopback port, blobs in a temp folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.servers import tools
from tests.servers.process import HOST, Server, free_port, http_answers

# Azurite's well-known development account (public, documented by Microsoft: not a secret of anyone's).
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass
class Azurite:
    server: Server
    port: int

    @property
    def authority(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def endpoint(self) -> str:
        """The account's blob endpoint, path-style (as the emulator serves it)."""
        return f"http://{HOST}:{self.port}/{ACCOUNT}"

    def stop(self) -> None:
        self.server.stop()


def start(workdir: Path) -> Azurite:
    port = free_port()
    argv = [str(tools.azurite_blob()), "--blobHost", HOST, "--blobPort", str(port), "--location",
            str(workdir / "blobs"), "--silent", "--disableTelemetry", "--skipApiVersionCheck", "--loose"]
    server = Server("Azurite", argv, workdir / "azurite.log", cwd=workdir)
    out = Azurite(server, port)
    server.wait_ready(lambda: http_answers(f"http://{HOST}:{port}/"))
    return out
