"""The Iceberg kept copy written in pieces (carriers/iceberg/kept.py ``PuffinStream``; docs/scale.md).

The Puffin file keeping an attestation holds the sidecar's bytes (hundreds of MB at a million files). It is written a
piece at a time: the magic, the sidecar copied from storage in pieces (hashed on the way), the envelope, the companion
files, then the footer (offsets, lengths and BLAKE3s known by then), published as sidecars are
(``Storage.write_once_stream``) under ``<sidecar blake3>.puffin``. Its bytes are the ones ``build_puffin`` (the whole
writer it replaces) gives for the same blobs, and an ``attest record`` no longer holds the sidecar to keep it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3
from pyiceberg.table import Table

from attest.errors import CarrierError, Code
from carriers.iceberg.kept import (
    CONTENT_BLOB,
    ENVELOPE_BLOB,
    SIDECAR_BLOB,
    PendingBlob,
    PuffinStream,
    build_puffin,
    read_footer,
    sidecar_keys,
)
from carriers.sidecar import leading_members
from tests.adversarial.test_cleanup_attacks import attested
from tests.iceberg.conftest import catalog, iceberg_env, table  # noqa: F401
from tests.memory_probe import run_probe

KEYS = {"recipe-attest.version": "7", "recipe-attest.sidecar-hash": "ab" * 32}


def streamed(sidecar: bytes, envelope: bytes | None, content: list[bytes], piece: int) -> PuffinStream:
    def pieces(data: bytes) -> Any:
        return lambda: (data[i:i + piece] for i in range(0, len(data), piece))

    blobs = [PendingBlob(SIDECAR_BLOB, pieces(sidecar), KEYS)]
    if envelope is not None:
        blobs.append(PendingBlob(ENVELOPE_BLOB, pieces(envelope), {}))
    blobs += [PendingBlob(CONTENT_BLOB, pieces(c), {}) for c in content]
    return PuffinStream(blobs, snapshot_id=11, sequence_number=3)


CASES = {
    "empty": (b"", None, []),  # a blob of no bytes
    "tiny": (b"{}", b"", [b""]),
    "small": (json.dumps({"format": "x", "files": ["a" * 100] * 50}).encode(), b'{"envelope": 1}', [b"comp" * 9]),
    "large": (bytes(range(256)) * 20_000 + b"tail", b"e" * 70_000, [b"c" * 3_000_001, b"d"]),  # ~5 MiB
}


@pytest.mark.parametrize(("case", "piece"), [(c, p) for c in CASES for p in (1, 4093, 1 << 20)
                                             if not (c == "large" and p == 1)])  # 5 MiB a byte at a time: slow
def test_the_streamed_bytes_are_the_whole_writers(case: str, piece: int) -> None:
    sidecar, envelope, content = CASES[case]
    whole, footer = build_puffin(sidecar=sidecar, keys=KEYS, envelope=envelope, snapshot_id=11, sequence_number=3,
                                 content=content)
    stream = streamed(sidecar, envelope, content, piece)
    hasher, size = blake3(), 0
    for chunk in stream:
        assert len(chunk) <= max(piece, 1 << 20) or chunk.startswith(b"PFA1{")  # one piece, or the footer
        hasher.update(chunk)
        size += len(chunk)
    assert hasher.hexdigest() == blake3(whole).hexdigest()
    assert (stream.size, stream.footer_size) == (len(whole), footer) == (size, footer)
    index = read_footer(len(whole), lambda o, n: whole[o:o + n])
    assert index is not None and [b.digest for b in index.blobs] == stream.digests


def test_a_record_keeps_the_bytes_the_whole_writer_would(table: Table) -> None:  # noqa: F811
    """Through ``attest record``: the kept file is ``build_puffin`` of the sidecar, the envelope (none) and the
    companion files read from storage, and the statistics entries give its size and footer size."""
    _, _, puffin = attested(table)
    data = puffin.read_bytes()
    index = read_footer(len(data), lambda o, n: data[o:o + n])
    assert index is not None
    kinds = [b.kind for b in index.blobs]
    assert kinds[0] == SIDECAR_BLOB and CONTENT_BLOB in kinds  # the companion path is exercised
    sidecar = (puffin.parent / f"{puffin.stem}.json").read_bytes()
    companions = [(puffin.parent / f"{b.digest}.digests").read_bytes() for b in index.blobs if b.kind == CONTENT_BLOB]
    head = leading_members([sidecar], "content")
    assert head is not None and [blake3(c).hexdigest() for c in companions] == head["content"]["digests"]
    whole, footer = build_puffin(sidecar=sidecar, keys=sidecar_keys(index.blobs[0]), envelope=None,
                                 snapshot_id=index.blobs[0].snapshot_id or 0,
                                 sequence_number=int(table.snapshot_by_id(index.blobs[0].snapshot_id or 0)
                                                     .sequence_number or 0),  # type: ignore[union-attr]
                                 content=companions)
    assert blake3(data).hexdigest() == blake3(whole).hexdigest()
    assert {(s.file_size_in_bytes, s.file_footer_size_in_bytes) for s in table.metadata.statistics} == \
        {(len(data), footer)}


def test_leading_members_stop_before_the_file_list() -> None:
    doc = [b'{"attested_version":"3","content":{"digests":["x"]},"files":[', b"{" * 10 + b"\xff"]  # never read
    assert leading_members(doc, "content") == {"attested_version": "3", "content": {"digests": ["x"]}}
    assert leading_members([b'{"content":1,"content":2,"z":'], "content") == {"content": 2}  # json.loads: last
    for bad in (b'{"content":{},"attested_version":"3"}', b"[]", b'{"content":', b"\xff"):
        assert leading_members([bad], "content") is None, bad  # read whole by the caller, as before


def test_a_sidecar_changed_before_it_is_kept_is_refused_and_nothing_is_published(
        table: Table, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The sidecar's bytes are hashed as they are copied: other bytes than the recorded BLAKE3 (the file swapped
    between its write and its copy) abort the write before anything is published under the kept name."""
    from carriers.iceberg.commit import FollowUpCommit

    real = FollowUpCommit._pieces

    def swapped(self: FollowUpCommit, rel: str, length: int | None = None, digest: str | None = None) -> Any:
        if digest is not None:
            (Path(str(self.storage.local_root)) / rel).write_bytes(b'{"swapped": true}')
        return real(self, rel, length, digest)

    monkeypatch.setattr(FollowUpCommit, "_pieces", swapped)
    with pytest.raises(CarrierError) as err:
        attested(table)
    assert err.value.code == Code.SIDECAR_MISMATCH
    assert not list(Path(str(table.location()).removeprefix("file://")).rglob("*.puffin"))
    assert not table.metadata.statistics


MEASURE = r'''
import json, sys
from pathlib import Path
from types import SimpleNamespace

from carriers.storage import DeltaStorage
from carriers.iceberg.commit import FollowUpCommit
from pyiceberg.table.statistics import StatisticsFile  # imported before the measure (modules are not the sidecar)
import blake3, tempfile, carriers.content_store, carriers.sidecar, carriers.iceberg.kept

step, root, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
storage = DeltaStorage(root, options)
storage._object_store()  # a store's client built once (its own fixed memory is not the sidecar's)
if step == "prepare":
    from dataclasses import replace
    from tests.objectstore.test_sidecar_stores import sidecar
    companion = b"RACD" + b"c" * 100_000
    from attest.canonical import blake3_hex
    storage.write_once(f"recipe_attest/{blake3_hex(companion)}.digests", companion)
    doc = replace(sidecar(int(sys.argv[4])), content={"digests": [blake3_hex(companion)], "scheme": "s"})
    rel, digest = storage.write_once_stream("recipe_attest", ".json", doc.chunks())
    print(json.dumps({"rel": rel, "digest": digest}))
    sys.exit()

class Keeper(FollowUpCommit):
    sidecar_dir = "recipe_attest"
    def __init__(self):
        self.storage = storage
    def _metadata_dir(self):
        return "/metadata"
    def _is_kept(self, location):
        return True

entries = []
update = SimpleNamespace(set_statistics=entries.append, commit=lambda: None)
tx = SimpleNamespace(table_metadata=SimpleNamespace(statistics=[]), update_statistics=lambda: update)
rel, digest = sys.argv[4], sys.argv[5]
from carriers import properties as props
keys = {props.KEY_SIDECAR_PATH: rel, props.KEY_SIDECAR_HASH: digest}
_, peak = peak_of(lambda: Keeper().kept_statistics(tx, keys, attested=5, carrier=6, sequence_number=2))
print(json.dumps({"peak": peak, "size": entries[0].file_size_in_bytes,
                  "footer": entries[0].file_footer_size_in_bytes}))
'''


def keep_200k(root: str, options: dict[str, str]) -> dict[str, Any]:
    """Prepare a sidecar of 200,000 files (and one companion file) under ``root``, then keep it in a fresh process:
    (the sidecar's name and BLAKE3, the peak growth, the size and footer size registered)."""
    def run(*args: str) -> dict[str, Any]:
        return run_probe(MEASURE, args[0], root, json.dumps(options), *args[1:])

    prepared = run("prepare", "200000")
    return {**prepared, **run("keep", prepared["rel"], prepared["digest"])}


def whole_writer(sidecar: bytes, companion: bytes, m: dict[str, Any]) -> bytes:
    """What ``build_puffin`` writes for the kept copy ``keep_200k`` made, checked against what was registered."""
    from carriers import properties as props

    whole, footer = build_puffin(sidecar=sidecar, keys={props.KEY_SIDECAR_PATH: m["rel"],
                                                        props.KEY_SIDECAR_HASH: m["digest"]},
                                 envelope=None, snapshot_id=5, sequence_number=2, content=[companion])
    assert (m["size"], m["footer"]) == (len(whole), footer)
    return whole


def test_a_kept_copy_of_200k_files_is_written_in_bounded_memory(tmp_path: Path) -> None:
    """Measured in a fresh process (the peak resident set, /proc's VmHWM reset before the step): keeping a ~47 MB
    sidecar grows the peak by a small fraction of its size (before: the sidecar read whole, parsed whole for its
    content binding, and the Puffin file built whole: +239 MiB for this 44.5 MiB sidecar, measured with main's
    writer), and the bytes are ``build_puffin``'s."""
    root = tmp_path / "root"
    m = keep_200k(str(root), {})
    sidecar = (root / m["rel"]).read_bytes()
    assert len(sidecar) > 40 << 20
    kept = (root / "recipe_attest" / f"{m['digest']}.puffin").read_bytes()
    companion = next(p.read_bytes() for p in (root / "recipe_attest").glob("*.digests"))
    assert blake3(kept).hexdigest() == blake3(whole_writer(sidecar, companion, m)).hexdigest()
    print(json.dumps({"sidecar": f"{len(sidecar) / 2**20:.1f} MiB", "peak": f"{m['peak'] / 2**20:.1f} MiB"}))
    # Pieces of 1 MiB, a 64 KiB head read, the footer (measured: +2.1 MiB; main's writer: +239 MiB).
    assert m["peak"] < len(sidecar) // 8, (m, len(sidecar))


class _Keeper:
    """A FollowUpCommit over a local storage and a stand-in transaction (what ``kept_statistics`` touches)."""

    sidecar_dir = "recipe_attest"

    def __init__(self, root: Path) -> None:
        from types import SimpleNamespace

        from carriers.storage import DeltaStorage

        self.storage = DeltaStorage(str(root))
        self.entries: list[Any] = []
        update = SimpleNamespace(set_statistics=self.entries.append, commit=lambda: None)
        self.tx = SimpleNamespace(table_metadata=SimpleNamespace(statistics=[]), update_statistics=lambda: update)

    def keep(self, keys: dict[str, str]) -> None:
        from carriers.iceberg.commit import FollowUpCommit

        keeper = type("Keeper", (FollowUpCommit,), {"_metadata_dir": lambda self: "/m", "_is_kept": lambda *_: True,
                                                    "sidecar_dir": self.sidecar_dir})()
        keeper.storage = self.storage
        keeper.kept_statistics(self.tx, keys, attested=5, carrier=6, sequence_number=2)


def test_a_different_file_under_the_kept_name_is_never_replaced(tmp_path: Path) -> None:
    """As the whole writer (``write_once``): bytes planted under ``<sidecar blake3>.puffin`` before the record are
    refused (sidecar_mismatch) and left as they are, nothing else is published; the same bytes there are left."""
    from carriers import properties as props
    from tests.objectstore.test_sidecar_stores import sidecar as make_sidecar

    keeper = _Keeper(tmp_path)
    rel, digest = keeper.storage.write_once_stream("recipe_attest", ".json", make_sidecar(50).chunks())
    keys = {props.KEY_SIDECAR_PATH: rel, props.KEY_SIDECAR_HASH: digest}
    kept = tmp_path / "recipe_attest" / f"{digest}.puffin"
    kept.write_bytes(b"PFA1 planted")
    with pytest.raises(CarrierError) as err:
        keeper.keep(keys)
    assert err.value.code == Code.SIDECAR_MISMATCH and kept.read_bytes() == b"PFA1 planted"
    assert sorted(p.name for p in kept.parent.iterdir()) == sorted([kept.name, f"{digest}.json"])
    assert not keeper.entries
    kept.unlink()
    keeper.keep(keys)
    first = kept.read_bytes()
    keeper.keep(keys)  # identical bytes there: left, registered again
    assert kept.read_bytes() == first and [e.file_size_in_bytes for e in keeper.entries] == [len(first)] * 4
