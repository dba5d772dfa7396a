"""What delta-rs would block on or exhaust memory with in a table's log, refused before it opens the table: anything
but a regular file in a local ``_delta_log`` (a FIFO, a device), an oversized ``_last_checkpoint`` (local or on an
object store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attest.errors import CarrierError

if TYPE_CHECKING:
    from pathlib import Path

    from carriers.storage.base import Storage

__all__ = ["LAST_CHECKPOINT_MAX_BYTES", "check_local_log", "check_log", "check_remote_hint"]

# delta-rs reads _last_checkpoint by its name, whole: a FIFO there blocked it forever, a device (a symlink to
# /dev/zero) or a huge file filled the memory. The log's other files it finds by listing, which skips what is not a
# regular file (a missing commit is then a gap it reports).
LAST_CHECKPOINT_MAX_BYTES = 64 << 20


def check_log(storage: Storage, display: str) -> None:
    """What delta-rs would block on or exhaust memory with in a table's log, refused before it opens the table:
    :func:`check_local_log` for a local table, :func:`check_remote_hint` on an object store."""
    if storage.local_root is not None:
        check_local_log(storage.local_root, display)
    else:
        check_remote_hint(storage, display)


def check_local_log(root: Path, display: str) -> None:
    """Refuse a local table whose ``_delta_log`` holds something delta-rs would block on or exhaust memory with:
    anything but a regular file (a FIFO, socket or device, or a symlink to one), and a ``_last_checkpoint`` over
    LAST_CHECKPOINT_MAX_BYTES. One listing of the folder (its entries' types come with it); a ``stat`` only for
    symlinks and ``_last_checkpoint``. What is swapped in after this check is delta-rs's to read, as before."""
    import os
    import stat

    log = root / "_delta_log"
    try:
        entries = list(os.scandir(log))
    except (FileNotFoundError, NotADirectoryError):
        return  # no log: delta-rs says the table is not there
    except OSError as exc:
        raise CarrierError(f"cannot open Delta table {display}: _delta_log cannot be listed ({exc.strerror})") from exc
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                continue
            plain = entry.is_file(follow_symlinks=False)
            if plain and entry.name != "_last_checkpoint":
                continue
            st = entry.stat(follow_symlinks=True)
        except FileNotFoundError:
            continue  # gone since the listing, or a dangling symlink: delta-rs does not see it either
        except OSError as exc:
            raise CarrierError(f"cannot open Delta table {display}: _delta_log/{entry.name} cannot be read "
                               f"({exc.strerror})", path=f"_delta_log/{entry.name}") from exc
        if stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            raise CarrierError(f"cannot open Delta table {display}: _delta_log/{entry.name} is not a regular file "
                               "(a FIFO, socket or device, or a link to one: the engine would wait on it forever or "
                               "read it without end)", path=f"_delta_log/{entry.name}")
        if entry.name == "_last_checkpoint":
            _check_hint_size(st.st_size, display)


def check_remote_hint(storage: Storage, display: str) -> None:
    """Refuse a table on an object store whose ``_delta_log/_last_checkpoint`` is over LAST_CHECKPOINT_MAX_BYTES:
    delta-rs would read it whole into memory. One HEAD request; a store that cannot answer it is left to delta-rs."""
    size = storage.size_of(storage.location("_delta_log/_last_checkpoint"))
    if size is not None:
        _check_hint_size(size, display)


def _check_hint_size(size: int, display: str) -> None:
    if size > LAST_CHECKPOINT_MAX_BYTES:
        raise CarrierError(f"cannot open Delta table {display}: _delta_log/_last_checkpoint is {size} bytes (a "
                           f"checkpoint hint is a few hundred; more than {LAST_CHECKPOINT_MAX_BYTES} bytes is "
                           "refused)", path="_delta_log/_last_checkpoint")
