"""attest.hashing: known BLAKE3 vectors, agreement of every entry point, batches, errors, b3sum."""

from __future__ import annotations

import errno
import gzip
import io
import itertools
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from attest import hashing
from attest.hashing import (
    BATCH_SOLO_THRESHOLD,
    MMAP_THRESHOLD,
    SERIAL_MAX_BYTES,
    hash_bytes,
    hash_file,
    hash_files,
    hash_regular_file,
    hash_sized_files,
    hash_stream,
    hash_uri,
)

# Official BLAKE3 test vectors: input is bytes(i % 251 for i in range(n)); the value is the first
# 32 bytes of the "hash" output in test_vectors/test_vectors.json of the BLAKE3 repository (as
# shipped in the blake3 sdist on PyPI, tests/test_vectors.json). Cross-checked when written against
# b3sum 1.2.0 and the blake3 1.8.7 Rust crate: all three agree on every length below.
VECTORS: dict[int, str] = {
    0: "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    1: "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
    1023: "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11",
    1024: "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7",
    1025: "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444",
    2048: "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a",
    2049: "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030",
    3072: "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2",
    3073: "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3",
    4096: "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969",
    4097: "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995",
    5120: "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833",
    5121: "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff",
    6144: "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205",
    6145: "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f",
    7168: "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a",
    7169: "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817",
    8192: "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63",
    8193: "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b",
    16384: "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4",
    31744: "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47",
    102400: "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085",
}


def vector_input(n: int) -> bytes:
    """bytes(i % 251 for i in range(n)), built by repetition so multi-MiB inputs stay cheap."""
    return (bytes(range(251)) * (n // 251 + 1))[:n]


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def big_payload() -> bytes:
    """Past MMAP_THRESHOLD (mmap + threads in hash_file) and not a whole number of 1 KiB chunks."""
    return os.urandom(hashing.MMAP_THRESHOLD * 2 + 12345)


# --- known answers -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", sorted(VECTORS))
def test_hash_bytes_matches_official_vectors(n: int) -> None:
    assert hash_bytes(vector_input(n)) == VECTORS[n]


@pytest.mark.parametrize("n", sorted(VECTORS))
def test_hash_file_and_stream_match_official_vectors(tmp_path: Path, n: int) -> None:
    path = write(tmp_path / f"v{n}", vector_input(n))
    assert hash_file(path) == VECTORS[n]
    assert hash_file(path, threads=1) == VECTORS[n]
    with path.open("rb") as f:
        assert hash_stream(f, chunk_size=1000) == VECTORS[n]  # chunk not aligned to BLAKE3's 1 KiB


def test_vector_input_is_the_official_pattern() -> None:
    assert vector_input(1000) == bytes(i % 251 for i in range(1000))


def test_identity_format() -> None:
    digest = hash_bytes(b"abc")
    assert len(digest) == 64 and digest == digest.lower() and int(digest, 16) >= 0


def test_vector_through_the_mmap_path(tmp_path: Path) -> None:
    # Repeat the 102400-byte vector's generator past the threshold: compare with hash_bytes, whose
    # path (in-memory update) is independent of the file path's mmap + rayon one.
    data = vector_input(hashing.MMAP_THRESHOLD + 102400)
    path = write(tmp_path / "big", data)
    assert hash_file(path) == hash_file(path, threads=1) == hash_file(path, threads=2) == hash_bytes(data)


@pytest.mark.parametrize("size", [hashing.MAP_MIN_BYTES - 1, hashing.MAP_MIN_BYTES, hashing.MAP_MIN_BYTES + 1,
                                  hashing.BATCH_MAP_MIN_BYTES - 1, hashing.BATCH_MAP_MIN_BYTES, (7 << 20) + 7])
def test_mapped_from_map_min_bytes_on_every_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    # Alone, a file is mapped from MAP_MIN_BYTES on (one thread below MMAP_THRESHOLD); in a batch hashed side by side
    # on several threads, from BATCH_MAP_MIN_BYTES on; below, read.
    import mmap

    data = os.urandom(size)
    path = write(tmp_path / "f.bin", data)
    mapped: list[int] = []
    real = mmap.mmap

    def spy(fd: int, length: int, **kwargs: Any) -> mmap.mmap:
        mapped.append(os.fstat(fd).st_size)
        return real(fd, length, **kwargs)

    monkeypatch.setattr(mmap, "mmap", spy)
    expected = hash_bytes(data)
    assert hash_file(path) == hash_file(path, threads=1) == hash_regular_file(path) == expected
    other = write(tmp_path / "g.bin", data)
    assert mapped == ([size] * 3 if size >= hashing.MAP_MIN_BYTES else [])
    mapped.clear()
    assert hash_files([path, other], max_workers=2) == {str(path): expected, str(other): expected}
    assert mapped == ([size] * 2 if size >= hashing.BATCH_MAP_MIN_BYTES else [])
    mapped.clear()
    assert hash_files([path, other], max_workers=1) == {str(path): expected, str(other): expected}
    assert mapped == ([size] * 2 if size >= hashing.MAP_MIN_BYTES else [])  # one thread: as alone


def test_a_file_that_cannot_be_mapped_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mmap

    def refuse(*_args: Any, **_kwargs: Any) -> mmap.mmap:
        raise OSError(errno.ENODEV, "no mappings on this file system")

    data = os.urandom(hashing.MAP_MIN_BYTES * 3)
    path = write(tmp_path / "f.bin", data)
    monkeypatch.setattr(mmap, "mmap", refuse)
    assert hash_file(path) == hash_files([path])[str(path)] == hash_bytes(data)


# --- every entry point agrees ------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 1024, 65_537, "big"])
def test_all_entry_points_agree(tmp_path: Path, big_payload: bytes, size: int | str) -> None:
    data = big_payload if size == "big" else os.urandom(int(size))
    path = write(tmp_path / "data.bin", data)
    expected = hash_bytes(data)

    assert hash_file(path) == expected
    assert hash_file(str(path), threads=1) == expected
    with path.open("rb") as f:
        assert hash_stream(f) == expected
    with path.open("rb") as f:
        assert hash_stream(f, chunk_size=4096) == expected
    assert hash_stream(io.BytesIO(data), chunk_size=7777) == expected
    assert hash_uri(str(path)) == expected
    assert hash_uri(path.as_uri()) == expected
    assert hash_files([path])[str(path)] == expected


class _ReadOnly:
    """A stream without readinto (exercises hash_stream's read() fallback)."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._inner.read(n)


def test_hash_stream_without_readinto(big_payload: bytes) -> None:
    assert hash_stream(_ReadOnly(big_payload), chunk_size=1 << 20) == hash_bytes(big_payload)  # type: ignore[arg-type]


def test_hash_stream_rejects_bad_chunk_size() -> None:
    with pytest.raises(ValueError):
        hash_stream(io.BytesIO(b"x"), chunk_size=0)


def test_hash_file_rejects_bad_threads(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        hash_file(write(tmp_path / "f", b"x"), threads=0)


# --- hash_uri through pyarrow and fsspec -------------------------------------------------------


def test_hash_uri_pyarrow_local_filesystem(tmp_path: Path, big_payload: bytes) -> None:
    import pyarrow.fs as pafs
    path = write(tmp_path / "data.bin", big_payload)
    expected = hash_bytes(big_payload)
    assert hash_uri(str(path), filesystem=pafs.LocalFileSystem()) == expected
    assert hash_uri(path.as_uri(), filesystem=pafs.LocalFileSystem()) == expected
    # SubTreeFileSystem is not special-cased: this goes through open_input_stream + hash_stream.
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert hash_uri("data.bin", filesystem=sub) == expected


def test_hash_uri_pyarrow_does_not_decompress(tmp_path: Path) -> None:
    import pyarrow.fs as pafs
    raw = gzip.compress(b"hello " * 1000)
    write(tmp_path / "x.gz", raw)
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert hash_uri("x.gz", filesystem=sub) == hash_bytes(raw)


def test_hash_uri_pyarrow_missing_raises(tmp_path: Path) -> None:
    import pyarrow.fs as pafs
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    with pytest.raises(FileNotFoundError):
        hash_uri("nope.bin", filesystem=sub)


def test_hash_uri_fsspec_memory(big_payload: bytes) -> None:
    import fsspec
    fs = fsspec.filesystem("memory")
    small = b"rocky-manifest"
    with fs.open("/attest-test/small.bin", "wb") as f:
        f.write(small)
    with fs.open("/attest-test/big.bin", "wb") as f:
        f.write(big_payload)
    try:
        assert hash_uri("memory://attest-test/small.bin", filesystem=fs) == hash_bytes(small)
        assert hash_uri("memory://attest-test/big.bin", filesystem=fs) == hash_bytes(big_payload)
        # No filesystem given: pyarrow does not know memory://, so the fsspec fallback resolves it.
        assert hash_uri("memory://attest-test/big.bin") == hash_bytes(big_payload)
        assert hash_uri("memory://attest-test/small.bin", storage_options={}) == hash_bytes(small)
        with pytest.raises(FileNotFoundError):
            hash_uri("memory://attest-test/missing.bin", filesystem=fs)
    finally:
        fs.rm("/attest-test", recursive=True)


# --- hash_files --------------------------------------------------------------------------------


def test_hash_files_200_files_match_individual_hashes(tmp_path: Path) -> None:
    paths = []
    for i in range(200):
        # Mixed sizes around the read/mmap threshold, including empty files.
        size = [0, 1, 1023, 70_000, hashing.READ_CHUNK + 1][i % 5] + i
        paths.append(write(tmp_path / f"f{i:03}.bin", os.urandom(size)))
    calls: list[tuple[int, int, int]] = []
    caller = threading.get_ident()
    threads: set[int] = set()

    def progress(done: int, total: int, done_bytes: int) -> None:
        threads.add(threading.get_ident())
        calls.append((done, total, done_bytes))

    result = hash_files([str(p) for p in reversed(paths)], progress=progress)
    assert result == {str(p): hash_file(p) for p in paths}
    total_bytes = sum(p.stat().st_size for p in paths)
    assert calls[0] == (0, 200, 0) and calls[-1] == (200, 200, total_bytes)
    assert [c[0] for c in calls] == list(range(201))  # one call per file, in order
    assert all(b2 >= b1 for (_, _, b1), (_, _, b2) in itertools.pairwise(calls))
    assert threads == {caller}  # progress never runs on a worker thread


@pytest.mark.parametrize("max_workers", [1, 2, 7])
def test_hash_files_worker_counts_agree(tmp_path: Path, max_workers: int) -> None:
    paths = [write(tmp_path / f"f{i}", os.urandom(i * 3001)) for i in range(20)]
    assert hash_files(paths, max_workers=max_workers) == {str(p): hash_file(p) for p in paths}


def test_hash_files_big_file_runs_solo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Shrink the thresholds so the big-file branch (mmap + all cores) runs without writing 64 MiB.
    monkeypatch.setattr(hashing, "BATCH_SOLO_THRESHOLD", 100_000)
    monkeypatch.setattr(hashing, "MMAP_THRESHOLD", 100_000)
    big = write(tmp_path / "big", os.urandom(300_000))
    small = [write(tmp_path / f"s{i}", os.urandom(5000)) for i in range(10)]
    seen: list[int] = []
    result = hash_files([*small, big], progress=lambda d, t, b: seen.append(b))
    assert result == {str(p): hash_file(p) for p in [*small, big]}
    assert seen[1] == 300_000  # the big file was hashed first, alone


def test_small_files_are_one_job_beside_the_bigger_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Files below SERIAL_MAX_BYTES cost more in GIL hand-offs between threads than in hashing: one thread takes all
    # of them, one after another, while the others take the bigger files one at a time.
    small = [write(tmp_path / f"s{i}", os.urandom(i * 97)) for i in range(40)]
    big = [write(tmp_path / f"b{i}", os.urandom(SERIAL_MAX_BYTES + i)) for i in range(6)]
    on: dict[str, int] = {}
    hash_job = hashing._hash_job

    def recording(keys: list[str], *rest: Any) -> None:
        on.update(dict.fromkeys(keys, threading.get_ident()))
        hash_job(keys, *rest)

    monkeypatch.setattr(hashing, "_hash_job", recording)
    counts: list[int] = []
    result = hash_files([*small, *big], max_workers=3, progress=lambda d, t, b: counts.append(d))
    assert result == {str(p): hash_file(p) for p in [*small, *big]}
    assert len({on[str(p)] for p in small}) == 1 and threading.get_ident() not in on.values()
    assert counts == list(range(47))  # every file still reported, once each
    on.clear()
    assert hash_files(small, max_workers=3) == {str(p): hash_file(p) for p in small}
    assert set(on.values()) == {threading.get_ident()}  # small files only: no thread at all


def test_hash_files_keys_and_duplicates(tmp_path: Path) -> None:
    a = write(tmp_path / "a", b"a")
    totals: list[int] = []
    result = hash_files([a, str(a), a], progress=lambda d, t, b: totals.append(t))
    assert result == {str(a): hash_bytes(b"a")} and set(totals) == {1}


def test_hash_files_empty() -> None:
    calls: list[tuple[int, int, int]] = []
    assert hash_files([], progress=lambda *c: calls.append(c)) == {}
    assert calls == [(0, 0, 0)]


def test_hash_files_missing_raises_before_hashing(tmp_path: Path) -> None:
    ok = write(tmp_path / "ok", b"x")
    with pytest.raises(FileNotFoundError):
        hash_files([ok, tmp_path / "missing"])


def test_hash_files_error_during_hashing_propagates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [write(tmp_path / f"f{i}", os.urandom(2000)) for i in range(50)]
    # Vanishes between the up-front stat and the worker's open: the worker's error must surface.
    victim = paths[25]
    original = hashing._hash_job

    def flaky(keys: list[str], *rest: Any) -> None:  # the small files' run
        if str(victim) in keys:
            os.unlink(victim)
        original(keys, *rest)

    monkeypatch.setattr(hashing, "_hash_job", flaky)
    with pytest.raises(FileNotFoundError):
        hash_files(paths, max_workers=3)
    write(victim, b"back")
    # Skipping what cannot be read (a table's listing): the vanished file is left out, every other one hashed.
    sizes = {str(p): 2000 for p in paths}
    got = hash_sized_files(sizes, max_workers=3, skip_unreadable=True)
    assert got == {str(p): hash_file(p) for p in paths if p != victim}


# --- errors ------------------------------------------------------------------------------------


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        hash_file(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        hash_uri(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        hash_uri((tmp_path / "missing").as_uri())


def test_directory_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        hash_file(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_is_streamed(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = os.urandom(300_000)

    def feed() -> None:
        with fifo.open("wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        assert hash_file(fifo) == hash_bytes(data)
    finally:
        writer.join(timeout=10)


def _within(seconds: float, call: Any) -> Any:
    """``call()`` on a thread with a deadline: a hang fails the test instead of stalling the suite."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "hung"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.parametrize("listed_size", [100, MMAP_THRESHOLD, BATCH_SOLO_THRESHOLD])
def test_a_file_swapped_for_a_fifo_after_listing_fails_instead_of_hanging(tmp_path: Path, listed_size: int) -> None:
    # The caller stat-ed a regular file of listed_size bytes; by the time it is hashed a FIFO (no writer) is there:
    # opening it for reading would block forever. Every strategy (read, mmap, alone on all cores) refuses it.
    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    ok = tmp_path / "ok.bin"
    ok.write_bytes(b"ok")
    with pytest.raises(OSError, match="not a regular file"):
        _within(30, lambda: hash_sized_files({str(fifo): listed_size}))
    with pytest.raises(OSError, match="not a regular file"):
        _within(30, lambda: hash_sized_files({str(fifo): listed_size, str(ok): 2}))
    with pytest.raises(OSError, match="not a regular file"):
        _within(30, lambda: hash_sized_files({str(fifo): listed_size}, max_workers=1))
    with pytest.raises(OSError, match="not a regular file"):  # the one-file form the fallbacks use
        _within(30, lambda: hash_regular_file(fifo))
    if os.path.exists("/dev/null"):
        with pytest.raises(OSError, match="not a regular file"):
            hash_regular_file("/dev/null")
    assert hash_regular_file(ok) == hash_bytes(b"ok")


def test_the_size_at_opening_picks_the_strategy(tmp_path: Path) -> None:
    # Listed big, truncated before it is opened: hashed from what is there (never a mapping of an empty file).
    f = tmp_path / "shrunk.bin"
    f.write_bytes(b"now small")
    assert hash_sized_files({str(f): BATCH_SOLO_THRESHOLD}) == {str(f): hash_bytes(b"now small")}
    f.write_bytes(b"")
    assert hash_sized_files({str(f): MMAP_THRESHOLD * 2}) == {str(f): hash_bytes(b"")}


# --- against the reference CLI -----------------------------------------------------------------


@pytest.mark.skipif(shutil.which("b3sum") is None,
                    reason="b3sum not on PATH (`make b3sum` builds it with cargo; test_hashing_reference.py compares)")
def test_matches_b3sum(tmp_path: Path, big_payload: bytes) -> None:
    paths = [
        write(tmp_path / "empty", b""),
        write(tmp_path / "vector", vector_input(102400)),
        write(tmp_path / "random", os.urandom(123_457)),
        write(tmp_path / "big", big_payload),
    ]
    out = subprocess.run(["b3sum", "--no-names", *map(str, paths)], check=True, capture_output=True,
                         text=True).stdout.split()
    assert out == [hash_file(p) for p in paths]
    assert out[1] == VECTORS[102400]
    batch = hash_files(paths)
    assert [batch[str(p)] for p in paths] == out


def test_module_is_engine_free() -> None:
    # The verifier-only install has blake3 but neither pyarrow nor fsspec: local hashing must work.
    code = (
        "import sys\n"
        "sys.modules['pyarrow'] = None; sys.modules['fsspec'] = None\n"  # any import of them fails
        "import attest.hashing as h, tempfile, os\n"
        "f = tempfile.NamedTemporaryFile(delete=False); f.write(b'abc'); f.close()\n"
        "assert h.hash_file(f.name) == h.hash_uri(f.name) == h.hash_files([f.name])[f.name] == h.hash_bytes(b'abc')\n"
        "os.unlink(f.name)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)
