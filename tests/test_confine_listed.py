"""Confinement's folders listed whole (carriers.core._inside_listed, issue 35.2 nineteenth pass): what it finds is what
``_inside_by_folder`` finds of ``_plain_by_folder``'s listing, and ``_confine`` reports the same problems, in the same
order, with it, without it and file by file — on random layouts of hostile names and spellings."""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from attest.tables import DataFile
from carriers import core
from carriers.storage.base import local_path_of

# Names a table's log may spell (decoded): dots, an encoded slash, URI delimiters, controls, non-ASCII, a lone
# surrogate (a file name not UTF-8: os.fsencode gives its byte back).
_NAMES = [
    "f",
    "..",
    ".",
    "%2F",
    "a%2Fb",
    "#x",
    "q?y",
    "sp ace",
    "tab\tx",
    "nl\nx",
    "\x01c",
    "é",
    "日本",
    "\udc80z",
    "a:b",
    "file:x",
    "-",
    "UPPER",
    "upper",
]


def _layout(root: Path, outside: Path, rng: random.Random) -> list[str | None]:
    """A table folder of random plain files, symlinks (inside, outside, dangling), folders, FIFOs and missing names,
    some folders symlinked outside; then the files' local paths in random spellings (doubled slashes, dot segments,
    a trailing slash on the folder, absolute paths elsewhere, ``file:`` URIs decoded as a Delta log's, None for an
    object store). Half the layouts are honest (plain files of hostile names, spelled as listed or through a dot
    segment or a ``file:`` URI) or nearly (one thing wrong): those the listing decides."""
    honest = rng.random() < 0.5
    odd = 1.0 if not honest else rng.choice((0.0, 0.0, 0.05))
    (outside / "secret").write_bytes(b"x")
    (outside / "d").mkdir(exist_ok=True)
    for name in ("f0", "f1", "é"):
        (outside / "d" / name).write_bytes(b"x")
    (root / "kept").write_bytes(b"x")
    made: list[Path] = []
    for d in range(rng.randint(1, 4)):
        folder = root / rng.choice([f"d{d}", f"p=é{d}", f"p=%2F{d}", f"x#{d}"])
        if folder.exists() or folder.is_symlink():
            continue
        if rng.random() < 0.2 * odd:
            folder.symlink_to(outside / "d", target_is_directory=True)
            made += [folder / "f0", folder / "é"]
            continue
        folder.mkdir()
        for name in rng.sample(_NAMES, rng.randint(1, 8)):
            f = folder / name
            if name in ("..", ".") or f.exists() or f.is_symlink():
                if rng.random() < odd:
                    made.append(f)
                continue
            what = rng.randrange(10) if rng.random() < odd else 9
            try:
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
                elif what == 5:
                    os.mkfifo(f)
                else:
                    f.write_bytes(b"x")
            except (OSError, UnicodeEncodeError):
                continue
            made.append(f)
    locals_: list[str | None] = []
    for f in made:
        for _ in range(rng.randint(1, 3)):  # a folder of many files: above FOLDER_LISTING_MIN when it is small
            spelled = str(f)
            kind = rng.randrange(12) if rng.random() < odd else rng.choice((1, 4, 9))
            if kind == 0:
                spelled = f"{f.parent}//{f.name}"
            elif kind == 1:
                spelled = f"{f.parent}/./{f.name}"
            elif kind == 2:
                spelled = f"{f.parent}/../{f.parent.name}/{f.name}"
            elif kind == 3:
                spelled = f"{f.parent}/"  # the folder itself, with a trailing slash
            elif kind == 4:
                with contextlib.suppress(ValueError):
                    spelled = local_path_of(f.as_uri()) or spelled  # a file: URI, percent-decoded
            locals_.append(spelled)
    extra = rng.randrange(6) if rng.random() < odd else 9
    if extra == 0:
        locals_.append("/etc/hostname")
    elif extra == 1:
        locals_.append(None)
    elif extra == 2:
        locals_.append(str(root))
    elif extra == 3:
        locals_.append("relative/name")
    rng.shuffle(locals_)
    return locals_


def _prefixes(root: Path) -> tuple[str, ...]:
    real = core._real_dir(str(root))
    return (real.rstrip("/") + "/",)


@pytest.mark.parametrize("seed", range(120))
def test_the_listed_check_finds_what_the_folder_check_finds(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    base, outside = tmp_path / "t", tmp_path / "out"
    base.mkdir()
    outside.mkdir()
    root = base
    if seed % 5 == 4:  # the table reached through a symlink
        root = tmp_path / "link"
        root.symlink_to(base, target_is_directory=True)
    locals_ = _layout(root, outside, rng)
    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", rng.choice((1, 1, 2, 16)))
    core._real_dir.cache_clear()
    prefixes = _prefixes(root)
    listed = core._inside_listed(locals_, prefixes)
    by_folder = core._inside_by_folder(locals_, core._plain_by_folder([p for p in locals_ if p is not None]), prefixes)
    if listed:
        assert by_folder  # never inside where the folder check is not sure
    if not any(p is not None and p.rpartition("/")[0].endswith("/") for p in locals_):
        assert listed == by_folder  # the same answer wherever no folder is spelled with a trailing slash


@pytest.mark.parametrize("seed", range(120))
def test_confine_reports_the_same_problems_either_way(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1000 + seed)
    base, outside = tmp_path / "t", tmp_path / "out"
    base.mkdir()
    outside.mkdir()
    root = base if seed % 4 else tmp_path / "link"
    if root != base:
        root.symlink_to(base, target_is_directory=True)
    locals_ = [p for p in _layout(root, outside, rng) if p is not None]
    files = [DataFile(path=p.rpartition(str(root) + "/")[2] or p, size=1, location=p) for p in locals_]
    if seed % 6 == 5:  # a URI location, decoded as a Delta table's storage does
        files.append(DataFile(path="u", size=1, location=(base / "kept").as_uri()))
    carrier = SimpleNamespace(allow_external=False, roots=[str(root)], storage=SimpleNamespace(local_of=local_path_of))
    monkeypatch.setattr(core, "FOLDER_LISTING_MIN", rng.choice((1, 2, 16)))
    found = []
    for listed, by_folder in ((True, True), (False, True), (False, False)):
        monkeypatch.setattr(core, "CONFINE_LISTED", listed)
        monkeypatch.setattr(core, "CONFINE_BY_FOLDER", by_folder)
        problems: list[core.Problem] = []
        core.AttestedTable._confine(carrier, files, problems)  # type: ignore[arg-type]
        found.append([(p.code, p.path, p.message) for p in problems])
    assert found[0] == found[1] == found[2]


def test_an_honest_table_is_decided_by_the_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many files a folder, all plain: decided by ``_inside_listed`` alone (no per-file listing is made); a symlink
    among them sends the check to the slower paths, which still refuse one leading outside."""
    for d in range(3):
        (tmp_path / "t" / f"d{d}").mkdir(parents=True)
        for i in range(core.FOLDER_LISTING_MIN):
            (tmp_path / "t" / f"d{d}" / f"f{i}").write_bytes(b"x")
    root = tmp_path / "t"
    files = [
        DataFile(path=f"d{d}/f{i}", size=1, location=f"{root}/d{d}/f{i}")
        for d in range(3)
        for i in range(core.FOLDER_LISTING_MIN)
    ]
    carrier = SimpleNamespace(allow_external=False, roots=[str(root)], storage=SimpleNamespace(local_of=local_path_of))
    slow: list[int] = []
    real = core._plain_by_folder
    monkeypatch.setattr(core, "_plain_by_folder", lambda paths: slow.append(1) or real(paths))
    problems: list[core.Problem] = []
    core.AttestedTable._confine(carrier, files, problems)  # type: ignore[arg-type]
    assert problems == [] and slow == []
    (tmp_path / "secret").write_bytes(b"x")
    (root / "d1" / "f2").unlink()
    (root / "d1" / "f2").symlink_to(tmp_path / "secret")
    core.AttestedTable._confine(carrier, files, problems)  # type: ignore[arg-type]
    assert slow == [1] and [(p.code.value, p.path) for p in problems] == [("file_outside_table", "d1/f2")]


def test_the_random_layouts_hold_both_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layouts above are not all refused: the listing decides some (all inside), not others."""
    answers = []
    for seed in range(120):
        rng = random.Random(seed)
        base, outside = tmp_path / str(seed) / "t", tmp_path / str(seed) / "out"
        base.mkdir(parents=True)
        outside.mkdir()
        locals_ = _layout(base, outside, rng)
        monkeypatch.setattr(core, "FOLDER_LISTING_MIN", rng.choice((1, 1, 2, 16)))
        core._real_dir.cache_clear()
        answers.append(core._inside_listed(locals_, _prefixes(base)))
    assert 10 <= sum(answers) <= 110
