"""Hashing files at their locations with bounded memory: local files through attest.hashing (mmap + threads),
object-store objects read through obstore at line rate (carriers.storage.objects: concurrent ranged GETs, bounded
bytes in flight) when the table's options map to an obstore store, else streamed by a few concurrent readers through
the table's engine (delta-rs's object store, pyiceberg's FileIO) — which also reads every object the obstore path
could not read whole as the size the table claims, so such an object is reported exactly as before."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from attest.tables import DataFile, Progress
from carriers.storage.base import Storage, local_path_of

# Remote hashing: this many objects in flight, each streamed in chunks of this size: memory stays at most
# REMOTE_WORKERS * REMOTE_CHUNK (32 MiB) whatever the file sizes.
REMOTE_WORKERS = 8
REMOTE_CHUNK = 4 << 20


def hash_location(storage: Storage | None, location: str, *, threads: int | None = None) -> tuple[int, str] | None:
    """``(bytes hashed, BLAKE3)`` of one file at its ``location``; None when it cannot be read (missing, not a
    regular file, permission, an object-store error): the same "unreadable is absent" rule as
    :func:`hash_locations`. ``threads`` caps the cores one big local file is hashed on (an executor task: its
    ``spark.task.cpus``). ``storage`` is needed only for object-store locations (None: local files only)."""
    import stat

    from attest.hashing import hash_regular_file, hash_stream_counted

    local = local_path_of(location)
    if local is not None:
        try:
            st = os.stat(local)
            if not stat.S_ISREG(st.st_mode):
                return None  # a FIFO would block the reader forever, a device never ends: never a table file
            return st.st_size, hash_regular_file(local, threads=threads)  # regular when opened too
        except OSError:
            return None
    if storage is None:
        return None
    try:
        stream = storage.open_location(location)
    except Exception:
        return None
    try:
        return hash_stream_counted(stream, chunk_size=REMOTE_CHUNK)
    except Exception:
        return None
    finally:
        stream.close()


def hash_locations(storage: Storage, files: Sequence[DataFile], *,
                   progress: Progress | None = None) -> dict[str, str]:
    """BLAKE3 of each file's bytes at its ``location``, keyed by ``DataFile.path``.

    A file that cannot be read (missing, permission) is left out of the result; the caller reports it.
    """
    import stat

    from attest.hashing import SERIAL_MAX_BYTES, hash_sized_files

    out: dict[str, str] = {}
    local: dict[str, str] = {}
    remote: list[DataFile] = []
    # A file the listing says is small is not stat-ed first: hash_sized_files opens it as a regular file and leaves
    # it out when it cannot (missing, a FIFO, a folder: what the stat found before), and its descriptor's size picks
    # reading or mapping (~0.4 s of stats for 200,000 files: docs/scale.md, sixteenth pass). Any other local file is
    # stat-ed (its real size picks its batch: alone on all cores, or on a thread of its own).
    present: dict[str, int] = {}
    unsized: list[str] = []
    local_of = storage.local_of
    for f in files:
        location = f.location
        # A plain absolute path is its own local path (local_path_of): only URIs are parsed.
        path = location if location[:1] == "/" else local_of(location)
        if path is None:
            remote.append(f)
            continue
        local[path] = f.path
        if 0 <= f.size < SERIAL_MAX_BYTES:
            present[path] = f.size
        else:
            unsized.append(path)
    total = len(files)
    if local:
        for p in unsized:
            try:
                st = os.stat(p)
            except OSError:
                continue  # unreadable: the verifier reports it
            if stat.S_ISREG(st.st_mode):  # a FIFO would block the reader forever: never hashed
                present[p] = st.st_size
        report: Callable[[int, int, int], None] | None = None
        if progress is not None:
            def report(done: int, _total: int, nbytes: int) -> None:
                progress(done, total, nbytes)
        hashed = hash_sized_files(present, progress=report, skip_unreadable=True)
        out.update({local[p]: h for p, h in hashed.items()})
    if not remote:
        return out
    done = len(local)
    done_bytes = sum(f.size for f in files if f.path in out)
    remote, done, done_bytes = _hash_through_obstore(storage, remote, out, progress, total, done, done_bytes)
    hash_through_engine(storage, remote, out, progress, total, done, done_bytes)
    return out


def hash_through_engine(storage: Storage, remote: Sequence[DataFile], out: dict[str, str],
                        progress: Progress | None = None, total: int = 0, done: int = 0, done_bytes: int = 0) -> None:
    """Hash ``remote`` objects through the table's engine (a few streams at once) into ``out``, leaving out one that
    cannot be read; progress counts from ``done`` files and ``done_bytes`` of ``total`` files."""
    if not remote:
        return

    from attest.hashing import hash_stream

    def one(f: DataFile) -> str | None:
        try:
            stream = storage.open_location(f.location)
        except Exception:
            return None  # unreadable: the verifier reports it as missing
        try:
            return hash_stream(stream, chunk_size=REMOTE_CHUNK)
        except Exception:
            return None
        finally:
            stream.close()

    # Object-store reads are latency-bound: overlap a few of them.
    from concurrent.futures import ThreadPoolExecutor  # here: local tables never need it

    with ThreadPoolExecutor(max_workers=min(REMOTE_WORKERS, len(remote))) as pool:
        for f, digest in zip(remote, pool.map(one, remote), strict=True):
            if digest is not None:
                out[f.path] = digest
            done += 1
            done_bytes += f.size
            if progress is not None:
                progress(done, total, done_bytes)


def _hash_through_obstore(storage: Storage, remote: list[DataFile], out: dict[str, str],
                          progress: Progress | None, total: int, done: int,
                          done_bytes: int) -> tuple[list[DataFile], int, int]:
    """Hash what obstore can read of ``remote`` into ``out``; returns what is left for the engine and the progress
    counts. Nothing is read here when the table's options do not map to an obstore store (same rule as conditional
    PUTs: carriers.storage.options)."""
    from carriers.storage.objects import hash_objects, object_key

    candidates: list[tuple[DataFile, str]] = []
    for f in remote:
        key = object_key(storage.uri, f.location) if f.size >= 0 else None  # a size the table does not know: engine
        if key is not None:
            candidates.append((f, key))
    if not candidates:
        return remote, done, done_bytes
    store = storage._object_store()
    if store is None:
        return remote, done, done_bytes
    counts = [done, done_bytes]

    def report(index: int, digest: str | None) -> None:
        if digest is None:
            return  # read again through the engine, counted then
        f = candidates[index][0]
        out[f.path] = digest
        counts[0] += 1
        counts[1] += f.size
        if progress is not None:
            progress(counts[0], total, counts[1])

    hash_objects(store, [(key, f.size) for f, key in candidates], progress=report)
    return [f for f in remote if f.path not in out], counts[0], counts[1]
