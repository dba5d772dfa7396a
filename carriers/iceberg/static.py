"""An Iceberg table found by its folder (``<folder>/metadata/*.metadata.json``), with no catalog named (issue 30.6).

``attest audit W`` on what ``attest.spark.local_session(W)`` makes (``W/spark-warehouse/`` Delta tables,
``W/iceberg/<ns>/<table>`` Iceberg tables) stopped at the Iceberg folders. Such a folder is now read one of two ways,
and the verdict says which:

1. **through a configured catalog that owns it**: a pyiceberg catalog (``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__*``)
   whose local ``warehouse`` holds the folder, and in which the table the folder's path spells
   (``<warehouse>/<ns>[.db]/<table>``) has exactly this folder as its location. The catalog's pointer says which
   metadata file is current; the table is verified as ``iceberg://<catalog>/<ns>.<table>`` would be.
2. **static**, from its own metadata: the metadata file with the highest version number in its name
   (``00042-<uuid>.metadata.json`` as Java and pyiceberg write them, ``v42.metadata.json`` as Hadoop tables do, either
   ``.gz`` compressed). Refused (``unsupported_table``) when two files claim the highest number (a commit race only a
   catalog settles), when that file is not a regular file or has the old compressed name ``v42.metadata.json.gz``
   (Hadoop tables read it, pyiceberg does not), when Hadoop-table readers would read another file
   (``version-hint.text`` then up while ``v<N+1>`` exists, as Iceberg Java's ``HadoopTableOperations.refresh``;
   without a hint, the highest ``v<N>`` spelt as Java prints the int: ``v04`` is no version to it), or
   pyiceberg's reader of a folder (``StaticTable.from_metadata(<folder>)``: the file the hint names, no climb), or
   when the metadata names another table location (a copied or moved table). Without a catalog nobody can say the
   newest file is current — a failed commit can leave a newer one, a rollback makes an older one current — so every
   verdict carries a note naming the file read and that.

The FileIO is built from nothing the table's own metadata says (carriers/iceberg/catalogs.py: pyiceberg's
``StaticTable.from_metadata`` merges the table's properties into it, which can name code to import).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from attest.errors import CarrierError, UnsupportedTableError
from attest.tables import TableState
from carriers.core import Version
from carriers.iceberg.carrier import IcebergCarrier

__all__ = ["StaticIcebergCarrier", "catalog_identity", "latest_metadata", "open_folder", "owning_catalog",
           "same_table_names", "view_folder"]

# 00042-<uuid>.metadata.json (Java, pyiceberg), v42.metadata.json (Hadoop tables); optionally .gz before .metadata.json
_NUMBERED = re.compile(r"^(?:(?P<seq>[0-9]+)-[^/]+?|v(?P<v>[0-9]+))(?:\.gz)?\.metadata\.json(?P<old>\.gz)?$")


def latest_metadata(folder: Path) -> tuple[Path, str]:
    """The metadata file with the highest version number under ``folder/metadata``, and how it was chosen."""
    meta = folder / "metadata"
    numbered: dict[int, list[str]] = {}
    others: list[str] = []
    try:
        names = sorted(os.listdir(meta))
    except OSError as exc:
        raise UnsupportedTableError(f"{folder}: its metadata folder cannot be listed ({exc.strerror or exc})") from exc
    for name in names:
        # v3.metadata.json.gz: the old compressed name, which Iceberg Java's Hadoop tables still read (pyiceberg does
        # not). Ignored, a file there with the highest number made the table verify as of an older file.
        if not name.endswith((".metadata.json", ".metadata.json.gz")):
            continue
        match = _NUMBERED.match(name)
        if match is None:
            others.append(name)
            continue
        numbered.setdefault(int(match.group("seq") or match.group("v")), []).append(name)
    if not numbered:
        raise UnsupportedTableError(f"{folder} holds metadata files but none named with a version number "
                                    f"({', '.join(others[:3])}): which is current cannot be told without its catalog")
    top = max(numbered)
    if len(numbered[top]) > 1:
        raise UnsupportedTableError(
            f"{folder}: {len(numbered[top])} metadata files claim version {top} ({', '.join(numbered[top])}): two "
            "commits raced and only the catalog knows which one won; audit it through its catalog")
    chosen = meta / numbered[top][0]
    hadoop = _hadoop_choice(meta, names)
    if hadoop is not None and hadoop != top:
        read = f"version {hadoop}" if isinstance(hadoop, int) else f"a version this folder cannot tell ({hadoop})"
        raise UnsupportedTableError(
            f"{folder}: Iceberg's Hadoop tables (version-hint.text, then v<N> while v<N+1> exists) read {read}, not "
            f"metadata/{chosen.name} with the highest version number: which is current only its catalog can say; "
            "audit it through its catalog")
    hinted = _pyiceberg_folder_choice(meta)
    if hinted is not None and os.path.realpath(hinted) != os.path.realpath(chosen):
        raise UnsupportedTableError(
            f"{folder}: pyiceberg's reader of a table folder (StaticTable.from_metadata of the folder) reads "
            f"{_shown(meta, hinted)}, the file metadata/version-hint.text names, not metadata/{chosen.name} with the "
            "highest version number: which is current only its catalog can say; audit it through its catalog")
    if chosen.name.endswith(".gz"):
        raise UnsupportedTableError(
            f"{folder}: metadata/{chosen.name} has the highest version number, in the old compressed naming "
            "(.metadata.json.gz) that Iceberg's Hadoop tables read and pyiceberg does not: audit it through its "
            "catalog")
    if chosen.is_symlink() or not chosen.is_file():
        raise UnsupportedTableError(f"{chosen} is not a regular file (a link or a special file): not read")
    count = sum(len(v) for v in numbered.values())
    ignored = f"; {len(others)} metadata file(s) without a version number ignored" if others else ""
    how = (f"read without a catalog from metadata/{chosen.name}, the highest version number of {count} metadata "
           f"file(s){ignored}: no catalog said it is current (a failed commit can leave a newer file, a rollback makes "
           "an older one current)")
    return chosen, how


# The keys of Iceberg view metadata (the view spec, format version 1): a file with any other key (``table-uuid``,
# ``snapshots``, ``last-column-id``…) is table metadata to a reader, whatever ``view-uuid`` it also carries.
_VIEW_KEYS = frozenset({"view-uuid", "format-version", "location", "current-version-id", "versions", "version-log",
                        "schemas", "properties"})
# A view folder is told by reading every metadata file in it: beyond these bounds it is audited as a table (ERROR).
_VIEW_FILES, _VIEW_FILE_BYTES = 1_000, 4 << 20


def view_folder(folder: Path) -> str | None:
    """What says ``folder`` is an Iceberg view's folder (Spark's ``CREATE VIEW`` through iceberg-java's JdbcCatalog
    writes ``<warehouse>/<ns>/<view>/metadata/00000-<uuid>.gz.metadata.json``), None when it is not one for certain.

    A view has no rows of its own: listed, never audited, as a catalog's views are. Said of a folder only when no
    reader can open a table there: the folder holds ``metadata/`` alone, which holds only ``*.metadata.json`` regular
    files (gzip-compressed or not, as Spark writes them; Hadoop's ``.<name>.crc`` checksums beside them), each a JSON
    object with ``view-uuid``, ``versions`` and ``current-version-id`` and no key outside the view spec's; and no
    configured catalog has a table at this location. Anything else (a table's metadata beside a view's, a table
    metadata file that merely carries ``view-uuid``, a data folder, a ``version-hint.text``, a link) is read as
    a table, as before — a folder cannot escape its audit by looking like a view."""
    try:
        found = _view_files(folder)
        # Asked last (it loads the configured catalogs): a catalog's table whose location is this folder is read by
        # its name, through that catalog.
        if found is None or owning_catalog(folder) is not None:
            return None
    except Exception:  # what cannot be told a view for certain is a table: its audit says what is wrong with it
        return None
    views, uuids = found
    which = f"view-uuid {next(iter(uuids))}" if len(uuids) == 1 else f"{len(uuids)} view-uuids"
    return (f"an Iceberg view, not a table ({views} view metadata file(s), {which}): its readers get the rows "
            "of the tables its SQL reads, which no attestation binds (the tables it reads are audited where they are "
            "among the audit's tables)")


def _view_files(folder: Path) -> tuple[int, set[str]] | None:
    """(how many view metadata files, their view-uuids) when ``folder`` holds nothing but a view's metadata (see
    ``view_folder``); None otherwise."""
    meta = folder / "metadata"
    try:
        if sorted(os.listdir(folder)) != ["metadata"] or meta.is_symlink():
            return None
        with os.scandir(meta) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return None
    if len(entries) > _VIEW_FILES:
        return None
    uuids: set[str] = set()
    views = 0
    for entry in entries:
        if not entry.is_file(follow_symlinks=False):
            return None
        if entry.name.startswith(".") and entry.name.endswith(".crc"):
            continue  # Hadoop's local checksum of a file beside it (Spark writes one per metadata file): no reader's
        if not entry.name.endswith((".metadata.json", ".metadata.json.gz")):
            return None
        doc = _small_json(entry.path)
        if not isinstance(doc, dict) or not {"view-uuid", "versions", "current-version-id"} <= doc.keys() or \
                not doc.keys() <= _VIEW_KEYS or not isinstance(doc["view-uuid"], str):
            return None
        uuids.add(doc["view-uuid"])
        views += 1
    return (views, uuids) if views else None


def _small_json(path: str) -> Any:
    """The JSON of a regular file of at most ``_VIEW_FILE_BYTES`` (gzip-compressed too: Spark writes a view's metadata
    as ``.gz.metadata.json``), None when it is not one."""
    import json
    import zlib

    from attest.hashing import read_regular

    try:
        raw = read_regular(path, _VIEW_FILE_BYTES + 1)
        if raw[:2] == b"\x1f\x8b":
            inflate = zlib.decompressobj(wbits=31)
            raw = inflate.decompress(raw, _VIEW_FILE_BYTES + 1)  # bounded: a small file may inflate to gigabytes
            if inflate.unconsumed_tail or not inflate.eof:
                return None
        return json.loads(raw) if len(raw) <= _VIEW_FILE_BYTES else None
    except (OSError, ValueError, RecursionError, zlib.error):  # a planted ``[[[[…`` must not end the walk
        return None


def _hadoop_choice(meta: Path, names: list[str]) -> int | str | None:
    """The version Iceberg Java's ``HadoopTableOperations.refresh`` reads from ``meta``: from ``version-hint.text``
    (else the highest ``v<N>``), then up while ``v<N+1>`` exists. None: the folder has no ``v<N>`` file (no Hadoop
    reader reads it); a string: the hint cannot be read as Java reads it. A hint older than a gap made Hadoop readers
    read an older file than the one this folder is verified from (a planted hint, a deleted file)."""
    versions = {int(v) for v in (m.group("v") for m in map(_NUMBERED.match, names) if m is not None)
                if v is not None and _java_int(v)}
    if not versions:
        return None
    hint = meta / "version-hint.text"
    start = max(versions)
    if os.path.lexists(hint):
        if not hint.is_file():  # a FIFO or a link to a device is never opened (it would block or never end)
            return "a version-hint.text that is not a regular file"
        try:
            with hint.open("rb") as handle:
                text = handle.read(64).decode("ascii").split("\n", 1)[0]
        except (OSError, UnicodeDecodeError):
            return "an unreadable version-hint.text"
        if not text.isdigit() or not text.isascii() or int(text) > _INT_MAX:  # Java's parseInt takes signs and
            return f"version-hint.text {text!r}"  # other digits, fails past 2^31-1 (then lists): not guessed
        start = int(text)

    def exists(version: int) -> bool:
        return any(os.path.lexists(meta / f"v{version}{ext}")
                   for ext in (".metadata.json", ".gz.metadata.json", ".metadata.json.gz"))

    if not exists(start):
        return None  # Hadoop readers fail ("Metadata file for version N is missing"): they read no other rows
    version = start
    while exists(version + 1):
        version += 1
    return version


_INT_MAX = 2**31 - 1
_HINT_BYTES = 4096


def _pyiceberg_folder_choice(meta: Path) -> str | None:
    """The metadata file pyiceberg 0.12's ``StaticTable.from_metadata(<folder>)`` reads (as DuckDB's ``iceberg_scan``
    of a folder does, by the same rule): ``version-hint.text``'s whole text as it is — a file name ending in
    ``.metadata.json``, else ``v<text>.metadata.json`` when the text is numeric, else ``<text>.metadata.json`` — with no
    climb to ``v<N+1>`` (Java's Hadoop tables climb). None: no hint, or it names no file (that reader then fails: it
    reads no other rows). A hint of ``0`` below ``v1``, ``v2`` (Java reads ``v2``), or naming an older
    ``00000-<uuid>.metadata.json`` of a catalog's folder, gave that reader another file than the one verified
    (round 20b)."""
    hint = meta / "version-hint.text"
    try:
        if not hint.is_file():  # a FIFO or a device never opened: the Hadoop check refuses it where it matters
            return None
        with hint.open("rb") as handle:
            raw = handle.read(_HINT_BYTES + 1)
        content = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if len(raw) > _HINT_BYTES:
        return os.fspath(meta / "version-hint.text")  # never the file read: refused
    if content.endswith(".metadata.json"):
        target = os.path.join(meta, content)
    elif content.isnumeric():
        target = os.path.join(meta, f"v{content}.metadata.json")
    else:
        target = os.path.join(meta, f"{content}.metadata.json")
    try:
        return target if os.path.lexists(target) else None
    except ValueError:  # a NUL in the hint: no file
        return None


def _shown(meta: Path, path: str) -> str:
    """``path`` as the messages name a metadata file: relative to the table folder when it lies in ``meta``."""
    return f"metadata/{os.path.basename(path)}" if os.path.dirname(path) == os.fspath(meta) else path


def _java_int(digits: str) -> bool:
    """Whether ``v<digits>.metadata.json`` is a version file to Iceberg Java's Hadoop tables: they read the version
    ``N`` from ``v<N>`` spelt exactly as Java prints the ``int`` (no leading zero, at most 2^31-1). ``v04`` is no file
    of version 4 to them (they look for ``v4``) and ``v2147483648`` no version at all (``parseInt`` fails): such a file
    with the highest number made the folder verify as of it, while Spark read the highest version spelt as Java spells
    it (round 20b)."""
    return digits == str(int(digits)) and int(digits) <= _INT_MAX


def owning_catalog(folder: Path) -> tuple[str, str] | None:
    """(catalog name, ``<ns>.<table>``) of a configured pyiceberg catalog whose local warehouse holds ``folder`` and
    whose table of that path has exactly this folder as its location; None when there is none."""
    return next(_owners(folder, _configured_catalogs()), None)


def _local(location: str) -> str | None:
    from carriers.storage.base import local_path_of

    return local_path_of(location)


def _location_is(catalog_name: str, identifier: str, real: str) -> bool:
    from carriers.iceberg.catalogs import load_catalog

    try:
        table = load_catalog(catalog_name).load_table(identifier)
    except Exception:  # not this catalog's table (or the catalog cannot answer): the static read stands
        return False
    location = _local(str(table.location()))
    return location is not None and os.path.realpath(location) == real


class StaticIcebergCarrier(IcebergCarrier):
    """An Iceberg table read from one metadata file of its folder; named by the folder as found."""

    def __init__(self, table: Any, *, folder: str, how: str, **kwargs: Any) -> None:
        self.folder = folder
        self.how = how
        super().__init__(table, catalog_name=None, **kwargs)

    @property
    def reference(self) -> str:
        return self.folder

    @property
    def signed_uri(self) -> str:
        """Never a name a statement is signed for: nothing records through a folder read this way, and a Delta
        table's statement for the same folder URI must not pass for an Iceberg reading of it."""
        return "iceberg+" + Path(self.folder).resolve().as_uri()

    @property
    def policy_aliases(self) -> tuple[str, ...]:
        return ()  # ``<folder>.branch_<b>`` is a path of its own, not this folder's branch

    def policy_aliases_at(self, v: Version) -> tuple[str, ...]:
        return ()  # nor is ``<folder>.tag_<x>`` this folder's tag

    def more_policy_names(self) -> Callable[[], tuple[str, ...]] | None:
        # open_folder found no configured catalog owning this folder: asking each catalog again would find none.
        return None

    @property
    def static_note(self) -> str:
        return self.how

    def state(self, version: str | int | None = None) -> TableState:
        state = super().state(version)
        return dataclasses.replace(state, notes=(self.how, *state.notes))

    def record(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedTableError(f"{self.folder} was read from its metadata files without a catalog: attestations "
                                    "are recorded through its catalog (iceberg://<catalog>/<namespace>.<table>)")


def open_folder(location: str, *, detached: bool = False, allow_external: bool = False,
                branch: str | None = None, tag: str | None = None) -> IcebergCarrier:
    """The carrier of a local Iceberg table folder: through a configured catalog that owns it, else static;
    ``branch``: opened on that branch (its head is "current"; None: main); ``tag``: on the snapshot that tag names."""
    from carriers.storage.base import local_path_of

    local = local_path_of(location) or location
    folder = Path(local)
    owner = owning_catalog(folder)
    if owner is not None:
        carrier = IcebergCarrier.from_reference(owner[0], owner[1], detached=detached, allow_external=allow_external,
                                                branch=branch, tag=tag)
        _hadoop_reads_the_current(folder, location, owner, str(carrier.table.metadata_location or ""))
        setattr(carrier, "static_note", f"found as the folder {location}; verified through catalog {owner[0]!r}, whose "  # noqa: B010
                f"table {owner[1]} it is (the catalog says which metadata file is current)")
        return carrier
    chosen, how = latest_metadata(folder)
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.serializers import FromInputFile
    from pyiceberg.table import StaticTable

    from carriers.iceberg.catalogs import guard_local_reads

    guard_local_reads()  # a FIFO or special file in its place is unreadable, never a hang
    io = PyArrowFileIO(properties={})  # nothing from the table's own properties (they can name code)
    uri = chosen.resolve().as_uri()
    try:
        metadata = FromInputFile.table_metadata(io.new_input(uri))
    except Exception as exc:  # not JSON, not Iceberg metadata, gone, a FIFO: this table is unreadable, coded
        view = view_folder(folder)
        if view is not None:  # named by itself (``attest verify <view folder>``): said what it is
            raise UnsupportedTableError(f"{location} is {view}") from exc
        raise CarrierError(f"{location}: metadata/{chosen.name} cannot be read as Iceberg table metadata "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})") from exc
    declared = _local(str(metadata.location))
    if declared is None or os.path.realpath(declared) != os.path.realpath(folder):
        raise UnsupportedTableError(f"{location}: its metadata names the table location {metadata.location}, not "
                                    "this folder (a copied or moved table): read it through its catalog")
    table = StaticTable(identifier=("static", str(folder)), metadata=metadata, metadata_location=uri, io=io,
                        catalog=NoopCatalog("static"))
    return StaticIcebergCarrier(table, folder=location, how=how, detached=detached, allow_external=allow_external,
                                branch=branch, tag=tag)


def _hadoop_reads_the_current(folder: Path, location: str, owner: tuple[str, str], current: str) -> None:
    """Refuse a catalog's folder in which Iceberg's Hadoop tables read another metadata file than the catalog's
    current one. A path reader (``spark.read.format("iceberg").load(folder)``: ``HadoopTables``) reads
    ``version-hint.text`` and ``v<N>.metadata.json``, which no catalog writes: such a file planted in the folder of a
    catalog's table gave path readers its rows while the folder verified through the catalog (exit 0)."""
    meta = folder / "metadata"
    try:
        names = sorted(os.listdir(meta))
    except OSError:
        return  # the catalog's own reading of the table says what is wrong with it
    current_name = current.rstrip("/").rsplit("/", 1)[-1]
    hinted = _pyiceberg_folder_choice(meta)
    if hinted is not None and os.path.realpath(hinted) != os.path.realpath(_local(current) or ""):
        raise UnsupportedTableError(
            f"{location}: pyiceberg's reader of a table folder (StaticTable.from_metadata of this path) reads "
            f"{_shown(meta, hinted)}, the file metadata/version-hint.text names, while its catalog {owner[0]!r} "
            f"(table {owner[1]}) says {current_name} is current: readers of the path get what the catalog's "
            "attestation does not bind; remove the hint or audit the table through its catalog alone")
    hadoop = _hadoop_choice(meta, names)
    if hadoop is None:
        return
    match = _NUMBERED.match(current_name)
    if isinstance(hadoop, int) and match is not None and match.group("v") is not None and \
            match.group("v") == str(hadoop) and os.path.realpath(meta / current_name) == os.path.realpath(
                _local(current) or ""):
        return  # the catalog points at the very file Hadoop readers read (a Hadoop table registered as it is)
    read = f"metadata/v{hadoop}.metadata.json" if isinstance(hadoop, int) else f"a version this folder cannot tell " \
        f"({hadoop})"
    raise UnsupportedTableError(
        f"{location}: Iceberg's Hadoop tables (spark.read.format('iceberg').load of this path: version-hint.text, "
        f"then v<N> while v<N+1> exists) read {read}, while its catalog {owner[0]!r} (table {owner[1]}) says "
        f"{current_name} is current: readers of the path get what the catalog's attestation does not bind; remove the "
        "Hadoop metadata or audit the table through its catalog alone")


def catalog_identity(name: str, properties: Mapping[str, Any]) -> tuple[str, ...] | None:
    """What a configured catalog is, whatever a configuration calls it: its type, its folded ``uri`` and, where the
    catalog's tables depend on them, its ``warehouse`` (a REST server serves one catalog per warehouse) or its own name
    (a SQL catalog keeps its tables in rows keyed by its name: the same database under another name is another
    catalog). None: no ``uri`` (nothing says which catalog it is)."""
    uri = properties.get("uri")
    if not isinstance(uri, str) or not uri:
        return None
    kind = str(properties.get("type") or "").lower() or (
        "rest" if uri.startswith("http") else "hive" if uri.startswith("thrift") else
        "sql" if uri.startswith(("sqlite", "postgresql")) else "")
    if kind == "sql":
        return (kind, _folded_uri(uri), name)
    if kind == "rest":
        return (kind, _folded_uri(uri), _folded_uri(str(properties.get("warehouse") or "")))
    return (kind, _folded_uri(uri))


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _folded_uri(uri: str) -> str:
    """One spelling of a catalog URI: scheme and host lower-cased, no trailing '/', a SQLite file by its real path;
    the port an HTTP client uses by default (``:80``, ``:443``), a user part, repeated slashes and ``.``/``..``
    segments dropped as the client drops them (round 17: ``http://cat.example`` and ``http://cat.example:80/``, one
    server, were two catalogs, and ``iceberg://prod/*`` passed the table reached as ``iceberg://prod2/…`` unsigned)."""
    import posixpath
    from urllib.parse import urlsplit, urlunsplit

    if uri.lower().startswith("sqlite:///"):
        return "sqlite:///" + os.path.realpath(uri[len("sqlite:///"):])
    parts = urlsplit(uri.rstrip("/"))
    scheme = parts.scheme.lower()
    try:
        host, port = (parts.hostname or ""), parts.port
    except ValueError:  # a port that is no number: the URI as written
        return urlunsplit((scheme, parts.netloc.lower(), parts.path, parts.query, parts.fragment))
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    path = re.sub("^/+", "/", posixpath.normpath(parts.path)).rstrip("/") if parts.path else ""
    return urlunsplit((scheme, netloc, "" if path in ("/", ".") else path, parts.query, parts.fragment))


def _configured_catalogs() -> dict[str, dict[str, Any]]:
    """Every catalog pyiceberg's configuration names, with its properties (command-line ones over them)."""
    try:
        from pyiceberg.catalog import _ENV_CONFIG
    except ImportError:
        return {}
    from carriers.iceberg.catalog_options import overrides_for

    out: dict[str, dict[str, Any]] = {}
    for name in sorted(_ENV_CONFIG.get_known_catalogs()):
        out[name] = {**(_ENV_CONFIG.get_catalog_config(name) or {}), **overrides_for(name)}
    return out


def same_table_names(catalog_name: str, properties: Mapping[str, Any], identifier: str,
                     locations: tuple[str, ...]) -> tuple[str, ...]:
    """The other ``iceberg://<catalog>/<ns>.<table>`` names of the table ``identifier`` of catalog ``catalog_name``:

    - the same identifier in every configured catalog that is the same catalog (:func:`catalog_identity`: the same
      REST server and warehouse, the same metastore) under another name;
    - every configured catalog whose local warehouse holds one of ``locations`` and whose table of that path has it as
      its location (as :func:`owning_catalog` finds a folder's catalog): the table registered under another name.

    A trust policy matches these too (docs/signing.md): a policy on ``iceberg://prod/*`` covers the table reached as
    ``iceberg://prod2/…``. More names only ever add requirements, so a name found here can never lift one."""
    configured = _configured_catalogs()
    own = catalog_identity(catalog_name, properties)
    names: list[str] = []
    if own is not None:
        names += [f"iceberg://{name}/{identifier}" for name, conf in configured.items()
                  if name != catalog_name and catalog_identity(name, conf) == own]
    # The table itself and names already found need no catalog asked (an audit of 2,000 tables loads each once).
    found = {(catalog_name, identifier), *((n[len("iceberg://"):].split("/", 1)[0], identifier) for n in names)}
    folders = {os.path.realpath(local) for local in map(_local, locations) if local is not None}  # remote: not asked
    for folder in sorted(folders):
        owners = list(_owners(Path(folder), configured, skip=found))
        found.update(owners)
        names += [f"iceberg://{name}/{ident}" for name, ident in owners]
    return tuple(dict.fromkeys(names))


def _owners(folder: Path, configured: Mapping[str, Mapping[str, Any]],
            skip: set[tuple[str, str]] | None = None) -> Iterator[tuple[str, str]]:
    """(catalog, ``<ns>.<table>``) of every configured catalog whose local warehouse holds ``folder`` and whose table
    of that path has exactly this folder as its location; pairs in ``skip`` are neither asked nor given."""
    real = os.path.realpath(folder)
    for name, conf in configured.items():
        warehouse = conf.get("warehouse")
        local = _local(str(warehouse)) if warehouse else None
        laid_out: str | None = None
        base = os.path.realpath(local).rstrip("/") if local is not None else None
        if base is not None and real.startswith(base + "/"):
            parts = real[len(base) + 1:].split("/")
            if len(parts) >= 2:
                laid_out = ".".join([*(p[:-3] if p.endswith(".db") else p for p in parts[:-1]), parts[-1]])
                if (name, laid_out) not in (skip or set()) and _location_is(name, laid_out, real):
                    yield name, laid_out
        # A SQL catalog keeps where each of its tables' metadata lies: a table created or registered with its
        # location outside the warehouse layout (``location=``, ``register_table``) was read from its folder
        # statically, and a policy on the catalog's names passed it unsigned (round 13). Asked by the folder's name.
        for identifier in _sql_tables_named(name, conf, real):
            if identifier != laid_out and (name, identifier) not in (skip or set()) and \
                    _location_is(name, identifier, real):
                yield name, identifier


def _sql_tables_named(name: str, conf: Mapping[str, Any], real: str) -> list[str]:
    """``<ns>.<table>`` of the tables of SQL catalog ``name`` whose metadata location names a folder called as ``real``
    is, or lies in a folder that resolves to ``real`` (candidates: ``_location_is`` says which is stored there); none
    for a catalog of another kind or one that cannot answer. Only a SQLite catalog whose database file exists is
    asked: nothing remote (a PostgreSQL catalog down would cost a connection timeout per folder), and no database file
    is created by asking.

    The folder's real name alone missed a table whose location is spelt through a link named otherwise
    (``location="/volume/current"``, ``current`` → ``orders_v2``: a blue-green switch): read statically, matched by
    its path only, ``iceberg://prod/*`` passed it unsigned, exit 0 (round 17). So every metadata location is also
    resolved: once per audit (``shared_catalogs``), else once per call."""
    rows = _sql_locations(name, conf)
    marker = f"/{os.path.basename(real)}/".lower()  # as SQLite's LIKE matched it (ASCII case ignored)
    return sorted(ident for ident, location, folder in rows if marker in location.lower() or folder == real)


def _sql_locations(name: str, conf: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """(``<ns>.<table>``, metadata location, the real folder of the table it lies in — the folder above its
    ``metadata/``, links resolved; None when not local or not so laid out) of every table of SQL catalog ``name``."""
    from carriers.iceberg.catalogs import shared_cache

    uri = str(conf.get("uri", ""))
    database = uri.split(":///", 1)[1] if uri.startswith("sqlite:///") else ""
    if str(conf.get("type", "sql")).lower() != "sql" or not database or not os.path.isfile(database):
        return []
    cache = shared_cache()
    key = ("static-sql-locations", name, database)
    if cache is not None and key in cache:
        return list(cache[key])
    out: list[tuple[str, str, str | None]] = []
    for ident, location in _sql_rows(name):
        local = _local(location)
        folder, _, _ = (local or "").rpartition("/")
        table_folder, _, leaf = folder.rpartition("/")
        out.append((ident, location, os.path.realpath(table_folder) if local and leaf == "metadata" and table_folder
                    else None))
    if cache is not None:
        cache[key] = list(out)
    return out


def _sql_rows(name: str) -> list[tuple[str, str]]:
    """(``<ns>.<table>``, metadata location) of every table row of SQL catalog ``name``; none when it cannot answer."""
    try:
        from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from carriers.iceberg.catalogs import load_catalog

        catalog = load_catalog(name)
        if not isinstance(catalog, SqlCatalog):
            return []
        stmt = select(IcebergTables.table_namespace, IcebergTables.table_name, IcebergTables.metadata_location).where(
            IcebergTables.catalog_name == catalog.name)
        with Session(catalog.engine) as session:
            return [(f"{ns}.{table}", str(location or "")) for ns, table, location in session.execute(stmt).all()]
    except Exception:  # the layout's answer stands; a catalog that cannot be asked adds no name
        return []
