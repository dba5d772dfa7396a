"""A sidecar's file list is checked as a whole (one pass per rule over a table's files): one bad triple among many,
anywhere in the list, is refused, and a good list decodes to exactly its triples."""

from __future__ import annotations

import json

import pytest

from attest.canonical import blake3_hex
from attest.tables import FileIdentity
from attest.view import ReaderView
from carriers.sidecar import Sidecar, SidecarError

HEX = "0123456789abcdef" * 4


def _sidecar(count: int) -> Sidecar:
    files = tuple(FileIdentity(path=f"p={i % 7}/part-{i:05d}.parquet", size=100 + i, hash=f"{i:064x}")
                  for i in range(count))
    return Sidecar(attested_version="3", files=files, inputs=(), manifest=HEX, table="delta:t",
                   view=ReaderView(table={}, files={}))


def test_a_thousand_files_decode_to_their_triples() -> None:
    sidecar = _sidecar(1000)
    data, digest = sidecar.encode()
    decoded = Sidecar.decode(data, digest)
    assert sorted(decoded.files, key=lambda f: f.path) == sorted(sidecar.files, key=lambda f: f.path)
    assert decoded.attested_version == "3"


@pytest.mark.parametrize("where", [0, 500, 999])
@pytest.mark.parametrize(("key", "value"), [("hash", HEX.upper()), ("hash", HEX[:63]), ("hash", HEX + "0"),
                                            ("hash", "\u0660" * 64), ("hash", 7), ("size", -1)])
def test_one_bad_triple_among_a_thousand_is_refused(where: int, key: str, value: object) -> None:
    document = _sidecar(1000).to_dict()
    document["files"][where][key] = value
    data = json.dumps(document).encode()
    with pytest.raises(SidecarError, match="malformed hash or a negative size"):
        Sidecar.decode(data, blake3_hex(data))
