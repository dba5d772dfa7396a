"""The stores as the tests see them: one bucket (or container) per test, the options each engine needs to reach it,
and direct access around the carrier (pyarrow's own filesystems, an independent client) to tamper as an attacker
with bucket access would."""

from __future__ import annotations

import json
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.servers import azurite as az
from tests.servers import seaweed as sw
from tests.servers.gcs import FakeGcs

FAR_FUTURE_MS = str(4102444800000)  # 2100-01-01: pyarrow wants an expiry with a (fake) GCS token


@dataclass
class Bucket:
    """One empty bucket on a test server."""

    kind: str  # "s3" | "gcs" | "azure"
    name: str
    fs: Any  # a pyarrow FileSystem on the same server (tampering and inspection go around the carrier)
    storage_options: dict[str, str]  # delta-rs
    iceberg_properties: dict[str, str]  # pyiceberg FileIO
    scheme: str
    env: dict[str, str] = field(default_factory=dict)  # what a CLI process needs in its environment
    secret: str = ""  # the credential the leak tests look for

    def uri(self, key: str) -> str:
        if self.scheme == "abfs":
            return f"abfs://{self.name}@{az.ACCOUNT}.dfs.core.windows.net/{key}"
        return f"{self.scheme}://{self.name}/{key}"

    def keys(self, prefix: str = "") -> dict[str, int]:
        """{object key: size} under ``prefix``."""
        from pyarrow.fs import FileSelector, FileType

        try:
            infos = self.fs.get_file_info(FileSelector(f"{self.name}/{prefix}".rstrip("/"), recursive=True,
                                                       allow_not_found=True))
        except OSError:
            return {}
        start = len(self.name) + 1
        return {i.path[start:]: int(i.size) for i in infos if i.type == FileType.File}

    def get(self, key: str) -> bytes:
        with self.fs.open_input_stream(f"{self.name}/{key}") as stream:
            return bytes(stream.read())

    def put(self, key: str, data: bytes) -> None:
        with self.fs.open_output_stream(f"{self.name}/{key}") as stream:
            stream.write(data)

    def delete(self, key: str) -> None:
        self.fs.delete_file(f"{self.name}/{key}")

    def flip_byte(self, key: str) -> None:
        """Change one byte in the middle of an object, keeping its size."""
        data = bytearray(self.get(key))
        data[len(data) // 2] ^= 0xFF
        self.put(key, bytes(data))


def new_name() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def s3_bucket(server: sw.Seaweed, *, secret: str = sw.SECRET) -> Bucket:
    from pyarrow.fs import S3FileSystem

    fs = S3FileSystem(access_key=sw.KEY_ID, secret_key=sw.SECRET, region=sw.REGION, scheme="http",
                      endpoint_override=server.endpoint.removeprefix("http://"), allow_bucket_creation=True)
    name = new_name()
    fs.create_dir(name)
    options = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": sw.KEY_ID, "AWS_SECRET_ACCESS_KEY": secret,
               "AWS_REGION": sw.REGION, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    props = {"s3.endpoint": server.endpoint, "s3.access-key-id": sw.KEY_ID, "s3.secret-access-key": secret,
             "s3.region": sw.REGION}
    return Bucket("s3", name, fs, options, props, "s3", env=dict(options), secret=secret)


def gcs_bucket(server: FakeGcs) -> Bucket:
    from pyarrow.fs import GcsFileSystem

    name = new_name()
    request = urllib.request.Request(f"{server.endpoint}/storage/v1/b?project=attest-test",
                                     data=json.dumps({"name": name}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30):
        pass
    fs = GcsFileSystem(anonymous=True, scheme="http", endpoint_override=server.endpoint.removeprefix("http://"))
    options = {"google_service_account": str(server.service_account), "google_allow_http": "true"}
    props = {"gcs.service.host": server.endpoint, "gcs.oauth2.token": "emulator-token",
             "gcs.oauth2.token-expires-at": FAR_FUTURE_MS}
    return Bucket("gcs", name, fs, options, props, "gs", env={"GOOGLE_SERVICE_ACCOUNT": str(server.service_account)})


def azure_container(server: az.Azurite, scheme: str = "az") -> Bucket:
    from pyarrow.fs import AzureFileSystem

    fs = AzureFileSystem(account_name=az.ACCOUNT, account_key=az.KEY, blob_storage_authority=server.authority,
                         blob_storage_scheme="http", dfs_storage_authority=server.authority, dfs_storage_scheme="http")
    name = new_name()
    fs.create_dir(name)
    options = {"AZURE_STORAGE_ACCOUNT_NAME": az.ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": az.KEY,
               "AZURE_STORAGE_USE_EMULATOR": "true", "AZURE_ALLOW_HTTP": "true"}
    props = {"adls.account-name": az.ACCOUNT, "adls.account-key": az.KEY,
             "adls.blob-storage-authority": server.authority, "adls.blob-storage-scheme": "http",
             "adls.dfs-storage-authority": server.authority, "adls.dfs-storage-scheme": "http",
             # pyiceberg tries fsspec (adlfs) first for abfs://; the pyarrow FileIO is the one installed.
             "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"}
    # object_store's emulator mode reads the blob endpoint from this variable (default 127.0.0.1:10000).
    env = {**options, "AZURITE_BLOB_STORAGE_URL": f"http://{server.authority}"}
    return Bucket("azure", name, fs, options, props, scheme, env=env, secret=az.KEY)
