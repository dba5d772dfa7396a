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


# ---- what a verification of the directory leaves out (carriers.standalone.directory_notes) ----------------------
def _verified_directory(tmp_path: Path, valid_doc: dict[str, Any], *, marker: bool = True) -> Path:
    out = tmp_path / "out"
    (out / "p=1").mkdir(parents=True)
    payloads = {"p=1/part-0.parquet": b"PAR1 one PAR1", "a.parquet": b"PAR1 two PAR1"}
    valid_doc["output_hashes"] = []
    for rel, payload in payloads.items():
        (out / rel).write_bytes(payload)
        valid_doc["output_hashes"].append({"hash": blake3.blake3(payload).hexdigest(), "path": rel})
    StandaloneCarrier(out).write(manifest(valid_doc), marker=marker)
    return out


def _verify_dir(out: Path) -> dict[str, Any]:
    from tests.conftest import run_cli

    result = run_cli("verify", str(out), "--json")
    doc: dict[str, Any] = json.loads(result.stdout)
    assert result.returncode == 0 and doc["verdict"] == "VERIFIED (bytes, unsigned)", result.stdout + result.stderr
    return doc


def test_a_clean_directory_has_no_notes(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    out = _verified_directory(tmp_path, valid_doc)
    (out / "_tmp").mkdir()
    (out / "_tmp" / "x.parquet").write_bytes(b"staging")  # readers of a directory skip '_' and '.' names
    (out / ".x.crc").write_bytes(b"crc")
    assert _verify_dir(out)["notes"] == []


def test_files_the_manifest_does_not_list_are_named(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    """A planted file (or a symlinked folder) in the directory verified is read by anyone reading the whole
    directory: the verdict stays about the manifest's outputs, and a note says what else is there."""
    out = _verified_directory(tmp_path, valid_doc)
    (out / "planted.parquet").write_bytes(b"PAR1 rows nobody attested PAR1")
    (out / "p=2").mkdir()
    (out / "p=2" / "part-9.parquet").write_bytes(b"PAR1 more PAR1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.parquet").write_bytes(b"x")
    (out / "p=3").symlink_to(elsewhere, target_is_directory=True)
    notes = _verify_dir(out)["notes"]
    assert len(notes) == 1 and notes[0].startswith("3 file(s) in "), notes
    for rel in ("planted.parquet", "p=2/part-9.parquet", "p=3/"):
        assert rel in notes[0]
    assert "part-0" not in notes[0] and "a.parquet" not in notes[0]


def test_the_walk_is_bounded(tmp_path: Path, valid_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from carriers import standalone

    out = _verified_directory(tmp_path, valid_doc)
    for i in range(20):
        (out / f"extra-{i:02}.bin").write_bytes(b"x")
    monkeypatch.setattr(standalone, "WALK_LIMIT", 10)
    notes = standalone.directory_notes(out, (out / MANIFEST_NAME).read_bytes())
    assert len(notes) == 1 and notes[0].startswith("at least ") and "extra-00.bin" in notes[0], notes


@pytest.mark.parametrize("marker", ["another", "fifo", "huge", "link to /dev/zero"])
def test_a_marker_naming_another_manifest_is_said(tmp_path: Path, valid_doc: dict[str, Any], marker: str) -> None:
    import os

    out = _verified_directory(tmp_path, valid_doc)
    path = out / MARKER_NAME
    path.unlink()
    if marker == "another":
        path.write_text(f"blake3:{'0' * 64}\n")
    elif marker == "fifo":
        os.mkfifo(path)  # never opened: the verification does not hang on it
    elif marker == "huge":
        path.write_bytes(b"blake3:" + b"0" * 10_000)
    else:
        path.symlink_to("/dev/zero")  # no end to read: only regular files of a few bytes are read
    notes = _verify_dir(out)["notes"]
    assert len(notes) == 1 and "completion marker _SUCCESS names another manifest.json" in notes[0], notes


def test_a_matching_marker_or_none_is_not_a_note(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    assert _verify_dir(_verified_directory(tmp_path / "a", valid_doc))["notes"] == []
    assert _verify_dir(_verified_directory(tmp_path / "b", valid_doc, marker=False))["notes"] == []


def test_a_tree_of_empty_folders_stops_the_walk_too(tmp_path: Path, valid_doc: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from carriers import standalone

    out = _verified_directory(tmp_path, valid_doc)
    deep = out
    for i in range(50):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "late.parquet").write_bytes(b"x")
    monkeypatch.setattr(standalone, "WALK_LIMIT", 20)
    notes = standalone.directory_notes(out, (out / MANIFEST_NAME).read_bytes())
    # Stopped among the folders, before the file 50 levels down, and says so.
    assert len(notes) == 1 and "up to 20 entries only" in notes[0], notes


@pytest.mark.timeout(60)
@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero", "folder"])
def test_carrier_files_that_are_no_files_are_refused_never_read(tmp_path: Path, valid_doc: dict[str, Any],
                                                                what: str) -> None:
    """The carrier read manifest.json, the marker and envelopes with Path.read_bytes: a FIFO blocked it forever, a link
    to /dev/zero read until memory ran out. Each is now a coded refusal, at once."""
    import os

    carrier = StandaloneCarrier(tmp_path)
    carrier.write(manifest(valid_doc), marker=True)
    for name in (MANIFEST_NAME, MARKER_NAME):
        (tmp_path / name).unlink()
        if what == "fifo":
            os.mkfifo(tmp_path / name)
        elif what == "folder":
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).symlink_to("/dev/zero")
    with pytest.raises(CarrierError, match="not a regular file"):
        carrier.read()
    assert carrier.marker_matches() is False


def test_an_oversized_object_at_a_carrier_name_is_refused_not_downloaded(valid_doc: dict[str, Any],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import attest.model

    carrier = StandaloneCarrier("memory://bucket/big")
    carrier.write(manifest(valid_doc))
    monkeypatch.setattr(attest.model, "MAX_DOCUMENT_BYTES", 64)  # any manifest is larger than this
    with pytest.raises(CarrierError, match="larger than 64 bytes"):
        carrier.read()
