"""Local atomic writes: replace-atomically for documents, write-once for content-addressed files."""

from __future__ import annotations

from pathlib import Path

import pytest

from attest.errors import CarrierError
from carriers.atomic import atomic_write_local, write_once_local


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "manifest.json"
    atomic_write_local(target, b"one")
    atomic_write_local(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["manifest.json"]


def test_write_once_is_idempotent_and_never_replaces(tmp_path: Path) -> None:
    target = tmp_path / "ab.json"
    assert write_once_local(target, b"bytes") is True
    assert write_once_local(target, b"bytes") is False  # the same bytes again: nothing to do
    with pytest.raises(CarrierError) as info:
        write_once_local(target, b"other")
    assert info.value.code.value == "sidecar_mismatch"
    assert target.read_bytes() == b"bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ab.json"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero", "dangling link", "folder"])
def test_write_once_over_a_name_that_is_no_file_is_refused_never_read(tmp_path: Path, what: str) -> None:
    """A sidecar's name planted as a FIFO blocked the attestation (the Spark hook) forever; a link to /dev/zero was
    read until memory ran out. Such a name holds no bytes: refused, coded, and left alone."""
    import os

    target = tmp_path / "ab.json"
    if what == "fifo":
        os.mkfifo(target)
    elif what == "folder":
        target.mkdir()
    else:
        target.symlink_to("/dev/zero" if what == "link to /dev/zero" else tmp_path / "missing")
    with pytest.raises(CarrierError) as info:
        write_once_local(target, b"bytes")
    assert info.value.code.value == "sidecar_mismatch"
    assert os.path.lexists(target) and not (target.is_file() and target.read_bytes() == b"bytes")
