"""pytest fixtures for the servers: one server per session (started on first use, stopped at the end), one new
bucket per test. A server whose program is absent and cannot be installed skips its tests with the reason, unless
ATTEST_REQUIRE_SERVERS=1 (CI), where it fails them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers import stores, tools
from tests.servers.process import ServerError

# Never ask a cloud metadata service for credentials (only loopback servers are reachable, and only they are used).
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")


# Starts of a server whose port was taken between our pick (process.free_port) and its bind: the ephemeral ports of
# the JVMs running beside the tests come from the same range (measured: SeaweedFS's 11th port, bound seconds after
# the pick, "address already in use"). Each try picks its ports again, in a new folder.
BIND_TRIES = 3


def _start(name: str, start: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    for attempt in range(1, BIND_TRIES + 1):
        try:
            return start(tmp_path_factory.mktemp(name))
        except tools.MissingTool as exc:
            if os.environ.get(tools.REQUIRE_ENV):
                raise
            pytest.skip(f"{name} is not available: {exc}")
        except ServerError as exc:
            if attempt == BIND_TRIES or "address already in use" not in str(exc).lower():
                raise
    raise AssertionError("unreachable")  # the last try returned or raised


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.servers import seaweed

    server = _start("seaweedfs", seaweed.start, tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.servers import gcs

    server = _start("fake-gcs-server", gcs.start, tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.servers import azurite

    server = _start("azurite", azurite.start, tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def rest_catalog_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Apache Iceberg's REST catalog server (tests/servers/rest_catalog.py), one per session."""
    from tests.servers import rest_catalog

    server = _start("iceberg-rest", rest_catalog.start, tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hive_metastore_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Hive Metastore 3.1.3 on embedded Derby (tests/servers/hive_metastore.py), one per session."""
    from tests.servers import hive_metastore

    server = _start("hive-metastore", hive_metastore.start, tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def s3(seaweed_server: Any, monkeypatch: pytest.MonkeyPatch) -> stores.Bucket:
    return stores.s3_bucket(seaweed_server)


@pytest.fixture
def gcs(gcs_server: Any) -> stores.Bucket:
    return stores.gcs_bucket(gcs_server)


@pytest.fixture
def azure(azurite_server: Any, monkeypatch: pytest.MonkeyPatch) -> stores.Bucket:
    bucket = stores.azure_container(azurite_server)
    for key, value in bucket.env.items():
        if key == "AZURITE_BLOB_STORAGE_URL":
            monkeypatch.setenv(key, value)
    return bucket


@pytest.fixture(params=["s3", "gcs", "azure"])
def bucket(request: pytest.FixtureRequest) -> stores.Bucket:
    """The same test on each store."""
    result: stores.Bucket = request.getfixturevalue(request.param)
    return result
