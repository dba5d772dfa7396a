"""A head start for ``attest verify TABLE`` on a local Delta table: hash the version's files while the command line is
still importing delta-rs and the verifier and loading the table.

Light on purpose (os, threading, attest.hashing, carriers.delta.lines): the command line starts it before anything
else is imported. It decides nothing. It reads the log's JSON commits (``carriers.delta.lines``, the log's one line
reader), lists the live files whose paths are plain
(nothing encoded, no dot segments, no scheme: the common case), and hashes them when they are few and regular files,
all under the table's real root. The verification takes these hashes only when the carrier's own file list (delta-rs's
snapshot, checked against the log, confined) names exactly the same local files (``PrefetchedHasher``); anything else
is hashed the ordinary way. A checkpoint, a deletion vector, a path that is not plain, a symlink (file or folder) or a
gap in the log starts nothing: it never opens a file outside the table.

A log of many files (``FORK_MIN_COMMIT_BYTES``) is listed and hashed the same way in a child process
(``ForkedDeltaPrefetch``), when the ``attest`` command itself starts it in a fresh process: a thread beside the main
thread's imports and log replay would wait for the interpreter lock between files.
"""

from __future__ import annotations

import atexit
import os
import signal
import stat
import threading
import time

from attest.hashing import BackgroundHashing, hash_sized_files
from carriers.delta.lines import COMMIT_NAME_LENGTH, LOG_DIR, actions

TYPE_CHECKING = False  # typing is not imported before the hashing starts
if TYPE_CHECKING:
    from collections.abc import Sequence

    from attest.tables import DataFile, Progress
    from carriers.storage.base import Storage

__all__ = ["DeltaPrefetch", "ForkedDeltaPrefetch", "PrefetchedHasher"]

# The thread takes no more files than this: between files it waits for the interpreter lock the main thread holds
# (docs/hashing.md, "The command line against `b3sum`", has the figures that set it).
PREFETCH_MAX_FILES = 64
# From this many bytes of JSON commits (~100 files with statistics) the head start runs in a child process and takes
# up to FORKED_MAX_FILES files (docs/hashing.md: measured side by side with the thread).
FORK_MIN_COMMIT_BYTES = 64 << 10
FORKED_MAX_FILES = 100_000
# A log this long without a checkpoint is replayed once, by the carrier, not twice side by side.
PREFETCH_MAX_COMMITS = 256
PREFETCH_MAX_COMMIT_BYTES = 16 << 20
# RFC 3986 unreserved and sub-delims, ':' and '@': a path made of these alone means the same to every engine.
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")


def _plain(raw: object) -> bool:
    """Whether a log path is plain: carriers.core.canonical_relative returns it unchanged (a test holds the two
    together)."""
    if not isinstance(raw, str) or not raw:
        return False
    segments = raw.split("/")
    return ":" not in segments[0] and all(s and s[0] != "." and set(s) <= _PLAIN for s in segments)


class DeltaPrefetch(BackgroundHashing):
    """Replay, stat and hash on a thread of its own (attest.hashing.BackgroundHashing); ``take`` waits for it."""

    name = "attest-prefetch"
    max_files = PREFETCH_MAX_FILES

    def __init__(self, table_dir: str, version: int | None) -> None:
        self.table_dir = table_dir
        self.version = version
        super().__init__()

    @classmethod
    def start(cls, table_dir: str, version: int | None = None, *, may_fork: bool = False) -> DeltaPrefetch | None:
        """The head start for this table, or None. ``may_fork``: the caller is a fresh ``attest`` process that has run
        nothing else yet (a child forked from a process whose hashing threads have started could wait forever on
        them), and a log of many files is then hashed in a child process."""
        log = os.path.join(table_dir, LOG_DIR)
        if not os.path.isdir(log):
            return None
        if may_fork and hasattr(os, "fork") and threading.active_count() == 1 and _commit_bytes(log) >= \
                FORK_MIN_COMMIT_BYTES:
            return ForkedDeltaPrefetch(table_dir, version)
        return cls(table_dir, version)

    def listing(self) -> dict[str, int] | None:
        """{local path: size} of the version's live files, or None when this head start does not apply."""
        log = os.path.join(self.table_dir, LOG_DIR)
        names = os.listdir(log)
        if any("checkpoint" in n for n in names):  # Parquet checkpoints: left to the carrier
            return None
        # ASCII digits only ('²'.isdigit() is true): attest.numbers.is_digits, inlined (it would import re now).
        numbers = sorted(int(n[:-5]) for n in names if len(n) == COMMIT_NAME_LENGTH and n.endswith(".json")
                         and n[:-5].isascii() and n[:-5].isdigit())
        if not numbers or numbers != list(range(numbers[-1] + 1)) or len(numbers) > PREFETCH_MAX_COMMITS:
            return None
        last = numbers[-1] if self.version is None else self.version
        if last > numbers[-1]:
            return None
        live: dict[str, int] = {}
        for n in range(last + 1):
            name = os.path.join(log, f"{n:020}.json")
            st = os.lstat(name)
            if not stat.S_ISREG(st.st_mode) or st.st_size > PREFETCH_MAX_COMMIT_BYTES:
                return None  # a FIFO would block this thread (and the verify waiting for it) forever
            with open(name, "rb") as handle:
                for action in actions(handle.read()):
                    if "add" in action:
                        add = action["add"]
                        if add.get("deletionVector") or not _plain(add.get("path")):
                            return None
                        live[add["path"]] = add.get("size", -1)
                        if len(live) > self.max_files:
                            return None
                    elif "remove" in action:
                        live.pop(action["remove"].get("path"), None)
        real_root = os.path.realpath(self.table_dir)
        folders: set[str] = set()
        sizes: dict[str, int] = {}
        for raw in live:
            # Every folder on the way a real folder, not a symlink (lstat follows those): then the file is under the
            # real root, and nothing outside the table is ever opened — not even to be thrown away later.
            parts = raw.split("/")
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth])
                if folder not in folders:
                    if not stat.S_ISDIR(os.lstat(f"{real_root}/{folder}").st_mode):
                        return None
                    folders.add(folder)
            path = f"{real_root}/{raw}"
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):  # a regular file only: never a symlink, a FIFO or a device
                return None
            sizes[path] = st.st_size
        return sizes


def _commit_bytes(log: str) -> int:
    """How many bytes of JSON commits the log holds (what the listing will read): a cheap measure of its file count."""
    total = 0
    with os.scandir(log) as entries:
        for entry in entries:
            if len(entry.name) == COMMIT_NAME_LENGTH and entry.name.endswith(".json"):
                try:
                    total += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    return total


class ForkedDeltaPrefetch(DeltaPrefetch):
    """The same listing and hashing (``DeltaPrefetch.listing``, ``hash_sized_files``) in a child process forked before
    any thread exists; a thread of this process only reads the child's records from a pipe. The child imports
    nothing, writes records and ends with ``os._exit``; a child that fails or is killed ends the pipe early, and then
    nothing is taken (the ordinary path hashes). ``cancel`` kills it."""

    name = "attest-prefetch-reader"
    max_files = FORKED_MAX_FILES

    def __init__(self, table_dir: str, version: int | None) -> None:
        self.table_dir = table_dir
        self.version = version
        read, write = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the child: never returns
            os.close(read)
            self._child(write)
        os.close(write)
        self._pipe = read
        self._lock = threading.Lock()  # held to reap the child, and to signal it only while it is not reaped
        self._reaped = False
        atexit.register(self._stop)  # a command ending before it took the hashes leaves no child behind
        super().__init__(table_dir, version)

    def _child(self, fd: int) -> None:
        try:
            sizes = self.listing()
            if sizes and sum(sizes.values()) <= self.max_bytes:
                _write_all(fd, b"".join(b"S" + os.fsencode(p) + b"\0%d\0\0" % s for p, s in sizes.items()) + b"L\0\0")
                last = [0.0]

                def progress(done: int, _total: int, nbytes: int) -> None:
                    now = time.monotonic()
                    if now - last[0] >= 0.1:
                        last[0] = now
                        _write_all(fd, b"P%d\0%d\0\0" % (done, nbytes))

                hashes = hash_sized_files(sizes, progress=progress)
                _write_all(fd, b"".join(b"H" + os.fsencode(p) + b"\0" + h.encode() + b"\0\0"
                                        for p, h in hashes.items()) + b"D\0\0")
        except BaseException:  # the parent hashes the ordinary way; nothing to report from here
            pass
        finally:
            os._exit(0)

    def _run(self) -> None:
        """Read the child's records: ``S path size`` (the listing, ended by ``L``), ``P files bytes`` (progress),
        ``H path hash``, and ``D`` once every file is hashed. Fields end in NUL, records in a second NUL: no field
        is empty and no path holds a NUL."""
        buffer = bytearray()
        sizes: dict[str, int] = {}
        hashes: dict[str, str] = {}
        complete = False
        try:
            while chunk := os.read(self._pipe, 1 << 16):
                buffer += chunk
                end = buffer.rfind(b"\0\0")
                if end < 0:
                    continue
                records, buffer = bytes(buffer[:end]).split(b"\0\0"), buffer[end + 2:]
                for record in records:
                    kind, fields = record[:1], record[1:].split(b"\0")
                    if kind == b"S":
                        sizes[os.fsdecode(fields[0])] = int(fields[1])
                    elif kind == b"L":
                        self.sizes = sizes
                    elif kind == b"P":
                        self._done = [int(fields[0]), int(fields[1])]
                    elif kind == b"H":
                        hashes[os.fsdecode(fields[0])] = fields[1].decode()
                    elif kind == b"D":
                        complete = True
        except (OSError, ValueError, IndexError):
            complete = False
        finally:
            os.close(self._pipe)
            with self._lock:
                try:  # noqa: SIM105 - contextlib is not imported this early
                    os.waitpid(self._pid, 0)
                except ChildProcessError:  # reaped already
                    pass
                self._reaped = True
        self._hashes = hashes if complete and not self._cancelled and hashes.keys() == sizes.keys() else None

    def _stop(self) -> None:
        """End the child if it still runs (never a reaped pid: the number may name another process by now)."""
        with self._lock:
            if not self._reaped:
                try:  # noqa: SIM105 - contextlib is not imported this early
                    os.kill(self._pid, signal.SIGKILL)  # its pipe ends; the reading thread reaps it
                except OSError:  # it has just ended
                    pass

    def cancel(self) -> None:
        super().cancel()
        self._stop()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class PrefetchedHasher:
    """A ``FileHasher`` (attest.verify.table) serving a ``DeltaPrefetch``'s hashes when the carrier's files are
    exactly the prefetched ones, and hashing the ordinary way (carriers.storage.hash_locations) otherwise."""

    def __init__(self, prefetch: DeltaPrefetch, storage: Storage) -> None:
        self.prefetch = prefetch
        self.storage = storage
        self.used = False

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        from carriers.storage.hashing import hash_locations

        local = {self.storage.local_of(f.location): f.path for f in files}
        if None not in local:
            hashes = self.prefetch.take([p for p in local if p is not None], progress)
            if hashes is not None:
                self.used = True
                return {path: hashes[p] for p, path in local.items() if p is not None}
        return hash_locations(self.storage, files, progress=progress)
