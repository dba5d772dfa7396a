"""Hashing files at their locations with bounded memory: local files through attest.hashing (mmap + threads),
object-store objects read through obstore at line rate (carriers.storage.objects: concurrent ranged GETs, bounded
bytes in flight) when the table's options map to an obstore store, else streamed by a few concurrent readers through
the table's engine (delta-rs's object store, pyiceberg's FileIO) — which also reads every object the obstore path
could not read whole as the size the table claims, so such an object is reported exactly as before."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

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


def hash_locations(storage: Storage, files: Sequence[DataFile], *, progress: Progress | None = None,
                   roots: Sequence[str] = ()) -> dict[str, str]:
    """BLAKE3 of each file's bytes at its ``location``, keyed by ``DataFile.path``.

    A file that cannot be read (missing, permission) is left out of the result; the caller reports it. ``roots``:
    the table's roots (its location; Iceberg's ``write.data.path`` and the like): an object under one of them, in
    the storage's own bucket, is read through obstore too, not only one under the storage's root (an Iceberg table's
    storage is rooted at its metadata folder, its data files are elsewhere under the table).
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
    remote, done, done_bytes = _hash_through_obstore(storage, remote, out, progress, total, done, done_bytes,
                                                     roots)
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
                          done_bytes: int, roots: Sequence[str] = ()) -> tuple[list[DataFile], int, int]:
    """Hash what obstore can read of ``remote`` into ``out``; returns what is left for the engine and the progress
    counts. Nothing is read here when the table's options do not map to an obstore store (same rule as conditional
    PUTs: carriers.storage.options). The objects under the storage's root are read from its store; those under one
    of ``roots`` (same scheme and bucket as the storage's root) from a store rooted at the folder they share, with
    the same options (:func:`_root_groups`); any other object is left to the engine."""
    from carriers.storage.objects import hash_objects, object_key

    groups: list[tuple[Any, list[tuple[DataFile, str]]]] = []
    candidates: list[tuple[DataFile, str]] = []
    elsewhere: list[DataFile] = []
    for f in remote:
        key = object_key(storage.uri, f.location) if f.size >= 0 else None  # a size the table does not know: engine
        if key is not None:
            candidates.append((f, key))
        elif f.size >= 0:
            elsewhere.append(f)
    if candidates and storage._engine_endpoint_mapped():  # the storage's own folder: the same rule as the roots'
        store = storage._object_store()
        if store is not None:
            groups.append((store, candidates))
    if elsewhere and roots:
        groups.extend(_root_groups(storage, elsewhere, roots))
    if not groups:
        return remote, done, done_bytes
    counts = [done, done_bytes]
    for store, keyed in groups:

        def report(index: int, digest: str | None, keyed: list[tuple[DataFile, str]] = keyed) -> None:
            if digest is None:
                return  # read again through the engine, counted then
            f = keyed[index][0]
            out[f.path] = digest
            counts[0] += 1
            counts[1] += f.size
            if progress is not None:
                progress(counts[0], total, counts[1])

        hash_objects(store, [(key, f.size) for f, key in keyed], progress=report)
    return [f for f in remote if f.path not in out], counts[0], counts[1]


def _root_groups(storage: Storage, files: list[DataFile],
                 roots: Sequence[str]) -> list[tuple[Any, list[tuple[DataFile, str]]]]:
    """(store, [(file, key)]) for the ``files`` under each of ``roots`` that obstore can read as the engine reads
    them: a root in the storage root's own bucket (same scheme, same authority: the options that are mapped are the
    storage's, for its bucket; another bucket or scheme is the engine's), a store rooted at the deepest folder the
    group's files share, each location plainly under it (``object_key``: no escape, ``?``, ``#``, ``..`` or empty
    segment; no escape in the folder either). ``ATTEST_FAST=0``: none (the engine reads them, as before)."""
    from attest import fast

    if not fast.ON:
        return []
    from carriers.storage.listing import _common_folder
    from carriers.storage.objects import object_key

    authority = _authority(storage.uri)
    if authority is None or not storage._engine_endpoint_mapped():
        return []
    bounds = [b for b in (root.rstrip("/") + "/" for root in roots if root) if _authority(b) == authority]
    grouped: dict[str, list[DataFile]] = {}
    for f in files:
        bound = next((b for b in bounds if f.location.startswith(b)), None)
        if bound is not None:
            grouped.setdefault(bound, []).append(f)
    out: list[tuple[Any, list[tuple[DataFile, str]]]] = []
    for bound, group in grouped.items():
        folder = _common_folder([f.location for f in group])
        if not (folder + "/").startswith(bound):  # never a store wider than the root the files are under
            folder = bound.rstrip("/")
        keyed = [(f, key) for f in group if (key := object_key(folder, f.location)) is not None]
        if not keyed:
            continue
        store = storage._object_store_at(folder)
        if store is not None:
            out.append((store, keyed))
    return out


def _authority(uri: str) -> str | None:
    """``scheme://authority`` of an object-store URI (lower-case scheme, a plain bucket), or None."""
    scheme, sep, rest = uri.partition("://")
    bucket = rest.split("/", 1)[0]
    if not sep or not scheme or not bucket or not all(c.isalnum() or c in "._-" for c in bucket):
        return None
    return f"{scheme}://{bucket}"
