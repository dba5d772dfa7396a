"""A record observes the version its data commit built on for its properties and table id (whether an attestation is
in force there): taken from the version the record listed when the commit between holds no metaData action, without
loading the earlier version's files (docs/scale.md, sixteenth pass). The input recorded is the one loading it gives."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import DeltaCarrier
from carriers.sidecar import Sidecar
from tests.delta.conftest import PROGRAM


def _appended(path: Path) -> None:
    write_deltalake(str(path), pa.table({"v": [1, 2]}))
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")


def _evolved(path: Path) -> None:  # the append adds a column: its commit holds a metaData action
    write_deltalake(str(path), pa.table({"v": [1, 2]}))
    write_deltalake(str(path), pa.table({"v": [3], "w": ["x"]}), mode="append", schema_mode="merge")


def _attested_then_appended(path: Path) -> None:
    write_deltalake(str(path), pa.table({"v": [1, 2]}))
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")


def _inputs(path: Path, monkeypatch: pytest.MonkeyPatch, shortcut: bool) -> tuple[Any, ...]:
    if not shortcut:  # the code before: every version's metadata from its own load
        monkeypatch.setattr(DeltaCarrier, "_metadata_table", lambda self, n: self._load(n))
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    monkeypatch.undo()
    assert result.sidecar is not None and result.manifest is not None
    data = Path(result.sidecar).read_bytes()
    sidecar = Sidecar.decode(data, None)
    # Each input but its location (the two copies of the table are two folders).
    return result.manifest.inputs_hash, result.manifest.inputs_proof_class, \
        [(i.table, i.version, i.snapshot_id, i.content, i.proof_class) for i in sidecar.inputs]


def test_the_built_on_version_is_not_loaded_for_its_properties(tmp_path: Path, loads: Counter[int | None]) -> None:
    path = tmp_path / "t"
    _appended(path)
    loads.clear()
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.manifest is not None and result.manifest.inputs_proof_class == "heuristic"
    assert loads == Counter({None: 1})  # the latest version only (version 0 was loaded too before)
    attestation = DeltaCarrier(str(path)).read()
    assert attestation is not None and attestation.inputs is not None
    (observed,) = attestation.inputs
    assert observed.version == "0" and observed.table == f"delta:{DeltaTable(str(path)).metadata().id}"


def test_a_commit_with_a_metadata_action_loads_the_version_under_it(tmp_path: Path,
                                                                   loads: Counter[int | None]) -> None:
    path = tmp_path / "t"
    _evolved(path)
    loads.clear()
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert loads == Counter({None: 1, 0: 1})


@pytest.mark.parametrize("history", [_appended, _evolved, _attested_then_appended])
def test_the_input_recorded_is_the_one_loading_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     history: Callable[[Path], None]) -> None:
    import shutil

    history(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    ours = _inputs(tmp_path / "a", monkeypatch, shortcut=True)
    before = _inputs(tmp_path / "b", monkeypatch, shortcut=False)
    assert ours == before
