"""The standalone JSON carrier: atomic writes, run-unique copies, the completion marker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.errors import CarrierError, ManifestMissingError
from attest.model import Manifest
from carriers.base import Carrier
from carriers.standalone import MANIFEST_NAME, MARKER_NAME, StandaloneCarrier, run_unique_name


def manifest(valid_doc: dict[str, Any], run_id: str = "run-1") -> Manifest:
    valid_doc["subject"]["run_id"] = run_id
    return Manifest.from_dict(valid_doc)


def test_is_a_carrier(tmp_path: Path) -> None:
    assert isinstance(StandaloneCarrier(tmp_path), Carrier)


def test_write_read_round_trip(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier(tmp_path)
    m = manifest(valid_doc)
    carrier.write(m)
    read = carrier.read()
    assert read is not None and Manifest.from_dict(read.document) == m
    assert (tmp_path / "manifest-run-1.json").read_bytes() == (tmp_path / MANIFEST_NAME).read_bytes()
    assert not (tmp_path / MARKER_NAME).exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_marker_carries_blake3_of_the_manifest_bytes(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier(tmp_path)
    carrier.write(manifest(valid_doc), marker=True)
    body = (tmp_path / MARKER_NAME).read_text()
    assert body == f"blake3:{blake3.blake3((tmp_path / MANIFEST_NAME).read_bytes()).hexdigest()}\n"
    assert carrier.marker_matches() is True
    (tmp_path / MANIFEST_NAME).write_text((tmp_path / MANIFEST_NAME).read_text() + " ")
    assert carrier.marker_matches() is False


def test_no_marker_without_a_readable_manifest(tmp_path: Path) -> None:
    with pytest.raises(ManifestMissingError):
        StandaloneCarrier(tmp_path).write_marker()
    assert not (tmp_path / MARKER_NAME).exists()


def test_second_run_keeps_the_first_runs_copy(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier(tmp_path)
    first = manifest(dict(valid_doc, subject=dict(valid_doc["subject"])), "run-1")
    second = manifest(dict(valid_doc, subject=dict(valid_doc["subject"])), "run-2")
    carrier.write(first)
    carrier.write(second)
    assert Manifest.from_json((tmp_path / "manifest-run-1.json").read_bytes()) == first
    assert Manifest.from_json((tmp_path / MANIFEST_NAME).read_bytes()) == second
    # Re-writing the same run with the same bytes is idempotent; with other bytes it is refused (M4).
    carrier.write(second)
    changed = Manifest.from_dict(dict(second.to_dict(), program_hash="f" * 64))
    with pytest.raises(CarrierError):
        carrier.write(changed)
    assert Manifest.from_json((tmp_path / MANIFEST_NAME).read_bytes()) == second


@pytest.mark.parametrize("run_id", ["../../etc/passwd", "a/b", "..", "x\x00y", "ok-1.2_3"])
def test_run_unique_name_never_escapes(run_id: str) -> None:
    name = run_unique_name(run_id)
    assert "/" not in name and "\x00" not in name and name.startswith("manifest-") and name != "manifest-..json"


def test_refuses_to_write_an_invalid_manifest(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    bad = Manifest.from_dict(valid_doc)
    object.__setattr__(bad, "program_hash", "nope")
    with pytest.raises(CarrierError):
        StandaloneCarrier(tmp_path).write(bad)
    assert list(tmp_path.iterdir()) == []


def test_list_files_excludes_carrier_files(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    (tmp_path / "a.parquet").write_bytes(b"12345")
    carrier = StandaloneCarrier(tmp_path)
    carrier.write(manifest(valid_doc), marker=True)
    assert [(f.path, f.size) for f in carrier.list_files()] == [("a.parquet", 5)]


def test_object_store_path_uses_fsspec(valid_doc: dict[str, Any]) -> None:
    carrier = StandaloneCarrier("memory://bucket/out")
    carrier.write(manifest(valid_doc), marker=True)
    read = carrier.read()
    assert read is not None and read.document["subject"]["run_id"] == "run-1"
    assert carrier.marker_matches() is True
    assert json.loads(carrier._get("manifest-run-1.json") or b"null")["program_hash"] == valid_doc["program_hash"]
