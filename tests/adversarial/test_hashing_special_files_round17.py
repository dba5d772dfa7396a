"""Round 17: a FIFO or a device node in a data file's (or a carrier file's) place is refused before it is opened.

The hashing path opened every small file it was handed (non-blocking, then ``fstat``) and only then refused what was
not a regular file: a FIFO no longer blocked, but a device node was opened — its driver's open run (a tape rewinds, a
serial line raises DTR) — before being refused. Now every local file is looked at (``stat``) before it is opened, and
checked again on the descriptor (docs/hashing.md).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from deltalake import DeltaTable

from attest.hashing import hash_bytes, hash_sized_files, open_regular, read_regular
from tests.adversarial.conftest import delta, verify

_ = delta  # a fixture, used by name


def _special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:  # a character device: /dev/null's numbers (reads end at once; opening it is what must not happen)
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))


def _can_mknod(tmp_path: Path) -> bool:
    try:
        _special(tmp_path / "probe", "device")
    except (PermissionError, OSError):
        return False
    (tmp_path / "probe").unlink()
    return True


@pytest.fixture(params=["fifo", "device"])
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "device" and not _can_mknod(tmp_path):
        pytest.skip("creating a device node needs CAP_MKNOD")
    return str(request.param)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path ``os.open`` is called on."""
    seen: list[str] = []
    real = os.open

    def spy(path: object, *args: object, **kwargs: object) -> int:
        seen.append(os.path.abspath(os.fspath(path)))  # type: ignore[arg-type]
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    yield seen


@pytest.mark.timeout(120)
def test_a_special_file_in_a_data_files_place_is_never_opened(delta: Path, kind: str,
                                                              opened: list[str]) -> None:
    victim = Path(unquote(DeltaTable(str(delta)).file_uris()[0].removeprefix("file://")))
    victim.unlink()
    _special(victim, kind)
    rc, doc = verify(str(delta), "--level", "bytes")
    assert rc == 1, doc
    assert "file_missing" in [e["code"] for e in doc["errors"]], doc
    assert str(victim) not in opened


@pytest.mark.timeout(60)
def test_the_hashing_functions_never_open_a_special_file(tmp_path: Path, kind: str, opened: list[str]) -> None:
    regular, special = tmp_path / "f.bin", tmp_path / "special"
    regular.write_bytes(b"bytes")
    _special(special, kind)
    # The listing's sizes (a table log's), not stat-ed: the small files' batch looks before it opens.
    assert hash_sized_files({str(regular): 5, str(special): 5}, skip_unreadable=True) == {
        str(regular): hash_bytes(b"bytes")}
    for call in (open_regular, lambda p: read_regular(p, 10)):
        with pytest.raises(OSError, match="not a regular file"):
            call(special)
    assert str(special) not in opened
