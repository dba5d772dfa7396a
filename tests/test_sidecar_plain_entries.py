"""The sidecar's file entries and a reader view's members written one format call each when their strings are written
as themselves (docs/scale.md, sixteenth pass): the bytes are canonical_bytes' own, on every shape of value, and what
canonical_bytes refuses is refused the same way."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from attest.canonical import (
    CanonicalizationError,
    canonical_bytes,
    digest,
    digest_streamed,
    mapping_chunks,
    outputs_bytes,
)
from attest.tables import FileIdentity
from carriers.sidecar import _entries_text

_ODD = ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "😀", "/", "}]", '","', "\ud800"]


def _text(rng: random.Random) -> str:
    pieces = [rng.choice(string.ascii_letters + "/-_.=") for _ in range(rng.randint(0, 12))]
    if rng.random() < 0.3:
        pieces.insert(rng.randint(0, len(pieces)), rng.choice(_ODD))
    return "".join(pieces)


def _reference(files: list[FileIdentity]) -> bytes | type[Exception]:
    try:
        return canonical_bytes([f.to_dict() for f in files])[1:-1]
    except CanonicalizationError as exc:
        return type(exc)


def _ours(files: list[FileIdentity]) -> bytes | type[Exception]:
    try:
        return _entries_text(files)
    except CanonicalizationError as exc:
        return type(exc)


class _Str(str):
    pass


class _Int(int):
    pass


@pytest.mark.parametrize("seed", range(40))
def test_entries_are_canonical_bytes(seed: int) -> None:
    rng = random.Random(seed)
    files = []
    for _ in range(rng.randint(1, 60)):
        size: object = rng.choice([0, 1, 2**63 - 1, 2**64 - 1, rng.randint(0, 10**9)])
        if rng.random() < 0.05:
            size = rng.choice([-1, -(2**63), 2**64, True, _Int(5), 1.5])
        path: object = _text(rng) if rng.random() > 0.03 else _Str("p")
        digest = "".join(rng.choice("0123456789abcdef") for _ in range(64)) if rng.random() > 0.05 else _text(rng)
        files.append(FileIdentity(path=path, size=size, hash=digest,  # type: ignore[arg-type]
                                  kind=rng.choice(["data", "deletion_vector", "delete"])))
    assert _ours(files) == _reference(files)
    plain = [f for f in files if {type(f.path), type(f.hash)} == {str} and type(f.size) is int and 0 <= f.size < 2**63]
    if plain:
        assert _ours(plain) == _reference(plain)


def _view_bytes(view: Any, batch: int | None) -> bytes | type[Exception]:
    """A view's members in batches of ``batch`` (None: the reference, ``canonical_bytes``), or the error's class."""
    try:
        return canonical_bytes(view) if batch is None else b"".join(mapping_chunks(view, batch))
    except CanonicalizationError as exc:
        return type(exc)


def test_every_odd_character_alone() -> None:
    for odd in _ODD:
        files = [FileIdentity(path=f"a{odd}b", size=1, hash="0" * 64), FileIdentity(path="c", size=2, hash="1" * 64)]
        assert _ours(files) == _reference(files), repr(odd)
        view = {f"k{odd}": "v", "z": f"w{odd}"}
        for batch in (1, 2):
            assert _view_bytes(view, batch) == _view_bytes(view, None), repr(odd)


@pytest.mark.parametrize("seed", range(30))
def test_view_members_are_canonical_bytes(seed: int) -> None:
    rng = random.Random(seed)
    view: dict[str, object] = {_text(rng): _text(rng) for _ in range(rng.randint(0, 50))}
    if view and rng.random() < 0.2:
        view[next(iter(view))] = rng.choice([1, None, {"a": "b"}, ["x"], _Str("s")])
    for batch in (1, 3, 8192):
        assert _view_bytes(view, batch) == _view_bytes(view, None)


@pytest.mark.parametrize("size", [-1, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, True, False, _Int(5), 1.5, 0.0])
def test_every_odd_size_among_plain_entries(size: object) -> None:
    files = [FileIdentity(path="a", size=1, hash="0" * 64),
             FileIdentity(path="b", size=size, hash="1" * 64),  # type: ignore[arg-type]
             FileIdentity(path="c", size=2, hash="2" * 64, kind="deletion_vector")]
    assert _ours(files) == _reference(files)


def _either(fn: Any, document: Any) -> bytes | str:
    try:
        return bytes(fn(document))
    except CanonicalizationError as exc:
        return str(exc)


@pytest.mark.parametrize("seed", range(60))
def test_manifest_outputs_are_canonical_bytes(seed: int) -> None:
    # attestation_encoded's bytes (outputs_bytes): canonical_bytes' own on manifests of every shape of output list,
    # and the same refusal (message included) where canonical_bytes refuses.
    rng = random.Random(seed)
    outputs: list[Any] = [{"hash": "".join(rng.choice("0123456789abcdef") for _ in range(64)), "path": _text(rng)}
                          for _ in range(rng.randint(0, 40))]
    if outputs and rng.random() < 0.5:
        i = rng.randrange(len(outputs))
        outputs[i] = rng.choice([{"hash": "h"}, {"hash": "h", "size": "1"}, {"path": "p", "hash": 1},
                                 {"hash": "h", "path": None}, {"hash": "h", "path": "p", "x": "y"}, ["h", "p"],
                                 {"hash": _Str("h"), "path": "p"}, {"hash": "h", "path": "p\ud800"},
                                 {"hash": "h", "path": 'q"\\'}, {1: "h", "path": "p"}])
    document: dict[str, Any] = {"manifest_version": "0.1", "subject": {"model": _text(rng)}, "output_hashes": outputs}
    if rng.random() < 0.2:
        document["env_hash"] = rng.choice([1.5, 2**70, "output_hashes:" + "0" * 32, {"deep": [[[]]]}])
    for batch in (1, 3, 8192):
        assert _either(lambda d, b=batch: outputs_bytes(d, batch=b), document) == _either(canonical_bytes, document)
    assert _either(lambda d: bytes.fromhex(digest_streamed(d, "output_hashes", 3)), document) == \
        _either(lambda d: bytes.fromhex(digest(d)), document)


def test_manifest_outputs_refusals_elsewhere_and_depth() -> None:
    deep: Any = "x"
    for _ in range(130):
        deep = [deep]
    for bad in (deep, float("nan"), "\ud800", {2: "x"}):
        document = {"a": bad, "output_hashes": [{"hash": "h", "path": "p"}]}
        assert _either(outputs_bytes, document) == _either(canonical_bytes, document)
        assert isinstance(_either(outputs_bytes, document), str)
    assert outputs_bytes([{"hash": "h", "path": "p"}]) == canonical_bytes([{"hash": "h", "path": "p"}])  # type: ignore[arg-type]
