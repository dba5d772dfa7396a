"""Confinement checked per folder (carriers.core._plain_by_folder): a folder holding many of a table's files is listed
once rather than each file lstat'ed. Every way a file or its folder can lead outside the table is still refused, with
the listing in force (FOLDER_LISTING_MIN lowered to 1, so the fixture's few files per folder take that path) and
without it."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from carriers import core
from tests.adversarial.conftest import a_data_file, assert_refused, verify

LISTING = pytest.mark.parametrize("listing_min", [1, core.FOLDER_LISTING_MIN])


@LISTING
def test_a_symlinked_file_of_a_listed_folder_is_refused(delta: Path, tmp_path: Path, listing_min: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", listing_min)
    outside = tmp_path / "secret.bin"
    victim = delta / unquote(a_data_file(delta))
    shutil.copy(victim, outside)  # the same bytes: only confinement can tell
    victim.unlink()
    victim.symlink_to(outside)
    assert_refused(delta, "file_outside_table")
    assert_refused(delta, "file_outside_table", "--level", "files")


@LISTING
def test_a_symlinked_partition_folder_is_refused(delta: Path, tmp_path: Path, listing_min: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", listing_min)
    folder = (delta / unquote(a_data_file(delta))).parent
    copy = tmp_path / "elsewhere"
    shutil.copytree(folder, copy)  # the same files, listed as plain files through the link
    shutil.rmtree(folder)
    folder.symlink_to(copy, target_is_directory=True)
    assert_refused(delta, "file_outside_table", "--level", "files")


@LISTING
def test_a_symlink_staying_inside_the_table_still_verifies(delta: Path, listing_min: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", listing_min)
    victim = delta / unquote(a_data_file(delta))
    kept = delta / "kept.bin"
    victim.rename(kept)
    victim.symlink_to(kept)
    rc, doc = verify(str(delta))
    assert rc == 0, doc


def test_a_name_spelled_otherwise_than_listed_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system folding case or Unicode forms lists a name the table spells otherwise: that file is not taken as
    a listed plain file but resolved (lstat), so a symlink under the other spelling is still followed."""
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"x")
    (inside / "Data.bin").symlink_to(outside / "secret")
    (inside / "plain.bin").write_bytes(b"x")
    plain = core._plain_by_folder([str(inside / "Data.bin"), str(inside / "plain.bin")] * core.FOLDER_LISTING_MIN)
    assert plain[str(inside)] == frozenset({"plain.bin"})
    assert core._real_in(str(inside / "Data.bin"), plain) == str(outside / "secret")
    # As a case-folding file system would: the table's "data.bin" is not listed, so it is lstat'ed, never assumed.
    looked: list[str] = []
    monkeypatch.setattr(core, "_real_file", lambda p: looked.append(p) or p)
    core._real_in(str(inside / "data.bin"), plain)
    assert looked == [str(inside / "data.bin")]
    core._real_in(str(inside / "plain.bin"), plain)
    assert str(inside / "plain.bin") not in looked  # a listed plain file: only its folder is resolved
