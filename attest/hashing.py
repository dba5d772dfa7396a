"""BLAKE3-256 of file bytes: the identity every rocky-manifest v0.1 entry carries.

An identity is the lowercase 64-hex BLAKE3-256 digest of a file's exact bytes (no framing, no
name, no metadata), so ``b3sum --no-names FILE`` prints the same string.

How the bytes get to the hasher depends on the shape of the work:

* one big local file: memory-mapped and hashed on all cores (blake3's rayon path, as ``b3sum`` does);
* one mid-sized local file (256 KiB to 8 MiB): memory-mapped and hashed on one thread (no copy through read(2));
* one small local file: read through a reused buffer, cheaper than setting up a mapping;
* many local files: several files at once on a small thread pool (blake3 releases the GIL; mapped from 1 MiB on,
  read below), big ones first, each alone on all cores, so cores are never oversubscribed;
* a remote object: streamed in bounded chunks through pyarrow or fsspec.

Engine-free on purpose: only the stdlib and blake3 are imported here at module level; pyarrow and
fsspec are imported lazily by :func:`hash_uri`, so the verifier-only install keeps working.
Errors (``FileNotFoundError``, ``PermissionError``, other ``OSError``) propagate unchanged; callers
map them to verification codes.

See docs/hashing.md for the measured thresholds and benchmarks/bench_hashing.py for the benchmark.
"""

from __future__ import annotations

import errno
import os
import stat
import threading

from blake3 import blake3

TYPE_CHECKING = False  # the command line starts hashing before typing, queue or urllib are imported
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any, BinaryIO, Final

    _Progress = Callable[[int, int, int], None]

__all__ = [
    "BATCH_MAP_MIN_BYTES",
    "BATCH_SOLO_THRESHOLD",
    "DEFAULT_CHUNK_SIZE",
    "MAP_MIN_BYTES",
    "MMAP_THRESHOLD",
    "READ_CHUNK",
    "SERIAL_MAX_BYTES",
    "hash_bytes",
    "hash_file",
    "hash_files",
    "hash_regular_file",
    "hash_sized_files",
    "hash_stream",
    "hash_stream_counted",
    "hash_uri",
    "open_regular",
    "read_regular",
]

# Measured on the 2-core CI machine (docs/hashing.md): up to a few MiB, reading through the reused
# buffer ties or beats mmap + threads (mapping setup and page faults cost more than the copy, and a
# busy second core makes threads worthless); from 8 MiB on, mmap + all cores pulls ahead.
MMAP_THRESHOLD: Final[int] = 8 << 20

# From this size on a file is mapped even when it is hashed on one thread (a batch's files, side by side): no copy
# through read(2), which measured 10-30 % more CPU per byte than the mapping's page faults from 512 KiB on, on 1 and 3
# threads alike (2-core machine, 2026-12-02); at 256 KiB the two tie, below it the mapping's setup costs more.
MAP_MIN_BYTES: Final[int] = 256 << 10

# Inside a batch hashed on several threads at once, a file is mapped only from this size on. Mapping and unmapping in
# a process whose other threads are hashing too costs more than alone (likely the address space's lock, and every
# unmap flushing the TLB of each core running one of them; the cost was measured, the cause not isolated): on another
# 2-core host (2026-12-02, 1,000 files per size in one process, alternating, best of 7) the mapping took 0.93 / 0.87 /
# 0.87 / 0.75 of the read's time at 256 KiB / 512 KiB / 1 MiB / 4 MiB on one thread, but 1.36 / 1.08 / 0.94 / 0.78 on
# three (CPU time alike). The host that set MAP_MIN_BYTES had measured 0.85-0.92 at 512 KiB on three threads: from
# 1 MiB on, the mapping wins on both.
BATCH_MAP_MIN_BYTES: Final[int] = 1 << 20

# Inside hash_files, a file this big is hashed alone on all cores before the pool starts: splitting
# one file across cores costs about the same as splitting files across cores, and doing it first
# keeps one huge file from becoming a single-threaded tail at the end of the batch.
BATCH_SOLO_THRESHOLD: Final[int] = 64 << 20

# Inside hash_files, files below this size are hashed one after another on one thread (the pool's first job), not
# side by side: each open/read/close gives up the GIL and takes it back, and for a small file these hand-offs between
# threads cost more than the hash (2,000 files on 2 cores, 1 thread vs 2: 4 KiB 0.022 vs 0.052 s, 16 KiB 0.031 vs
# 0.065 s, 64 KiB 0.069 vs 0.077 s; from 128 KiB on the threads win: 0.125 vs 0.089 s).
SERIAL_MAX_BYTES: Final[int] = 64 << 10

# 8 MiB bounds memory per stream while keeping per-call overhead (and remote round trips) negligible.
DEFAULT_CHUNK_SIZE: Final[int] = 8 << 20

# Inputs to hash_bytes at least this big go through blake3's multithreaded update (no page faults
# there, so it scales); below it the thread handoff costs more than it saves.
_BYTES_PARALLEL_THRESHOLD: Final[int] = 1 << 20

# Files below MMAP_THRESHOLD (and every file hashed single-threaded) are read through a reused
# per-thread buffer this big: it fits in L2 between read(2) and the hash, so the copy is cheap; a
# fresh f.read() allocation per file measured up to 4x slower past 32 MiB (page faults on new memory).
READ_CHUNK: Final[int] = 1 << 20

_local = threading.local()


def _max_threads(threads: int | None) -> int:
    """blake3's ``max_threads`` for a ``threads`` argument: None means all cores (blake3.AUTO)."""
    if threads is None:
        return int(blake3.AUTO)
    if threads < 1:
        raise ValueError(f"threads must be >= 1 or None, got {threads}")
    return threads


def hash_bytes(data: bytes) -> str:
    """Lowercase 64-hex BLAKE3-256 of ``data`` (any bytes-like object)."""
    if len(data) >= _BYTES_PARALLEL_THRESHOLD:
        return blake3(data, max_threads=blake3.AUTO).hexdigest()
    return blake3(data).hexdigest()


def _read_buffer() -> memoryview:
    """This thread's reusable read buffer (one per thread: hash_files reads on several at once)."""
    view: memoryview | None = getattr(_local, "buffer", None)
    if view is None:
        view = _local.buffer = memoryview(bytearray(READ_CHUNK))
    return view


# A file the caller stat-ed as regular can be swapped for a FIFO before it is opened: open(2) on a FIFO without a
# writer blocks forever, so it is opened without blocking (no effect on a regular file's reads) and checked again.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOT_REGULAR = "not a regular file (a FIFO, a socket, a device or a folder)"


def _refuse_unless_regular(path: str | os.PathLike[str]) -> None:
    """OSError unless ``path`` is a regular file (links followed, as open(2) follows them): looked at before it is
    opened. A device node in a data file's place was opened (its driver's open run: a tape rewinds, a serial line
    raises DTR) and only then refused by the descriptor's fstat (docs/hashing.md)."""
    try:
        mode = os.stat(path).st_mode
    except ValueError:  # a NUL in the name (untrusted input): no file is so named, as an OSError is read
        raise OSError(errno.EINVAL, "a path holding a NUL byte names no file",
                      os.fspath(path).replace("\x00", "\\x00")) from None
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, _NOT_REGULAR, os.fspath(path))


def open_regular(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(descriptor, size) of ``path`` when it is a regular file now; OSError otherwise (never opens a FIFO or a
    device: looked at first, then opened without blocking and checked again on the descriptor, for a file swapped in
    between). Reads of files that untrusted input names go through it: hashing, carrier files, content-addressed
    names."""
    _refuse_unless_regular(path)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, _NOT_REGULAR, os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """Up to ``limit`` bytes of ``path`` when it is a regular file now (open_regular); OSError otherwise."""
    fd, _ = open_regular(path)
    with open(fd, "rb") as handle:
        return handle.read(limit)


def _read_fd(fd: int) -> str:
    """Single-threaded hash of an open file through the reused buffer (closes ``fd``)."""
    hasher = blake3()
    view = _read_buffer()
    try:  # readv(2) into the buffer: no file object per file (~15 % of a 4 KiB file's cost, measured)
        while n := os.readv(fd, (view,)):
            hasher.update(view[:n])
    finally:
        os.close(fd)
    return hasher.hexdigest()


def _hash_fd(fd: int, size: int, max_threads: int, map_min: int = MAP_MIN_BYTES) -> str:
    """Hash an open regular file of ``size`` bytes (closes ``fd``): read below ``map_min`` bytes, else mapped."""
    if size < map_min:
        return _read_fd(fd)
    # Below MMAP_THRESHOLD one thread: splitting a few MiB across cores costs more than it saves.
    threads = max_threads if size >= MMAP_THRESHOLD else 1
    import mmap

    # The mapping of the descriptor just checked (not of the path again), hashed with the GIL released on
    # ``threads`` threads, as blake3's update_mmap does; a file truncated by another process while mapped can
    # fault, the same trade-off b3sum makes.
    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # a file system without mappings: read it, as blake3's update_mmap falls back to
        return _read_fd(fd)
    os.close(fd)  # the mapping holds its own reference
    with mapped:
        hasher = blake3(max_threads=threads) if threads != 1 else blake3()
        return hasher.update(mapped).hexdigest()


def _hash_local(path: str | os.PathLike[str], max_threads: int, map_min: int = MAP_MIN_BYTES) -> str:
    """Hash a local file listed as regular: checked again when opened (a lister's stat is not trusted), and its size
    then picks the strategy."""
    fd, size = open_regular(path)
    return _hash_fd(fd, size, max_threads, map_min)


def hash_regular_file(path: str | os.PathLike[str], *, threads: int | None = None) -> str:
    """:func:`hash_file` for a file that must be a regular file (a table's data file, a manifest's artifact):
    anything else — a FIFO or device swapped in after it was listed — is an OSError, never streamed or waited on."""
    return _hash_local(path, _max_threads(threads))


def hash_file(path: str | os.PathLike[str], *, threads: int | None = None) -> str:
    """Lowercase 64-hex BLAKE3-256 of a local file's bytes.

    Files of at least :data:`MMAP_THRESHOLD` bytes are memory-mapped and hashed on up to
    ``threads`` threads (``None``: all cores, blake3.AUTO; ``1``: the calling thread); from
    :data:`MAP_MIN_BYTES` up to it, mapped and hashed on the calling thread; smaller files are read
    through a reused :data:`READ_CHUNK` buffer. Non-regular files (pipes, character devices) are streamed.
    """
    max_threads = _max_threads(threads)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        # A pipe or device reports size 0 and cannot be mapped: stream it instead of trusting st_size.
        with open(path, "rb", buffering=0) as f:
            return hash_stream(f)
    return _hash_local(path, max_threads)


def hash_stream(stream: BinaryIO, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> str:
    """Lowercase 64-hex BLAKE3-256 of everything left in ``stream``, read in ``chunk_size`` pieces.

    Memory stays bounded by one chunk: the stream is read into a single reused buffer when it
    supports ``readinto`` (files, pyarrow NativeFile, fsspec files), else chunk by chunk with ``read``.
    The stream is not closed.
    """
    return hash_stream_counted(stream, chunk_size=chunk_size)[1]


def hash_stream_counted(stream: BinaryIO, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> tuple[int, str]:
    """``(bytes read, digest)`` of everything left in ``stream``: :func:`hash_stream` that also says how many
    bytes it hashed (an executor reports the size it really read, not the one the table log claims)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    hasher = blake3()
    total = 0
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        buf = bytearray(chunk_size)
        view = memoryview(buf)
        while True:
            n = readinto(view)
            if not n:
                break
            hasher.update(view[:n])
            total += n
        return total, hasher.hexdigest()
    while True:
        chunk = stream.read(chunk_size)
        if not chunk:
            break
        hasher.update(chunk)
        total += len(chunk)
    return total, hasher.hexdigest()


def _local_path(uri: str) -> str | None:
    """The local filesystem path for a plain path or a file:// URI; None for anything remote."""
    from urllib.parse import unquote, urlsplit

    from attest.locations import is_uri, scheme_of

    if not is_uri(uri):
        return uri  # no scheme, or a Windows drive letter ("C:\\...") that urlsplit mistakes for one
    if scheme_of(uri) == "file":
        parts = urlsplit(uri)  # a file URI with an unbalanced '[' in its host raises ValueError: a bad argument
        if parts.netloc not in ("", "localhost"):
            return None  # file://host/share is not on this machine
        return unquote(parts.path)
    return None


def hash_uri(
    uri: str,
    *,
    filesystem: object | None = None,
    storage_options: dict[str, str] | None = None,
) -> str:
    """Lowercase 64-hex BLAKE3-256 of the object at ``uri``.

    * A local path or ``file://`` URI (and no ``filesystem``) goes to :func:`hash_file`.
    * ``filesystem`` may be a ``pyarrow.fs.FileSystem`` (``uri`` may carry a scheme, which is
      stripped) or an fsspec ``AbstractFileSystem`` (given the URI as is); the object is streamed.
    * Otherwise the filesystem comes from ``storage_options`` through fsspec when given (its option
      names are the backend's own), else from ``pyarrow.fs.FileSystem.from_uri``, falling back to
      fsspec for schemes pyarrow does not know.

    Bytes are hashed exactly as stored: pyarrow's by-extension decompression is turned off.
    """
    if filesystem is None:
        local = _local_path(uri)
        if local is not None:
            return hash_file(local)
        if storage_options is not None:
            return _hash_fsspec(None, uri, storage_options)
        try:
            from pyarrow import fs as pafs
        except ImportError:
            return _hash_fsspec(None, uri, None)
        try:
            pa_fs, path = pafs.FileSystem.from_uri(uri)
        except ValueError as exc:  # pyarrow.ArrowInvalid subclasses ValueError
            if "Unrecognized filesystem type" not in str(exc):
                raise  # a known scheme with a bad URI is the caller's error, not a reason to switch
            return _hash_fsspec(None, uri, None)
        return _hash_pyarrow(pa_fs, path)
    if _is_pyarrow_filesystem(filesystem):
        from pyarrow import fs as pafs

        if type(filesystem) is pafs.LocalFileSystem:
            local = _local_path(uri)
            if local is not None:
                return hash_file(local)  # same bytes, but mmap + all cores instead of a stream
        # pyarrow filesystems take scheme-less paths ("bucket/key" for S3).
        path = uri.split("://", 1)[1] if "://" in uri else uri
        return _hash_pyarrow(filesystem, path)
    return _hash_fsspec(filesystem, uri, storage_options)


def _is_pyarrow_filesystem(obj: object) -> bool:
    try:
        from pyarrow import fs as pafs
    except ImportError:
        return False
    return isinstance(obj, pafs.FileSystem)


def _hash_pyarrow(filesystem: Any, path: str) -> str:
    # compression=None: the default "detect" would gunzip a .gz file and hash the wrong bytes.
    with filesystem.open_input_stream(path, compression=None) as stream:
        return hash_stream(stream)


def _hash_fsspec(filesystem: Any, uri: str, storage_options: dict[str, str] | None) -> str:
    if filesystem is None:
        import fsspec.core

        filesystem, path = fsspec.core.url_to_fs(uri, **(storage_options or {}))
    else:
        path = uri
    with filesystem.open(path, "rb") as stream:
        return hash_stream(stream)


def _default_workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))  # honours taskset/cgroup CPU pinning, unlike cpu_count
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    # One extra worker keeps every core busy while another thread is in open()/read() syscalls.
    return cores + 1


def hash_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    max_workers: int | None = None,
    progress: _Progress | None = None,
) -> dict[str, str]:
    """BLAKE3-256 of many local files, hashed concurrently; ``{os.fspath(path): hex digest}``.

    Every path is stat-ed first (a missing one raises before any hashing). Files of at least
    :data:`BATCH_SOLO_THRESHOLD` bytes are then hashed one at a time, each on all cores; the rest
    go to ``max_workers`` threads (default: cores + 1), one file per thread at a time, so there is
    never more than one runnable thread per core plus one — except files below
    :data:`SERIAL_MAX_BYTES`, hashed one after another by one of them. A path given twice is hashed once.

    ``progress(done_files, total_files, done_bytes)`` is called from the calling thread, once with
    zeros and then after each file or run of small files. The first error raised by any file is
    re-raised and the remaining files are skipped.
    """
    if max_workers is not None and max_workers < 1:
        raise ValueError(f"max_workers must be >= 1 or None, got {max_workers}")
    sizes: dict[str, int] = {}
    for p in paths:
        key = os.fspath(p)
        if key not in sizes:
            st = os.stat(key)
            # -1 marks a pipe/device: no usable size, hashed by streaming (hash_file does that).
            sizes[key] = st.st_size if stat.S_ISREG(st.st_mode) else -1
    return hash_sized_files(sizes, max_workers=max_workers, progress=progress)


def hash_sized_files(
    sizes: Mapping[str, int],
    *,
    max_workers: int | None = None,
    progress: _Progress | None = None,
    skip_unreadable: bool = False,
) -> dict[str, str]:
    """:func:`hash_files` for regular files the caller has already stat-ed (``{path: size}``): no second ``stat``
    per file. A size only picks the strategy; a negative one means "stream it" (a pipe or device).

    ``skip_unreadable``: a file that cannot be read (missing, not a regular file once opened, permission, a read
    error) is left out of the result instead of raising, and every other file is still hashed (a table's listing:
    the caller reports what is absent). The sizes may then be a listing's, not checked by a ``stat``: each file is
    opened as a regular file (:func:`open_regular`: never blocking on a FIFO) and its descriptor's size picks reading
    or mapping, so a wrong size picks a slower batch for it, never other bytes. ``progress`` is called after each
    file or run of files (the small files: every ``_RUN_REPORT`` of them)."""
    if max_workers is not None and max_workers < 1:
        raise ValueError(f"max_workers must be >= 1 or None, got {max_workers}")
    total = len(sizes)
    workers = max_workers if max_workers is not None else _default_workers()
    # A caller capping workers caps the big-file threads too (blake3.AUTO would take every core).
    solo_threads = None if max_workers is None else max_workers

    results: dict[str, str] = {}
    done = [0, 0]  # files, bytes reported so far
    if progress is not None:
        progress(0, total, 0)

    def finished(keys: list[str]) -> None:
        if progress is not None and keys:
            done[0] += len(keys)
            done[1] += sum(s for s in map(sizes.__getitem__, keys) if s > 0)
            progress(done[0], total, done[1])

    for key in [k for k, s in sizes.items() if s >= BATCH_SOLO_THRESHOLD]:
        # _hash_local, not hash_file: a file listed as regular that is a FIFO by now must fail, not be streamed.
        try:
            results[key] = _hash_local(key, _max_threads(solo_threads))
        except OSError:
            if not skip_unreadable:
                raise
            continue
        finished([key])

    # Longest first keeps the workers evenly loaded at the end of the batch; the small files are one job, the first
    # (in the order given: one thread hashes them one after another).
    small = [k for k, s in sizes.items() if 0 <= s < SERIAL_MAX_BYTES]
    jobs = [[k] for k in sorted((k for k, s in sizes.items() if not 0 <= s < SERIAL_MAX_BYTES and
                                 s < BATCH_SOLO_THRESHOLD), key=sizes.__getitem__, reverse=True)]
    if small:
        jobs.insert(0, small)
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            # The small files, one after another on this thread, reported a run at a time (a call per file cost
            # ~0.1 s for 200,000 files: docs/scale.md, sixteenth pass).
            for start in range(0, len(job), _RUN_REPORT):
                run = job[start:start + _RUN_REPORT]
                before = len(results)
                _hash_job(run, sizes, results, None, [], skip_unreadable, MAP_MIN_BYTES)
                finished(run if len(results) - before == len(run) else [k for k in run if k in results])
    else:
        def each(keys: list[str]) -> None:  # beside the pool's threads, each file is still its own call
            for key in keys:
                finished([key])

        _hash_all(jobs, sizes, min(workers, len(jobs)), results, None if progress is None else each,
                  skip_unreadable)
    return results


# The small files' progress is reported every this many files (attest.cli.output.Progress redraws at most every 0.1 s
# anyway).
_RUN_REPORT = 1024


def _hash_one(key: str, size: int, map_min: int = MAP_MIN_BYTES) -> str:
    """One file of a batch, single-threaded: parallelism comes from hashing files side by side. Mapped from
    ``map_min`` bytes on: the batch's threads pass BATCH_MAP_MIN_BYTES, a batch on one thread keeps the default."""
    if size < 0:
        return hash_file(key, threads=1)
    return _hash_local(key, 1, map_min)


def _hash_job(keys: list[str], sizes: Mapping[str, int], results: dict[str, str], order: list[str] | None,
              errors: list[BaseException], skip: bool, map_min: int) -> None:
    """The files of ``keys`` one after another on this thread, each digest stored in ``results`` (its key appended to
    ``order``); stops when ``errors`` holds one (another thread failed). A file of one job of its own goes through
    ``_hash_one``; the small files' job is hashed here, ``_hash_local`` inlined — open as a regular file (checked on
    the descriptor), read through this thread's buffer, or mapped when it is ``map_min`` bytes or more once open —
    the same bytes, without three calls a file (docs/scale.md, sixteenth pass). ``skip``: a file that cannot be
    read is left out; else its OSError is raised."""
    if len(keys) == 1 and not 0 <= sizes[keys[0]] < SERIAL_MAX_BYTES:
        key = keys[0]
        try:
            results[key] = _hash_one(key, sizes[key], map_min)
        except OSError:
            if not skip:
                raise
            return
        if order is not None:
            order.append(key)
        return
    view = _read_buffer()
    is_regular, fstat, stat_, open_, close, readv = stat.S_ISREG, os.fstat, os.stat, os.open, os.close, os.readv
    for key in keys:
        if errors:
            return
        try:
            # Looked at before it is opened (a device node is never opened: _refuse_unless_regular), then checked
            # again on the descriptor (a file swapped in between).
            if not is_regular(stat_(key).st_mode):
                raise OSError(errno.EINVAL, _NOT_REGULAR, key)
            fd = open_(key, _OPEN_FLAGS)
        except OSError:
            if not skip:
                raise
            continue
        try:
            st = fstat(fd)
            if not is_regular(st.st_mode):
                raise OSError(errno.EINVAL, _NOT_REGULAR, key)
            size = st.st_size
            if size >= map_min:
                digest = _hash_fd(os.dup(fd), size, 1, map_min)  # the copy is closed there, ``fd`` below
            else:
                hasher = blake3()
                while n := readv(fd, (view,)):
                    hasher.update(view[:n])
                digest = hasher.hexdigest()
        except OSError:
            if not skip:
                raise
            continue
        finally:
            close(fd)
        results[key] = digest
        if order is not None:
            order.append(key)


def _hash_all(jobs: list[list[str]], sizes: Mapping[str, int], workers: int, results: dict[str, str],
              report: Callable[[list[str]], None] | None = None, skip: bool = False) -> None:
    """Every file of ``jobs`` on ``workers`` threads, into ``results``; raise the first worker error (``skip``: none is
    raised, a file that cannot be read is left out). A thread takes one job at a time and hashes its files one after
    another.

    The workers store their digests themselves and the calling thread only waits: no per-file hand-off, whose GIL
    round trips cost ~10 % on 2,000 files of 512 KiB (measured against a queue on 2 cores). ``report(keys)`` is then
    called from the calling thread with the files finished since the last call, every ~50 ms and at the end.
    """
    source = iter(jobs)
    lock = threading.Lock()
    order: list[str] = []  # finished keys, in order (list.append is atomic under the GIL)
    errors: list[BaseException] = []
    finished = threading.Event()
    running = [workers]

    def worker() -> None:
        try:
            while not errors:
                with lock:
                    job = next(source, None)
                if job is None:
                    return
                _hash_job(job, sizes, results, order, errors, skip, BATCH_MAP_MIN_BYTES)
        except BaseException as exc:  # handed to the calling thread, which re-raises it
            errors.append(exc)
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    finished.set()

    threads = [threading.Thread(target=worker, name=f"attest-hash-{i}", daemon=True) for i in range(workers)]
    for thread in threads:
        thread.start()
    reported = 0
    while True:
        done = finished.wait(0.05 if report is not None else None)
        if report is not None and not errors:
            upto = len(order)
            report(order[reported:upto])
            reported = upto
        if done:
            break
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class BackgroundHashing:
    """Files listed and hashed on a thread of its own, started before the caller knows which files it will want: the
    command line's head start (attest.verify.artifacts.EarlyHashes for manifests, carriers.delta.prefetch for Delta
    tables). It decides nothing: ``take`` gives the hashes only for exactly the files listed here.

    Subclasses implement ``listing`` (``{path: size}`` of regular files, or None: nothing to hash), called on the
    thread. ``take`` waits, reporting progress from the calling thread while the hashing runs."""

    name = "attest-head-start"
    max_bytes = 4 << 30  # beyond this, no head start: start-up is no longer a visible share of the run

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self._hashes: dict[str, str] | None = None
        self._cancelled = False
        self._done = [0, 0]  # files, bytes hashed so far (written by the thread, read by take)
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def listing(self) -> dict[str, int] | None:
        raise NotImplementedError

    def _count(self, done: int, _total: int, nbytes: int) -> None:
        self._done = [done, nbytes]

    def _run(self) -> None:
        try:
            sizes = self.listing()
            if not sizes or sum(sizes.values()) > self.max_bytes or self._cancelled:
                return
            self.sizes = sizes
            self._hashes = hash_sized_files(sizes, progress=self._count)
        except Exception:  # OSError and the like: the ordinary path lists and hashes again, and reports per file
            self._hashes = None

    def cancel(self) -> None:
        """Not wanted after all (the command line's parse disagreed): no hashing starts after the listing."""
        self._cancelled = True

    def take(self, files: dict[str, int] | Iterable[str], progress: _Progress | None = None) -> dict[str, str] | None:
        """The hashes, when they are of exactly these files (and, given ``{path: size}``, these sizes); else None.
        ``progress(done, total, nbytes)`` is called from this thread while waiting, every ~0.1 s, and at the end."""
        while self._thread.is_alive():
            self._thread.join(0.1 if progress is not None else None)
            if progress is not None and self.sizes:
                progress(min(self._done[0], len(self.sizes) - 1), len(self.sizes), self._done[1])
        if self._hashes is None:
            return None
        if files != self.sizes if isinstance(files, dict) else set(files) != set(self.sizes):
            return None
        if progress is not None:
            progress(len(self.sizes), len(self.sizes), sum(self.sizes.values()))
        return self._hashes
