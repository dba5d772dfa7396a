"""Remote hashing streams with bounded memory and overlaps requests: measured on a real S3 server."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO

import blake3
import pytest

from attest.tables import DataFile
from carriers.storage.base import Storage
from carriers.storage.hashing import REMOTE_CHUNK, REMOTE_WORKERS, hash_locations
from tests.servers.stores import Bucket

BIG = 192 << 20  # three times the bound: a whole-object read could not stay under it
BOUND = 64 << 20

_MEASURE = """
import json, resource, sys
from attest.tables import DataFile
from carriers.storage.delta import DeltaStorage
from carriers.storage.hashing import hash_locations
uri, size, options, path = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
storage = DeltaStorage(uri.rsplit("/", 1)[0], options)
if path == "engine":  # options obstore cannot take: the engine's own reader
    storage._store = None
assert (storage._object_store() is None) == (path == "engine")
small = DataFile(path="small", size=1, kind="data", location=uri.rsplit("/", 1)[0] + "/small")
hash_locations(storage, [small])  # warm up: the handler, its runtime and thread pool exist before the baseline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
digest = hash_locations(storage, [DataFile(path="big", size=size, kind="data", location=uri)])["big"]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"digest": digest, "grew_kib": after - before}))
"""


def write_varied_object(fs: Any, key: str, size: int) -> str:
    """Write ``size`` bytes of varied 1 MiB blocks (each starting with its own byte) to ``key`` through the pyarrow
    file system ``fs``; their BLAKE3 hex digest."""
    expected = blake3.blake3()
    block = bytes(range(256)) * 4096  # 1 MiB, varied bytes
    with fs.open_output_stream(key) as out:
        for i in range(size // len(block)):
            chunk = bytes([i % 251]) + block[1:]
            out.write(chunk)
            expected.update(chunk)
    return expected.hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("path", ["obstore", "engine"])
def test_hashing_a_large_object_stays_under_64_mib(s3: Bucket, path: str) -> None:
    expected = write_varied_object(s3.fs, f"{s3.name}/big/data.bin", BIG)
    s3.put("big/small", b"x")
    done = subprocess.run([sys.executable, "-c", _MEASURE, s3.uri("big/data.bin"), str(BIG),
                           json.dumps(s3.storage_options), path], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["digest"] == expected
    assert result["grew_kib"] * 1024 <= BOUND, f"peak memory grew by {result['grew_kib'] / 1024:.0f} MiB"


class _SlowStorage(Storage):
    """Objects that take a while to open: counts how many are read at once."""

    def __init__(self) -> None:
        super().__init__("s3://bucket/t")
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()
        self.chunks: list[int] = []

    def _open_remote(self, location: str) -> BinaryIO:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.05)
        storage = self

        class Stream(io.BytesIO):
            def read(self, n: int | None = -1) -> bytes:
                storage.chunks.append(-1 if n is None else n)
                return super().read(n)

            def readinto(self, buffer: Any) -> int:
                storage.chunks.append(len(buffer))
                return super().readinto(buffer)

            def close(self) -> None:
                with storage.lock:
                    storage.active -= 1
                super().close()

        return Stream(location.encode() * 1000)

    def _read_remote(self, rel: str) -> bytes | None:
        return None

    def _list_remote(self, rel_dir: str) -> list[str]:
        return []

    def _write_remote(self, rel: str, data: bytes) -> None:
        raise NotImplementedError

    def _size_remote(self, location: str) -> int | None:
        return None


def test_remote_reads_overlap_and_never_ask_more_than_a_chunk() -> None:
    storage: Any = _SlowStorage()
    files = [DataFile(path=f"f{i}", size=0, kind="data", location=f"s3://bucket/t/f{i}") for i in range(40)]
    hashed = hash_locations(storage, files)
    assert set(hashed) == {f.path for f in files}
    assert 1 < storage.peak <= REMOTE_WORKERS  # overlapped, and bounded
    assert storage.chunks and all(0 < n <= REMOTE_CHUNK for n in storage.chunks)
    assert REMOTE_WORKERS * REMOTE_CHUNK <= BOUND
