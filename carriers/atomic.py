"""Local atomic writes shared by the carriers: readers see the old state or the new one, never half a file.

- ``atomic_write_local``: temp file in the same folder, fsync, rename over the target, folder fsync (for
  documents that are replaced, such as a standalone ``manifest.json``);
- ``write_once_local``: the same, but publishing with ``link()``, which refuses to replace an existing name, for
  content-addressed files: same name must mean same bytes, and a concurrent writer of the same name wins.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from attest.errors import CarrierError, Code


def _temp_with(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here: readers (a verify) never write, and it imports shutil, random, bz2, lzma

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; what we publish is read by auditors as other users, like the engine's files.
        os.chmod(tmp, 0o666 & ~umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


@functools.cache
def umask() -> int:
    """The process umask, read without changing it where the OS allows (os.umask() is process-wide: setting it even
    briefly races other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # some filesystems cannot open a folder: the rename is still atomic, only its durability waits
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_local(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    tmp = _temp_with(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def link_if_absent(path: Path, data: bytes) -> bool:
    """Local put-if-absent: True when ``data`` was published at ``path``, False when the name already existed."""
    tmp = _temp_with(path, data)
    try:
        try:
            os.link(tmp, path)  # fails when the name exists: exactly one writer wins
        except FileExistsError:
            return False
        fsync_dir(path.parent)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def _holds(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data`` (attest.hashing.read_regular: a FIFO or a link to
    /dev/zero in its place is another file, never read)."""
    from attest.hashing import read_regular

    try:
        return read_regular(path, len(data) + 1) == data
    except OSError:  # not a regular file, a dangling link, no permission: not a file holding these bytes
        return False


def write_once_local(path: Path, data: bytes) -> bool:
    """Publish content-addressed bytes at ``path``: True when written, False when identical bytes were there.

    Raises CarrierError (sidecar_mismatch) when a different file holds the name: it is never replaced.
    """
    if os.path.lexists(path):
        _same(path, lambda: _holds(path, data), "exists with different bytes; a content-addressed file is never "
              "overwritten")
        return False
    tmp = _temp_with(path, data)
    try:
        return _publish(tmp, path, lambda: _holds(path, data))
    finally:
        Path(tmp).unlink(missing_ok=True)


def _same(path: Path, holds: Callable[[], bool], why: str) -> None:
    """Refuse (sidecar_mismatch) when the file under a content-addressed name is not the bytes being published."""
    if not holds():
        raise CarrierError(f"{path} {why}", code=Code.SIDECAR_MISMATCH, path=str(path))


def _publish(tmp: str, path: Path, holds: Callable[[], bool]) -> bool:
    """Publish the written temporary file ``tmp`` under the content-addressed ``path``: True when published, False
    when a concurrent writer published identical bytes first (``holds``: whether ``path`` has them)."""
    try:
        # link() fails when the name exists: a concurrent writer of the same name wins, bytes agree.
        os.link(tmp, path)
    except FileExistsError:
        taken = True  # judged outside the handler: the refusal carries no FileExistsError context
    except OSError:
        os.replace(tmp, path)  # filesystems without hard links: rename is still atomic
        taken = False
    else:
        taken = False
    if taken:
        _same(path, holds, "appeared concurrently with different bytes")
        return False
    fsync_dir(path.parent)
    return True


def _holds_digest(path: Path, digest: str) -> bool:
    """Whether ``path`` is a regular file whose BLAKE3 is ``digest``, read a piece at a time."""
    from blake3 import blake3

    from attest.hashing import open_regular

    try:
        fd, _ = open_regular(path)
    except OSError:
        return False
    hasher = blake3()
    with open(fd, "rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest() == digest


def write_once_local_stream(folder: Path, suffix: str, chunks: Iterable[bytes],
                            name: str | None = None) -> tuple[str, bool]:
    """Publish content-addressed bytes given in pieces at ``folder/<their BLAKE3><suffix>``: (the BLAKE3, whether
    written). As write_once_local, but the pieces go to the temporary file as they come, hashed on the way, so the
    bytes are never held whole (a sidecar of a million files is 233 MB); the name, known once the last piece is
    written, is published with link(). A different file under the name is never replaced (sidecar_mismatch);
    identical bytes there already are left as they are. ``name``: publish under ``folder/<name>`` instead (bytes
    addressed by another digest: an Iceberg kept copy is named by its sidecar's BLAKE3), with the same guarantees."""
    folder.mkdir(parents=True, exist_ok=True)
    import tempfile

    from blake3 import blake3

    fd, tmp = tempfile.mkstemp(prefix=".write-once.", suffix=".tmp", dir=folder)
    try:
        hasher = blake3()
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                hasher.update(chunk)
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~umask())
        digest = hasher.hexdigest()
        path = folder / (name if name is not None else f"{digest}{suffix}")
        if os.path.lexists(path):
            _same(path, lambda: _holds_digest(path, digest), "exists with different bytes; a content-addressed "
                  "file is never overwritten")
            return digest, False
        return digest, _publish(tmp, path, lambda: _holds_digest(path, digest))
    finally:
        Path(tmp).unlink(missing_ok=True)
