"""``record``'s check that its attestation is in force (``_check_in_force``) reads the table metadata again but takes
the sidecar it names as the one just written, without parsing it again, only when the bytes stored under the recorded
BLAKE3 are that sidecar's: a sidecar swapped after the commit (another writer) is still read, and refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import Table

from attest.errors import SupersededError
from carriers.iceberg.carrier import IcebergCarrier
from carriers.sidecar import Sidecar
from tests.iceberg.conftest import CATALOG, PROGRAM, local, rows


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    decode = Sidecar.decode_chunks.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Sidecar], *a: Any, **k: Any) -> Sidecar:
        calls.append(1)
        return decode(cls, *a, **k)  # type: ignore[no-any-return]

    monkeypatch.setattr(Sidecar, "decode_chunks", classmethod(counted))
    return calls


def _fields(carrier: IcebergCarrier) -> tuple[Any, ...]:
    att = carrier.read()
    assert att is not None
    return (att.attested_version, att.problems, att.manifest_identity, att.sidecar_digest, att.table_identity,
            sorted((f.path, f.size, f.hash) for f in att.files or ()), att.inputs, att.view and att.view.digest,
            att.content, att.document)


def test_the_sidecar_just_written_is_not_parsed_again(table: Table, decodes: list[int]) -> None:
    table.append(rows(0))
    table.append(rows(3))
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    carrier.record(model="m", program_hash=PROGRAM)
    assert decodes == []  # nothing attested before, the one written taken as read
    fresh = IcebergCarrier(table, catalog_name=CATALOG)
    assert not _fields(fresh)[1]  # a reader that parses it finds it clean
    assert decodes


def test_a_sidecar_swapped_after_the_commit_is_read_and_refused(table: Table, decodes: list[int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    table.append(rows(0))
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    commit = IcebergCarrier._commit

    def commit_then_swap(self: IcebergCarrier, v: Any, keys: dict[str, str], manifest: Any) -> None:
        commit(self, v, keys, manifest)
        assert self._written is not None
        stored = Path(local(self.storage.location(f"{self.sidecar_dir}/{self._written[0]}.json")))
        stored.chmod(0o644)
        stored.write_bytes(stored.read_bytes().replace(b'"files"', b'"files" ', 1))  # other bytes, same document

    monkeypatch.setattr(IcebergCarrier, "_commit", commit_then_swap)
    with pytest.raises(SupersededError, match="sidecar"):
        carrier.record(model="m", program_hash=PROGRAM)
    assert decodes  # the stored bytes were read and parsed
