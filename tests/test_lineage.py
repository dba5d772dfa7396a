"""`attest lineage`: walking upstream through recorded inputs, with each node checked."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from carriers.lineage import walk
from tests.conftest import run_cli


def _pipeline(tmp_path: Path) -> tuple[Path, Path, Path]:
    bronze, raw, silver = tmp_path / "bronze", tmp_path / "raw", tmp_path / "silver"
    write_deltalake(str(bronze), pa.table({"a": [1, 2, 3]}))
    write_deltalake(str(raw), pa.table({"a": [0]}))
    write_deltalake(str(silver), pa.table({"a": [2, 4, 6]}))
    assert run_cli("record", str(bronze), "--model", "bronze", "--sql", "SELECT 1").returncode == 0
    result = run_cli("record", str(silver), "--model", "silver", "--sql", "SELECT a * 2 AS a FROM bronze",
                     "--input", str(bronze), "--input", f"{raw}@0")
    assert result.returncode == 0, result.stderr
    return bronze, raw, silver


def test_lineage_tree_marks_strong_heuristic_and_unattested(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    root = walk(str(silver))
    assert root.attested and root.passed and root.model == "silver" and root.inputs_proof_class == "heuristic"
    by_model = {child.model: child for child in root.inputs}
    assert by_model["bronze"].observed_as == "strong" and by_model["bronze"].passed
    unattested = by_model[None]
    assert unattested.observed_as == "heuristic" and not unattested.attested and unattested.version == "0"


def test_lineage_shows_a_broken_upstream(tmp_path: Path) -> None:
    bronze, _, silver = _pipeline(tmp_path)
    (original,) = bronze.glob("*.parquet")
    write_deltalake(str(bronze), pa.table({"a": [9]}), mode="append")
    # silver observed bronze at version 0, which still verifies by time travel: the walk uses that version.
    root = walk(str(silver))
    bronze_node = next(c for c in root.inputs if c.model == "bronze")
    assert bronze_node.version == "0" and bronze_node.passed
    # Flipping a byte of that version's file breaks it at the bytes level, and the tree says so.
    data = bytearray(original.read_bytes())
    data[-12] ^= 1
    original.write_bytes(bytes(data))
    assert next(c for c in walk(str(silver), level="files").inputs if c.model == "bronze").passed
    broken = next(c for c in walk(str(silver), level="bytes").inputs if c.model == "bronze")
    assert not broken.passed and "artifact_hash_mismatch" in broken.verdict


def test_cli_lineage_text_and_json(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    text = run_cli("lineage", str(silver))
    assert text.returncode == 1  # an upstream is unattested: the chain of evidence is not whole
    assert "ATTESTED ✓ model=silver" in text.stdout and "[read as strong]" in text.stdout
    assert "UNATTESTED" in text.stdout
    tree = json.loads(run_cli("lineage", str(silver), "--json").stdout)
    assert tree["model"] == "silver" and len(tree["inputs"]) == 2
    assert run_cli("lineage", str(tmp_path / "missing")).returncode == 2
