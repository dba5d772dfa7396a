"""carriers.storage.objects without a server (obstore's in-memory store): digests in order whatever order the parts
arrive in, bounded pieces in flight, and None — the engine reads it again — whenever the object is not exactly the
claimed size of one version."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import obstore
import pytest
from blake3 import blake3
from obstore.store import MemoryStore

from carriers.storage import objects
from carriers.storage.objects import hash_objects, object_key

PART = 1 << 10
SIZES = [0, 1, PART - 1, PART, PART + 1, 2 * PART, 7 * PART + 3]


def _store(blobs: dict[str, bytes]) -> MemoryStore:
    store = MemoryStore()
    for key, data in blobs.items():
        obstore.put(store, key, data)
    return store


@pytest.mark.parametrize("stream_max", [0, PART, 1 << 30], ids=["ranged", "mixed", "streamed"])
def test_digests_are_blake3_of_the_bytes(stream_max: int) -> None:
    blobs = {f"d/o{n}.bin": os.urandom(n) for n in SIZES}
    got = hash_objects(_store(blobs), [(k, len(b)) for k, b in blobs.items()], part=PART, slots=3,
                       stream_max=stream_max)
    assert got == [blake3(b).hexdigest() for b in blobs.values()]


class _Watched:
    """obstore.get wrapped: the first part of every object answers last; counts pieces in flight."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()
        self.replace: tuple[Any, str, bytes] | None = None  # after the first ranged read: put these bytes there

    def __call__(self, store: Any, key: str, *, options: Any = None) -> Any:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            start = (options or {}).get("range", (0, 0))[0]
            if start == 0:
                time.sleep(0.05)  # later parts arrive first: they must wait, in order
            got = self.real(store, key, options=options)
            if self.replace is not None and start > 0:
                where, name, data = self.replace
                self.replace = None
                obstore.put(where, name, data)
            return got
        finally:
            with self.lock:
                self.active -= 1


def test_parts_arriving_out_of_order_are_hashed_in_order_with_bounded_pieces(monkeypatch: pytest.MonkeyPatch
                                                                             ) -> None:
    watched = _Watched(obstore.get)
    monkeypatch.setattr(obstore, "get", watched)
    blobs = {"big": os.urandom(40 * PART + 5), "other": os.urandom(9 * PART)}
    got = hash_objects(_store(blobs), [(k, len(b)) for k, b in blobs.items()], part=PART, slots=4, stream_max=0)
    assert got == [blake3(b).hexdigest() for b in blobs.values()]
    assert 1 < watched.peak <= 4


def test_an_object_replaced_while_its_parts_are_read_is_left_to_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    watched = _Watched(obstore.get)
    monkeypatch.setattr(obstore, "get", watched)
    original = os.urandom(6 * PART)
    store = _store({"t": original})
    watched.replace = (store, "t", bytes(len(original)))  # same size, other bytes: another version (entity tag)
    assert hash_objects(store, [("t", len(original))], part=PART, slots=2, stream_max=0) == [None]


@pytest.mark.parametrize("stream_max", [0, 1 << 30], ids=["ranged", "streamed"])
def test_missing_shorter_or_longer_objects_are_left_to_the_engine(stream_max: int) -> None:
    data = os.urandom(5 * PART)
    store = _store({"same": data, "short": data[:-1], "long": data + b"x", "empty": b""})
    wanted = [("same", len(data)), ("short", len(data)), ("long", len(data)), ("absent", len(data)),
              ("empty", 1), ("same", 0)]
    got = hash_objects(store, wanted, part=PART, slots=3, stream_max=stream_max)
    assert got == [blake3(data).hexdigest(), None, None, None, None, None]


def test_missing_objects_do_not_make_the_store_look_refused() -> None:
    data = os.urandom(3 * PART)
    wanted = [(f"absent{i}", 50 * PART) for i in range(10)] + [("there", len(data))]
    got = hash_objects(_store({"there": data}), wanted, part=PART, slots=2, stream_max=0)
    assert got == [None] * 10 + [blake3(data).hexdigest()]


def test_a_store_that_refuses_every_read_is_given_up_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def refused(store: Any, key: str, *, options: Any = None) -> Any:
        calls.append(key)
        raise obstore.exceptions.PermissionDeniedError("no")

    monkeypatch.setattr(obstore, "get", refused)
    wanted = [(f"k{i}", 10) for i in range(200)]
    assert hash_objects(MemoryStore(), wanted, slots=2) == [None] * 200
    assert len(calls) < 20  # the rest went straight back to the caller (the engine reads them)


def test_progress_is_reported_on_the_calling_thread() -> None:
    blobs = {f"k{i}": os.urandom(i * 100) for i in range(30)}
    seen: list[tuple[int, bool]] = []
    caller = threading.get_ident()

    def progress(index: int, digest: str | None) -> None:
        assert threading.get_ident() == caller
        seen.append((index, digest is not None))

    hash_objects(_store(blobs), [(k, len(b)) for k, b in blobs.items()], part=PART, slots=3, progress=progress)
    assert sorted(seen) == [(i, True) for i in range(30)]


def test_only_plain_keys_under_the_root_are_read_through_obstore() -> None:
    root = "s3://b/t"
    assert object_key(root, "s3://b/t/p=1/part-0.parquet") == "p=1/part-0.parquet"
    assert object_key(root + "/", "s3://b/t/x.parquet") == "x.parquet"
    for location in ("s3://b/tx/a.parquet", "s3://b/other/a", "s3://b/t/p=a%20b/x", "s3://b/t/p=a b/x",
                     "s3://b/t/../u/x", "s3://b/t/./x", "s3://b/t//x", "s3://b/t/", "s3://b/t/ü", "s3://b/t/a+b",
                     "s3://b/t/x?versionId=1", "s3://b/t/x#y", "s3://b/t/a\\b"):
        assert object_key(root, location) is None, location
    # the root itself: obstore reads it as a URL (decoded), pyiceberg's FileIO literally
    assert object_key("abfs://c@acct.dfs.core.windows.net/t", "abfs://c@acct.dfs.core.windows.net/t/x") == "x"
    for odd in ("s3://b/my%20t", "s3://b/my t", "s3://b/../t", "s3://b/./t", "s3://b//t", "s3://b/t?x=1",
                "s3://b:9000/t", "/local/t", "s3://b/t#x"):
        assert object_key(odd, odd + "/x.parquet") is None, odd


def test_the_bound_is_what_the_module_says() -> None:
    assert objects.SLOTS * objects.PART <= 64 << 20
    with pytest.raises(ValueError):
        hash_objects(MemoryStore(), [("k", 1)], slots=0)
