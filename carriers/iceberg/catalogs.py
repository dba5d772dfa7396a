"""pyiceberg catalogs whose tables are read as the catalog's configuration says, never as a table's own metadata says
(docs/security.md).

pyiceberg builds a table's FileIO from the catalog's properties merged with the table's own — ``metadata.json``,
which anyone who may commit to the table (or write its storage) edits. Two classes of attack followed:

- **code**: it imports and calls the class a ``py-io-impl`` there names (``s3.retry-strategy-impl`` likewise). A
  hostile table made a verifier import any installed module, print the catalog's properties (credentials included)
  into its output, or exit: measured with ``sys.exit``, ``builtins.print`` and ``this``;
- **steering**: ``s3.endpoint`` (or a GCS host, an Azure authority, a proxy, credentials, ``DEFAULT_NETLOC``) sent
  the verifier's reads elsewhere. One metadata-only commit pointing ``s3.endpoint`` at a server holding the original
  bytes made tampered data verify, while every engine configured by its catalog read the tampered bytes.

So catalogs opened through :func:`load_catalog` (or given to :func:`guard`) build a table's FileIO from the
catalog's properties alone, plus what a REST catalog server vends with the table (``config``, storage credentials);
never a key that names code from the table's side. A table loaded elsewhere gets a FileIO built that way from
:func:`reading_io`. Iceberg's Java FileIOs take their configuration from the catalog too. Carriers say when a table
carried such keys (:func:`storage_keys`).

Writes are another matter: pyiceberg's commits honour the table's ``write.py-location-provider.impl``, as every
writer of that table does (docs/iceberg.md).

Guarding a catalog also makes pyiceberg's local reads safe from FIFOs (:func:`guard_local_reads`): a ``metadata.json``,
manifest list or manifest replaced by a FIFO made ``open(2)`` wait forever for a writer.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

__all__ = ["code_keys", "guard", "guard_local_reads", "load_catalog", "names_code", "reading_io", "shared_catalogs",
           "sql_catalog_views", "storage_keys", "table_side_io_keys"]

# Local metadata files up to this size are read whole from the descriptor that was checked (no second open by path);
# bigger ones (data files, in a user's scan) are opened by pyarrow through the descriptor that was checked.
SMALL_FILE_BYTES = 64 << 20
_DATA_SUFFIXES = (".parquet", ".orc")

_GUARDED = "_recipe_attest_guarded"

# Namespaces and names of pyiceberg's FileIO properties (pyiceberg.io and its FileIOs), lower-cased: what a note names.
# The guard itself drops every key of the table's side, listed here or not (a later pyiceberg may read new ones).
_STORAGE_PREFIXES = ("s3.", "gcs.", "gs.", "adls.", "adlfs.", "abfs.", "azure.", "hdfs.", "hf.", "oss.", "client.",
                     "pyarrow.", "fs.", "io.")
_STORAGE_NAMES = frozenset({"default_scheme", "default_netloc", "warehouse", "py-io-impl"})

# Set while a guarded REST catalog builds a table from its server's answer: (the table's own properties, the keys the
# server vended with it). Metastore catalogs (sql, glue, hive, ...) pass the table's properties alone.
_REST_TABLE: ContextVar[tuple[Mapping[str, str], frozenset[str]] | None] = ContextVar("_recipe_attest_rest_table",
                                                                                      default=None)


def names_code(key: str) -> bool:
    """Whether a property names code for pyiceberg (or a Java engine) to load: ``py-io-impl``,
    ``s3.retry-strategy-impl``, ``write.py-location-provider.impl``, ``io-impl``, and any later ``...impl``."""
    return key.strip().lower().endswith("impl")


def code_keys(properties: Mapping[str, Any]) -> list[str]:
    """The keys of ``properties`` that name code, sorted."""
    return sorted(k for k in properties if isinstance(k, str) and names_code(k))


def storage_keys(properties: Mapping[str, Any]) -> list[str]:
    """The keys of a table's ``properties`` that pyiceberg would use to configure its FileIO — where and how the
    table's bytes are read — or that name code, sorted."""
    def configures_io(key: str) -> bool:
        low = key.strip().lower()
        return names_code(low) or low in _STORAGE_NAMES or low.startswith(_STORAGE_PREFIXES)

    return sorted(k for k in properties if isinstance(k, str) and configures_io(k))


def guard(catalog: Any) -> Any:
    """Make ``catalog`` (a pyiceberg ``Catalog``) build every table's FileIO from its own properties alone (and, for
    a REST catalog, what its server vends with the table), never from the table's own properties; no key of the
    table's side that names code either way.

    pyiceberg's catalogs call ``self._load_file_io(table_side, location)`` when they load a table — ``table_side``
    is the table's properties, merged with the server's answer for REST — and merge it over their own properties;
    the metadata file itself is read with the catalog's properties alone. The instance's methods are wrapped, once."""
    guard_local_reads()
    if getattr(catalog, _GUARDED, False):
        return catalog
    original = catalog._load_file_io

    def _load_file_io(properties: Mapping[str, str] | None = None, location: str | None = None) -> Any:
        rest = _REST_TABLE.get()
        if rest is None:
            kept: dict[str, str] = {}  # the table's own properties: none of them configures how it is read
        else:
            table_side, vended = rest
            kept = {k: v for k, v in (properties or {}).items() if k in vended or k not in table_side}
        return original({k: v for k, v in kept.items() if not names_code(k)}, location)

    catalog._load_file_io = _load_file_io
    for name in ("_response_to_table", "_response_to_staged_table"):  # RestCatalog's
        method = getattr(catalog, name, None)
        if callable(method):
            setattr(catalog, name, _telling_rest_side(method))
    session = getattr(catalog, "_session", None)
    hooks = getattr(session, "hooks", None)
    if isinstance(hooks, dict) and isinstance(hooks.get("response"), list):  # a REST catalog's requests.Session
        hooks["response"].append(_paging_guard())
    setattr(catalog, _GUARDED, True)
    return catalog


# A catalog listing (namespaces, tables, views) is read through at most this many pages.
MAX_LISTING_PAGES = 10_000


def _paging_guard() -> Any:
    """A response hook for a REST catalog's session: a listing that repeats a ``next-page-token`` (or pages past
    ``MAX_LISTING_PAGES``) stops with a coded error. pyiceberg follows the token until the server omits it, so a
    server answering the same token forever made ``attest audit iceberg://<catalog>`` hang, its memory growing."""
    import threading
    from urllib.parse import parse_qsl, urlencode, urlsplit

    from attest.errors import AttestError, Code

    pages: dict[tuple[str, str], set[str]] = {}  # the tokens asked for so far, per listing under way
    lock = threading.Lock()

    def hook(response: Any, *args: Any, **kwargs: Any) -> Any:
        request = response.request
        parts = urlsplit(str(request.url))
        query = parse_qsl(parts.query, keep_blank_values=True)
        token = next((v for k, v in query if k == "pageToken"), None)
        key = (str(request.method), parts.path + "?" + urlencode(sorted(kv for kv in query if kv[0] != "pageToken")))
        with lock:
            if token is None:  # a first page (or no listing at all): nothing to remember
                pages.pop(key, None)
                return response
            seen = pages.setdefault(key, set())
            repeated = token in seen
            if not repeated and len(seen) < MAX_LISTING_PAGES:
                seen.add(token)
                return response
            pages.pop(key, None)
        why = (f"answered the page token {token[:80]!r} a second time" if repeated else
               f"was still paging after {MAX_LISTING_PAGES} pages")
        raise AttestError(f"the catalog server's listing {parts.path} {why}: it never ends, so what it lists cannot "
                          "be found for certain and is not audited", code=Code.TABLE_NOT_AUDITED)

    return hook


def _telling_rest_side(method: Any) -> Any:
    """``RestCatalog._response_to_table`` (or ``_staged_``), which tells the FileIO wrapper which keys of the merged
    properties came from the server (``config``, storage credentials) rather than from the table's metadata."""
    def wrapped(identifier: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        metadata = getattr(response, "metadata", None)
        table_side = dict(getattr(metadata, "properties", None) or {})
        vended = set(getattr(response, "config", None) or {})
        for credential in getattr(response, "storage_credentials", None) or ():
            vended.update(getattr(credential, "config", None) or {})
        token = _REST_TABLE.set((table_side, frozenset(vended)))
        try:
            return method(identifier, response, *args, **kwargs)
        finally:
            _REST_TABLE.reset(token)

    return wrapped


def table_side_io_keys(table: Any) -> list[str]:
    """The keys of ``table``'s own properties its FileIO took (pyiceberg merges them over the catalog's), sorted:
    none for a table loaded through a guarded catalog. A key the catalog (or a REST server) sets to the same value
    does not count."""
    own = dict(getattr(getattr(table, "metadata", None), "properties", None) or {})
    used = dict(getattr(getattr(table, "io", None), "properties", None) or {})
    catalog_props = dict(getattr(getattr(table, "catalog", None), "properties", None) or {})
    vended = dict(getattr(table, "config", None) or {})
    return sorted(k for k, v in own.items()
                  if k in used and used[k] == v and k not in vended and catalog_props.get(k) != v)


def reading_io(table: Any) -> Any | None:
    """A FileIO for ``table`` built without the keys its own properties put in the one it has (the catalog's
    values, where the catalog sets them, take their place), or None when it has none of them."""
    taken = table_side_io_keys(table)
    if not taken:
        return None
    from pyiceberg.io import load_file_io

    catalog_props = dict(getattr(getattr(table, "catalog", None), "properties", None) or {})
    props = {k: v for k, v in dict(table.io.properties).items() if k not in taken}
    props.update({k: catalog_props[k] for k in taken if k in catalog_props})
    return load_file_io(props, table.metadata_location)


def load_catalog(name: str | None, **properties: str) -> Any:
    """``pyiceberg.catalog.load_catalog``, guarded (see the module docstring); with the properties given on the command
    line for that catalog (``--uri``, ``--warehouse``: carriers.iceberg.catalog_options) over its configuration.
    Within ``shared_catalogs()``, one object per name and properties."""
    from pyiceberg.catalog import load_catalog as load

    from carriers.iceberg.catalog_options import overrides_for

    merged = {**overrides_for(name), **properties}
    if _SHARED is None:
        return guard(load(name, **merged))
    key = (name, tuple(sorted(merged.items())), tuple(sorted((k, v) for k, v in os.environ.items()
                                                              if k.startswith("PYICEBERG_"))))
    if key not in _SHARED:
        _SHARED[key] = guard(load(name, **merged))
    return _SHARED[key]


_SHARED: dict[Any, Any] | None = None


def shared_cache() -> dict[Any, Any] | None:
    """Inside ``shared_catalogs``: its dictionary, where one run keeps what it asked a catalog once (keys are tuples
    whose first item names the user, never a catalog name alone); None outside."""
    return _SHARED


@contextlib.contextmanager
def shared_catalogs() -> Iterator[None]:
    """Within, ``load_catalog`` opens a catalog once per name and properties and hands the same object back (``attest
    audit``: 2,000 tables of one catalog open it once, as a reader of them would — a SqlCatalog's start-up was a
    third of the audit's time). A catalog object holds its configuration and connections, never a table: every
    ``load_table`` still reads the catalog. Re-entrant; the objects are dropped on leaving the outermost."""
    global _SHARED
    outer = _SHARED
    if outer is None:
        _SHARED = {}
    try:
        yield
    finally:
        if outer is None:
            _SHARED = None


def guard_local_reads() -> None:
    """From now on in this process, pyiceberg's PyArrow FileIO opens a local file only when it is a regular file
    (checked on a descriptor opened without blocking: a FIFO without a writer would block ``open(2)`` forever), and
    reads a small one — metadata, manifest lists, manifests — whole from that descriptor; PyArrow opens a bigger one
    or a data file through that descriptor (``/proc/self/fd`` on Linux; elsewhere by path, after the check). Anything
    else is a FileNotFoundError, which pyiceberg and the carriers already report as an unreadable table. Idempotent."""
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
        # Metadata is read whole from the checked descriptor; data files (a user's scan in this process) and bigger
        # files are opened by pyarrow through that descriptor (it reads only the columns asked for).
        opened = _open_regular(path, str(self.location), whole=not path.lower().endswith(_DATA_SUFFIXES))
        import pyarrow as pa

        if isinstance(opened, bytes):
            return pa.BufferReader(opened)
        try:
            # The same file, whatever has since been swapped in at its path (Linux's magic link to the descriptor).
            same = f"/proc/self/fd/{opened}"
            return pa.OSFile(same, "r") if os.path.exists(same) else original(self, seekable)
        finally:
            os.close(opened)

    setattr(open_checked, _GUARDED, True)
    open_checked.__doc__ = original.__doc__
    pio.PyArrowFile.open = open_checked  # type: ignore[method-assign]


def _open_regular(path: str, location: str, *, whole: bool = True) -> bytes | int:
    """The bytes of a local regular file of at most SMALL_FILE_BYTES (``whole``), else a descriptor open on it for
    the caller to close; a FileNotFoundError for anything that is not a regular file (pyiceberg's "missing")."""
    from attest.hashing import open_regular

    try:
        fd, size = open_regular(path)  # non-blocking open, then fstat: never waits on a FIFO
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # not a regular file; others (missing, permissions) pass as they are
            raise
        raise FileNotFoundError(f"Cannot open file, not a regular file: {location}") from None
    try:
        if size > SMALL_FILE_BYTES or not whole:
            keep, fd = fd, -1
            return keep
        chunks: list[bytes] = []
        read = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            read += len(chunk)
            if read > SMALL_FILE_BYTES:  # grew while read: pyarrow reads it through the descriptor
                keep, fd = fd, -1
                return keep
        return b"".join(chunks)
    finally:
        if fd >= 0:
            os.close(fd)


def sql_catalog_views(catalog: Any, ns: tuple[str, ...]) -> tuple[list[tuple[str, ...]], list[tuple[tuple[str, ...],
                                                                                                    str]]]:
    """The views of a namespace of pyiceberg's SQL catalog, which lists none (``list_views`` is not implemented) while
    its database holds them: iceberg-java's JdbcCatalog (Spark; ``attest.spark.local_session``, schema V1) writes a
    view as a row of ``iceberg_type`` ``VIEW`` beside the tables, and an audit of the catalog said nothing of it. Also
    the entries of any other type (neither reader opens them). ([], []) for another catalog or a V0 database (no
    ``iceberg_type``: no views)."""
    from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    if not isinstance(catalog, SqlCatalog) or getattr(catalog, "_schema_version", None) != "v1":
        return [], []
    stmt = select(IcebergTables.table_name, IcebergTables.iceberg_type).where(
        IcebergTables.catalog_name == catalog.name, IcebergTables.table_namespace == ".".join(ns),
        IcebergTables.iceberg_type.is_not(None), IcebergTables.iceberg_type != "TABLE")
    with Session(catalog.engine) as session:
        rows = sorted((str(name), str(kind)) for name, kind in session.execute(stmt))
    return ([(*ns, name) for name, kind in rows if kind == "VIEW"],
            [((*ns, name), kind) for name, kind in rows if kind != "VIEW"])
