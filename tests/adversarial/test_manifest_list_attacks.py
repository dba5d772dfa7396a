"""Attacks on a standalone manifest's long output list, which is checked in whole-list passes (attest.schema,
attest.canonical.all_hex_digests, attest.model's depth walk): a forged entry among many real ones, shaped to slip
through a pass that looks at the list as one string or one level, must never make the manifest VERIFIED."""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import pytest

from attest.build import build_manifest
from tests.adversarial.conftest import codes, verify

COUNT = 300


def _artifacts(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    folder = tmp_path / "out"
    folder.mkdir()
    pairs = []
    for i in range(COUNT):
        data = f"row {i}".encode()
        (folder / f"f{i:04d}.bin").write_bytes(data)
        pairs.append((f"f{i:04d}.bin", blake3.blake3(data).hexdigest()))
    document = build_manifest(model="m", program_hash="a" * 64, env_hash="b" * 64, outputs=pairs).to_dict()
    return folder, document


def _verify(tmp_path: Path, text: str, folder: Path) -> tuple[int, dict[str, object]]:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(text, encoding="utf-8")
    return verify(str(manifest), "--artifacts-dir", str(folder))


def test_the_honest_list_verifies(tmp_path: Path) -> None:
    folder, document = _artifacts(tmp_path)
    rc, out = _verify(tmp_path, json.dumps(document), folder)
    assert rc == 0 and out["passed"] is True, out


@pytest.mark.parametrize("where", [0, COUNT // 2, COUNT - 1])
@pytest.mark.parametrize("forge", ["upper", "split", "arabic", "nested", "extra key", "int"])
def test_one_forged_entry_among_many_is_never_verified(tmp_path: Path, where: int, forge: str) -> None:
    folder, document = _artifacts(tmp_path)
    outputs: list[dict[str, object]] = document["output_hashes"]  # type: ignore[assignment]
    real = str(outputs[where]["hash"])
    neighbour = where + 1 if where + 1 < COUNT else where - 1
    if forge == "upper":  # the same digest in upper case: hex, but not the published schema's
        outputs[where]["hash"] = real.upper()
    elif forge == "split":  # 63 + 65 characters: joined with the neighbour they are still runs of hex
        joined = real + str(outputs[neighbour]["hash"])
        outputs[where]["hash"], outputs[neighbour]["hash"] = joined[:63], joined[63:]
    elif forge == "arabic":
        outputs[where]["hash"] = "\u0660" * 64
    elif forge == "nested":
        outputs[where]["hash"] = {"hash": real}
    elif forge == "extra key":
        outputs[where]["size"] = 1
    else:
        outputs[where]["hash"] = int(real[:15], 16)
    rc, out = _verify(tmp_path, json.dumps(document), folder)
    assert rc != 0 and out["passed"] is False, out
    assert codes(out), out


def test_a_duplicate_key_inside_one_entry_among_many_is_refused(tmp_path: Path) -> None:
    # Readers keep the first or the last value of a repeated key: the attacker offers both a real and a forged hash.
    folder, document = _artifacts(tmp_path)
    text = json.dumps(document)
    entry = json.dumps(document["output_hashes"][COUNT // 2])  # type: ignore[index]
    forged = entry[:-1] + ', "hash": "' + "f" * 64 + '"}'
    rc, out = _verify(tmp_path, text.replace(entry, forged, 1), folder)
    assert rc == 2 and out["passed"] is False and "duplicate key" in json.dumps(out), out


def test_a_deep_branch_in_a_manifest_over_a_mebibyte_is_refused(tmp_path: Path) -> None:
    # Past 1 MiB the depth walk runs without the bracket count: a branch 128 deep among the outputs is still found.
    folder, document = _artifacts(tmp_path)
    deep: object = 1
    for _ in range(126):
        deep = [deep]
    document["output_hashes"][7]["path"] = deep  # type: ignore[index]
    document["padding"] = "x" * (1 << 20)
    rc, out = _verify(tmp_path, json.dumps(document), folder)
    assert rc == 2 and out["passed"] is False and "deep" in json.dumps(out), out
