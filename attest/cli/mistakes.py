"""What a command was given instead of what it asked for, named with the fix (issue 30).

``attest verify part-0.parquet`` said ``manifest_malformed_json: not UTF-8``; a folder of tables, an empty folder and
an Iceberg table folder said ``.../manifest.json: no such manifest file``; ``--sql-file nope.sql`` said "no such
manifest file". Each of these now says what the thing is and what to give instead. Only failure paths and cheap
prefix checks run here: a manifest that verifies is never parsed twice.
"""

from __future__ import annotations

import os

from attest.errors import AttestError, Code, InvalidArgumentError, TableReferenceError

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["data_file_kind", "missing_file", "not_a_manifest", "refuse_data_file", "refuse_directory", "table_hint",
           "unreadable_argument_file"]

# The first bytes of files that sit in table folders and are sometimes given where a manifest is expected.
_MAGIC = ((b"PAR1", "a Parquet data file"), (b"Obj\x01", "an Avro file (an Iceberg manifest or manifest list)"),
          (b"ORC", "an ORC data file"))
# Keys of a Delta log action (one per line of a commit file).
_DELTA_ACTIONS = frozenset({"commitInfo", "add", "remove", "metaData", "protocol", "txn", "domainMetadata", "cdc",
                            "checkpointMetadata", "sidecar"})
_SCAN_LIMIT = 2000  # directory entries looked at when saying what a folder holds


def data_file_kind(data: bytes) -> str | None:
    """What a binary table file is, from its first bytes; None for anything else."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    return None


def refuse_data_file(name: str, data: bytes, *, expected: str = "manifest") -> None:
    """Raise ``not_a_manifest`` when ``data`` is a Parquet, Avro or ORC file (never valid JSON: nothing is lost)."""
    kind = data_file_kind(data)
    if kind is None:
        return
    if expected == "manifest":
        fix = ("verify the table it belongs to (attest verify <table folder> or iceberg://<catalog>/<namespace>."
               "<table>), or a manifest with --artifacts-dir <the folder of its files>")
    else:
        fix = "give a JSON document"
    raise AttestError(f"{name} is {kind}, not a {expected}: {fix}", code=Code.NOT_A_MANIFEST)


def not_a_manifest(name: str, data: bytes) -> AttestError | None:
    """Iceberg table metadata or a Delta log commit given as a manifest (both JSON): the error naming it, else None.
    Called only once the document failed, so a manifest that verifies is never parsed twice."""
    head = data.lstrip()[:1]
    if head != b"{":
        return None
    import json

    # Table metadata names its format version near the top; a Delta commit is one action per line; an envelope is
    # small. Only these are parsed (a big manifest that failed is not parsed a second time).
    candidates = [data] if b'"format-version"' in data[:65536] or b'"payloadType"' in data[:65536] else []
    first = data.lstrip().split(b"\n", 1)[0]
    if len(first) < len(data.strip()) and len(first) <= 1 << 20:
        candidates.append(first)
    document: Any = None
    for candidate in candidates:
        try:
            document = json.loads(candidate)
            break
        except (ValueError, RecursionError):
            continue
    if not isinstance(document, dict) or "manifest_version" in document:
        return None
    if "format-version" in document and ("table-uuid" in document or "location" in document):
        return AttestError(f"{name} is Iceberg table metadata, not a manifest: verify the table through its catalog, "
                           "attest verify iceberg://<catalog>/<namespace>.<table> (its attestation is read from the "
                           "metadata the catalog says is current)", code=Code.NOT_A_MANIFEST)
    if {"payloadType", "payload", "signatures"} <= set(document):
        manifest = name[: -len(".dsse.json")] if name.endswith(".dsse.json") else "<manifest>"
        return AttestError(f"{name} is a signed envelope (DSSE), not a manifest: verify the manifest it signs, "
                           f"attest verify {manifest} --key <public key> (--envelope {name} when it is not beside it)",
                           code=Code.NOT_A_MANIFEST)
    if document and set(document) <= _DELTA_ACTIONS:
        log = os.path.dirname(os.path.normpath(name))
        table = (os.path.dirname(log) or ".") if os.path.basename(log) == "_delta_log" else "<table folder>"
        return AttestError(f"{name} is a Delta log commit, not a manifest: verify the table, attest verify {table}",
                           code=Code.NOT_A_MANIFEST)
    return None


def _is_table(path: str) -> str | None:
    if os.path.isdir(os.path.join(path, "_delta_log")):
        return "delta"
    metadata = os.path.join(path, "metadata")
    if os.path.isdir(metadata):
        try:
            with os.scandir(metadata) as entries:
                for index, entry in enumerate(entries):
                    if entry.name.endswith(".metadata.json"):
                        return "iceberg"
                    if index >= _SCAN_LIMIT:
                        break
        except OSError:
            return None
    return None


def _tables_under(folder: str) -> list[str]:
    """Tables one or two folders down (a lake, or a warehouse's namespace folders), at most a few looked at."""
    found: list[str] = []
    seen = 0
    stack = [(folder, 0)]
    while stack and seen < _SCAN_LIMIT and len(found) < 3:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as entries:
                children = sorted(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for child in children:
            seen += 1
            if _is_table(child):
                found.append(child)
            elif depth < 1:
                stack.append((child, depth + 1))
    return sorted(found)


def refuse_directory(folder: str) -> None:
    """``verify FOLDER`` where FOLDER has no manifest.json (and is no Delta table): say what the folder is."""
    if os.path.lexists(os.path.join(folder, "manifest.json")):
        return
    if _is_table(folder) == "iceberg":
        raise TableReferenceError(
            f"{folder} is an Iceberg table folder: which metadata file is current only its catalog knows (a newer "
            "one may be a failed commit), so verify it through the catalog: attest verify "
            "iceberg://<catalog>/<namespace>.<table>")
    tables = _tables_under(folder)
    if tables:
        shown = ", ".join(tables) + (", …" if len(tables) == 3 else "")
        raise AttestError(f"{folder} is a folder of tables ({shown}), not one table or manifest: verify one "
                          f"(attest verify {tables[0]}) or all of them (attest audit {folder})",
                          code=Code.NOT_A_MANIFEST)
    try:
        empty = not os.listdir(folder)
    except OSError:
        empty = False
    what = "an empty folder" if empty else "a folder"
    raise AttestError(f"{folder} is {what}: no manifest.json (a standalone carrier directory has one) and no "
                      "_delta_log (a Delta table has one)", code=Code.MANIFEST_MISSING)


def table_hint(target: str) -> str:
    """For ``no Delta table at TARGET`` (show, lineage, record, verify of a table): what TARGET is instead, if that
    can be said — an Iceberg table folder, a folder of tables, or a close name beside it. "" when nothing fits."""
    from attest.locations import is_local

    if not target or not is_local(target):
        return ""
    if target.startswith("file:"):
        from carriers.refs import local_path

        target = str(local_path(target))
    if os.path.isdir(target):
        if _is_table(target) == "iceberg":
            return ("; it is an Iceberg table folder: name it through its catalog, "
                    "iceberg://<catalog>/<namespace>.<table>")
        tables = _tables_under(target)
        if tables:
            return f"; it is a folder of tables ({', '.join(tables[:2])}{', …' if len(tables) > 2 else ''}): name " \
                   f"one, or audit them all (attest audit {target})"
        return ""
    if os.path.lexists(target):
        return ""
    close = _close_table(target)
    return f"; did you mean {close}?" if close else ""


def _close_table(name: str, *, manifests: bool = False) -> str | None:
    """The Delta table (or, with ``manifests``, the JSON file) beside ``name`` whose name is closest to it."""
    import difflib

    parent = os.path.dirname(name) or "."
    base = os.path.basename(name.rstrip("/"))
    candidates: list[str] = []
    try:
        with os.scandir(parent) as entries:
            for index, entry in enumerate(entries):
                if index >= _SCAN_LIMIT:
                    break
                if (manifests and entry.name.endswith(".json")) or (
                        entry.is_dir() and _is_table(entry.path) == "delta"):
                    candidates.append(entry.name)
    except OSError:
        pass
    close = difflib.get_close_matches(base, candidates, n=1, cutoff=0.75) if base else []
    return os.path.join(os.path.dirname(name), close[0]) if close else None


def missing_file(name: str) -> AttestError:
    """``verify NAME`` where nothing is at NAME: the message names the nearest manifest or table, if one is close."""
    close = _close_table(name, manifests=True)
    hint = f"; did you mean {close}?" if close else ""
    return AttestError(f"{name}: no such file or folder, so no manifest, carrier directory or Delta table (a folder "
                       f"holding _delta_log){hint}", code=Code.MANIFEST_MISSING)


def unreadable_argument_file(option: str, name: str, exc: OSError) -> InvalidArgumentError:
    """A file an option names (--sql-file, --program-json) that cannot be read: said as that option's file."""
    if isinstance(exc, FileNotFoundError):
        why = "no such file"
    elif isinstance(exc, IsADirectoryError):
        why = "is a directory, not a file"
    else:
        why = str(exc.strerror or exc)
    return InvalidArgumentError(f"{option} {name}: {why}")
