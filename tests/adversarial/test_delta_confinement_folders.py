"""Confinement checked per folder (carriers.core._plain_by_folder): a folder holding many of a table's files is listed
once rather than each file lstat'ed. Every way a file or its folder can lead outside the table is still refused, with
the listing in force (FOLDER_LISTING_MIN lowered to 1, so the fixture's few files per folder take that path) and
without it."""

from __future__ import annotations

import random
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


def _layout(root: Path, outside: Path, rng: random.Random) -> list[str]:
    """A table folder of random plain files, symlinks (inside, outside, dangling), folders in place of files, missing
    files, a folder symlinked outside and a table root that is a symlink: the files' local paths."""
    (outside / "secret").write_bytes(b"x")
    (outside / "d").mkdir(exist_ok=True)
    (outside / "d" / "f0").write_bytes(b"x")
    paths: list[str] = []
    for d in range(rng.randint(1, 3)):
        folder = root / f"d{d}"
        if rng.random() < 0.2:
            folder.symlink_to(outside / "d", target_is_directory=True)  # its names are the outside folder's
            paths += [str(folder / "f0")] * rng.randint(1, 2)
            continue
        folder.mkdir()
        for i in range(rng.randint(1, 5)):
            f = folder / f"f{i}"
            what = rng.randrange(8)
            if what == 0:
                f.symlink_to(outside / "secret")
            elif what == 1:
                f.symlink_to(root / "kept")
            elif what == 2:
                f.mkdir()
            elif what == 3:
                pass  # missing
            elif what == 4:
                f.symlink_to(outside / "gone")  # dangling
            else:
                f.write_bytes(b"x")
            paths.append(str(f))
    if rng.random() < 0.2:
        paths.append(str(root / "d0" / ".." / "d0" / "f0"))  # another spelling of a listed file
    if rng.random() < 0.2:
        paths.append(str(root))  # a "file" at the root itself
    rng.shuffle(paths)
    return paths


@pytest.mark.parametrize("seed", range(40))
def test_the_folder_at_a_time_check_finds_what_the_per_file_check_finds(tmp_path: Path, seed: int,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``_confine`` judging a folder at a time (``_inside_by_folder``, all inside) or file by file: the same problems,
    in the same order, on random layouts; and the folder at a time decided the honest ones (counted)."""
    from types import SimpleNamespace

    from attest.tables import DataFile

    rng = random.Random(seed)
    base, outside = tmp_path / "t", tmp_path / "out"
    base.mkdir()
    outside.mkdir()
    (base / "kept").write_bytes(b"x")
    root = base
    if seed % 5 == 4:  # the table reached through a symlink: its files' real paths are under the real root
        root = tmp_path / "link"
        root.symlink_to(base, target_is_directory=True)
    paths = _layout(root, outside, rng)
    files = [DataFile(path=p.rpartition(str(root) + "/")[2] or p, size=1, location=p) for p in paths]
    store = seed % 7 == 6
    if store:
        files.append(DataFile(path="remote.parquet", size=1, location="s3://bucket/t/remote.parquet"))
    carrier = SimpleNamespace(allow_external=False, roots=[str(root)] + (["s3://bucket/t"] if store else []),
                              storage=SimpleNamespace(local_of=lambda loc: loc if loc.startswith("/") else None))
    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", rng.choice((1, 2, 16)))
    decided: list[bool] = []
    real = core._inside_by_folder
    monkeypatch.setattr(core, "_inside_by_folder", lambda *a: decided.append(real(*a)) or decided[-1])
    found: dict[bool, list[tuple[str, str | None]]] = {}
    for by_folder in (True, False):
        monkeypatch.setattr(core, "CONFINE_BY_FOLDER", by_folder)
        problems: list[core.Problem] = []
        core.AttestedTable._confine(carrier, files, problems)  # type: ignore[arg-type]
        found[by_folder] = [(p.code, p.path) for p in problems]
    assert found[True] == found[False]
    if decided and decided[0]:
        assert found[True] == []


def test_an_honest_table_is_judged_a_folder_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from attest.tables import DataFile

    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", 1)
    for d in range(3):
        (tmp_path / f"d{d}").mkdir()
        for i in range(4):
            (tmp_path / f"d{d}" / f"f{i}").write_bytes(b"x")
    files = [DataFile(path=f"d{d}/f{i}", size=1, location=f"{tmp_path}/d{d}/f{i}") for d in range(3) for i in range(4)]
    carrier = SimpleNamespace(allow_external=False, roots=[str(tmp_path)],
                              storage=SimpleNamespace(local_of=lambda loc: loc))
    looked: list[str] = []
    monkeypatch.setattr(core, "_real_in", lambda p, plain: looked.append(p) or p)
    problems: list[core.Problem] = []
    core.AttestedTable._confine(carrier, files, problems)  # type: ignore[arg-type]
    assert problems == [] and looked == []  # no file judged on its own
    (tmp_path / "d1" / "f2").unlink()
    (tmp_path / "d1" / "f2").symlink_to(tmp_path / "d0" / "f0")  # inside, but no longer a listed plain file
    core.AttestedTable._confine(carrier, files, problems)  # type: ignore[arg-type]
    assert problems == [] and len(looked) == len(files)  # then every file is judged on its own, as before
