"""Object-store tests run against real storage servers started by the tests (tests/servers): SeaweedFS for S3,
fake-gcs-server for GCS, Azurite for Azure Blob. Each test gets a new bucket."""

from __future__ import annotations

from tests.servers.fixtures import (  # noqa: F401  (fixtures, registered by import)
    azure,
    azurite_server,
    bucket,
    gcs,
    gcs_server,
    hive_metastore_server,
    rest_catalog_server,
    s3,
    seaweed_server,
)
from tests.servers.stores import Bucket

S3 = Bucket  # the name the S3 tests were written with
