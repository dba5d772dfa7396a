"""Bounded metadata: an attestation of a 10,000-file table keeps its commit <= 16 KiB."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.delta.conftest import PROGRAM

N_FILES = 10_000


def _last_commit(table: Path) -> tuple[Path, list[dict[str, object]]]:
    last = sorted((table / "_delta_log").glob("*.json"))[-1]
    return last, [json.loads(line) for line in last.read_text().splitlines()]


@pytest.mark.slow
def test_ten_thousand_files_attest_in_a_small_commit(tmp_path: Path) -> None:
    table = tmp_path / "big"
    # One partition per row: delta-rs commits N_FILES tiny files in one commit within about a second.
    write_deltalake(str(table), pa.table({"p": list(range(N_FILES)), "v": list(range(N_FILES))}), partition_by=["p"])
    attest_after_write(str(table), model="big", program_hash=PROGRAM)
    carrier = DeltaCarrier(str(table))
    assert len(carrier.list_files()) == N_FILES
    commit, actions = _last_commit(table)
    assert commit.stat().st_size <= 16 * 1024, commit.stat().st_size
    assert not any("add" in a for a in actions)
    attestation = carrier.read()
    assert attestation is not None and len(attestation.document["output_hashes"]) == N_FILES
    assert verify_table(carrier, level="files").passed
    # A re-attestation (all hashes reused from the sidecar) is just as small.
    attest_after_write(str(table), model="big", program_hash=PROGRAM)
    commit, _ = _last_commit(table)
    assert commit.stat().st_size <= 16 * 1024
    config = carrier._load().metadata().configuration
    assert config[props.KEY_OUTPUTS_COUNT] == str(N_FILES)
    assert not any(k.startswith(props.PREFIX + "output_hashes") for k in config)
