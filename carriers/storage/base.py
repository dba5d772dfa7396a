"""``Storage``: bytes under a carrier root, addressed by checked relative names (sidecars, pointers, log files —
never ``.``/``..``, so untrusted metadata cannot send a reader outside the root) and data files at absolute
locations; content-addressed writes that never replace different bytes (a conditional PUT on object stores)."""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote, urlparse

from attest.errors import AttestError, CarrierError, Code
from attest.fast.realpath import realpath, resolve
from carriers.atomic import link_if_absent, write_once_local, write_once_local_stream
from carriers.storage.errors import ConditionalPutUnsupported, StoreReadError, coded, is_panic
from carriers.storage.options import scheme_of

# Names under a carrier root (sidecars, pointers, log files) are untrusted input: read at most this much.
MAX_NAME_BYTES = 1 << 30
# Content-addressed writes on object stores given in pieces (write_once_stream): up to STREAM_PUT_MIN bytes are one
# conditional PUT (held whole, as before); larger ones a multipart upload of PUT_PART bytes a part, PUT_CONCURRENCY
# parts in flight (S3's smallest part is 5 MiB), so memory stays near PUT_PART * PUT_CONCURRENCY whatever the size.
STREAM_PUT_MIN = 8 << 20
PUT_PART = 5 << 20
PUT_CONCURRENCY = 2
_T = TypeVar("_T")
_ABSENT: Any = object()  # Storage._from_store: the object does not exist


def _same_bytes(rel: str, same: bool, concurrently: bool = False) -> None:
    """A content-addressed name holding other bytes than the ones written: sidecar_mismatch, never overwritten."""
    if same:
        return
    if concurrently:
        raise CarrierError(f"{rel} appeared concurrently with different bytes", code=Code.SIDECAR_MISMATCH, path=rel)
    raise CarrierError(f"{rel} exists with different bytes; a content-addressed file is never overwritten",
                       code=Code.SIDECAR_MISMATCH, path=rel)


def stream_pieces(stream: Any, size: int, first: bytes | None = None) -> Iterator[bytes]:
    """An engine's input stream read ``size`` bytes a piece (after ``first``, already read, if given), closed at the
    end (backends' ``_stream_remote``)."""
    try:
        chunk = bytes(stream.read(size)) if first is None else first
        while chunk:
            yield chunk
            chunk = bytes(stream.read(size))
    finally:
        stream.close()


def seek_reader(stream: Any) -> Callable[[int, int], bytes]:
    """read(offset, length) on an engine's seekable input stream (backends' ``_engine_ranged``)."""

    def read_at(offset: int, length: int) -> bytes:
        stream.seek(offset)
        return bytes(stream.read(length))

    return read_at


def open_object_store(root: str, config: Mapping[str, str], client: Mapping[str, str]) -> Any:
    """An obstore store rooted at ``root`` (None when obstore is missing or refuses the configuration)."""
    try:
        from obstore.store import from_url
    except ImportError:  # pragma: no cover - obstore comes with the delta and iceberg extras
        return None
    url = root
    if scheme_of(root) == "s3a":
        url = "s3" + root[3:]
    config = dict(config)
    if scheme_of(root) in ("s3", "s3a", "s3n") and not any(k.lower().endswith("copy_if_not_exists") for k in config):
        # S3's "copy if not exists" (write_once_stream's publish): a multipart copy completed with If-None-Match: *.
        config["aws_copy_if_not_exists"] = "multipart"
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


class Ranged:
    """An object read by ranges: its size when opened, and exact reads inside it. A read outside the object is a
    ValueError (callers check untrusted offsets first), a short one an OSError (the object changed while read)."""

    def __init__(self, size: int, read_at: Callable[[int, int], bytes], close: Callable[[], None]) -> None:
        self.size = size
        self._read_at = read_at
        self._close = close

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError(f"bytes {offset}..{offset + length} are outside an object of {self.size} bytes")
        data = self._read_at(offset, length) if length else b""
        if len(data) != length:
            raise OSError(f"{length} bytes asked at {offset}, {len(data)} read: the object changed while read")
        return data

    def chunks(self, offset: int, length: int, piece: int = 1 << 20) -> Iterator[bytes]:
        """Bytes ``offset``..``offset + length`` in pieces of ``piece`` bytes, read as they are taken."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError(f"bytes {offset}..{offset + length} are outside an object of {self.size} bytes")
        end = offset + length
        while offset < end:
            step = min(piece, end - offset)
            yield self.read(offset, step)
            offset += step

    def close(self) -> None:
        self._close()

    def __enter__(self) -> Ranged:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# Characters urlsplit treats specially after "scheme://": a fragment, a query, and the tab and newlines it removes
# (looked for one by one below: a set built of each location cost ~2 µs a file, docs/scale.md, seventeenth pass).
_FAST_REFUSED = frozenset("#?\t\r\n")


def local_path_of(location: str, *, decode: bool = True) -> str | None:
    """The local filesystem path of a location, or None for an object-store URI.

    ``decode``: whether a ``file:`` URI is percent-decoded. Delta paths are URIs (decoded); Iceberg locations are
    strings that pyiceberg and Hadoop's FileIO read literally (``p=x%2Fy`` is a folder of that name)."""
    if location[:8] == "file:///" and "#" not in location and "?" not in location and "\t" not in location and \
            "\r" not in location and "\n" not in location and not (decode and "%" in location):
        # What urlparse gives such a URI (scheme file, no host, no query or fragment, nothing stripped): its path,
        # without the parse (a call per live file of a listing; tests/iceberg/test_iceberg_fast_paths.py).
        return location[7:]
    from attest.locations import is_uri

    if not is_uri(location):
        return location
    try:
        parsed = urlparse(location)
    except ValueError:  # an unbalanced '[' in the authority: no file here (callers refuse such locations first)
        return None
    if parsed.scheme == "file":
        path = unquote(parsed.path) if decode else parsed.path
        # (``localhost`` in any case, a host name: ``FILE://LOCALHOST/wh/ns/t`` typed for an Iceberg folder was read as
        # the relative path ``LOCALHOST/wh/ns/t``; round 19)
        return path if parsed.netloc.lower() in ("", "localhost") else f"{parsed.netloc}{path}"
    return None


class Storage(ABC):
    """Bytes under a carrier root (``uri``) plus data files at absolute locations."""

    decode_file_uris = True

    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        # "file:/p", "file:///p" and "/p" are local; any other scheme is an object store; no scheme: a path.
        local = self.local_of(self.uri)
        self.local_root: Path | None = None if local is None else resolve(Path(local))

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
            real = self._local_real(rel)
            return None if real is None else _read_regular(real)
        return self._remote(self._read_remote, rel)

    def _local_real(self, rel: str) -> Path | None:
        """The real path of a name under a local root, or None where it leads out of the root: a symlinked folder
        or file must not lead a reader out of the carrier root."""
        assert self.local_root is not None
        root = str(self.local_root)
        # local_path's path as a string: check_name leaves no '', '.' or '..' for pathlib to fold
        real = realpath(f"{root.rstrip('/')}/{check_name(rel)}")
        if not (real + "/").startswith(root + "/"):
            return None
        return Path(real)

    def read_chunks(self, rel: str, size: int = 1 << 20) -> Iterator[bytes] | None:
        """The bytes of a name under the root in pieces of about ``size`` bytes, or None when it does not exist,
        never held whole: a local file is read a piece at a time as the pieces are taken; an object on a store is
        one streamed GET through obstore where the options map to an obstore store (``_object_store``), else read
        through the engine's input stream a piece at a time. Whether it exists is asked at once; a store failure
        while the pieces are taken is a ``StoreReadError`` (an OSError carrying the coded failure)."""
        if self.local_root is not None:
            real = self._local_real(rel)  # as read: a symlink never leads a reader out of the carrier root
            return None if real is None else _chunks_regular(real, size)
        return self._remote(lambda name: self._remote_chunks(name, size), rel)

    def _remote_chunks(self, rel: str, size: int) -> Iterator[bytes] | None:
        got = self._from_store(rel, lambda obstore, store: obstore.get(store, rel))
        if got is _ABSENT:
            return None
        if got is not None:
            return self._guarded(rel, (bytes(c) for c in got.stream(min_chunk_size=size)))
        pieces = self._stream_remote(rel, size)
        return None if pieces is None else self._guarded(rel, pieces)

    def _from_store(self, rel: str, ask: Callable[[Any, Any], Any]) -> Any:
        """``ask(obstore, store)`` where ``rel`` is read through obstore (``_read_store``): its answer, ``_ABSENT``
        when the object does not exist, or None where the engine reads (no such store, or the store refused with
        the mapped options: a credential only the engine knows)."""
        store = self._read_store(rel)
        if store is None:
            return None
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            return ask(obstore, store)
        except (FileNotFoundError, NotFoundError):
            return _ABSENT
        except Exception:
            return None

    @contextlib.contextmanager
    def _store_failures(self, rel: str) -> Iterator[None]:
        """Any failure of the store's library inside the block raised as a StoreReadError carrying it coded."""
        try:
            yield
        except AttestError as exc:
            raise StoreReadError(exc) from None
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            raise StoreReadError(coded(exc, where=self.location(rel), secrets=self.secrets)) from None

    def _guarded(self, rel: str, pieces: Iterator[bytes]) -> Iterator[bytes]:
        """``pieces`` with any failure of the store's library raised as a StoreReadError carrying it coded."""
        with self._store_failures(rel):
            yield from pieces

    def _read_store(self, rel: str) -> Any:
        """The obstore store to read ``rel`` through, or None: only where the options map to one and the root and
        the name are spelled alike by obstore and the engine (carriers/storage/objects.py ``object_key``)."""
        from carriers.storage.objects import object_key

        store = self._object_store()
        if store is None or object_key(self.uri, f"{self.uri}/{rel}") is None:
            return None
        return store

    def _stream_remote(self, rel: str, size: int) -> Iterator[bytes] | None:
        """The engine's bytes of ``rel`` in pieces (None: absent). Backends read a piece at a time; this default
        reads whole."""
        data = self._read_remote(rel)
        if data is None:
            return None
        view = memoryview(data)
        return (bytes(view[i:i + size]) for i in range(0, len(data), size))

    def open_ranged(self, rel: str) -> Ranged | None:
        """A name under the root to be read by ranges (its size when opened, then exact reads inside it), or None
        when it does not exist (locally: as ``read``, no link out of the root, nothing but a regular file)."""
        if self.local_root is not None:
            real = self._local_real(rel)
            fd = None if real is None else _open_regular(real)
            if fd is None:
                return None
            return Ranged(os.fstat(fd).st_size, lambda offset, length: os.pread(fd, length, offset),
                          lambda: os.close(fd))
        opened = self._remote(self._ranged_remote, rel)
        if opened is None:
            return None
        size, read_at, close = opened

        def guarded(offset: int, length: int) -> bytes:
            with self._store_failures(rel):
                return read_at(offset, length)

        return Ranged(size, guarded, close)

    def _ranged_remote(self, rel: str) -> tuple[int, Callable[[int, int], bytes], Callable[[], None]] | None:
        got = self._from_store(rel, lambda obstore, store: (obstore, store, obstore.head(store, rel)))
        if got is _ABSENT:
            return None
        if got is not None:
            obstore, store, meta = got
            return (int(meta["size"]),
                    lambda offset, length: bytes(obstore.get_range(store, rel, start=offset, length=length))
                    if length else b"", lambda: None)
        return self._engine_ranged(rel)

    def _engine_ranged(self, rel: str) -> tuple[int, Callable[[int, int], bytes], Callable[[], None]] | None:
        """(size, read(offset, length), close) of ``rel`` through the engine, or None when absent. This default
        reads whole; backends seek."""
        data = self._read_remote(rel)
        if data is None:
            return None
        return len(data), lambda offset, length: data[offset:offset + length], lambda: None

    def write_once_stream(self, folder: str, suffix: str, chunks: Iterable[bytes],
                          name: str | None = None) -> tuple[str, str]:
        """Write content-addressed bytes given in pieces at ``folder/<their BLAKE3><suffix>``: (that name, the
        BLAKE3), never held whole. Locally streamed to a temporary file, hashed on the way, and published with
        link() (carriers.atomic.write_once_local_stream). On object stores the pieces are spooled to a local
        temporary file, hashed on the way; up to STREAM_PUT_MIN bytes are then one conditional PUT
        (``_write_once_spooled``: held once, as a store without multipart upload or conditional copy gets any size),
        larger ones a multipart upload to a temporary name in the folder, published under the
        final name by a conditional server-side copy (``_publish_streamed``): no partial object is ever visible
        under the final name, and a different object there is never replaced. ``name``: published under
        ``folder/<name>`` instead of ``folder/<BLAKE3><suffix>`` (bytes named by another digest: the Iceberg kept
        copy, named by its sidecar's), with the same guarantees."""
        check_name(f"{folder}/{name}" if name is not None else f"{folder}/{'0' * 64}{suffix}")
        if self.local_root is not None:
            try:
                digest, _ = write_once_local_stream(self.local_path(folder), suffix, chunks, name)
            except CarrierError as exc:
                raise CarrierError(exc.message.replace(str(self.local_path(folder)), folder), code=exc.code,
                                   path=folder) from None
            return f"{folder}/{name}" if name is not None else f"{folder}/{digest}{suffix}", digest
        import tempfile

        from blake3 import blake3

        fd, spool = tempfile.mkstemp(prefix="attest-write-once.", suffix=".tmp")
        try:
            hasher = blake3()
            size = 0
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    hasher.update(chunk)
                    fh.write(chunk)
                    size += len(chunk)
            digest = hasher.hexdigest()
            rel = f"{folder}/{name}" if name is not None else f"{folder}/{digest}{suffix}"
            store = self._object_store()
            if size <= STREAM_PUT_MIN or store is None or not self._publish_streamed(store, rel, Path(spool), digest):
                self._write_once_spooled(store, rel, Path(spool), digest)  # small, or no streamed publish here
            return rel, digest
        finally:
            Path(spool).unlink(missing_ok=True)

    def _write_once_spooled(self, store: Any, rel: str, spool: Path, digest: str) -> None:
        """``write_once`` of the spooled bytes (BLAKE3 ``digest``) as one conditional PUT, holding them once: what is
        under the name is compared by a streamed read (``remote_digest``), before and after, never read whole; obstore
        reads the PUT's body from the spool itself into its own buffer (a single PUT is one request body, in memory
        whole: the bound on a store without multipart upload or conditional copy, docs/object-stores.md). Without an
        obstore store the engine's single PUT is given the bytes."""
        there = self.remote_digest(rel)
        if there is not None:
            _same_bytes(rel, there == digest)
            return
        try:
            if store is None:
                raise ConditionalPutUnsupported(f"no conditional PUT for {scheme_of(self.uri)}:// with these options")
            self._put_if_absent_remote(rel, spool)
        except ConditionalPutUnsupported:
            self._write_remote(check_name(rel), spool.read_bytes())  # one PUT: the object appears whole, or not at all
        # A concurrent writer of the same name won (or the store has no conditional PUT): the bytes must agree.
        _same_bytes(rel, self.remote_digest(rel) == digest, concurrently=True)

    def remote_digest(self, rel: str) -> str | None:
        """The BLAKE3 of the object ``rel`` read in pieces, or None when it does not exist."""
        from blake3 import blake3

        pieces = self.read_chunks(rel)
        if pieces is None:
            return None
        hasher = blake3()
        for piece in pieces:
            hasher.update(piece)
        return hasher.hexdigest()

    def _publish_streamed(self, store: Any, rel: str, spool: Path, digest: str) -> bool:
        """Publish the spooled bytes (BLAKE3 ``digest``) at ``rel``: a multipart upload (PUT_PART bytes a part,
        PUT_CONCURRENCY parts in flight) to ``<folder>/.write-once.<random>.tmp``, then a copy to ``rel`` only if
        nothing is there (S3: a multipart copy completed with ``If-None-Match: *``; Azure and GCS: their own
        conditional copy), then the temporary object deleted. A name already holding identical bytes is left as it
        is; different bytes there are never replaced (sidecar_mismatch). False when the multipart upload fails or the
        store offers no conditional copy (the caller then writes one conditional PUT: ``_write_once_spooled``)."""
        import uuid

        import obstore
        from obstore.exceptions import AlreadyExistsError, NotSupportedError, PreconditionError

        there = self.remote_digest(rel)
        if there is not None:
            _same_bytes(rel, there == digest)
            return True
        temp = f"{rel.rsplit('/', 1)[0]}/.write-once.{uuid.uuid4().hex}.tmp"
        uploaded = False
        try:
            try:
                obstore.put(store, temp, spool, use_multipart=True, chunk_size=PUT_PART,
                            max_concurrency=PUT_CONCURRENCY)
            except Exception:
                # No multipart upload here (fake-gcs-server answers object_store's XML `POST ?uploads` with 400), or
                # it failed: written as one conditional PUT (_write_once_spooled), which succeeds or gives the store's
                # coded error. Nothing was published: a multipart upload appears only once completed, and only under
                # the temporary name.
                return False
            except BaseException as exc:
                if not is_panic(exc):
                    raise
                return False
            uploaded = True
            try:
                obstore.copy(store, temp, rel, overwrite=False)
            except (AlreadyExistsError, PreconditionError):
                pass  # a concurrent writer of the same name won: checked below
            except (NotSupportedError, NotImplementedError):
                return False
            except BaseException as exc:
                if not isinstance(exc, Exception) and not is_panic(exc):
                    raise
                raise coded(exc, where=self.location(rel), secrets=self.secrets, action="write") from None
        finally:
            if uploaded:  # best effort: a leftover temporary object is never under a content-addressed name
                with contextlib.suppress(Exception):
                    obstore.delete(store, temp)
        # As write_once: read back (in pieces), the bytes under the name must be these.
        _same_bytes(rel, self.remote_digest(rel) == digest, concurrently=True)
        return True

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
            _same_bytes(rel, existing == data)
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
        _same_bytes(rel, self.read(rel) == data, concurrently=True)
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

    def _put_if_absent_remote(self, rel: str, data: bytes | Path) -> bool:
        store = self._object_store()
        if store is None:
            raise ConditionalPutUnsupported(f"no conditional PUT for {scheme_of(self.uri)}:// with these options")
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            # A Path is read by obstore into its own buffer (a conditional create is one request: never multipart).
            obstore.put(store, rel, data, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError):
            return False
        except NotImplementedError as exc:
            raise ConditionalPutUnsupported(str(exc)) from None
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            raise coded(exc, where=self.location(rel), secrets=self.secrets, action="write") from None
        return True

    def _object_store(self) -> Any:
        """An obstore store rooted at this carrier root, or None when the options cannot be mapped to one."""
        return None

    def _object_store_at(self, root: str) -> Any:
        """An obstore store rooted at ``root`` (a folder of the same store: an Iceberg table's data folder, where this
        storage is rooted at its metadata) with this storage's options, or None when they map to none."""
        if root.rstrip("/") == self.uri:
            return self._object_store()
        mapped = self._store_config()
        if mapped is None or scheme_of(root) != scheme_of(self.uri):  # the options are for this storage's scheme
            return None
        return open_object_store(root, *mapped)

    def _engine_endpoint_mapped(self) -> bool:
        """Whether a store built from ``_store_config`` reaches exactly the server the engine reads (the data objects'
        obstore path is used only then: carriers.storage.hashing)."""
        return True

    def _store_config(self) -> tuple[dict[str, str], dict[str, str]] | None:
        """(obstore config, client options) mapped from this storage's options, or None when they map to none."""
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

    def open_footer_location(self, location: str) -> BinaryIO:
        """The file at ``location`` opened for random access (a Parquet footer read at its end, then the ranges it
        names: the stored-type check of ``verify --level bytes``); ``open_location``'s stream where that seeks."""
        return self.open_location(location)

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


def _regular_before_open(path: Path) -> bool:
    """Whether ``path`` is a regular file, looked at before it is opened: a device node in a carrier file's place was
    opened (its driver's open run) and only then refused by the descriptor's fstat. The descriptor is checked again
    once open (a file swapped in between)."""
    import stat

    return stat.S_ISREG(os.stat(path).st_mode)


def _open_regular(path: Path) -> int | None:
    """A descriptor of ``path`` when it is a regular file (opened without blocking: a FIFO is never waited on)."""
    import stat

    try:
        if not _regular_before_open(path):
            return None
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
        if not _regular_before_open(path):
            return None
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
