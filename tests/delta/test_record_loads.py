"""A Delta ``record`` loads each version it reads once (issue 35: the latest version was loaded ~12 times, ~18% of a
record of 200,000 files): asked the latest version again, the carrier lists the log and loads it again only when the
table moved. Counted, not timed: every load goes through ``carriers.delta.carrier.DeltaTable``. The fencing stays: a
data commit that lands while a record runs still keeps its attestation from being committed (``superseded``), and a
metadata-only commit that lands meanwhile is committed on top of."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from attest.errors import Code, SupersededError
from attest.tables import DataFile
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import read_commit
from tests.delta.conftest import PROGRAM


def _attested_append(path: Path) -> None:
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)  # version 1: its attestation commit
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 2, built on version 0


def test_a_record_loads_the_latest_version_once_and_its_input_once(tmp_path: Path,
                                                                   loads: Counter[int | None]) -> None:
    path = tmp_path / "t"
    _attested_append(path)
    loads.clear()
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "2" and result.manifest.inputs_proof_class == "strong"
    # The latest version (2) once. The input it built on is version 1, the attestation commit over version 0: whether
    # readers of 1 get what readers of 0 get is asked of each once (attestable_version); 0's files are then listed
    # and checked against its attestation (observe) on that same load.
    assert loads == Counter({None: 1, 1: 1, 0: 1})
    assert verify_table(DeltaCarrier(str(path)), level="bytes").passed


def test_the_command_line_record_loads_the_latest_version_once(tmp_path: Path, loads: Counter[int | None],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`attest record` reads the attestation in force before it records (the dialect check): the same load."""
    path = tmp_path / "t"
    _attested_append(path)
    loads.clear()
    assert main(["record", str(path), "--model", "orders", "--sql", "select 1"]) == 0
    assert loads == Counter({None: 1, 1: 1, 0: 1})
    assert "RECORDED" in capsys.readouterr().out


def test_after_its_own_commit_the_carrier_knows_the_latest_version_without_loading_it(
        tmp_path: Path, loads: Counter[int | None]) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    carrier = DeltaCarrier(str(path))
    carrier.record(model="orders", program_hash=PROGRAM)  # version 1
    assert loads == Counter({None: 1})
    carrier._recording = True  # as inside a record: nothing forgotten
    assert carrier.latest_version() == 1 == DeltaTable(str(path)).version()
    assert loads == Counter({None: 1})
    # Another writer's commit: the listing says the table moved, and the latest version is loaded again.
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 2
    assert carrier.latest_version() == 2
    assert loads == Counter({None: 2})


def _during_hashing(monkeypatch: pytest.MonkeyPatch, action: Any) -> None:
    """Run ``action`` once, after the record listed the live files and before it commits (as it hashes them)."""
    original = DeltaCarrier.hash_files
    done: list[bool] = []

    def hashing(self: DeltaCarrier, files: Sequence[DataFile], **kwargs: Any) -> dict[str, str]:
        if not done:
            done.append(True)
            action()
        return original(self, files, **kwargs)

    monkeypatch.setattr(DeltaCarrier, "hash_files", hashing)


def test_a_data_commit_landing_while_record_runs_is_still_fenced(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The table moved under the record: its attestation of version 0 would not be in force. No commit is written."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    _during_hashing(monkeypatch, lambda: write_deltalake(str(path), pa.table({"v": [3]}), mode="append"))
    with pytest.raises(SupersededError) as caught:
        DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert caught.value.code == Code.SUPERSEDED
    assert DeltaTable(str(path)).version() == 1  # the data commit only: no attestation commit on top
    commit = read_commit(DeltaCarrier(str(path)).storage, 1)
    assert commit is not None and commit.touches_files


def test_a_property_edit_landing_while_record_runs_is_committed_on_top(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0

    def edit() -> None:
        DeltaTable(str(path)).alter.set_table_properties({"delta.appendOnly": "false"})  # version 1

    _during_hashing(monkeypatch, edit)
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "0"
    table = DeltaTable(str(path))
    assert table.version() == 2  # the attestation commit, on top of the edit
    configuration = table.metadata().configuration
    assert configuration.get("delta.appendOnly") == "false"
    assert props.attestation_keys(configuration)[props.KEY_VERSION] == "0"
    assert verify_table(DeltaCarrier(str(path)), level="bytes").passed
