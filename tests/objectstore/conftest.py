"""Object-store tests run against real storage servers started by the tests (tests/servers): SeaweedFS for S3,
fake-gcs-server for GCS, Azurite for Azure Blob. Each test gets a new bucket."""

from __future__ import annotations

from tests.servers.stores import Bucket

S3 = Bucket  # the name the S3 tests were written with
