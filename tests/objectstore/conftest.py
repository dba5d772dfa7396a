"""An S3-compatible server for the object-store tests: moto's S3, on 127.0.0.1 only.

The server runs in a child Python process, not in the test process: delta-rs's file-system handler (which the
Delta carrier reads and writes through) keeps the GIL while it opens an object, so an in-process server thread
could never answer it and the first read deadlocks. One server serves the whole session; each test gets its own
bucket.
"""

from __future__ import annotations

import select
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# moto[server] (a dev dependency) is imported here so that its absence fails loudly instead of skipping the suite.
import moto.server  # noqa: F401
import pytest

REGION = "us-east-1"
KEY_ID = "testing"
SECRET = "testing"

# Started with the interpreter running the tests; prints its port once listening, stops when stdin closes.
_SERVER = """
import logging, sys
logging.getLogger("werkzeug").setLevel(logging.ERROR)
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
server.stop()
"""


@dataclass(frozen=True)
class S3:
    """One empty bucket on the test server, with the options every client needs to reach it."""

    endpoint: str
    bucket: str
    client: Any  # boto3 S3 client (boto3 ships with moto)

    @property
    def storage_options(self) -> dict[str, str]:
        """delta-rs (object_store) option names; unsafe rename: single writer, no locking provider."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
        }

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def keys(self, prefix: str = "") -> dict[str, int]:
        """{object key: size} under ``prefix``."""
        out: dict[str, int] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            out.update({o["Key"]: int(o["Size"]) for o in page.get("Contents", [])})
        return out

    def get(self, key: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def flip_byte(self, key: str) -> None:
        """Change one byte in the middle of an object, keeping its size."""
        data = bytearray(self.get(key))
        data[len(data) // 2] ^= 0xFF
        self.put(key, bytes(data))

    def pyarrow_fs(self) -> Any:
        """pyarrow's own S3 filesystem pointed at the same server."""
        from pyarrow.fs import S3FileSystem

        return S3FileSystem(access_key=KEY_ID, secret_key=SECRET, region=REGION, scheme="http",
                            endpoint_override=self.endpoint.removeprefix("http://"))


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = Path(tmp_path_factory.mktemp("moto")) / "server.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            proc.kill()
            proc.wait(10)
            raise RuntimeError(f"moto server did not start: {line!r}\n{log.read_text(errors='replace')}")
        yield f"http://127.0.0.1:{int(line)}"
    finally:
        proc.stdin.close()  # the server stops when its stdin closes
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    import boto3

    # Loopback only: no proxy may take the requests of this process or of the CLI it starts.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                          region_name=REGION)
    bucket = f"test-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return S3(endpoint=s3_endpoint, bucket=bucket, client=client)
