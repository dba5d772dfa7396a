"""pyiceberg catalogs that never run code a table's own metadata names (docs/security.md).

pyiceberg builds a table's FileIO from the catalog's properties merged with the table's own — ``metadata.json``,
which anyone with write access to the table's storage edits — and imports and calls the class a ``py-io-impl`` there
names (``s3.retry-strategy-impl`` likewise). A hostile table could so make a verifier import any installed module,
print the catalog's properties (credentials included) into its output, or exit: measured with ``sys.exit``,
``builtins.print`` and ``this``. Catalogs opened through :func:`load_catalog` (or given to :func:`guard`) drop every
``...impl`` key from the table's side before the FileIO is built; the catalog's own configuration — the user's —
still chooses. Carriers say when a table carried such keys (:func:`code_keys`).

Writes are another matter: pyiceberg's commits honour the table's ``write.py-location-provider.impl``, as every
writer of that table does (docs/iceberg.md).

Guarding a catalog also makes pyiceberg's local reads safe from FIFOs (:func:`guard_local_reads`): a ``metadata.json``,
manifest list or manifest replaced by a FIFO made ``open(2)`` wait forever for a writer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["code_keys", "guard", "guard_local_reads", "load_catalog", "names_code"]

# Local metadata files up to this size are read whole from the descriptor that was checked (no second open by path);
# bigger ones (data files, in a user's scan) are checked, then opened by pyarrow as before.
SMALL_FILE_BYTES = 64 << 20
_DATA_SUFFIXES = (".parquet", ".orc")

_GUARDED = "_recipe_attest_guarded"


def names_code(key: str) -> bool:
    """Whether a property names code for pyiceberg (or a Java engine) to load: ``py-io-impl``,
    ``s3.retry-strategy-impl``, ``write.py-location-provider.impl``, ``io-impl``, and any later ``...impl``."""
    return key.strip().lower().endswith("impl")


def code_keys(properties: Mapping[str, Any]) -> list[str]:
    """The keys of ``properties`` that name code, sorted."""
    return sorted(k for k in properties if isinstance(k, str) and names_code(k))


def guard(catalog: Any) -> Any:
    """Make ``catalog`` (a pyiceberg ``Catalog``) build every table's FileIO without the table's code-naming keys.

    pyiceberg's catalogs call ``self._load_file_io(table_properties, location)`` when they load a table (the
    metadata file itself is read with the catalog's properties alone); the instance's method is wrapped, once."""
    guard_local_reads()
    if getattr(catalog, _GUARDED, False):
        return catalog
    original = catalog._load_file_io

    def _load_file_io(properties: Mapping[str, str] | None = None, location: str | None = None) -> Any:
        kept = {k: v for k, v in (properties or {}).items() if not names_code(k)}
        return original(kept, location)

    catalog._load_file_io = _load_file_io
    setattr(catalog, _GUARDED, True)
    return catalog


def load_catalog(name: str | None, **properties: str) -> Any:
    """``pyiceberg.catalog.load_catalog``, guarded (see the module docstring)."""
    from pyiceberg.catalog import load_catalog as load

    return guard(load(name, **properties))


def guard_local_reads() -> None:
    """From now on in this process, pyiceberg's PyArrow FileIO opens a local file only when it is a regular file
    (checked on a descriptor opened without blocking: a FIFO without a writer would block ``open(2)`` forever), and
    reads a small one — metadata, manifest lists, manifests — whole from that descriptor. Anything else is a
    FileNotFoundError, which pyiceberg and the carriers already report as an unreadable table. Idempotent."""
    try:
        from pyarrow.fs import LocalFileSystem
        from pyiceberg.io import pyarrow as pio
    except ImportError:  # no PyArrow FileIO in this environment: nothing to guard
        return
    original = pio.PyArrowFile.open
    if getattr(original, _GUARDED, False):
        return

    def open_checked(self: Any, seekable: bool = True) -> Any:
        if not isinstance(getattr(self, "_filesystem", None), LocalFileSystem):
            return original(self, seekable)
        path = str(self._path)
        # Data files (a user's scan in this process) are checked, then read by pyarrow as before (it reads only the
        # columns asked for); metadata is read whole from the checked descriptor.
        data = _read_small_regular(path, str(self.location), whole=not path.lower().endswith(_DATA_SUFFIXES))
        if data is None:
            return original(self, seekable)
        import pyarrow as pa

        return pa.BufferReader(data)

    setattr(open_checked, _GUARDED, True)
    open_checked.__doc__ = original.__doc__
    pio.PyArrowFile.open = open_checked  # type: ignore[method-assign]


def _read_small_regular(path: str, location: str, *, whole: bool = True) -> bytes | None:
    """The bytes of a local regular file of at most SMALL_FILE_BYTES (``whole``); None for a bigger regular file or
    when not ``whole``; a FileNotFoundError for anything that is not a regular file."""
    import os
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileNotFoundError(f"Cannot open file, not a regular file: {location}")
        if st.st_size > SMALL_FILE_BYTES or not whole:
            return None
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > SMALL_FILE_BYTES:  # grew while read: let pyarrow read it as before
                return None
        return b"".join(chunks)
    finally:
        os.close(fd)
