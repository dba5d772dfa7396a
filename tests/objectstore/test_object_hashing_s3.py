"""Object-store hashing through obstore (carriers.storage.objects) on a real S3 server (SeaweedFS, loopback): the
digests are local BLAKE3's for every size at the edges of a part and of a streamed GET, read by obstore alone (the
engine's reader refuses to serve), for both engines' storages; and an object truncated, removed or replaced is
reported exactly as the engine's reader reports it."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest
from blake3 import blake3
from deltalake import write_deltalake

from attest.tables import DataFile
from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.storage import objects
from carriers.storage.delta import DeltaStorage
from carriers.storage.fileio import FileIOStorage
from carriers.storage.hashing import hash_locations
from tests.objectstore.conftest import S3

SMALL = 64 << 10


def _storage(s3: S3, engine: str, root: str) -> Any:
    if engine == "delta":
        return DeltaStorage(s3.uri(root), s3.storage_options)
    from pyiceberg.io.pyarrow import PyArrowFileIO

    return FileIOStorage(s3.uri(root), PyArrowFileIO(s3.iceberg_properties))


def _engine_refuses(monkeypatch: pytest.MonkeyPatch, storage: Any) -> None:
    def refuse(self: Any, location: str) -> Any:
        raise AssertionError(f"the engine's reader was asked for {location}")

    monkeypatch.setattr(type(storage), "_open_remote", refuse)


@pytest.mark.parametrize("part", [SMALL, objects.PART], ids=["64KiB-parts", "default-parts"])
@pytest.mark.parametrize("engine", ["delta", "iceberg"])
def test_digests_through_obstore_are_local_blake3(s3: S3, engine: str, part: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "PART", part)
    monkeypatch.setattr(objects, "STREAM_MAX", 2 * part)
    # empty, one byte, one part, one part and a byte, the largest streamed GET and one byte more (ranged), many parts
    sizes = [0, 1, part, part + 1, 2 * part, 2 * part + 1, 5 * part + 7]
    blobs = {f"f{i}-{n}.bin": os.urandom(n) for i, n in enumerate(sizes)}
    for key, data in blobs.items():
        s3.put(f"h/{key}", data)
    storage = _storage(s3, engine, "h")
    assert storage._object_store() is not None
    _engine_refuses(monkeypatch, storage)
    files = [DataFile(path=k, size=len(b), kind="data", location=s3.uri(f"h/{k}")) for k, b in blobs.items()]
    assert hash_locations(storage, files) == {k: blake3(b).hexdigest() for k, b in blobs.items()}


def _codes(report: Any) -> list[tuple[str, str | None]]:
    return sorted((p.code.value, p.path) for p in report.errors)


def test_truncated_missing_and_replaced_objects_are_reported_as_the_engine_reports_them(
        s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "PART", 4 << 10)  # the table's files are read in many ranged parts
    monkeypatch.setattr(objects, "STREAM_MAX", 8 << 10)
    uri = s3.uri("t")
    for i in range(4):
        blob = pa.array([os.urandom(512) for _ in range(40 * (i + 1))], pa.binary())
        write_deltalake(uri, pa.table({"i": pa.array([i] * len(blob), pa.int32()), "b": blob}), mode="append",
                        storage_options=s3.storage_options)
    attest_after_write(uri, model="m", program_hash="a" * 64, storage_options=s3.storage_options)
    keys = sorted(k for k in s3.keys("t/") if k.endswith(".parquet"))
    assert len(keys) == 4 and all(s3.keys("t/")[k] > 8 << 10 for k in keys)

    used: list[int] = []
    real = objects.hash_objects

    def counted(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        used.append(sum(d is not None for d in got))
        return got

    monkeypatch.setattr(objects, "hash_objects", counted)

    def verify(through_obstore: bool) -> Any:
        carrier = DeltaCarrier(uri, storage_options=s3.storage_options)
        if not through_obstore:
            carrier.storage._store = None  # options obstore cannot take: the engine's reader alone
        return verify_table(carrier, level="bytes")

    intact = verify(True)
    assert intact.passed and intact.bytes_checked == sum(s3.keys("t/")[k] for k in keys), intact.human()
    assert used == [4]  # every object read through obstore

    truncated, missing, replaced, _kept = keys
    s3.put(truncated, s3.get(truncated)[:-1])
    s3.delete(missing)
    s3.flip_byte(replaced)
    through_obstore, through_engine = verify(True), verify(False)
    rel = {k: k.removeprefix("t/") for k in keys}
    assert _codes(through_obstore) == _codes(through_engine) == sorted([
        ("size_mismatch", rel[truncated]), ("file_missing", rel[missing]),  # found by the look: not read
        ("artifact_hash_mismatch", rel[replaced])]), through_obstore.human()
    assert used[1] == 2  # the kept and the replaced (same size, read whole): the look found the other two
