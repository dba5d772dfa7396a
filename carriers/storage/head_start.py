"""A head start for ``attest verify --level bytes`` of a table on an object store: its objects are hashed through
obstore (carriers/storage/objects.py, the same bounded memory) on a thread of their own as soon as the engine has
listed them, while the carrier still replays the log, cross-checks it and reads the sidecar.

It decides nothing. The carrier offers it the engine's listing once (``offer``: each object's location and size, the
first listing it makes, delta-rs's snapshot for a Delta table); the verification takes a digest from it only for a
file it hashes anyway whose location *and* size are exactly the offered ones (``hash_files``, a ``FileHasher``), so a
digest means what the ordinary path's digest means: that object read whole as exactly that size of one version. Any
other file is hashed the ordinary way (``hash_locations``), an offered object that obstore could not read so goes to
the engine's reader as it always did, and an offered object no file asks for is not read further (``stop``) and never
used. The verdict is the one the ordinary order gives; ``close`` (always called) stops what is left and joins the
thread when the verification ends before its bytes (an error found first, an exception).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from attest.tables import DataFile, Progress
from carriers.storage.base import Storage

__all__ = ["HEAD_START_MAX_FILES", "ObjectHeadStart"]

# A listing of more files starts nothing: the head start is for start-up, a visible share of a few large objects'
# verification; a table of many files spends its time listing and judging them, with its own memory peaks.
HEAD_START_MAX_FILES = 10_000


class ObjectHeadStart:
    """Objects hashed on a thread of their own from the engine's first listing; a ``FileHasher`` for the verifier."""

    name = "attest-object-head-start"

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.offered = False
        self.began = threading.Event()  # set when the first offered object is hashed (tests: the overlap)
        self.taken = 0  # digests the verification took from here
        self._objects: list[tuple[str, int]] = []  # (location, size) offered, in order
        self._index: dict[str, int] = {}
        self._digests: dict[int, str | None] = {}
        self._wanted: frozenset[int] | None = None
        self._cancel = threading.Event()
        self._failed = False
        self._thread: threading.Thread | None = None

    # ---- the carrier's side -------------------------------------------------------------------------------------
    def offer(self, files: Iterable[tuple[str, int]]) -> None:
        """The engine's listing, ``(location, size)`` of each file: the first offer starts the hashing, later ones
        (another version read by the same verification) are ignored."""
        if self.offered or self._cancel.is_set():
            return
        self.offered = True
        from carriers.storage.objects import object_key

        keys: list[str] = []
        for location, size in files:
            key = object_key(self.storage.uri, location) if size >= 0 else None  # hash_locations' own rule
            if key is None or location in self._index:
                continue
            self._index[location] = len(self._objects)
            self._objects.append((location, size))
            keys.append(key)
            if len(keys) > HEAD_START_MAX_FILES:
                self._objects, self._index = [], {}
                return
        if not keys:
            return
        store = self.storage._object_store()  # made here, once: the ordinary path reuses it
        if store is None:
            self._objects, self._index = [], {}
            return
        work = [(key, size) for key, (_, size) in zip(keys, self._objects, strict=True)]
        self._thread = threading.Thread(target=self._run, args=(store, work), name=self.name, daemon=True)
        self._thread.start()

    def _run(self, store: Any, work: list[tuple[str, int]]) -> None:
        from carriers.storage.objects import hash_objects

        def done(index: int, digest: str | None) -> None:
            self._digests[index] = digest
            self.began.set()

        def stop(index: int) -> bool:
            wanted = self._wanted
            return self._cancel.is_set() or (wanted is not None and index not in wanted)

        try:
            hash_objects(store, work, progress=done, stop=stop)
        except BaseException:
            self._failed = True

    # ---- the verifier's side ------------------------------------------------------------------------------------
    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        """BLAKE3 of each file, keyed by ``DataFile.path``, as ``hash_locations`` gives it: an offered object of the
        same location and size from the thread (or, when obstore could not read it whole, the engine's reader), any
        other file the ordinary way."""
        from carriers.storage.hashing import hash_locations, hash_through_engine

        thread = self._thread
        if thread is None:
            return hash_locations(self.storage, files, progress=progress)
        matched: dict[int, DataFile] = {}
        rest: list[DataFile] = []
        for f in files:
            index = self._index.get(f.location)
            if index is not None and self._objects[index][1] == f.size and index not in matched:
                matched[index] = f
            else:
                rest.append(f)
        self._wanted = frozenset(matched)  # what no file asks for is not read further
        total = len(files)
        while thread.is_alive():
            thread.join(0.1 if progress is not None else None)
            if progress is not None and thread.is_alive():
                got = [f for i, f in matched.items() if self._digests.get(i) is not None]
                progress(len(got), total, sum(f.size for f in got))
        if self._failed:
            return hash_locations(self.storage, files, progress=progress)
        out: dict[str, str] = {}
        engine: list[DataFile] = []
        for index, f in matched.items():
            digest = self._digests.get(index)
            if digest is None:
                engine.append(f)  # not read whole as this size of one version: the engine's reader, as before
            else:
                out[f.path] = digest
        self.taken = len(out)
        done, done_bytes = len(out), sum(matched[i].size for i in matched if matched[i].path in out)
        if progress is not None:
            progress(done, total, done_bytes)
        if rest:

            def shifted(n: int, _total: int, nbytes: int) -> None:
                assert progress is not None
                progress(done + n, total, done_bytes + nbytes)

            out.update(hash_locations(self.storage, rest, progress=None if progress is None else shifted))
            done += len(rest)
            done_bytes += sum(f.size for f in rest)
        hash_through_engine(self.storage, engine, out, progress, total, done, done_bytes)
        return out

    def close(self) -> None:
        """Stop requesting objects and wait for those in flight (at most ``SLOTS`` pieces): no thread is left."""
        self._cancel.set()
        thread = self._thread
        if thread is not None:
            thread.join()
