"""Finding the tables an auditor wants checked: Delta tables under a folder or an object-store prefix, Iceberg tables
in a catalog or in a folder. Every table found is a ``TableRef`` taken as found: a folder named ``orders@7`` is that
folder.

Every table a reader can reach under the audited location is found, or listed with the reason it was not (issue
29.5: a copied ``_delta_log`` that made a parent folder a table hid the tampered table below it, and a table folder
replaced by a symlink was skipped without a word):

- a local folder: every Delta table below it (a folder holding ``_delta_log/``) and every Iceberg table folder
  (``metadata/*.metadata.json``). The walk enters tables too: a table inside another table's folder is found and
  noted as nested. Symlinked folders are followed under the name they are reached by, and every table found through a
  link says so (the link and where it resolves, also when that is outside the audited folder); a link back to a
  folder on its own path (a cycle) is listed and not followed, and the whole walk is bounded (``MAX_LOCAL_FOLDERS``).
  Folders starting with ``_`` or ``.`` are not walked (Spark and Delta readers treat them as hidden); every table in
  one or below it is listed as skipped, with the reason (``MAX_HIDDEN_FOLDERS``) — a table's own ``_delta_log``,
  ``_recipe_attest``, ``_change_data``, ``_delta_index`` included, and tables found there entered; a folder that is
  a Delta table and holds Iceberg metadata is both tables; an Iceberg view's folder (Spark's ``CREATE VIEW`` in a
  JDBC catalog: ``metadata/`` holding view metadata only, ``view_folder`` in carriers/iceberg/static.py) is listed as
  not audited, as a catalog's views are;
- an object-store prefix (``s3://bucket/prefix/``, ``gs://…``, ``az://…``, ``abfss://…``): the same walk, one
  delimiter listing per folder, through delta-rs's object store with the command's storage options; bounded
  (``MAX_FOLDERS`` listings), the folders left unlisted reported as not audited; tables in hidden prefixes listed as
  on a local lake; a table named without its trailing ``/`` is walked too, as a local table folder is;
- ``iceberg://<catalog>``: every table of every namespace; ``iceberg://<catalog>/<namespace>``: that namespace and
  the namespaces nested in it; their views (a REST catalog that serves them, a SQL catalog's ``VIEW`` rows) are
  listed as not audited, and a view named as a table of its namespace is an ERROR line (engines resolving views
  first read it under the table's name), as is a view listing that fails (the twin check could not be made); a
  catalog table named alone (``iceberg://c/ns.t``) is looked for such a view too;
- anything else is one table reference, parsed as typed.

Names that collide are reported: two catalog entries spelling the same ``iceberg://`` name (namespace ``a.b`` table
``c`` and namespace ``a`` table ``b.c``) — only one of them can be opened by that name, the other is an ERROR row
``table_not_audited``; two folders whose names differ only by case or Unicode form are both audited, each with a note.

Iceberg tables found by their folder come back as ``TableRef("iceberg", <path or URI>, catalog=None)``: a local one
is read from its own metadata (carriers/iceberg/static.py, the newest metadata file by version number, labelled so);
one on an object store is refused by ``open_table`` with ``unsupported_table``, naming the way to audit it.
"""

from __future__ import annotations

import errno
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attest.errors import AttestError, Code, Problem, TableReferenceError
from carriers.refs import ICEBERG_SCHEME, TableRef, escape_altered, is_local, local_path, parse_ref, refuse_two_readings

# An object-store walk lists at most this many folders (each listing is one request).
MAX_FOLDERS = 10_000
# A local walk visits at most this many folders (links can make a small tree look large).
MAX_LOCAL_FOLDERS = 200_000

# Told how a walk goes: (folders listed so far, tables found so far), after each folder.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Found:
    """A table discovery found, and what an audit should say about how it was reached."""

    ref: TableRef
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A place under the audited location that was not walked or audited, and why.

    ``blocking``: a table a reader can reach by a name under the audited location was not audited (the audit must
    not pass: it becomes an ERROR row); otherwise the entry is listed for the auditor and the exit code is unchanged.
    """

    path: str
    code: Code
    message: str
    blocking: bool = False
    # A table (or a folder that may be one) a reader opens by ``path``, listed rather than audited (one in a hidden
    # folder): ``attest audit`` under a trust policy whose ``require_signed`` covers that name makes it an ERROR line.
    table: bool = False
    # A folder not searched (it cannot be listed, a search cut short, a link not followed) whose tables a reader opens
    # by names under ``path``: an ERROR line as ``table`` when the policy covers ``path`` or a name below it.
    holds: bool = False
    # A catalog's view, named ``iceberg://<catalog>/<ns>.<view>``: under a trust policy whose ``require_signed`` covers
    # that name, an ERROR line (a view carries no attestation, so no signature can be judged for what its readers get).
    # Listed only before: a signed table dropped and replaced by a view of that name passed the audit, exit 0.
    view: bool = False

    def problem(self) -> Problem:
        return Problem(self.code, self.message, self.path)

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code.value, "message": self.message}


@dataclass
class Discovery:
    tables: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def refs(self) -> list[TableRef]:
        return [f.ref for f in self.tables]


def delta_tables_under(root: Path) -> Iterator[Path]:
    """Delta tables under a local folder (see ``tables_under`` for Iceberg folders too)."""
    for ref in tables_under(root):
        if ref.format == "delta":
            yield Path(ref.location)


def tables_under(root: Path) -> Iterator[TableRef]:
    """Delta tables and Iceberg table folders under a local folder (see ``discover_local`` for what was skipped).
    Raises (``every_table``) when a table a reader reaches there could not be found for certain."""
    yield from every_table(discover_local(root))


def every_table(found: Discovery) -> list[TableRef]:
    """The tables of a discovery, when they are all the tables it stands for: a blocking ``Skipped`` (a folder that
    cannot be listed, a walk cut short, a catalog entry no name opens, a view named as a table) is raised as a coded
    ``AttestError`` naming it. The lists ``expand``, ``tables_under`` and ``remote_tables_under`` gave dropped those
    places, which ``attest audit`` makes ERROR lines: a caller verifying each table listed saw every one pass while a
    table under the target was never checked (round 17). ``discover`` keeps them all, for a caller that reports them."""
    blocking = [s for s in found.skipped if s.blocking]
    if blocking:
        first = blocking[0]
        more = f" (and {len(blocking) - 1} more place(s): discover() lists them)" if len(blocking) > 1 else ""
        raise AttestError(f"{first.path}: {first.message}{more}", code=first.code, path=first.path)
    return found.refs


def iceberg_metadata_names(names: list[str]) -> bool:
    """Whether the names listed in a folder's ``metadata/`` make it an Iceberg table folder to the walk (and to the
    Spark read gate's file-source check, carriers/spark/gate.py ``folder_reads``)."""
    # ``.metadata.json.gz``: the old compressed name Iceberg's Hadoop tables still read (a folder holding only such
    # files was no table to the walk, and silently not audited).
    return any(n.endswith((".metadata.json", ".metadata.json.gz")) for n in names)


def _is_iceberg_folder(path: str) -> bool:
    return _iceberg_folder(path) is True


# What ``_table_kind`` says of a folder it sees a table's name in but may not look into (``stat`` or a listing denied:
# a folder the auditor may list, not enter). Before, such a folder was no table, exit 0 with the table not audited,
# while the writing service's readers open it as ever.
UNSEEN = "unseen"


def _folder_state(path: str) -> bool | None:
    """Whether ``path`` is a folder; None: it cannot be told (looking is denied)."""
    if os.path.isdir(path):
        return True
    try:
        os.stat(path)  # isdir said no: asked again only to tell "not a folder" from "may not look"
        return False
    except OSError as exc:
        return False if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG) else None


def _iceberg_folder(path: str) -> bool | None:
    metadata = os.path.join(path, "metadata")
    state = _folder_state(metadata)
    if not state:
        return state
    try:
        return iceberg_metadata_names(os.listdir(metadata))
    except OSError as exc:
        return False if exc.errno in (errno.ENOENT, errno.ENOTDIR) else None


def _table_kind(path: str, names: set[str]) -> str | None:
    # Any case of the name, then the name itself looked up: on a case-insensitive file system (APFS, NTFS) readers
    # open ``_DELTA_LOG/`` as ``_delta_log/``, and the table was neither audited nor listed; on a case-sensitive one
    # the lookup fails and such a folder is no table, as to its readers.
    folded = {n.casefold() for n in names if len(n) in (8, 10)}  # "metadata", "_delta_log": a data folder is big
    unseen = False
    if "_delta_log" in folded:
        state = _folder_state(os.path.join(path, "_delta_log"))
        if state:
            return "delta"
        unseen = state is None
    if "metadata" in folded:
        state = _iceberg_folder(path)
        if state:
            return "iceberg"
        unseen = unseen or state is None
    return UNSEEN if unseen else None


def _has_metadata(names: set[str]) -> bool:
    return any(n.casefold() == "metadata" for n in names if len(n) == 8)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def discover_local(root: Path, progress: Progress | None = None) -> Discovery:
    """Every table under a local folder, and every place skipped with its reason (module docstring)."""
    out = Discovery()
    root_text = str(root)
    root_real = os.path.realpath(root_text)
    # (the folder as named, the real folders on its path (cycle check), the table it lies in, how links led here)
    stack: list[tuple[str, tuple[str, ...], str | None, tuple[str, ...]]] = [(root_text, (root_real,), None, ())]
    visited = 0
    while stack:
        current, chain, outer, via = stack.pop()
        visited += 1
        if progress is not None:
            progress(visited, len(out.tables))
        if visited > MAX_LOCAL_FOLDERS:
            left = [current, *(s[0] for s in stack)]
            out.skipped.append(Skipped(current, Code.TABLE_NOT_AUDITED, (
                f"the walk stopped after {MAX_LOCAL_FOLDERS} folders (links may repeat a tree); {len(left)} folder(s) "
                "were not walked, tables under them are not audited: audit narrower folders"), blocking=True))
            break
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            if current == root_text:
                raise
            out.skipped.append(Skipped(current, Code.TABLE_UNREADABLE,
                                       f"the folder cannot be listed ({exc.strerror or exc}); tables under it are not "
                                       "audited", blocking=True))
            continue
        names = {e.name for e in entries}
        kind = _table_kind(current, names)
        inside = outer
        if kind == UNSEEN:
            out.skipped.append(Skipped(current, Code.TABLE_UNREADABLE, _UNSEEN_MESSAGE, blocking=True))
        elif kind == "iceberg" and (view := _view_folder(current)) is not None:
            # Spark's CREATE VIEW in a JDBC catalog writes a view's folder: no rows to audit, listed as a catalog's
            # views are (it was an ERROR row, table_unreadable, failing the audit of every such warehouse).
            out.skipped.append(Skipped(current, Code.TABLE_NOT_AUDITED, view))
            inside = current
        elif kind is not None:
            notes = list(via)
            if outer is not None:
                notes.append(f"nested inside table {outer}: a table's folder holds this table")
            iceberg_too = kind == "iceberg" or (_has_metadata(names) and _is_iceberg_folder(current))
            out.tables.extend(_found_at(current, kind, iceberg_too, notes))
            inside = current
        children: list[tuple[str, tuple[str, ...], str | None, tuple[str, ...]]] = []
        for entry in entries:
            child = os.path.join(current, entry.name)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()  # follows a link
            except OSError as exc:
                # Never passed over in silence: a link looping on itself reaches nothing (listed); one the walk may
                # not follow (permission denied on the way) may reach a table another reader can open (ERROR).
                looping = exc.errno == errno.ELOOP
                out.skipped.append(Skipped(child, Code.TABLE_NOT_FOUND if looping else Code.TABLE_UNREADABLE, (
                    "a link that loops on itself: it reaches nothing" if looping else
                    f"cannot be looked at ({exc.strerror or exc}); a table there is not audited"),
                    blocking=not looping))
                continue
            if entry.name.startswith(("_", ".")):
                if is_dir:
                    # A table's own folders too (_delta_log, _recipe_attest, _change_data, _delta_index): a table
                    # copied into one was neither audited nor listed while delta-rs reads it by its name (the
                    # search is bounded; a big _change_data costs listings, never a silent gap).
                    out.skipped.extend(_hidden_tables(child, entry.name[0]))
                continue
            if is_link:
                target = os.path.realpath(child)
                if not is_dir:
                    if not os.path.exists(target):
                        out.skipped.append(Skipped(child, Code.TABLE_NOT_FOUND,
                                                   f"a broken link (to {os.readlink(child)!r})"))
                    continue
                if target in chain:
                    out.skipped.append(Skipped(child, Code.TABLE_NOT_AUDITED, (
                        f"a link to {target}, a folder on its own path (a cycle): not followed, the tables under it "
                        "are audited by their names without the link")))
                    continue
                where = "" if _within(target, root_real) else ", outside the audited folder"
                note = f"reached through the link {child} -> {target}{where}"
                children.append((child, (*chain, target), inside, (*via, note)))
            elif is_dir:
                children.append((child, (*chain, os.path.join(chain[-1], entry.name)), inside, via))
        stack.extend(reversed(children))  # depth first, in name order
    _flag_lookalikes(out)
    return out


def _view_folder(path: str) -> str | None:
    from carriers.iceberg.static import view_folder

    return view_folder(Path(path))


_UNSEEN_MESSAGE = ("holds _delta_log or metadata, which the auditor may not look at (stat or listing denied): a "
                   "reader with other permissions opens a table here; it is not audited")

_BOTH = ("this folder is a Delta table (_delta_log/) and an Iceberg table folder (metadata/*.metadata.json) alike: "
         "Delta readers read its log, Iceberg readers of the path that metadata, so each is audited on its own line")


def _found_at(where: str, kind: str, iceberg_too: bool, notes: list[str]) -> list[Found]:
    """The table(s) of one folder. A Delta table holding Iceberg metadata (UniForm, or metadata put there) is two
    tables to readers: a path-based Iceberg reader (pyiceberg's StaticTable, a Hadoop catalog) reads what that metadata
    lists, which the Delta log's attestation says nothing of; auditing the Delta side alone passed the folder."""
    if kind != "delta":
        return [Found(TableRef.discovered("iceberg", where, catalog=None), tuple(notes))]
    if not iceberg_too:
        return [Found(TableRef.discovered("delta", where), tuple(notes))]
    return [Found(TableRef.discovered("delta", where), (*notes, _BOTH)),
            Found(TableRef.discovered("iceberg", where, catalog=None), (*notes, _BOTH))]


# A hidden folder is searched for tables through at most this many folders (it is listed, never audited).
MAX_HIDDEN_FOLDERS = 2_000


def _search_bounded(folder: str, left: int) -> Skipped:
    # One wording for the local and the store walk: the auditor learns the search stopped, and where.
    return Skipped(folder, Code.TABLE_NOT_AUDITED, (
        f"{folder} is hidden and was searched for tables through {MAX_HIDDEN_FOLDERS} folders only; "
        f"{left} folder(s) under it were not looked at: audit it by its name"), holds=True)


def _hidden_tables(folder: str, mark: str) -> list[Skipped]:
    """The tables in a hidden folder and below it, each listed with its reason: ``_staging/orders`` is reached by its
    name as much as ``_staging`` is, and was not even listed. Tables found are entered too (a table copied into a
    hidden table's ``_delta_log``, ``metadata`` or ``_change_data`` was not listed); links are not followed; a folder
    that cannot be listed, and a search cut short by its budget, say so."""
    hidden = _hidden_reason(mark)
    out: list[Skipped] = []
    pending, seen = [folder], 0
    while pending:
        current = pending.pop()
        seen += 1
        if seen > MAX_HIDDEN_FOLDERS:
            out.append(_search_bounded(folder, len(pending) + 1))
            break
        names: set[str] = set()
        folders: list[str] = []
        links: list[str] = []
        try:
            # Names and folders only, nothing sorted but the folders: a table's _delta_log of 100,000 commits is
            # searched too (measured at load 9: 0.13 s, a plain listdir 0.06 s; 0.7 s with every entry sorted).
            with os.scandir(current) as listing:
                for e in listing:
                    names.add(e.name)
                    if _is_folder(e):
                        folders.append(e.name)
                    elif _is_folder_link(e):
                        links.append(e.name)
        except OSError as exc:
            # Listed, not blocking (a hidden place never blocks): the auditor learns a table may sit there unseen.
            where = "" if current == folder else f"; it is under {folder}"
            out.append(Skipped(current, Code.TABLE_NOT_AUDITED, f"the folder cannot be listed ({exc.strerror or exc})"
                               f"{where}, {hidden}", holds=True))
            continue
        kind = _table_kind(current, names)
        if kind is not None:
            where = "in" if current == folder else f"under {folder},"
            view = kind == "iceberg" and _view_folder(current) is not None
            what = ("a folder that may be a table (it cannot be looked into)" if kind == UNSEEN else
                    "an Iceberg view's folder" if view else f"a {kind} table")
            out.append(Skipped(current, Code.TABLE_NOT_AUDITED, f"{what} {where} {hidden}", table=not view))
        out.extend(_hidden_link(os.path.join(current, name), folder, hidden) for name in sorted(links))
        pending.extend(os.path.join(current, name) for name in sorted(folders, reverse=True))
    return out


def _hidden_link(link: str, folder: str, hidden: str) -> Skipped:
    """A link to a folder in a hidden folder: not followed (a link may loop), never passed over in silence. A reader
    of ``_staging/orders`` linked to a table opens that table by the name, and the link was not even listed (a link
    to a table in a hidden folder's own place was, round 18)."""
    target = os.path.realpath(link)
    try:
        kind = _table_kind(target, set(os.listdir(target)))
    except OSError:
        kind = UNSEEN
    where = "in" if os.path.dirname(link) == folder else f"under {folder},"
    what = (f"a link to {target}, which may be a table (it cannot be looked into)" if kind == UNSEEN else
            f"a link to {target}, a {kind} table" if kind is not None else
            f"a link to the folder {target}, not followed: tables under it are not searched")
    return Skipped(link, Code.TABLE_NOT_AUDITED, f"{what}, {where} {hidden}", table=kind is not None,
                   holds=kind is None)


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_folder_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink() and entry.is_dir()
    except OSError:
        return False


def _hidden_reason(mark: str) -> str:
    return (f"a folder whose name starts with '{mark}': such folders are hidden from readers of the folders above "
            "(Spark, Delta) and not walked; audit it by its name")


def _hidden_remote(storage: Any, root: str, rel: str) -> list[Skipped]:
    """``_hidden_tables`` on an object store: the tables in a hidden prefix and below it, each listed with its reason
    (the store's walk dropped ``_staging/orders`` without a word, where the local walk listed it). One delimiter
    listing per folder, at most ``MAX_HIDDEN_FOLDERS``; tables are entered too; a prefix that cannot be listed is
    said."""
    folder = _store_uri(root, rel)
    hidden = _hidden_reason(rel.rsplit("/", 1)[-1][0])
    out: list[Skipped] = []
    pending, seen = [rel], 0
    while pending:
        current = pending.pop()
        here = _store_uri(root, current)
        seen += 1
        if seen > MAX_HIDDEN_FOLDERS:
            out.append(_search_bounded(folder, len(pending) + 1))
            break
        try:
            folders, _, kind = _remote_kind(storage, current)
        except Exception as exc:
            # Listed, not blocking (a hidden place never blocks): the auditor learns a table may sit there unseen.
            message = exc.message if isinstance(exc, AttestError) else f"{type(exc).__name__}: {exc}"
            out.append(Skipped(here, Code.TABLE_NOT_AUDITED, f"the folder cannot be listed ({message}); it is under "
                               f"{folder}, {hidden}", holds=True))
            continue
        if kind is not None:
            where = "in" if current == rel else f"under {folder},"
            out.append(Skipped(here, Code.TABLE_NOT_AUDITED, f"a {kind} table {where} {hidden}", table=True))
        pending.extend(f"{current}/{d}" for d in sorted(folders, reverse=True))
    return out


def _store_uri(root: str, rel: str) -> str:
    """The URI delta-rs opens the prefix ``rel`` under ``root`` by. The walk named a prefix by its key, and delta-rs
    decodes the URI it is given: a tampered table copied to the literal key ``lake/%6Frders/`` was audited as
    ``s3://b/lake/%6Frders``, which opens ``lake/orders`` — the genuine table verified twice, the copy never read,
    exit 0, while a reader of the literal key (Spark's ``s3a://``, a Hadoop path, a listing) gets the copy."""
    if not rel:
        return root
    return f"{root}/" + "/".join(escape_altered(part) for part in rel.split("/"))


def _remote_kind(storage: Any, rel: str) -> tuple[list[str], bool, str | None]:
    """The folders directly under ``rel`` on a store, whether it holds Iceberg metadata, and the kind of table ``rel``
    is (None: no table)."""
    folders = storage.list_folders(rel)
    iceberg = "metadata" in folders and iceberg_metadata_names(
        storage.list_names(f"{rel}/metadata" if rel else "metadata"))
    return folders, iceberg, "delta" if "_delta_log" in folders else "iceberg" if iceberg else None


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _flag_lookalikes(out: Discovery) -> None:
    """Tables whose names differ only by case or Unicode form: both audited, each noted. Exactly equal names (two
    catalog entries spelling one ``iceberg://`` name): the first is audited, the others are not and say why."""
    groups: dict[str, list[int]] = {}
    for index, found in enumerate(out.tables):
        groups.setdefault(_fold(str(found.ref)), []).append(index)
    drop: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        names = [str(out.tables[i].ref) for i in members]
        # Keyed by format too: a Delta table and the Iceberg metadata in its folder share a name (_found_at).
        seen: dict[tuple[str, str], int] = {}
        for i, name in zip(members, names, strict=True):
            key = (name, out.tables[i].ref.format)
            if key in seen:
                drop.add(i)
                first, this = out.tables[seen[key]].notes, out.tables[i].notes
                what = " and ".join(n[0] if n else "another entry" for n in (first, this))
                out.skipped.append(Skipped(name, Code.TABLE_NOT_AUDITED, (
                    f"{what} both spell {name}: the audit checked the one table this name opens, the other entry is "
                    "not audited (rename one of them)"), blocking=True))
                continue
            seen[key] = i
            others = sorted({n for n in names if n != name})
            if others:
                note = (f"its name differs from {', '.join(others)} only by case or Unicode form: a case-insensitive "
                        "catalog or file system names them alike")
                out.tables[i] = Found(out.tables[i].ref, (*out.tables[i].notes, note))
    if drop:
        out.tables = [f for i, f in enumerate(out.tables) if i not in drop]


def remote_tables_under(prefix: str, storage_options: Mapping[str, str] | None = None) -> Iterator[TableRef]:
    """The same walk on an object store (see ``discover_remote`` for what was skipped); raises as ``every_table``."""
    yield from every_table(discover_remote(prefix, storage_options))


def discover_remote(prefix: str, storage_options: Mapping[str, str] | None = None,
                    progress: Progress | None = None) -> Discovery:
    """The walk on an object store: one delimiter listing per folder through delta-rs's object store; tables are
    entered too (a nested table is found and noted)."""
    from carriers.storage.delta import DeltaStorage
    from carriers.storage.options import check_supported

    root = prefix.rstrip("/")
    check_supported("delta-rs", root)
    storage = DeltaStorage(root, dict(storage_options or {}))
    out = Discovery()
    pending: list[tuple[str, str | None]] = [("", None)]
    listed = 0
    while pending:
        rel, outer = pending.pop(0)
        here = _store_uri(root, rel)
        listed += 1
        if progress is not None:
            progress(listed, len(out.tables))
        if listed > MAX_FOLDERS:
            out.skipped.append(Skipped(here, Code.TABLE_NOT_AUDITED, (
                f"{prefix} holds more than {MAX_FOLDERS} folders; {len(pending) + 1} folder(s) were not listed and "
                "tables under them are not audited: audit narrower prefixes"), blocking=True))
            break
        try:
            folders, iceberg, kind = _remote_kind(storage, rel)
        except Exception as exc:
            if not rel:
                raise
            # One folder that cannot be listed hides what is under it, never the rest of the walk.
            message = exc.message if isinstance(exc, AttestError) else f"{type(exc).__name__}: {exc}"
            out.skipped.append(Skipped(here, Code.TABLE_UNREADABLE, f"the folder cannot be listed ({message}); "
                                       "tables under it are not audited", blocking=True))
            continue
        inside = outer
        if kind is not None:
            notes = [] if outer is None else [f"nested inside table {outer}: a table's folder holds this table"]
            if rel and here != f"{root}/{rel}":  # (the root itself is named as typed: no note of its own)
                notes.append(f"named with its prefix {rel!r} percent-encoded: delta-rs decodes a table URI, and "
                             f"{root}/{rel} opens another prefix")
            out.tables.extend(_found_at(here, kind, iceberg, notes))
            inside = here
        for d in sorted(folders):
            child = f"{rel}/{d}" if rel else d
            if not d.startswith(("_", ".")):
                pending.append((child, inside))
            else:
                # As the local walk: hidden folders (a table's own too) are not walked, but every table in one is
                # listed (SKIPPED).
                out.skipped.extend(_hidden_remote(storage, root, child))
    _flag_lookalikes(out)
    return out


def iceberg_tables(catalog_name: str, namespace: str | None) -> Iterator[TableRef]:
    """The tables of a catalog's namespace (None: the whole catalog) and the namespaces nested in it, as ``attest
    audit iceberg://<catalog>[/<namespace>]`` finds them; raises as ``every_table`` does (a view named as a table, an
    entry no name opens, a view listing that fails)."""
    views: list[Skipped] = []
    found = Discovery(list(_iceberg_found(catalog_name, namespace, views)), views)
    _flag_lookalikes(found)
    yield from every_table(found)


def _iceberg_found(catalog_name: str, namespace: str | None, views: list[Skipped] | None = None) -> Iterator[Found]:
    """Every table of ``namespace`` and of every namespace nested below it (None: the whole catalog). A namespace is
    audited with the namespaces it holds, as a folder is with its subfolders: ``iceberg://c/a`` left the tables of
    ``a.b`` unaudited and passed. ``views``: where the catalog's views of those namespaces are listed (not audited)."""
    catalog = _catalog(catalog_name)
    root = tuple(namespace.split(".")) if namespace else ()
    namespaces = ([root] if root else []) + _all_namespaces(catalog, catalog_name, root)
    for ns in [ns for ns in namespaces if _empty_level(ns)]:
        # A namespace with an empty level (a SQL catalog row of namespace ``''``, ``a..b`` or ``ns.``): pyiceberg
        # refuses to list or open it, so its tables cannot be audited, while iceberg-java's JdbcCatalog (Spark) opens
        # them. Before, its NoSuchNamespaceError ended the listing: the whole catalog was one internal_error line and
        # none of its other tables was audited.
        problem = Skipped(f"{ICEBERG_SCHEME}{catalog_name}/{'.'.join(ns)}", Code.TABLE_NOT_AUDITED, (
            f"catalog namespace {'.'.join(ns)!r} (levels {list(ns)!r}) has an empty level: pyiceberg cannot list or "
            "open its tables (Iceberg Java's catalogs, Spark's readers, can), they and the namespaces below it are "
            "not audited; rename it"), blocking=True)
        if views is None:
            raise AttestError(problem.message, code=problem.code)
        views.append(problem)
    listing = [(ns, [tuple(ident) for ident in sorted(catalog.list_tables(ns))])
               for ns in namespaces if not _empty_level(ns)]
    if views is not None:
        # Every table's full name, folded: a view ``NS.t`` twins the table ``ns.t`` of another namespace as a view
        # ``ns.T`` does within one (a reader matching names by case alone cannot tell them apart).
        names = {_fold(".".join(ident)) for _, idents in listing for ident in idents}
        for ns, _ in listing:
            views.extend(_iceberg_views(catalog, catalog_name, ns, names))
    for ns, idents in listing:
        for ident in idents:
            if ident[:-1] != ns:
                # A REST server answers each entry with its own namespace: one of another namespace would be audited
                # in place of what ``ns`` holds. Never guessed, as for namespaces (_all_namespaces).
                raise AttestError(f"catalog {catalog_name!r} listed table {'.'.join(ident)!r} as a table of namespace "
                                  f"{'.'.join(ns)!r}, which it is not: the tables of {'.'.join(ns)!r} cannot be found "
                                  "for certain, they are not audited", code=Code.TABLE_NOT_AUDITED)
            entry = f"catalog entry namespace {'.'.join(ident[:-1])!r} table {ident[-1]!r}"
            if any("." in part or not part.strip() for part in ident):
                # A '.' inside a level (a REST namespace ``("a.b",)``, a table ``b.c``): its iceberg:// name is split
                # at every '.' and opens another identifier — audited in its place, the entry itself never read (a
                # server serving ``a``/``b``/``t`` unlisted passed the audit of ``("a.b",)``'s ``t``, exit 0).
                opened = f"{'.'.join(ident[:-1])}.{ident[-1]}"
                problem = Skipped(f"{ICEBERG_SCHEME}{catalog_name}/{opened}", Code.TABLE_NOT_AUDITED, (
                    f"{entry} (levels {list(ident)!r}) holds a '.' inside a level or an empty one: no iceberg:// "
                    "name opens it "
                    f"(readers split {opened!r} at every '.' and open {tuple(opened.split('.'))!r}), it is not "
                    "audited; rename it"), blocking=True)
                if views is None:
                    raise AttestError(problem.message, code=problem.code)
                views.append(problem)
                continue
            yield Found(TableRef.discovered("iceberg", ".".join(ident), catalog=catalog_name), (entry,))


def _iceberg_views(catalog: Any, catalog_name: str, ns: tuple[str, ...], tables: set[str]) -> list[Skipped]:
    """The views of a namespace, each listed as not audited: a reader of ``ns.v`` gets what the view's SQL reads, which
    no attestation binds (an audit of the namespace said nothing of them). A catalog without views says so by
    ``NotImplementedError`` (pyiceberg's SQL catalog; a REST server that does not serve them).

    A view named as a table (``tables``: their full names folded; namespace and name by case or Unicode form too) is
    an ERROR line: an engine resolving views before tables (Trino) reads the view's SQL under the table's name, so the
    table's VERIFIED line said nothing of what that name reads (before, the view was only listed and the audit
    passed)."""
    others: list[tuple[tuple[str, ...], str]] = []
    try:
        try:
            listed = sorted(tuple(v) for v in catalog.list_views(ns))
        except NotImplementedError:
            from carriers.iceberg.catalogs import sql_catalog_views

            listed, others = sql_catalog_views(catalog, ns)
    except Exception as exc:
        # The tables are audited all the same, but the audit cannot pass: whether a view is named as one of them (which
        # an engine resolving views first reads under its name) is not known. Only listed before, exit 0.
        where = f"{ICEBERG_SCHEME}{catalog_name}/{'.'.join(ns)}"
        return [Skipped(where, Code.TABLE_NOT_AUDITED, (
            f"the views of namespace {'.'.join(ns)!r} could not be listed ({type(exc).__name__}: {exc}): whether a "
            "view is named as one of its tables (which an engine resolving views first reads under the table's "
            "name) is not known; views are not audited"), blocking=True)]
    out = []
    for view in listed:
        twin = _fold(".".join(view)) in tables
        out.append(Skipped(f"{ICEBERG_SCHEME}{catalog_name}/{'.'.join(view)}", Code.TABLE_NOT_AUDITED, (
            "an Iceberg view named as a table (its namespace and name compared by case and Unicode form too): an "
            "engine resolving views first (Trino) reads the view's SQL under the table's name, and no attestation "
            "binds it; rename one of them" if twin else
            "an Iceberg view: its readers get the rows of the tables its SQL reads, which no attestation binds (the "
            "tables it reads are audited where they are among the audit's tables)"), blocking=twin, view=True))
    return out + [
        Skipped(f"{ICEBERG_SCHEME}{catalog_name}/{'.'.join(entry)}", Code.TABLE_NOT_AUDITED, (
            f"a catalog entry of type {kind!r}, neither a table nor a view: no Iceberg reader opens it, it is not "
            "audited")) for entry, kind in others]


def views_named_as(ref: TableRef) -> list[Skipped]:
    """For a catalog table audited by its own name (``iceberg://c/ns.t``, ``ns.t@5``, ``--catalog c ns.t``): a view
    of its namespace named as it (by case or Unicode form too), an ERROR line as in a namespace's audit, and so is a
    view listing that fails. Before, only a namespace's or a catalog's audit looked, and the table's audit passed
    while Trino's readers of the name got the view's SQL."""
    if ref.catalog is None:
        return []
    try:
        catalog = _catalog(ref.catalog)
    except TableReferenceError:  # the table's own line says the catalog is not configured
        return []
    ident = tuple(ref.location.split("."))
    if len(ident) < 2:  # no namespace: the table's own line says the name is not a table
        return []
    # A listing that fails is an ERROR line even when the table cannot be opened either (a namespace typed wrong: two
    # lines): a server answering "no such namespace" to the view listing may serve the table all the same.
    return [s for s in _iceberg_views(catalog, ref.catalog, ident[:-1], {_fold(ref.location)}) if s.blocking]


def _catalog(catalog_name: str) -> Any:
    from carriers.iceberg.catalogs import load_catalog

    try:
        return load_catalog(catalog_name)
    except (ValueError, KeyError, NotImplementedError) as exc:
        raise TableReferenceError(f"Iceberg catalog {catalog_name!r} is not configured for pyiceberg (.pyiceberg.yaml "
                                  f"or PYICEBERG_CATALOG__{catalog_name.upper()}__* variables)") from exc


def _is_namespace(catalog_name: str, name: str) -> bool:
    """Whether ``name`` (``a.b``) is a namespace of the catalog; a catalog that cannot be opened: not one (the name is
    then read as a table, whose row says why it could not be opened)."""
    try:
        return bool(_catalog(catalog_name).namespace_exists(tuple(name.split("."))))
    except TableReferenceError:
        return False


def _is_table(catalog_name: str, name: str) -> bool:
    return bool(_catalog(catalog_name).table_exists(tuple(name.split("."))))


def _empty_level(ns: tuple[str, ...]) -> bool:
    return any(not level.strip() for level in ns)


def _all_namespaces(catalog: Any, catalog_name: str, root: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every namespace nested below ``root`` (``()``: every namespace of the catalog), ``root`` itself left out."""
    out: list[tuple[str, ...]] = []
    pending: list[tuple[str, ...]] = [root]
    while pending:
        parent = pending.pop()
        for ns in catalog.list_namespaces(parent):
            ns = tuple(ns)
            if ns == parent:  # a catalog answering with the parent itself must not loop
                continue
            if len(ns) <= len(parent) or ns[:len(parent)] != parent:
                # Never dropped in silence, never guessed: the tables below could not be found for certain.
                raise AttestError(f"catalog {catalog_name!r} listed namespace {'.'.join(ns)!r} as nested in "
                                  f"{'.'.join(parent) or 'the catalog root'!r}, which it is not: the namespaces "
                                  "below cannot be found for certain, their tables are not audited",
                                  code=Code.TABLE_NOT_AUDITED)
            if ns not in out:
                out.append(ns)
                if not _empty_level(ns):  # (pyiceberg refuses to list it: said by _iceberg_found)
                    pending.append(ns)
    return sorted(out)


def discover(target: str, storage_options: Mapping[str, str] | None = None,
             progress: Progress | None = None) -> Discovery:
    """The tables ``target`` stands for (see module docstring), and what was skipped; ``progress`` is told how a
    folder walk goes (a walk of 10,000 prefixes on a store takes minutes, and said nothing until it ended)."""
    if target.startswith(ICEBERG_SCHEME):
        rest = target[len(ICEBERG_SCHEME):].strip("/")
        catalog, _, ident = rest.partition("/")
        if not catalog:
            raise TableReferenceError(f"{target!r} names no catalog")
        # Only a trailing @<digits> is a snapshot, and a name that spells one may be a namespace too: any '@'
        # (``team@eu.sales``, ``ns.t@5``) made the name one table, never looked up as a namespace, and the tables of
        # that namespace went unaudited.
        versioned = re.search(r"@[0-9]+$", ident) is not None
        if (versioned or "." in ident) and not _is_namespace(catalog, ident):
            single = parse_ref(target)
            return Discovery([Found(single)], views_named_as(single))
        views: list[Skipped] = []
        entries = list(_iceberg_found(catalog, ident or None, views))
        if versioned:
            try:
                snapshot = parse_ref(target)
            except TableReferenceError:  # no table could be meant (``iceberg://c/sales@5``): the namespace alone
                pass
            else:
                both = (f"{ident} names a snapshot of table {snapshot.location} and a namespace: the snapshot and "
                        "every table of the namespace are audited")
                entries.insert(0, Found(snapshot, ("", both)))
                views.extend(views_named_as(snapshot))
        elif "." in ident and _is_table(catalog, ident):
            # ``a.b`` names a nested namespace and table ``b`` of ``a`` alike: an auditor typing it gets both audited,
            # never the table alone while the namespace's tables go unchecked.
            both = f"{ident} names a table and a namespace: the table and every table of the namespace are audited"
            entries.insert(0, Found(parse_ref(target), ("", both)))
            views.extend(views_named_as(parse_ref(target)))
        out = Discovery(entries, views)
        _flag_lookalikes(out)
        # The catalog entry is named in a note only when it matters: when two entries spell one name.
        out.tables = [Found(f.ref, f.notes[1:]) for f in out.tables]
        return out
    if is_local(target):
        refuse_two_readings(target)  # (decoded and literal, two folders: delta-rs and Spark read one each)
        local = local_path(target)
        if local.is_dir():
            # A folder, or a table folder: walked all the same (a table inside a table is found and noted); the
            # folder itself, when a table, keeps the name the user typed.
            found = discover_local(local, progress)
            # (parse_ref only for the folder itself, as typed: the Delta side of a folder that is both keeps it)
            found.tables = [Found(parse_ref(target), f.notes) if f.ref.location == str(local) and
                            f.ref.format == parse_ref(target).format else f for f in found.tables]
            return found
        return Discovery([Found(parse_ref(target))])
    # A URI delta-rs decodes (``%6c``, ``#x``, ``?x``) naming another prefix than Spark's Hadoop ``Path`` reads, both
    # there: refused, as a ``file:`` one is (the walk and every line below it named keys Spark reads otherwise).
    refuse_two_readings(target, storage_options)
    if target.endswith("/"):  # a prefix (the trailing slash says so): every table under it
        return discover_remote(target, storage_options, progress)
    if re.search(r"@[0-9]+$", target):
        return Discovery([Found(parse_ref(target))])
    # A table named without its trailing '/' is walked all the same, as a local table folder is (issue 29.5 on a
    # store: an attested table copied to ``lake/sales`` made ``attest audit s3://b/lake/sales`` audit it alone, and
    # the tampered ``lake/sales/orders`` below went unchecked). The table itself keeps the name as typed.
    found = discover_remote(target, storage_options, progress)
    root = target.rstrip("/")
    found.tables = [Found(parse_ref(target), f.notes) if f.ref.location == root and f.ref.format == "delta" else f
                    for f in found.tables]
    return found


def expand(target: str, storage_options: Mapping[str, str] | None = None) -> list[TableRef]:
    """The tables ``target`` stands for (see module docstring); raises as ``every_table`` when some table there could
    not be found for certain (``discover`` to list such places instead)."""
    return every_table(discover(target, storage_options))


__all__ = ["MAX_FOLDERS", "MAX_LOCAL_FOLDERS", "Discovery", "Found", "Skipped", "delta_tables_under",
           "discover", "discover_local", "discover_remote", "every_table", "expand", "iceberg_metadata_names",
           "iceberg_tables", "remote_tables_under", "tables_under", "views_named_as"]
