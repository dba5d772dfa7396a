"""The check after a record's commit (carriers.core.AttestedTable._check_in_force) says what it read back when the
attestation just written is not the one in force: none, one binding another version, one read back with a problem,
or another manifest. A fixture once failed on this check (`superseded`, tests/adversarial/
test_delta_many_files_refused.py, at load 13) with a message that could not tell these apart; not reproduced since
(docs/delta.md, "Attest after an ordinary write", step 4). Each case is made by changing what the check reads
back, never the table."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import Code, Problem, SupersededError
from carriers.delta.carrier import DeltaCarrier
from tests.delta.conftest import PROGRAM

CASES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "none": (lambda att: None, "(no attestation is in force)"),
    "another-version": (lambda att: dataclasses.replace(att, attested_version="0"),
                        "(the one in force binds version 0 ("),
    "a-problem": (lambda att: dataclasses.replace(att, problems=(Problem(Code.SIDECAR_MISMATCH, "bytes differ"),)),
                  "(the one in force reads back with sidecar_mismatch: bytes differ)"),
    "another-manifest": (lambda att: dataclasses.replace(att, manifest_identity="0" * 64),
                         "(the one in force is another manifest ("),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_record_not_in_force_says_what_was_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        case: str) -> None:
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"id": [1, 2]}))
    write_deltalake(str(table), pa.table({"id": [3]}), mode="append")
    carrier = DeltaCarrier(str(table))
    change, said = CASES[case]
    original = DeltaCarrier.read

    def read(self: DeltaCarrier, version: Any = None) -> Any:
        return change(original(self, version))

    monkeypatch.setattr(DeltaCarrier, "_check_in_force",
                        lambda self, v, identity: _check(self, v, identity, read, monkeypatch))
    with pytest.raises(SupersededError) as caught:
        carrier.record(model="m", program_hash=PROGRAM)
    assert caught.value.code == Code.SUPERSEDED
    assert said in caught.value.message, caught.value.message
    assert "version 1 of" in caught.value.message
    monkeypatch.undo()
    att = DeltaCarrier(str(table)).read("1")  # the commit itself is whole: only the read-back was changed
    assert att is not None and att.attested_version == "1" and not att.problems


def _check(carrier: DeltaCarrier, v: Any, identity: str, read: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from carriers.core import AttestedTable

    with monkeypatch.context() as m:  # the check's own read-back changed, nothing the record read before it
        m.setattr(DeltaCarrier, "read", read)
        AttestedTable._check_in_force(carrier, v, identity)
