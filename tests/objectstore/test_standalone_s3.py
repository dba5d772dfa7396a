"""The standalone carrier and hash_uri on an S3 API (SeaweedFS, loopback), with filesystems the project already
depends on: pyarrow's S3FileSystem, and fsspec's wrapper around it (s3fs is not a dependency)."""

from __future__ import annotations

from typing import Any

import blake3
import pytest
from fsspec.implementations.arrow import ArrowFSWrapper

from attest.build import build_manifest
from attest.hashing import hash_uri
from attest.model import Manifest
from carriers.standalone import MANIFEST_NAME, MARKER_NAME, StandaloneCarrier, run_unique_name
from tests.objectstore.conftest import S3

ARTIFACTS = {"orders.csv": b"id,n\n1,3\n2,5\n", "part-0.parquet": bytes(range(256)) * 64}


def put_artifacts(s3: S3, prefix: str) -> None:
    for name, data in ARTIFACTS.items():
        s3.put(f"{prefix}/{name}", data)


@pytest.mark.parametrize("kind", ["pyarrow", "fsspec"])
def test_hash_uri_streams_objects(s3: S3, kind: str) -> None:
    put_artifacts(s3, "h")
    fs: Any = s3.fs if kind == "pyarrow" else ArrowFSWrapper(s3.fs)
    for name, data in ARTIFACTS.items():
        # pyarrow takes s3:// URIs (the scheme is stripped), fsspec's wrapper bucket/key paths.
        uri = s3.uri(f"h/{name}") if kind == "pyarrow" else f"{s3.name}/h/{name}"
        assert hash_uri(uri, filesystem=fs) == blake3.blake3(data).hexdigest()


def test_standalone_carrier_round_trip_on_s3(s3: S3) -> None:
    put_artifacts(s3, "run")
    fs = ArrowFSWrapper(s3.fs)
    carrier = StandaloneCarrier(f"{s3.name}/run", filesystem=fs)
    # The artifacts beside the manifest, hashed where they are.
    listed = carrier.list_files()
    assert [(f.path, f.size) for f in listed] == sorted((n, len(d)) for n, d in ARTIFACTS.items())
    outputs = [(f.path, hash_uri(f"{s3.name}/run/{f.path}", filesystem=fs)) for f in listed]
    manifest = build_manifest(model="orders", program_hash="a" * 64, env_hash="c" * 64, outputs=outputs,
                              run_id="run-1")
    carrier.write(manifest, marker=True)
    # Run-unique copy, canonical manifest and marker are objects in the bucket, with the expected bytes.
    keys = s3.keys("run/")
    assert {f"run/{MANIFEST_NAME}", f"run/{run_unique_name('run-1')}", f"run/{MARKER_NAME}"} <= set(keys)
    body = s3.get(f"run/{MANIFEST_NAME}")
    assert Manifest.from_json(body) == manifest
    assert s3.get(f"run/{run_unique_name('run-1')}") == body
    assert s3.get(f"run/{MARKER_NAME}") == f"blake3:{blake3.blake3(body).hexdigest()}\n".encode()
    # Read back through the carrier; the carrier's own files are not artifacts.
    read = carrier.read()
    assert read is not None and Manifest.from_dict(read.document) == manifest
    assert carrier.list_files() == listed
    assert carrier.marker_matches() is True
    # Every output hash matches the object's bytes; a flipped byte does not.
    for path, digest in outputs:
        assert blake3.blake3(s3.get(f"run/{path}")).hexdigest() == digest
    s3.flip_byte("run/orders.csv")
    assert hash_uri(f"{s3.name}/run/orders.csv", filesystem=fs) != dict(outputs)["orders.csv"]
    # An edited manifest no longer matches the completion marker.
    s3.put(f"run/{MANIFEST_NAME}", body + b" ")
    assert carrier.marker_matches() is False
