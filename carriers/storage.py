"""One way to reach bytes for every table carrier: local files, or an object store through the table's engine.

A ``Storage`` addresses bytes two ways: *names* relative to a carrier root (sidecars, pointers, Delta log files —
POSIX segments, never ``.``/``..``, so untrusted metadata cannot send a reader outside the root) and *locations* (the
absolute local path or URI at which the table's engine reads a data file). Backends are small peers:

- ``DeltaStorage``: delta-rs's own object-store handler, so ``storage_options`` mean what they mean to delta-rs;
- ``FileIOStorage``: pyiceberg's FileIO of the table, so catalog properties and credentials are the table's own.

Both read local paths with plain file I/O. ``hash_locations`` hashes many files with bounded memory: local files
through attest.hashing (mmap + threads), remote objects streamed by a few concurrent readers.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import unquote, urlparse

from attest.errors import CarrierError, Code
from attest.tables import DataFile, Progress
from carriers.atomic import write_once_local

# Names under a carrier root (sidecars, pointers, log files) are untrusted input: read at most this much.
MAX_NAME_BYTES = 1 << 30
# Remote hashing: this many objects in flight, each streamed in chunks of this size: memory stays at most
# REMOTE_WORKERS * REMOTE_CHUNK (32 MiB) whatever the file sizes.
REMOTE_WORKERS = 8
REMOTE_CHUNK = 4 << 20


def check_name(rel: str) -> str:
    """A carrier-relative name, refused when it could leave the root (untrusted metadata names sidecars)."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in rel or "\x00" in rel:
        raise CarrierError(f"{rel!r} is not a plain relative name under the carrier root",
                           code=Code.CARRIER_TAMPERED, path=rel)
    return rel


def local_path_of(location: str) -> str | None:
    """The local filesystem path of a location, or None for an object-store URI."""
    if location.startswith("/"):
        return location
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return unquote(parsed.path) if not parsed.netloc else f"{parsed.netloc}{unquote(parsed.path)}"
    if len(parsed.scheme) == 1 and os.name == "nt":  # pragma: no cover - drive letters
        return location
    return None


class Storage(ABC):
    """Bytes under a carrier root (``uri``) plus data files at absolute locations."""

    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        # "file:/p", "file:///p" and "/p" are local; any other scheme is an object store; no scheme: a path.
        local = local_path_of(self.uri) if len(urlparse(self.uri).scheme) > 1 else self.uri
        self.local_root: Path | None = None if local is None else Path(local).resolve()

    # ---- names under the root -------------------------------------------------------------------------------
    def local_path(self, rel: str) -> Path:
        assert self.local_root is not None
        return self.local_root.joinpath(*check_name(rel).split("/"))

    def location(self, rel: str) -> str:
        """The absolute location of a name under the root."""
        check_name(rel)
        return str(self.local_path(rel)) if self.local_root is not None else f"{self.uri}/{rel}"

    def read(self, rel: str) -> bytes | None:
        """The bytes of a name under the root, or None when it does not exist."""
        if self.local_root is not None:
            path = self.local_path(rel)
            real = os.path.realpath(path)
            # A symlinked folder or file must not lead a reader out of the carrier root.
            if not (real + "/").startswith(str(self.local_root) + "/"):
                return None
            return _read_regular(Path(real))
        return self._read_remote(check_name(rel))

    def list_names(self, rel_dir: str) -> list[str]:
        """File names directly under a folder (empty when it does not exist)."""
        if self.local_root is not None:
            try:
                return sorted(os.listdir(self.local_path(rel_dir)))
            except (FileNotFoundError, NotADirectoryError):
                return []
        return self._list_remote(check_name(rel_dir))

    def write_once(self, rel: str, data: bytes) -> bool:
        """Write content-addressed bytes: True when written, False when identical bytes were there already.

        Never replaces a different existing file (same name must mean same bytes): locally temp + fsync + link,
        on object stores one single write.
        """
        existing = self.read(rel)
        if existing is not None:
            if existing != data:
                raise CarrierError(f"{rel} exists with different bytes; a content-addressed file is never "
                                   "overwritten", code=Code.SIDECAR_MISMATCH, path=rel)
            return False
        if self.local_root is not None:
            try:
                return write_once_local(self.local_path(rel), data)
            except CarrierError as exc:
                raise CarrierError(exc.message.replace(str(self.local_path(rel)), rel), code=exc.code,
                                   path=rel) from None
        self._write_remote(check_name(rel), data)
        return True

    # ---- data files at absolute locations -------------------------------------------------------------------
    def open_location(self, location: str) -> BinaryIO:
        local = local_path_of(location)
        if local is not None:
            return open(local, "rb")
        return self._open_remote(location)

    def size_of(self, location: str) -> int | None:
        local = local_path_of(location)
        if local is not None:
            try:
                return os.stat(local).st_size
            except OSError:
                return None
        try:
            return self._size_remote(location)
        except Exception:
            return None

    # ---- backend hooks ------------------------------------------------------------------------------------------
    @abstractmethod
    def _read_remote(self, rel: str) -> bytes | None: ...

    @abstractmethod
    def _list_remote(self, rel_dir: str) -> list[str]: ...

    @abstractmethod
    def _write_remote(self, rel: str, data: bytes) -> None: ...

    @abstractmethod
    def _open_remote(self, location: str) -> BinaryIO: ...

    @abstractmethod
    def _size_remote(self, location: str) -> int | None: ...


def _read_regular(path: Path) -> bytes | None:
    """A local file's bytes; None when absent. A FIFO, device or folder in its place is absent too (reading a
    FIFO would block forever), and a file above MAX_NAME_BYTES is refused."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > MAX_NAME_BYTES:
            raise CarrierError(f"{path.name} is {st.st_size} bytes, more than any carrier file may be",
                               code=Code.CARRIER_TAMPERED, path=str(path))
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def not_found(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return isinstance(exc, FileNotFoundError) or "not found" in text or "notfound" in text or "no such" in text


class DeltaStorage(Storage):
    """Bytes of a Delta table through delta-rs's object store (``storage_options`` as delta-rs takes them)."""

    def __init__(self, uri: str, options: dict[str, str] | None = None) -> None:
        super().__init__(uri)
        self.options = dict(options or {})
        self._handler: Any = None
        self._handlers: dict[str, Any] = {}

    @property
    def handler(self) -> Any:
        if self._handler is None:
            from deltalake._internal import DeltaFileSystemHandler

            self._handler = DeltaFileSystemHandler(table_uri=self.uri, options=self.options or None)
        return self._handler

    def _read_remote(self, rel: str) -> bytes | None:
        try:
            stream = self.handler.open_input_file(rel)
        except Exception as exc:  # object_store raises its own error types; NotFound is the common case
            if not_found(exc):
                return None
            raise
        try:
            return bytes(stream.read(stream.size()))
        finally:
            stream.close()

    def _list_remote(self, rel_dir: str) -> list[str]:
        # The raw handler takes the selector's fields as arguments (pyarrow's PyFileSystem would unpack them).
        infos = self.handler.get_file_info_selector(rel_dir, True, False)
        return sorted(i.path.rstrip("/").rsplit("/", 1)[-1] for i in infos)

    def _write_remote(self, rel: str, data: bytes) -> None:
        out = self.handler.open_output_stream(rel, None)
        try:
            out.write(data)
        finally:
            out.close()

    def _relative_or_handler(self, location: str) -> tuple[Any, str]:
        root = self.uri + "/"
        if location.startswith(root):
            return self.handler, location[len(root):]
        parent, _, name = location.rpartition("/")
        if parent not in self._handlers:
            from deltalake._internal import DeltaFileSystemHandler

            self._handlers[parent] = DeltaFileSystemHandler(table_uri=parent, options=self.options or None)
        return self._handlers[parent], name

    def _open_remote(self, location: str) -> BinaryIO:
        handler, rel = self._relative_or_handler(location)
        return cast(BinaryIO, handler.open_input_file(rel))

    def _size_remote(self, location: str) -> int | None:
        from pyarrow.fs import FileType

        handler, rel = self._relative_or_handler(location)
        info = handler.get_file_info([rel])[0]
        return int(info.size) if info.type == FileType.File else None


class FileIOStorage(Storage):
    """Bytes of an Iceberg table through its pyiceberg FileIO (the catalog's own properties and credentials)."""

    def __init__(self, uri: str, io: Any) -> None:
        super().__init__(uri)
        self.io = io

    def _read_remote(self, rel: str) -> bytes | None:
        try:
            with self.io.new_input(f"{self.uri}/{rel}").open() as stream:
                return bytes(stream.read())
        except FileNotFoundError:
            return None
        except OSError as exc:
            if not_found(exc):
                return None
            raise

    def _list_remote(self, rel_dir: str) -> list[str]:
        from pyiceberg.io.pyarrow import PyArrowFileIO

        if not isinstance(self.io, PyArrowFileIO):  # pragma: no cover - fsspec FileIO has no listing
            return []
        from pyarrow.fs import FileSelector

        scheme, netloc, path = self.io.parse_location(f"{self.uri}/{rel_dir}")
        fs = self.io.fs_by_scheme(scheme, netloc)
        try:
            infos = fs.get_file_info(FileSelector(path, allow_not_found=True))
        except OSError:
            return []
        return sorted(i.base_name for i in infos)

    def _write_remote(self, rel: str, data: bytes) -> None:
        out = self.io.new_output(f"{self.uri}/{rel}")
        with out.create(overwrite=True) as stream:
            stream.write(data)

    def _open_remote(self, location: str) -> BinaryIO:
        return cast(BinaryIO, self.io.new_input(location).open(seekable=False))

    def _size_remote(self, location: str) -> int | None:
        try:
            return len(self.io.new_input(location))
        except FileNotFoundError:
            return None


def hash_location(storage: Storage | None, location: str, *, threads: int | None = None) -> tuple[int, str] | None:
    """``(bytes hashed, BLAKE3)`` of one file at its ``location``; None when it cannot be read (missing, not a
    regular file, permission, an object-store error): the same "unreadable is absent" rule as
    :func:`hash_locations`. ``threads`` caps the cores one big local file is hashed on (an executor task: its
    ``spark.task.cpus``). ``storage`` is needed only for object-store locations (None: local files only)."""
    import stat

    from attest.hashing import hash_file, hash_stream_counted

    local = local_path_of(location)
    if local is not None:
        try:
            st = os.stat(local)
            if not stat.S_ISREG(st.st_mode):
                return None  # a FIFO would block the reader forever, a device never ends: never a table file
            return st.st_size, hash_file(local, threads=threads)
        except OSError:
            return None
    if storage is None:
        return None
    try:
        stream = storage.open_location(location)
    except Exception:
        return None
    try:
        return hash_stream_counted(stream, chunk_size=REMOTE_CHUNK)
    except Exception:
        return None
    finally:
        stream.close()


def hash_locations(storage: Storage, files: Sequence[DataFile], *,
                   progress: Progress | None = None) -> dict[str, str]:
    """BLAKE3 of each file's bytes at its ``location``, keyed by ``DataFile.path``.

    A file that cannot be read (missing, permission) is left out of the result; the caller reports it.
    """
    import stat

    from attest.hashing import hash_file, hash_sized_files, hash_stream

    out: dict[str, str] = {}
    local: dict[str, str] = {}
    remote: list[DataFile] = []
    for f in files:
        path = local_path_of(f.location)
        if path is None:
            remote.append(f)
        else:
            local[path] = f.path
    total = len(files)
    if local:
        present: dict[str, int] = {}
        for p in local:
            try:
                st = os.stat(p)
            except OSError:
                continue  # unreadable: the verifier reports it
            if stat.S_ISREG(st.st_mode):  # a FIFO would block the reader forever: never hashed
                present[p] = st.st_size
        report: Callable[[int, int, int], None] | None = None
        if progress is not None:
            def report(done: int, _total: int, nbytes: int) -> None:
                progress(done, total, nbytes)
        try:
            hashed = hash_sized_files(present, progress=report)  # one stat per file, here
        except OSError:
            hashed = {}
            for p in present:  # one unreadable file must not hide the others' hashes
                try:
                    hashed[p] = hash_file(p)
                except OSError:
                    continue
        out.update({local[p]: h for p, h in hashed.items()})
    if not remote:
        return out
    done = len(local)
    done_bytes = sum(f.size for f in files if f.path in out)

    def one(f: DataFile) -> str | None:
        try:
            stream = storage.open_location(f.location)
        except Exception:
            return None  # unreadable: the verifier reports it as missing
        try:
            return hash_stream(stream, chunk_size=REMOTE_CHUNK)
        except Exception:
            return None
        finally:
            stream.close()

    # Object-store reads are latency-bound: overlap a few of them.
    with ThreadPoolExecutor(max_workers=min(REMOTE_WORKERS, len(remote))) as pool:
        for f, digest in zip(remote, pool.map(one, remote), strict=True):
            if digest is not None:
                out[f.path] = digest
            done += 1
            done_bytes += f.size
            if progress is not None:
                progress(done, total, done_bytes)
    return out
