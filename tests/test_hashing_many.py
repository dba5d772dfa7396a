"""The hashing entry points the scale-out paths use: sized batches, counted streams, one location at a time (what an
executor task runs), and the ``--spark`` options of the command line that need no Spark to be judged."""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.cli import main
from attest.hashing import hash_bytes, hash_files, hash_sized_files, hash_stream_counted
from attest.tables import DataFile
from carriers.delta.carrier import attest_after_write
from carriers.storage.delta import DeltaStorage
from carriers.storage.hashing import hash_location, hash_locations


class _ReadOnly:
    def __init__(self, data: bytes) -> None:
        self._buf = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._buf.read(n)


@pytest.mark.parametrize("size", [0, 1, 1023, 1025, 3 * (1 << 20) + 7])
def test_counted_streams_say_how_many_bytes_they_hashed(size: int) -> None:
    data = os.urandom(size)
    assert hash_stream_counted(io.BytesIO(data), chunk_size=4096 + 3) == (size, hash_bytes(data))
    assert hash_stream_counted(_ReadOnly(data), chunk_size=1000) == (size, hash_bytes(data))  # type: ignore[arg-type]


def test_sized_batches_agree_with_hash_files(tmp_path: Path) -> None:
    paths = []
    for i, size in enumerate([0, 5, 1 << 20, (9 << 20) + 1, 70 << 20]):  # small, mapped and solo-sized files
        p = tmp_path / f"f{i}"
        p.write_bytes(os.urandom(size))
        paths.append(p)
    sizes = {str(p): p.stat().st_size for p in paths}
    seen: list[tuple[int, int, int]] = []
    got = hash_sized_files(sizes, progress=lambda *a: seen.append(a))
    assert got == hash_files(paths)
    assert seen[0] == (0, 5, 0) and seen[-1] == (5, 5, sum(sizes.values()))
    assert hash_sized_files(sizes, max_workers=1) == got


class _Remote(DeltaStorage):
    """Object-store locations served from memory (``mem://``), or failing to open."""

    def __init__(self, root: str, objects: dict[str, bytes]) -> None:
        super().__init__(root)
        self.objects = objects

    def _open_remote(self, location: str) -> BinaryIO:
        if location not in self.objects:
            raise OSError(f"NoSuchKey: {location}")
        return io.BytesIO(self.objects[location])


def test_one_location_at_a_time_as_an_executor_hashes(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(b"bytes")
    os.mkfifo(tmp_path / "pipe")  # reading it would block forever: never opened
    (tmp_path / "dir").mkdir()
    storage = _Remote(str(tmp_path), {"mem://b/x": b"remote bytes"})
    assert hash_location(storage, str(tmp_path / "f.bin")) == (5, hash_bytes(b"bytes"))
    assert hash_location(None, str(tmp_path / "f.bin"), threads=1) == (5, hash_bytes(b"bytes"))
    for unreadable in ("missing.bin", "pipe", "dir"):
        assert hash_location(storage, str(tmp_path / unreadable)) is None
    assert hash_location(storage, "mem://b/x") == (12, hash_bytes(b"remote bytes"))
    assert hash_location(storage, "mem://b/absent") is None
    assert hash_location(None, "mem://b/x") is None  # no storage: remote locations cannot be read
    files = [DataFile("f.bin", 5, location=str(tmp_path / "f.bin")),
             DataFile("pipe", 0, location=str(tmp_path / "pipe")),
             DataFile("x", 12, location="mem://b/x"), DataFile("gone", 1, location="mem://b/absent")]
    # The batch path says the same: unreadable files (a FIFO among them) are absent, never a hang.
    assert hash_locations(storage, files) == {"f.bin": hash_bytes(b"bytes"), "x": hash_bytes(b"remote bytes")}


# ---- --spark / --master on the command line ------------------------------------------------------------------------
def _cli(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json"])
    return rc, json.loads(out.getvalue())


@pytest.fixture
def stale(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1]}))
    attest_after_write(str(path), model="m", program_hash="a" * 64)
    write_deltalake(str(path), pa.table({"v": [2]}), mode="append")
    return path


def test_spark_options_that_cannot_apply_are_refused(stale: Path, tmp_path: Path) -> None:
    rc, doc = _cli("verify", str(stale), "--master", "local[2]")
    assert rc == 2 and doc["errors"][0]["code"] == "invalid_argument" and "--spark" in doc["errors"][0]["message"]
    (tmp_path / "m.json").write_text("{}")
    rc, doc = _cli("verify", str(tmp_path / "m.json"), "--spark")
    assert rc == 2 and doc["errors"][0]["code"] == "invalid_argument"
    for master in ("bogus://x", "", "locl[2]"):  # Spark's JVM would start, then exit with a Java stack trace
        rc, doc = _cli("verify", str(stale), "--spark", "--master", master)
        assert rc == 2 and doc["errors"][0]["code"] == "invalid_argument", doc
        assert "is not a Spark master" in doc["errors"][0]["message"]


def test_spark_without_the_extra_is_one_coded_error(stale: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as if the `spark` extra were not installed
    rc, doc = _cli("verify", str(stale), "--spark")
    assert rc == 2 and doc["errors"][0]["code"] == "extra_missing"
    rc, doc = _cli("audit", str(stale), "--spark")
    assert rc == 2 and doc["errors"][0]["code"] == "extra_missing"


def test_spark_starts_only_when_there_are_bytes_to_hash(stale: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark", reason="needs the `spark` extra")
    import carriers.spark.distributed as distributed

    def no_jvm(master: str | None = None, **_: Any) -> Any:
        raise AssertionError("a JVM was started for a table whose verdict needs no bytes")

    monkeypatch.setattr(distributed, "cli_session", no_jvm)
    rc, doc = _cli("verify", str(stale), "--spark")  # stale: decided before any file is read
    assert rc == 1 and doc["errors"][0]["code"] == "stale" and doc["level"] == "schema"
    rc, doc = _cli("verify", str(stale), "--spark", "--version", "0", "--level", "files")
    assert rc == 0 and doc["level"] == "files"


def test_listed_sizes_are_hints_and_unreadable_files_are_left_out(tmp_path: Path) -> None:
    # hash_locations stats no file its listing says is small (docs/scale.md, sixteenth pass): each is opened as a
    # regular file, its descriptor's size picks reading or mapping, and what cannot be read is absent, as before.
    blobs = {"small": b"bytes", "big-listed-small": os.urandom(3 << 20), "small-listed-big": b"ten bytes!",
             "empty": b""}
    for name, data in blobs.items():
        (tmp_path / name).write_bytes(data)
    os.symlink(tmp_path / "small", tmp_path / "link")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    listed = {"small": 5, "big-listed-small": 1, "small-listed-big": 100 << 20, "empty": 0, "link": 5, "missing": 1,
              "pipe": 1, "dir": 1, "unknown-size": -1}
    (tmp_path / "unknown-size").write_bytes(b"size unknown")
    files = [DataFile(name, size, location=str(tmp_path / name)) for name, size in listed.items()]
    calls: list[tuple[int, int, int]] = []
    got = hash_locations(DeltaStorage(str(tmp_path)), files, progress=lambda *a: calls.append(a))
    expected = {name: hash_bytes(data) for name, data in blobs.items()}
    expected["link"] = hash_bytes(b"bytes")
    expected["unknown-size"] = hash_bytes(b"size unknown")
    assert got == expected
    assert calls[0] == (0, len(files), 0) and calls[-1][0] == len(expected)
    # The same files through a file:// URI (parsed, not taken as a path) and as the one-file form says.
    uris = [DataFile(f.path, f.size, location=(tmp_path / f.path).as_uri()) for f in files]
    assert hash_locations(DeltaStorage(str(tmp_path)), uris) == expected
    for f in files:
        one = hash_location(None, f.location)
        assert (one is None) == (f.path not in expected) and (one is None or one[1] == expected[f.path])
