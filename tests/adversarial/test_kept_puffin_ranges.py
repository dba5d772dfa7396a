"""The Iceberg kept copy read by ranges (carriers/iceberg/kept.py ``read_footer``; docs/object-stores.md).

The Puffin file keeping an attestation (``metadata/recipe_attest/<sidecar blake3>.puffin``) is untrusted input of up
to several GiB. It is never read whole: the last 12 bytes (footer payload size, flags, magic, per the Puffin spec),
then the footer, then only the blob wanted, in pieces, straight into the sidecar parser. An attacker with write
access to the metadata folder writes any bytes there; every offset and length the file claims is checked before a
byte is asked for, so the reader never reads outside the file, never crashes, and takes a file that is not one this
project wrote as absent (``sidecar_missing`` once the sidecar itself is gone) — never as an attestation.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import Table

import carriers.iceberg.kept as kept_module
import carriers.storage.base as storage_base
from attest.canonical import blake3_hex
from carriers.iceberg.kept import (
    CONTENT_BLOB,
    ENVELOPE_BLOB,
    MAGIC,
    MAX_FOOTER_BYTES,
    SIDECAR_BLOB,
    blob_chunks,
    build_puffin,
    parse_puffin,
    read_footer,
)
from tests.adversarial.test_cleanup_attacks import attested, cli, delete_sidecars, refused
from tests.iceberg.conftest import catalog, iceberg_env, table  # noqa: F401

SIDECAR = json.dumps({"format": "x", "files": ["a" * 100] * 50}).encode()
KEYS = {"recipe-attest.version": "7"}


def honest() -> bytes:
    data, _ = build_puffin(sidecar=SIDECAR, keys=KEYS, envelope=b'{"envelope": 1}', snapshot_id=7,
                           sequence_number=1, content=[b"companion-bytes" * 10])
    return data


class Reader:
    """``read(offset, length)`` over bytes, failing the test on any range outside them; counts what was read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.calls: list[tuple[int, int]] = []

    def __call__(self, offset: int, length: int) -> bytes:
        assert type(offset) is int and type(length) is int, (offset, length)
        assert offset >= 0 and length >= 0 and offset + length <= len(self.data), (offset, length, len(self.data))
        self.calls.append((offset, length))
        return self.data[offset:offset + length]

    @property
    def read_bytes(self) -> int:
        return sum(n for _, n in self.calls)


def footer_of(data: bytes) -> tuple[bytes, dict[str, Any]]:
    """(the bytes before the footer, the footer document) of a file build_puffin wrote."""
    (length,) = struct.unpack("<i", data[-12:-8])
    return data[:len(data) - length - 16], json.loads(data[-length - 12:-12])


def with_footer(body: bytes, doc: Any, *, length: int | None = None, flags: bytes = b"\0\0\0\0",
                raw: bytes | None = None) -> bytes:
    payload = raw if raw is not None else json.dumps(doc).encode()
    size = len(payload) if length is None else length
    return body + MAGIC + payload + struct.pack("<i", size) + flags + MAGIC


def edited(edit: Callable[[list[dict[str, Any]]], None]) -> bytes:
    body, doc = footer_of(honest())
    edit(doc["blobs"])
    return with_footer(body, doc)


def test_an_honest_file_is_indexed_from_its_footer_alone_and_a_blob_read_alone() -> None:
    data = honest()
    read = Reader(data)
    index = read_footer(len(data), read)
    assert index is not None and [b.kind for b in index.blobs] == [SIDECAR_BLOB, ENVELOPE_BLOB, CONTENT_BLOB]
    body, _ = footer_of(data)
    assert read.read_bytes == 4 + 12 + (len(data) - len(body) - 12)  # header magic, tail, footer magic + payload
    assert all(offset >= len(body) or (length == 4 and offset == 0) for offset, length in read.calls)
    sidecar = index.sidecars()[0]
    blob_read = Reader(data)
    assert b"".join(blob_chunks(blob_read, sidecar, piece=100)) == SIDECAR
    assert blob_read.read_bytes == len(SIDECAR) and all(sidecar.offset <= o and o + n <= sidecar.offset +
                                                        sidecar.length for o, n in blob_read.calls)
    kept = parse_puffin(data)
    assert kept is not None and kept.blobs[blake3_hex(SIDECAR)] == SIDECAR and kept.keys == KEYS


def _truncations() -> list[bytes]:
    data = honest()
    body, _ = footer_of(data)
    return [data[:n] for n in (0, 3, 4, 15, 16, 21, len(body), len(body) + 3, len(data) - 13, len(data) - 12,
                               len(data) - 4, len(data) - 1)] + [data[:len(body) + 10] + data[-12:]]


def _footer_attacks() -> list[bytes]:
    data = honest()
    body, doc = footer_of(data)
    payload = json.dumps(doc).encode()
    return [
        with_footer(body, doc, length=-1),  # a negative footer size
        with_footer(body, doc, length=-(2 ** 31)),
        with_footer(body, doc, length=2 ** 31 - 1),  # past the start of the file
        with_footer(body, doc, length=len(payload) + 1),  # the footer magic is not where the size says
        with_footer(body, doc, length=len(body) + len(payload) + 4),  # reaches into the header magic
        with_footer(body, doc, length=0),
        with_footer(body, doc, length=1),
        with_footer(body, doc, flags=b"\x01\0\0\0"),  # compressed footer: never written here
        with_footer(body, None, raw=b"[" * 100_000 + b"]" * 100_000),  # nested past the JSON reader's depth
        with_footer(body, None, raw=b'{"blobs": 1}'),
        with_footer(body, None, raw=b"not json at all"),
        with_footer(body, None, raw=b'"a string"'),
        b"XXXX" + data[4:],  # no header magic
        data[:-4] + b"XXXX",  # no trailing magic
        with_footer(b"PFA1" + b"\0" * (MAX_FOOTER_BYTES + 8), None, raw=b"{" + b" " * MAX_FOOTER_BYTES + b"}"),
    ]


@pytest.mark.parametrize("data", _truncations() + _footer_attacks())
def test_a_truncated_or_forged_footer_is_not_a_kept_file(data: bytes) -> None:
    read = Reader(data)
    assert read_footer(len(data), read) is None
    assert parse_puffin(data) is None
    assert read.read_bytes <= 4 + 12 + MAX_FOOTER_BYTES + 4  # never more than the bounded footer


def _blob_attacks() -> list[tuple[str, Callable[[list[dict[str, Any]]], None]]]:
    def set_(field: str, value: Any, which: int = 0) -> Callable[[list[dict[str, Any]]], None]:
        def edit(blobs: list[dict[str, Any]]) -> None:
            blobs[which][field] = value
        return edit

    size = len(honest())
    return [
        ("offset past the end", set_("offset", size + 10)),
        ("offset into the footer", set_("offset", size - 20)),
        ("offset at the header magic", set_("offset", 0)),
        ("negative offset", set_("offset", -5)),
        ("huge offset", set_("offset", 2 ** 63)),
        ("negative length", set_("length", -1)),
        ("huge length", set_("length", 2 ** 62)),
        ("length into the footer", set_("length", size)),
        ("offset a float", set_("offset", 4.0)),
        ("offset a bool", set_("offset", True)),
        ("length a string", set_("length", "10")),
        ("properties not strings", set_("properties", {"recipe-attest-blake3": 5})),
        ("digest not hex", set_("properties", {"recipe-attest-blake3": "Z" * 64, **KEYS})),
        ("compressed", set_("compression-codec", "zstd")),
    ]


@pytest.mark.parametrize("name, edit", _blob_attacks(), ids=[n for n, _ in _blob_attacks()])
def test_a_blob_outside_the_bytes_before_the_footer_is_never_read(name: str,
                                                                  edit: Callable[[list[dict[str, Any]]], None]) -> None:
    data = edited(edit)
    read = Reader(data)
    index = read_footer(len(data), read)
    assert index is not None and SIDECAR_BLOB not in [b.kind for b in index.blobs], name
    for blob in index.blobs:  # what is left is inside the file, before the footer
        assert blob.offset >= 4 and blob.offset + blob.length <= len(footer_of(data)[0])
    kept = parse_puffin(data)
    assert kept is not None and kept.sidecar_digest is None and not kept.keys


@pytest.mark.parametrize("overlap", ["same range", "shifted", "inside"])
def test_overlapping_blobs_are_not_a_file_this_project_wrote(overlap: str) -> None:
    """Two of our blobs sharing bytes: never written here, and each claim would read the same bytes again (a
    footer of a megabyte naming one large range thousands of times): the file is not one of ours."""
    def edit(blobs: list[dict[str, Any]]) -> None:
        sidecar, envelope = blobs[0], blobs[1]
        if overlap == "same range":
            envelope["offset"], envelope["length"] = sidecar["offset"], sidecar["length"]
        elif overlap == "shifted":
            envelope["offset"] = sidecar["offset"] + sidecar["length"] - 1
        else:
            envelope["offset"], envelope["length"] = sidecar["offset"] + 1, 2

    data = edited(edit)
    assert read_footer(len(data), Reader(data)) is None
    assert parse_puffin(data) is None


def test_many_claims_of_one_range_are_refused_before_any_blob_is_read() -> None:
    body, doc = footer_of(honest())
    sidecar = doc["blobs"][0]
    doc["blobs"] = [dict(sidecar) for _ in range(5000)]
    data = with_footer(body, doc)
    read = Reader(data)
    assert read_footer(len(data), read) is None
    assert read.read_bytes < len(data) - len(body) + 16


def test_a_file_larger_than_a_reader_reads_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    data = honest()
    monkeypatch.setattr(kept_module, "MAX_KEPT_BYTES", len(data) - 1)
    read = Reader(data)
    assert read_footer(len(data), read) is None and read.calls == []


# ---- on a table ---------------------------------------------------------------------------------------------------
def _count_ranged_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    real = storage_base.Ranged.read

    def read(self: storage_base.Ranged, offset: int, length: int) -> bytes:
        assert offset >= 0 and length >= 0 and offset + length <= self.size
        calls.append((offset, length))
        return real(self, offset, length)

    monkeypatch.setattr(storage_base.Ranged, "read", read)
    return calls


def test_the_verifier_reads_the_footer_and_the_sidecar_blob_only(table: Table, iceberg_env: str,  # noqa: F811
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The sidecar deleted by cleanup: the kept copy is read by ranges — the footer, then the sidecar blob in pieces
    (not the companion files' blobs, not the whole file) — and the table verifies."""
    _data, _follow_up, puffin = attested(table)
    data = puffin.read_bytes()
    index = read_footer(len(data), Reader(data))
    assert index is not None and len(index.blobs) > 1  # the sidecar and its content companion(s)
    sidecar = index.sidecars()[0]
    delete_sidecars(puffin)
    calls = _count_ranged_reads(monkeypatch)
    rc, doc = cli()
    assert rc == 0 and doc["level"] == "bytes", doc
    body = len(footer_of(data)[0])
    blob_bytes = sum(n for o, n in calls if o < body and o != 0)
    assert blob_bytes == sidecar.length, (calls, sidecar)
    assert all(o >= body or o == 0 or sidecar.offset <= o < sidecar.offset + sidecar.length for o, _ in calls)
    assert sum(n for _, n in calls) < len(data)


@pytest.mark.parametrize("attack", ["truncated footer", "sidecar offset past the end", "negative length",
                                    "overlapping blobs", "footer size negative"])
def test_a_hostile_kept_file_is_a_missing_sidecar_never_a_crash(table: Table, iceberg_env: str,  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                attack: str) -> None:
    _data, _follow_up, puffin = attested(table)
    data = puffin.read_bytes()
    body, doc = footer_of(data)
    if attack == "truncated footer":
        forged = data[:len(data) - 40]
    elif attack == "footer size negative":
        forged = with_footer(body, doc, length=-16)
    else:
        sidecar = doc["blobs"][0]
        if attack == "sidecar offset past the end":
            sidecar["offset"] = len(data) + 1
        elif attack == "negative length":
            sidecar["length"] = -len(data)
        else:
            doc["blobs"][1]["offset"], doc["blobs"][1]["length"] = sidecar["offset"], sidecar["length"]
        forged = with_footer(body, doc)
    puffin.write_bytes(forged)
    delete_sidecars(puffin)
    _count_ranged_reads(monkeypatch)  # every range asked for is inside the file
    refused("sidecar_missing")


def test_a_kept_file_changed_between_its_footer_and_its_blob_is_not_read_as_the_sidecar(
        table: Table, iceberg_env: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The footer read, then the file replaced by a shorter one (the attacker races the verifier): the blob is not
    read from the new file (its size differs), and the sidecar is missing."""
    _data, _follow_up, puffin = attested(table)
    delete_sidecars(puffin)
    real = kept_module.read_footer
    data = puffin.read_bytes()

    def then_replace(size: int, read: Callable[[int, int], bytes]) -> Any:
        index = real(size, read)
        puffin.write_bytes(data[:len(data) // 2])
        return index

    monkeypatch.setattr("carriers.iceberg.carriage.read_footer", then_replace)
    refused("sidecar_missing")


def test_the_kept_copy_is_read_by_ranges_from_a_path_of_that_size(tmp_path: Path) -> None:
    """``Storage.open_ranged`` refuses ranges outside what it opened, and a short read (the file shrank) is an
    OSError, never fewer bytes."""
    path = tmp_path / "root" / "f.bin"
    path.parent.mkdir()
    path.write_bytes(b"0123456789")
    storage = storage_base_storage(tmp_path / "root")
    opened = storage.open_ranged("f.bin")
    assert opened is not None
    with opened:
        assert opened.read(2, 3) == b"234" and b"".join(opened.chunks(0, 10, 4)) == b"0123456789"
        for offset, length in ((-1, 2), (8, 3), (0, -1), (11, 0), (2 ** 63, 1)):
            with pytest.raises(ValueError):
                opened.read(offset, length)
        path.write_bytes(b"01234")
        with pytest.raises(OSError):
            opened.read(3, 5)
    assert storage.open_ranged("missing.bin") is None


def storage_base_storage(root: Path) -> storage_base.Storage:
    from carriers.storage import DeltaStorage

    return DeltaStorage(str(root))


def test_a_store_failure_while_the_kept_blob_is_read_is_coded_not_a_mismatch(
        table: Table, iceberg_env: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The store fails while the sidecar blob streams into the parser: its coded error (table_unreadable), as a
    whole read raised it — never sidecar_mismatch (bytes that do not parse)."""
    from attest.errors import CarrierError
    from carriers.storage.errors import StoreReadError

    _data, _follow_up, puffin = attested(table)
    body = len(footer_of(puffin.read_bytes())[0])
    delete_sidecars(puffin)
    real = storage_base.Ranged.read

    def read(self: storage_base.Ranged, offset: int, length: int) -> bytes:
        if 0 < offset < body:
            raise StoreReadError(CarrierError("cannot read the kept copy: connection reset by peer"))
        return real(self, offset, length)

    monkeypatch.setattr(storage_base.Ranged, "read", read)
    doc = refused("table_unreadable")
    assert "connection reset" in json.dumps(doc)
