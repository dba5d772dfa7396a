"""``Storage``: bytes under a carrier root, addressed by checked relative names (sidecars, pointers, log files —
never ``.``/``..``, so untrusted metadata cannot send a reader outside the root) and data files at absolute
locations; content-addressed writes that never replace different bytes (a conditional PUT on object stores)."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote, urlparse

from attest.errors import AttestError, CarrierError, Code
from carriers.atomic import link_if_absent, write_once_local, write_once_local_stream
from carriers.storage.errors import ConditionalPutUnsupported, coded, is_panic
from carriers.storage.options import scheme_of

# Names under a carrier root (sidecars, pointers, log files) are untrusted input: read at most this much.
MAX_NAME_BYTES = 1 << 30
_T = TypeVar("_T")


def open_object_store(root: str, config: Mapping[str, str], client: Mapping[str, str]) -> Any:
    """An obstore store rooted at ``root`` (None when obstore is missing or refuses the configuration)."""
    try:
        from obstore.store import from_url
    except ImportError:  # pragma: no cover - obstore comes with the delta and iceberg extras
        return None
    url = root
    if scheme_of(root) == "s3a":
        url = "s3" + root[3:]
    try:
        return from_url(url, config=dict(config), client_options=dict(client))  # type: ignore[call-overload]
    except Exception:
        return None
    except BaseException as exc:
        if is_panic(exc):
            return None
        raise


def check_name(rel: str) -> str:
    """A carrier-relative name, refused when it could leave the root (untrusted metadata names sidecars)."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in rel or "\x00" in rel:
        raise CarrierError(f"{rel!r} is not a plain relative name under the carrier root",
                           code=Code.CARRIER_TAMPERED, path=rel)
    return rel


def local_path_of(location: str, *, decode: bool = True) -> str | None:
    """The local filesystem path of a location, or None for an object-store URI.

    ``decode``: whether a ``file:`` URI is percent-decoded. Delta paths are URIs (decoded); Iceberg locations are
    strings that pyiceberg and Hadoop's FileIO read literally (``p=x%2Fy`` is a folder of that name)."""
    from attest.locations import is_uri

    if not is_uri(location):
        return location
    try:
        parsed = urlparse(location)
    except ValueError:  # an unbalanced '[' in the authority: no file here (callers refuse such locations first)
        return None
    if parsed.scheme == "file":
        path = unquote(parsed.path) if decode else parsed.path
        return path if parsed.netloc in ("", "localhost") else f"{parsed.netloc}{path}"
    return None


class Storage(ABC):
    """Bytes under a carrier root (``uri``) plus data files at absolute locations."""

    decode_file_uris = True

    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        # "file:/p", "file:///p" and "/p" are local; any other scheme is an object store; no scheme: a path.
        local = self.local_of(self.uri)
        self.local_root: Path | None = None if local is None else Path(local).resolve()

    def local_of(self, location: str) -> str | None:
        """The local path of an absolute location as this storage's engine reads it, or None (object store)."""
        return local_path_of(location, decode=self.decode_file_uris)

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
        return self._remote(self._read_remote, rel)

    def read_chunks(self, rel: str, size: int = 1 << 20) -> Iterator[bytes] | None:
        """The bytes of a name under the root in pieces of ``size`` bytes, or None when it does not exist: a local
        file is read a piece at a time as the pieces are taken (never held whole); elsewhere it is read whole
        (``read``) and given in pieces."""
        if self.local_root is not None:
            path = self.local_path(rel)
            real = os.path.realpath(path)
            if not (real + "/").startswith(str(self.local_root) + "/"):
                return None  # as read: a symlink never leads a reader out of the carrier root
            return _chunks_regular(Path(real), size)
        data = self.read(rel)
        if data is None:
            return None
        view = memoryview(data)
        return (bytes(view[i:i + size]) for i in range(0, len(data), size))

    def write_once_stream(self, folder: str, suffix: str, chunks: Iterable[bytes]) -> tuple[str, str]:
        """Write content-addressed bytes given in pieces at ``folder/<their BLAKE3><suffix>``: (that name, the
        BLAKE3). Locally streamed to a temporary file, hashed on the way, and published with link()
        (carriers.atomic.write_once_local_stream): never held whole. On object stores the pieces are joined and
        written by ``write_once`` (one conditional PUT)."""
        if self.local_root is not None:
            check_name(f"{folder}/{'0' * 64}{suffix}")
            try:
                digest, _ = write_once_local_stream(self.local_path(folder), suffix, chunks)
            except CarrierError as exc:
                raise CarrierError(exc.message.replace(str(self.local_path(folder)), folder), code=exc.code,
                                   path=folder) from None
            return f"{folder}/{digest}{suffix}", digest
        from attest.canonical import blake3_hex

        data = b"".join(chunks)
        digest = blake3_hex(data)
        rel = f"{folder}/{digest}{suffix}"
        self.write_once(rel, data)
        return rel, digest

    def list_names(self, rel_dir: str) -> list[str]:
        """File names directly under a folder (empty when it does not exist)."""
        if self.local_root is not None:
            try:
                return sorted(os.listdir(self.local_path(rel_dir)))
            except (FileNotFoundError, NotADirectoryError):
                return []
        return self._remote(self._list_remote, rel_dir)

    def _remote(self, call: Callable[[str], _T], rel: str) -> _T:
        """``call`` (a read of the store) on the checked name ``rel``: a failure of the store's library — an
        exception, or a panic of its Rust code — raised coded, naming where (never the options' secrets)."""
        try:
            return call(check_name(rel))
        except AttestError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            raise coded(exc, where=self.location(rel), secrets=self.secrets) from None

    def write_once(self, rel: str, data: bytes) -> bool:
        """Write content-addressed bytes: True when written, False when identical bytes were there already.

        Never replaces a different existing file (same name must mean same bytes): locally temp + fsync + link,
        on object stores one conditional PUT (``put_if_absent``), checked by reading it back.
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
        try:
            written = self.put_if_absent(rel, data)
        except ConditionalPutUnsupported:
            self._write_remote(check_name(rel), data)  # one PUT: the object appears whole, or not at all
            written = True
        # A concurrent writer of the same name won (or the store has no conditional PUT): the bytes must agree.
        if self.read(rel) != data:
            raise CarrierError(f"{rel} appeared concurrently with different bytes", code=Code.SIDECAR_MISMATCH,
                               path=rel)
        return written

    def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Publish ``data`` at ``rel`` only if nothing is there: True when published, False when the name exists.

        Locally a hard link (refuses an existing name); on object stores one conditional PUT. Raises
        ConditionalPutUnsupported when the store (or its options) offers no conditional create.
        """
        check_name(rel)
        if self.local_root is not None:
            return link_if_absent(self.local_path(rel), data)
        return self._put_if_absent_remote(rel, data)

    @property
    def conditional_puts(self) -> bool:
        """Whether ``put_if_absent`` is available for this root (always locally)."""
        return self.local_root is not None or self._object_store() is not None

    def _put_if_absent_remote(self, rel: str, data: bytes) -> bool:
        store = self._object_store()
        if store is None:
            raise ConditionalPutUnsupported(f"no conditional PUT for {scheme_of(self.uri)}:// with these options")
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            obstore.put(store, rel, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        except NotImplementedError as exc:
            raise ConditionalPutUnsupported(str(exc)) from None
        except Exception as exc:
            raise coded(exc, where=self.location(rel), secrets=self.secrets, action="write") from None
        except BaseException as exc:
            if not is_panic(exc):
                raise
            raise coded(exc, where=self.location(rel), secrets=self.secrets, action="write") from None
        return True

    def _object_store(self) -> Any:
        """An obstore store rooted at this carrier root, or None when the options cannot be mapped to one."""
        return None

    @property
    def secrets(self) -> list[str]:
        """Option values that must never appear in a message."""
        return []

    # ---- data files at absolute locations -------------------------------------------------------------------
    def open_location(self, location: str) -> BinaryIO:
        local = self.local_of(location)
        if local is not None:
            return open(local, "rb")
        return self._open_remote(location)

    def size_of(self, location: str) -> int | None:
        local = self.local_of(location)
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


def _open_regular(path: Path) -> int | None:
    """A descriptor of ``path`` when it is a regular file (opened without blocking: a FIFO is never waited on)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _chunks_regular(path: Path, size: int) -> Iterator[bytes] | None:
    """A local file's bytes in pieces, read as they are taken; None when absent. A FIFO, device or folder in its
    place is absent too (as _read_regular). Opened once to tell, and again when the pieces are first taken (so no
    descriptor is left open by pieces never taken); what is not a regular file by then is an OSError."""
    probe = _open_regular(path)
    if probe is None:
        return None
    os.close(probe)

    def pieces() -> Iterator[bytes]:
        fd = _open_regular(path)
        if fd is None:
            raise OSError(f"{path.name} is no longer a regular file")
        try:
            while chunk := os.read(fd, size):
                yield chunk
        finally:
            os.close(fd)

    return pieces()


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
