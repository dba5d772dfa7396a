"""SeaweedFS (``weed mini``): an S3 API and an Iceberg REST catalog in one process, on free loopback ports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.servers import tools
from tests.servers.process import HOST, Server, ServerError, free_port, http_answers

REGION = "us-east-1"
KEY_ID = "attest-test-key"
SECRET = "attest-test-secret-d41d8cd98f00"  # distinctive: the leak tests search every output for it


@dataclass
class Seaweed:
    server: Server
    s3_port: int
    iceberg_port: int

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.s3_port}"

    @property
    def iceberg_uri(self) -> str:
        return f"http://{HOST}:{self.iceberg_port}"

    def stop(self) -> None:
        self.server.stop()


# SeaweedFS's volume server turns its volumes read-only when the disk is nearly full (under ~1 % free by default):
# every PUT then retries for 180 s. Refused up front, with the figures, instead of tests timing out one by one.
MIN_FREE_BYTES = 2 << 30
MIN_FREE_FRACTION = 0.02


def start(workdir: Path) -> Seaweed:
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    import shutil

    disk = shutil.disk_usage(data)
    if disk.free < MIN_FREE_BYTES or disk.free < MIN_FREE_FRACTION * disk.total:
        raise ServerError(f"SeaweedFS needs free disk to accept writes: {disk.free / 2**30:.1f} GiB free of "
                          f"{disk.total / 2**30:.0f} GiB under {data} (at least {MIN_FREE_BYTES >> 30} GiB and "
                          f"{MIN_FREE_FRACTION:.0%} wanted)")
    config = workdir / "s3.json"
    # One identity with every action: the tests' credentials (a wrong secret is refused by the server).
    config.write_text(json.dumps({"identities": [{
        "name": "attest", "credentials": [{"accessKey": KEY_ID, "secretKey": SECRET}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}), encoding="utf-8")
    ports = {name: free_port() for name in (
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
        "s3.port", "s3.port.grpc", "s3.port.iceberg", "admin.port", "admin.port.grpc")}
    argv = [str(tools.weed()), "mini", f"-dir={data}", f"-ip={HOST}", f"-ip.bind={HOST}", f"-s3.config={config}",
            "-s3.port.lance=0", "-tableBucket=warehouse", "-webdav=false", "-admin.ui=false",
            # Every bucket is a collection with volumes of its own; the automatic maximum (from free disk) ran out
            # after ~27 buckets in one session ("No writable volumes and no free volumes left"): a new bucket per
            # test needs many small volumes (not preallocated, so they cost no disk until written).
            "-volume.max=1000", "-master.volumeSizeLimitMB=256",
            *(f"-{name}={port}" for name, port in ports.items())]
    server = Server("SeaweedFS", argv, workdir / "weed.log", cwd=workdir)
    out = Seaweed(server, ports["s3.port"], ports["s3.port.iceberg"])
    # The REST catalog answers before it has created its table bucket (404 "table bucket warehouse not found" for
    # ~0.6 s, measured): a first test that used it then failed at setup.
    server.wait_ready(lambda: http_answers(out.endpoint) and _table_bucket_ready(out))
    return out


def _table_bucket_ready(server: Seaweed) -> bool:
    """Whether the REST catalog lists the namespaces of its table bucket ``warehouse`` (with a token, as pyiceberg)."""
    import urllib.error
    import urllib.parse
    import urllib.request

    try:
        form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": KEY_ID,
                                       "client_secret": SECRET, "scope": "catalog"}).encode()
        with urllib.request.urlopen(urllib.request.Request(f"{server.iceberg_uri}/v1/oauth/tokens", data=form),
                                    timeout=5) as answer:
            token = json.load(answer)["access_token"]
        listing = urllib.request.Request(f"{server.iceberg_uri}/v1/warehouse/namespaces",
                                         headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(listing, timeout=5) as answer:
            return bool(answer.status == 200)
    except (OSError, ValueError, KeyError):  # not up yet (HTTPError is an OSError), or not yet answering in JSON
        return False
