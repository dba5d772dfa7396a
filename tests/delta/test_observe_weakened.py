"""``observe`` (carriers/core.py): an input's proof class is never weakened without a word. An attested version whose
attestation does not hold at the files level (a tampered sidecar) is observed heuristic with a
WARNING on logger ``attest.inputs`` naming the table, version and codes — before, silently. An unattested version is
heuristic whatever its files are: it is not listed (so a listing error is not raised there; it could not make the
input weaker), and no warning is given for it nor for a stale attestation (an earlier version's)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.delta.conftest import PROGRAM


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "attest.inputs" and r.levelno >= logging.WARNING]


@pytest.fixture
def attested(tmp_path: Path) -> tuple[Path, Any]:
    path = tmp_path / "up"
    write_deltalake(str(path), pa.table({"x": [1, 2, 3]}))
    result = attest_after_write(str(path), model="up", program_hash=PROGRAM)
    assert DeltaCarrier(str(path)).observe(0).proof_class == "strong"
    return path, result


def test_a_tampered_attestation_is_observed_heuristic_with_a_warning(attested: tuple[Path, Any],
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    path, result = attested
    sidecar = Path(result.sidecar)
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"size":', b'"size": ', 1))  # no longer the bound BLAKE3
    with caplog.at_level(logging.INFO):
        observed = DeltaCarrier(str(path)).observe(0)
    assert observed.proof_class == "heuristic" and observed.version == "0"
    [line] = _warnings(caplog)
    assert f"input {DeltaCarrier(str(path)).reference} version 0 is attested but its attestation does not hold" in line
    assert "recorded as a heuristic input" in line


def test_unattested_and_stale_versions_are_heuristic_without_a_warning(attested: tuple[Path, Any],
                                                                       caplog: pytest.LogCaptureFixture,
                                                                       tmp_path: Path) -> None:
    path, _ = attested
    write_deltalake(str(path), pa.table({"x": [4]}), mode="append")  # version 2 (1 is the attestation's commit)
    assert DeltaCarrier(str(path)).observe(2).proof_class == "heuristic"  # the attestation of 0 is stale there
    bare = tmp_path / "bare"
    write_deltalake(str(bare), pa.table({"x": [1]}))
    assert DeltaCarrier(str(bare)).observe(0).proof_class == "heuristic"
    assert _warnings(caplog) == []


def test_a_listing_error_surfaces_only_where_it_could_weaken_the_input(attested: tuple[Path, Any], tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = attested

    def broken(self: DeltaCarrier, version: Any = None) -> Any:
        raise OSError("listing failed")

    monkeypatch.setattr(DeltaCarrier, "state", broken)
    with pytest.raises(OSError, match="listing failed"):
        DeltaCarrier(str(path)).observe(0)  # attested: the listing decides strong or heuristic, so its error is raised
    bare = tmp_path / "bare"
    write_deltalake(str(bare), pa.table({"x": [1]}))
    assert DeltaCarrier(str(bare)).observe(0).proof_class == "heuristic"  # unattested: nothing listed


def _tamper(result: Any) -> None:
    sidecar = Path(result.sidecar)
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"size":', b'"size": ', 1))  # no longer the bound BLAKE3


def test_a_record_built_on_a_tampered_version_returns_the_warning_coded(attested: tuple[Path, Any],
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    """The version an append built on is recorded as an input: its attestation no longer holding, the record's
    WriteResult.warnings says so, code first (``input_weakened``), and the warning is logged once, as before."""
    path, result = attested
    _tamper(result)
    write_deltalake(str(path), pa.table({"x": [4]}), mode="append")
    with caplog.at_level(logging.INFO):
        done = DeltaCarrier(str(path)).record(model="down", program_hash=PROGRAM)
    [said] = done.warnings
    assert said.startswith("input_weakened: input ") and "recorded as a heuristic input" in said, said
    assert done.manifest is not None and done.manifest.inputs_proof_class == "heuristic"
    assert _warnings(caplog) == [f"attest: {said}"]


def test_record_input_json_lists_a_weakened_input_and_says_it_once(attested: tuple[Path, Any], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """`attest record DOWN --input UP --json` with UP's attestation tampered: exit 0, the warning in ``warnings``
    (was: only logged), said once on stderr by the command, not logged besides."""
    import json

    from attest.cli import main

    path, result = attested
    _tamper(result)
    down = tmp_path / "down"
    write_deltalake(str(down), pa.table({"y": [1]}))
    capsys.readouterr()
    with caplog.at_level(logging.INFO):
        rc = main(["record", str(down), "--model", "down", "--program-hash", PROGRAM, "--input", f"{path}@0",
                   "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    doc = json.loads(out)
    [said] = doc["warnings"]
    assert said.startswith(f"input_weakened: input {DeltaCarrier(str(path)).reference} version 0 is attested"), said
    assert doc["manifest"]["inputs_proof_class"] == "heuristic"
    assert err.strip() == f"attest: warning: {said}", err
    assert _warnings(caplog) == []
