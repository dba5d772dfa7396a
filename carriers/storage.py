"""One way to reach bytes for every table carrier: local files, or an object store through the table's engine.

A ``Storage`` addresses bytes two ways: *names* relative to a carrier root (sidecars, pointers, Delta log files —
POSIX segments, never ``.``/``..``, so untrusted metadata cannot send a reader outside the root) and *locations* (the
absolute local path or URI at which the table's engine reads a data file). Backends are small peers:

- ``DeltaStorage``: delta-rs's own object-store handler, so ``storage_options`` mean what they mean to delta-rs;
- ``FileIOStorage``: pyiceberg's FileIO of the table, so catalog properties and credentials are the table's own.

Both read local paths with plain file I/O. ``hash_locations`` hashes many files with bounded memory: local files
through attest.hashing (mmap + threads), remote objects streamed by a few concurrent readers.

Writes on object stores (docs/object-stores.md): every file the carrier writes (sidecar, detached pointer, Delta
attestation commit) is one PUT, created conditionally — ``If-None-Match: *`` on S3 and Azure, ``ifGenerationMatch=0``
on GCS — through obstore (the same Rust object_store delta-rs uses, so the options mean the same); a store whose
options cannot be mapped falls back to the engine's own single PUT, and reads it back. Objects appear whole or not
at all, so no reader ever sees a partial sidecar.

Store failures are coded (``coded``): a refused credential, an unknown scheme, a malformed endpoint (checked before
the engine sees it: delta-rs panics on one), never a raw ``OSError`` or a Rust panic; messages pass through
``attest.redact`` so no credential is ever echoed.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import unquote, urlparse

from attest.errors import AttestError, CarrierError, Code, TableNotFoundError, UnsupportedStorageError
from attest.numbers import is_digits
from attest.redact import redact, register_secrets
from attest.tables import DataFile, Progress
from carriers.atomic import link_if_absent, write_once_local

# Names under a carrier root (sidecars, pointers, log files) are untrusted input: read at most this much.
MAX_NAME_BYTES = 1 << 30
# Remote hashing: this many objects in flight, each streamed in chunks of this size: memory stays at most
# REMOTE_WORKERS * REMOTE_CHUNK (32 MiB) whatever the file sizes.
REMOTE_WORKERS = 8
REMOTE_CHUNK = 4 << 20


class ConditionalPutUnsupported(Exception):
    """The store (or the options it was opened with) offers no conditional create."""


# The schemes each engine can read a table from (delta-rs: object_store's schemes; pyiceberg: its FileIO registry).
ENGINE_SCHEMES = {
    "delta-rs": frozenset({"file", "s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "adl", "memory", "lakefs"}),
    "pyiceberg": frozenset({"file", "s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "hdfs",
                            "viewfs", "oss", "hf"}),
}


def scheme_of(uri: str) -> str:
    scheme = urlparse(uri).scheme.lower()
    return scheme if len(scheme) > 1 else "file"


def check_supported(engine: str, uri: str) -> None:
    """Refuse, with one coded line, a table on a store ``engine`` cannot read (``unsupported_storage``)."""
    scheme = scheme_of(uri)
    if scheme not in ENGINE_SCHEMES[engine]:
        known = ", ".join(f"{s}://" for s in sorted(ENGINE_SCHEMES[engine] - {"file", "memory"}))
        hint = ("; an Iceberg table is named iceberg://<catalog>/<namespace>.<table>, its catalog (a SQL database, a "
                "REST server) configured for pyiceberg" if engine == "delta-rs" else "")
        raise UnsupportedStorageError(f"{engine} cannot read tables on {scheme}:// storage ({uri.split('://')[0]}://"
                                      f"…); it reads local paths and {known}{hint}")


def check_options(options: Mapping[str, str]) -> None:
    """Options the engine would choke on, refused before it sees them: an endpoint that is not an http(s) URL makes
    delta-rs (object_store) panic on a worker thread and print a Rust backtrace."""
    for key, value in options.items():
        low = key.lower()
        if "endpoint" in low or (low.endswith("_url") and "proxy" not in low):
            parsed = urlparse(value)
            try:
                port_ok = parsed.port is None or 0 < parsed.port < 65536
            except ValueError:
                port_ok = False
            if parsed.scheme not in ("http", "https") or not parsed.hostname or not port_ok or \
                    any(c.isspace() for c in value):
                raise AttestError(f"storage option {key} is not an http(s) URL with a host (value not shown)",
                                  code=Code.INVALID_ARGUMENT)


def option_secrets(options: Mapping[str, str]) -> list[str]:
    """The values of ``options`` that may be credentials: every value except switches, numbers, and endpoints,
    regions and account names that look like one (a mistyped switch holding a secret is still masked)."""
    out = []
    for key, value in options.items():
        low = key.lower()
        if value.lower() in ("true", "false") or is_digits(value):
            continue
        parsed = urlparse(value)
        if ("endpoint" in low or low.endswith("url")) and parsed.scheme in ("http", "https") and \
                "@" not in parsed.netloc and not parsed.query:
            continue
        if ("region" in low or "account_name" in low) and re.fullmatch(r"[a-z0-9-]{1,40}", value):
            continue
        out.append(value)
    return out


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by pyo3 (``PanicException`` derives from BaseException, not Exception)."""
    return type(exc).__name__ == "PanicException"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DENIED = ("accessdenied", "access_denied", "access denied", "invalidaccesskeyid", "signaturedoesnotmatch",
           "forbidden", "unauthorized", "authorizationfailure", "authenticationfailed", "status code: 403",
           "status code: 401", "http status 403", "http status 401", "invalid credentials", "permission denied")
_UNSUPPORTED = ("no registered fileio", "unrecognized filesystem type", "unsupported scheme",
                "no suitable object store", "unknown scheme", "unsupported object store", "no filesystem for scheme")


def engine_message(exc: BaseException) -> str:
    """An engine's error in one line: ANSI colours and Rust's multi-line cause chains folded."""
    text = _ANSI.sub("", str(exc)) or type(exc).__name__
    parts = [p.strip(" ↳\t") for p in text.splitlines() if p.strip(" ↳\t")]
    return " — ".join(parts[:4])[:600]


def coded(exc: BaseException, *, where: str = "", engine: str = "", secrets: Sequence[str] = (),
          action: str = "read") -> AttestError:
    """Any failure of a store or an engine as a coded AttestError with a redacted one-line message."""
    if isinstance(exc, AttestError):
        return exc
    register_secrets(secrets)
    text = redact(engine_message(exc))
    low = text.lower()
    at = f" {where}" if where else ""
    if is_panic(exc):
        return CarrierError(f"{engine or 'the engine'} failed on{at} (a Rust panic: {text}); check the storage "
                            "options")
    if any(m in low for m in _UNSUPPORTED):
        return UnsupportedStorageError(f"{engine or 'the engine'} cannot use the store of{at}: {text}")
    if any(m in low for m in _DENIED):
        return CarrierError(f"the store refused access to{at} (access denied: wrong credentials, or a bucket that "
                            f"admits only the table's own files, such as an S3 Tables bucket): {text}")
    if not_found(exc) and where:
        return TableNotFoundError(f"nothing at{at}: {text}")
    return CarrierError(f"cannot {action}{at}: {text}")


# delta-rs option names -> obstore (object_store) configuration: the same Rust crate, so the same keys, except the
# client options (which object_store nests) and delta-rs's own keys (locking, unsafe rename), which obstore refuses.
_CLIENT_KEYS = frozenset({"allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
                          "http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
                          "http2_keep_alive_while_idle", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url",
                          "proxy_ca_certificate", "proxy_excludes", "timeout", "user_agent"})
_DELTA_ONLY = ("aws_s3_allow_unsafe_rename", "aws_s3_locking_provider", "dynamo", "aws_force_credential_load",
               "aws_profile", "max_retries", "retry_timeout")
_STORE_PREFIX = {"s3": "aws_", "s3a": "aws_", "gs": "google_", "az": "azure_", "abfs": "azure_", "abfss": "azure_",
                 "azure": "azure_", "adl": "azure_"}


def obstore_config(scheme: str, options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]] | None:
    """(config, client options) for obstore from delta-rs-style options; None when the scheme has no mapping."""
    prefix = _STORE_PREFIX.get(scheme)
    if prefix is None:
        return None
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        if any(low.startswith(d) or d in low for d in _DELTA_ONLY):
            continue
        bare = low.removeprefix(prefix)
        if bare in _CLIENT_KEYS or low in _CLIENT_KEYS:
            client[bare] = value
        elif low.startswith(prefix):
            config[low] = value
        elif scheme in ("s3", "s3a") and low in ("endpoint_url", "endpoint", "region", "access_key_id",
                                                 "secret_access_key", "session_token"):
            config[prefix + low] = value
    if scheme in ("s3", "s3a") and "aws_endpoint_url" in config:
        config["aws_endpoint"] = config.pop("aws_endpoint_url")
    # obstore reads its store keys (endpoint, credentials) from the environment itself but not its client keys,
    # which delta-rs does read there: without this, AWS_ALLOW_HTTP in the environment (a job's only settings, as
    # in a Spark job's hook) reaches delta-rs but not our writes ("builder error" on an http:// endpoint).
    for switch in ("allow_http", "allow_invalid_certificates"):
        found = os.environ.get(f"{prefix}{switch}".upper())
        if switch not in client and found is not None:
            client[switch] = found
    return config, client


def environment_options(uri: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The store settings delta-rs takes from the environment for ``uri`` (``AWS_*`` for S3, ``GOOGLE_*`` for GCS,
    ``AZURE_*`` for Azure), as storage options: what another process (a Spark executor) needs to read the store the
    way this one does. Local tables: none."""
    prefix = _STORE_PREFIX.get(scheme_of(uri))  # the store's own option prefix, as its variables spell it upper-case
    if prefix is None:
        return {}
    env = os.environ if environ is None else environ
    return {key: value for key, value in env.items() if key.startswith(prefix.upper())}


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
        try:
            return self._read_remote(check_name(rel))
        except AttestError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            raise coded(exc, where=self.location(rel), secrets=self.secrets) from None

    def list_names(self, rel_dir: str) -> list[str]:
        """File names directly under a folder (empty when it does not exist)."""
        if self.local_root is not None:
            try:
                return sorted(os.listdir(self.local_path(rel_dir)))
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            return self._list_remote(check_name(rel_dir))
        except AttestError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            raise coded(exc, where=self.location(rel_dir), secrets=self.secrets) from None

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
        check_options(self.options)
        register_secrets(option_secrets(self.options))
        self._handler: Any = None
        self._handlers: dict[str, Any] = {}
        self._store: Any = False  # False: not built yet; None: no conditional PUT for these options

    @property
    def secrets(self) -> list[str]:
        return option_secrets(self.options)

    def _object_store(self) -> Any:
        if self._store is False:
            mapped = obstore_config(scheme_of(self.uri), self.options)
            self._store = None if mapped is None else open_object_store(self.uri, *mapped)
        return self._store

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

    def list_folders(self, rel_dir: str) -> list[str]:
        """Folder names directly under ``rel_dir`` ("" is the root): one delimiter listing on an object store."""
        from pyarrow.fs import FileType

        if rel_dir:
            check_name(rel_dir)
        if self.local_root is not None:
            base = self.local_root.joinpath(*rel_dir.split("/")) if rel_dir else self.local_root
            try:
                return sorted(e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            infos = self.handler.get_file_info_selector(rel_dir, True, False)
        except Exception as exc:
            raise coded(exc, where=f"{self.uri}/{rel_dir}", engine="delta-rs", secrets=self.secrets) from None
        except BaseException as exc:
            if not is_panic(exc):
                raise
            raise coded(exc, where=f"{self.uri}/{rel_dir}", engine="delta-rs", secrets=self.secrets) from None
        return sorted(i.path.rstrip("/").rsplit("/", 1)[-1] for i in infos if i.type == FileType.Directory)

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

    decode_file_uris = False  # pyiceberg (and Java's HadoopFileIO) read a location string literally

    def __init__(self, uri: str, io: Any) -> None:
        self.io = io
        self._store: Any = False
        super().__init__(uri)
        register_secrets(self.secrets)

    @property
    def secrets(self) -> list[str]:
        # FileIO properties mix catalog settings (uri, warehouse, prefix) with credentials: only the latter.
        from attest.redact import is_secret_name

        props = dict(getattr(self.io, "properties", {}) or {})
        return [str(v) for k, v in props.items() if isinstance(v, str) and is_secret_name(k)]

    def _object_store(self) -> Any:
        if self._store is False:
            mapped = fileio_obstore_config(scheme_of(self.uri), dict(getattr(self.io, "properties", {}) or {}))
            self._store = None if mapped is None else open_object_store(self.uri, *mapped)
        return self._store

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


def fileio_obstore_config(scheme: str, props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]] | None:
    """obstore configuration from pyiceberg FileIO properties (S3 and Azure; GCS emulators and others: None, and
    the FileIO's own single PUT is used)."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    if scheme in ("s3", "s3a", "s3n"):
        names = {"s3.endpoint": "aws_endpoint", "s3.access-key-id": "aws_access_key_id",
                 "s3.secret-access-key": "aws_secret_access_key", "s3.session-token": "aws_session_token",
                 "s3.region": "aws_region", "client.region": "aws_region",
                 "client.access-key-id": "aws_access_key_id", "client.secret-access-key": "aws_secret_access_key",
                 "client.session-token": "aws_session_token"}
        config = {names[k]: str(v) for k, v in props.items() if k in names}
        if config.get("aws_endpoint", "").startswith("http://"):
            client["allow_http"] = "true"
        return config, client
    if scheme in ("abfs", "abfss", "wasb", "wasbs"):
        names = {"adls.account-name": "azure_storage_account_name", "adls.account-key": "azure_storage_account_key",
                 "adls.sas-token": "azure_storage_sas_key"}
        config = {names[k]: str(v) for k, v in props.items() if k in names}
        authority = props.get("adls.blob-storage-authority")
        if authority:
            scheme_ = props.get("adls.blob-storage-scheme", "https")
            account = config.get("azure_storage_account_name", "")
            # A custom authority (an emulator, a private endpoint) serves the account path-style.
            config["azure_storage_endpoint"] = f"{scheme_}://{authority}/{account}"
            if scheme_ == "http":
                client["allow_http"] = "true"
        return config, client
    return None


def hash_location(storage: Storage | None, location: str, *, threads: int | None = None) -> tuple[int, str] | None:
    """``(bytes hashed, BLAKE3)`` of one file at its ``location``; None when it cannot be read (missing, not a
    regular file, permission, an object-store error): the same "unreadable is absent" rule as
    :func:`hash_locations`. ``threads`` caps the cores one big local file is hashed on (an executor task: its
    ``spark.task.cpus``). ``storage`` is needed only for object-store locations (None: local files only)."""
    import stat

    from attest.hashing import hash_regular_file, hash_stream_counted

    local = local_path_of(location)
    if local is not None:
        try:
            st = os.stat(local)
            if not stat.S_ISREG(st.st_mode):
                return None  # a FIFO would block the reader forever, a device never ends: never a table file
            return st.st_size, hash_regular_file(local, threads=threads)  # regular when opened too
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

    from attest.hashing import hash_regular_file, hash_sized_files, hash_stream

    out: dict[str, str] = {}
    local: dict[str, str] = {}
    remote: list[DataFile] = []
    for f in files:
        path = storage.local_of(f.location)
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
                    hashed[p] = hash_regular_file(p)  # a FIFO swapped in since: skipped, never waited on
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
    from concurrent.futures import ThreadPoolExecutor  # here: local tables never need it

    with ThreadPoolExecutor(max_workers=min(REMOTE_WORKERS, len(remote))) as pool:
        for f, digest in zip(remote, pool.map(one, remote), strict=True):
            if digest is not None:
                out[f.path] = digest
            done += 1
            done_bytes += f.size
            if progress is not None:
                progress(done, total, done_bytes)
    return out
