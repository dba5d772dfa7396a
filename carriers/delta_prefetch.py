"""A head start for ``attest verify TABLE`` on a local Delta table: hash the version's files while the command line is
still importing delta-rs and the verifier and loading the table.

Light on purpose (os, threading, attest.hashing, attest.jsonscan): the command line starts it before anything else is
imported. It decides nothing. It reads the log's JSON commits itself, lists the live files whose paths are plain
(nothing encoded, no dot segments, no scheme: the common case), and hashes them when they are few and regular files,
all under the table's real root. The verification takes these hashes only when the carrier's own file list (delta-rs's
snapshot, checked against the log, confined) names exactly the same local files (``PrefetchedHasher``); anything else
is hashed the ordinary way. A checkpoint, a deletion vector, a path that is not plain, a symlink (file or folder) or a
gap in the log starts nothing: it never opens a file outside the table.
"""

from __future__ import annotations

import os
import stat

from attest import jsonscan
from attest.hashing import BackgroundHashing

TYPE_CHECKING = False  # typing is not imported before the hashing starts
if TYPE_CHECKING:
    from collections.abc import Sequence

    from attest.tables import DataFile, Progress
    from carriers.storage import Storage

__all__ = ["DeltaPrefetch", "PrefetchedHasher"]

# The head start is not taken for more files than this: on 2 cores, 2,000 files of 512 KiB verified 8 % slower with
# it than without (in a forked child, no faster either: the run is bound by CPU time, docs/hashing.md), one 1 GiB
# file 14 % faster.
PREFETCH_MAX_FILES = 64
# A log this long without a checkpoint is replayed once, by the carrier, not twice side by side.
PREFETCH_MAX_COMMITS = 256
PREFETCH_MAX_COMMIT_BYTES = 16 << 20
_COMMIT_NAME_LENGTH = 25  # 20 digits + ".json" (Delta protocol: zero-padded commit files)
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

    def __init__(self, table_dir: str, version: int | None) -> None:
        self.table_dir = table_dir
        self.version = version
        super().__init__()

    @classmethod
    def start(cls, table_dir: str, version: int | None = None) -> DeltaPrefetch | None:
        if not os.path.isdir(os.path.join(table_dir, "_delta_log")):
            return None
        return cls(table_dir, version)

    def listing(self) -> dict[str, int] | None:
        """{local path: size} of the version's live files, or None when this head start does not apply."""
        log = os.path.join(self.table_dir, "_delta_log")
        names = os.listdir(log)
        if any("checkpoint" in n for n in names):  # Parquet checkpoints: left to the carrier
            return None
        # ASCII digits only ('²'.isdigit() is true): attest.numbers.is_digits, inlined (it would import re now).
        numbers = sorted(int(n[:-5]) for n in names if len(n) == _COMMIT_NAME_LENGTH and n.endswith(".json")
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
                for line in handle.read().split(b"\n"):
                    if not line.strip():
                        continue
                    action = jsonscan.loads(line)
                    if "add" in action:
                        add = action["add"]
                        if add.get("deletionVector") or not _plain(add.get("path")):
                            return None
                        live[add["path"]] = add.get("size", -1)
                        if len(live) > PREFETCH_MAX_FILES:
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


class PrefetchedHasher:
    """A ``FileHasher`` (attest.verify.table) serving a ``DeltaPrefetch``'s hashes when the carrier's files are
    exactly the prefetched ones, and hashing the ordinary way (carriers.storage.hash_locations) otherwise."""

    def __init__(self, prefetch: DeltaPrefetch, storage: Storage) -> None:
        self.prefetch = prefetch
        self.storage = storage
        self.used = False

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        from carriers.storage import hash_locations

        local = {self.storage.local_of(f.location): f.path for f in files}
        if None not in local:
            hashes = self.prefetch.take([p for p in local if p is not None], progress)
            if hashes is not None:
                self.used = True
                return {path: hashes[p] for p, path in local.items() if p is not None}
        return hash_locations(self.storage, files, progress=progress)
