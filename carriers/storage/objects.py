"""Hashing object-store objects at line rate, in bounded memory: obstore reads (the Rust object_store delta-rs is built
on), one streamed GET for each small object, concurrent ranged GETs for a large one, hashed in order as they arrive.

At most ``slots`` pieces are in flight at once (a piece: a part of ``part`` bytes of a large object, held from its
request until it is hashed, or a whole small object, streamed in ``STREAM_CHUNK`` pieces), so memory stays near
``slots * part`` whatever the object sizes; the largest objects go first, so the last seconds are not spent on one
object read alone. BLAKE3 (the ``blake3`` package) releases the GIL while it hashes a part.

A digest is returned only when the object was read whole *as the size the table claims*: every part answered with
that object size and the same entity tag (one version of the object, even if it was replaced while being read).
Anything else — a missing object, a shorter or longer one, a store error, a version that changed under the reads —
gives None, and the caller hashes that object the way it always has (through the table's engine), which reports it
as it always did (missing, or a hash that differs). So this path can only ever agree with the engine's bytes, never
invent a match.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

# Pieces in flight and the size of one part of a large object: memory stays near SLOTS * PART (64 MiB).
SLOTS = 8
PART = 8 << 20
# Objects up to this size (as the table claims it) are one GET, streamed in STREAM_CHUNK pieces; larger ones are read
# in ranged parts (each request short: object_store's client times a whole request out after 30 s by default).
STREAM_MAX = 2 * PART
STREAM_CHUNK = 4 << 20
# After this many objects refused (an error other than "not found") before any object was read, the store is taken to
# refuse these options (a credential only the engine knows): the remaining objects go to the engine at once.
GIVE_UP_ERRORS = 3

# Keys read through obstore: segments of characters every store and both engines spell the same way, so the key
# obstore asks for is the object the engine reads (anything else, e.g. a percent-escaped partition value, goes to the
# engine: object_store and the engines' own path types do not all escape alike).
_SAFE_KEY = re.compile(r"[A-Za-z0-9._=-]+(?:/[A-Za-z0-9._=-]+)*")
# The root too: obstore builds its store from the root as a URL (percent-decoded) where pyiceberg's FileIO reads a
# location string literally, so a root with an escape could name another prefix for each.
_SAFE_ROOT = re.compile(r"[a-z][a-z0-9]*://[A-Za-z0-9._@-]+(?:/[A-Za-z0-9._=-]+)*/?")


def object_key(root: str, location: str) -> str | None:
    """The key of ``location`` under a store rooted at ``root``, or None when it is not plainly under it."""
    if not _SAFE_ROOT.fullmatch(root) or any(part in (".", "..") for part in root.split("://", 1)[-1].split("/")):
        return None
    prefix = root.rstrip("/") + "/"
    if not location.startswith(prefix):
        return None
    key = location[len(prefix):]
    if not _SAFE_KEY.fullmatch(key) or any(part in (".", "..") for part in key.split("/")):
        return None
    return key


@dataclass
class _Object:
    """One object hashed in ranged parts: parts arrive in any order and are hashed in order."""

    index: int
    key: str
    size: int
    parts: int
    hasher: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    next: int = 0
    pending: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    tags: set[Any] = field(default_factory=set)
    failed: bool = False
    refused: bool = False


class _Run:
    def __init__(self, store: Any, slots: int, part: int) -> None:
        self.store = store
        self.part = part
        self.slots = threading.BoundedSemaphore(slots)
        self.finished: queue.SimpleQueue[tuple[int, str | None]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.errors = 0
        self.successes = 0

    def given_up(self) -> bool:
        with self.lock:
            return self.successes == 0 and self.errors >= GIVE_UP_ERRORS

    def _finish(self, index: int, digest: str | None, refused: bool) -> None:
        """One object done; ``refused``: the store answered with an error other than "not found"."""
        with self.lock:
            self.successes += digest is not None
            self.errors += refused
        self.finished.put((index, digest))

    # ---- a small object: one GET, streamed ----------------------------------------------------------------------
    def whole(self, index: int, key: str, size: int) -> None:
        import obstore
        from blake3 import blake3

        digest: str | None = None
        error: BaseException | None = None
        try:
            got = obstore.get(self.store, key)
            if int(got.meta["size"]) == size:
                hasher = blake3()
                read = 0
                for chunk in got.stream(min_chunk_size=STREAM_CHUNK):
                    read += len(chunk)
                    if read > size:  # longer than it said: the engine reads it (and reports it)
                        break
                    hasher.update(chunk)
                if read == size:
                    digest = hasher.hexdigest()
        except BaseException as exc:  # any failure (a Rust panic too): the engine reads this object
            error = exc
        finally:
            self.slots.release()
        self._finish(index, digest, _refused(error))

    # ---- a large object: ranged parts ---------------------------------------------------------------------------
    def piece(self, obj: _Object, number: int) -> None:
        import obstore

        start = number * self.part
        end = min(obj.size, start + self.part)
        data: Any = None
        tag: Any = None
        error: BaseException | None = None
        try:
            got = obstore.get(self.store, obj.key, options={"range": (start, end)})
            meta = got.meta
            body = got.bytes()
            if int(meta["size"]) == obj.size and len(body) == end - start:
                data, tag = body, meta.get("e_tag")
        except BaseException as exc:  # as in whole()
            error = exc
        self._deliver(obj, number, data, tag, _refused(error))

    def _deliver(self, obj: _Object, number: int, data: Any, tag: Any, refused: bool) -> None:
        done = False
        with obj.lock:
            obj.refused = obj.refused or refused
            obj.pending[number] = (data, tag)
            while obj.next in obj.pending:
                body, etag = obj.pending.pop(obj.next)
                if body is None:
                    obj.failed = True
                elif not obj.failed:
                    obj.hasher.update(body)  # in order; the GIL is released while BLAKE3 hashes
                    obj.tags.add(etag)
                del body
                obj.next += 1
                self.slots.release()
            done = obj.next == obj.parts
        if done:
            # One version throughout: every part came with the same entity tag (a replaced object has another).
            self._finish(obj.index, None if obj.failed or len(obj.tags) != 1 else obj.hasher.hexdigest(), obj.refused)


def _refused(exc: BaseException | None) -> bool:
    """Whether a read failed for another reason than the object being absent (obstore raises FileNotFoundError)."""
    from obstore.exceptions import NotFoundError

    return exc is not None and not isinstance(exc, (FileNotFoundError, NotFoundError))


def hash_objects(store: Any, objects: Sequence[tuple[str, int]], *, slots: int | None = None,
                 part: int | None = None, stream_max: int | None = None,
                 progress: Callable[[int, str | None], None] | None = None,
                 stop: Callable[[int], bool] | None = None) -> list[str | None]:
    """BLAKE3 of each ``(key, size)`` object of an obstore ``store``, in order: None for an object not read whole as
    exactly ``size`` bytes of one version (the caller then reads it through the engine). Objects up to ``stream_max``
    bytes (STREAM_MAX) are one streamed GET each, larger ones ranged GETs of ``part`` bytes (PART), ``slots`` pieces
    (SLOTS) in flight. ``progress(index, digest)`` is called
    on this thread as each object is done. Worker threads never raise: a failure is a None for that object.
    ``stop(index)``, asked before each object and each part is requested: True, and that object is not read (None;
    a large object's parts not yet requested are not requested) — the head start's cancellation and its objects no
    longer wanted (carriers/storage/head_start.py)."""
    from blake3 import blake3

    slots = SLOTS if slots is None else slots  # the module's values when called (a test or benchmark may set them)
    part = PART if part is None else part
    stream_max = STREAM_MAX if stream_max is None else stream_max
    if slots < 1 or part < 1:
        raise ValueError("slots and part must be >= 1")
    results: list[str | None] = [None] * len(objects)
    if not objects:
        return results
    run = _Run(store, slots, part)
    order = sorted(range(len(objects)), key=lambda i: -objects[i][1])  # largest first
    done = 0

    def collect(wait: float | None) -> None:
        nonlocal done
        try:
            while True:
                index, digest = run.finished.get(timeout=wait) if wait is not None else run.finished.get_nowait()
                results[index] = digest
                done += 1
                if progress is not None:
                    progress(index, digest)
                wait = None
        except queue.Empty:
            return

    def take_slot() -> None:
        while not run.slots.acquire(timeout=0.05):
            collect(None)  # progress keeps moving while the dispatcher waits

    with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="attest-objects") as pool:
        for index in order:
            key, size = objects[index]
            if run.given_up() or (stop is not None and stop(index)):
                run.finished.put((index, None))
                continue
            if size <= stream_max or size == 0:
                take_slot()
                pool.submit(run.whole, index, key, size)
                continue
            parts = -(-size // part)
            obj = _Object(index=index, key=key, size=size, parts=parts, hasher=blake3())
            for number in range(parts):
                take_slot()
                if stop is not None and stop(index):  # the rest unread: the object is failed, its slot given back
                    run._deliver(obj, number, None, None, False)
                    continue
                pool.submit(run.piece, obj, number)
            collect(None)
        while done < len(objects):
            collect(1.0)
    return results
