"""Finding the tables an auditor wants checked: Delta tables under a folder or an object-store prefix, Iceberg tables
in a catalog. Every table found is a ``TableRef`` taken as found: a folder named ``orders@7`` is that folder.

- a local folder: every Delta table below it (a folder holding ``_delta_log/``); the walk does not enter a table, nor
  folders starting with ``_`` or ``.``, and never follows symlinks (a link loop cannot trap it);
- an object-store prefix (``s3://bucket/prefix/``, ``gs://…``, ``az://…``, ``abfss://…``): the same walk, one
  delimiter listing per folder, through delta-rs's object store with the command's storage options; bounded
  (``MAX_FOLDERS`` listings) so a huge bucket cannot stall an audit;
- ``iceberg://<catalog>``: every table of every namespace; ``iceberg://<catalog>/<namespace>``: that namespace;
- anything else is one table reference, parsed as typed.

Iceberg tables found by their folder (``metadata/*.metadata.json``, no catalog) are reported, never skipped, but not
verified: without the catalog's pointer nobody can tell which metadata file is current (a newer one may be a
commit that lost its race, an older one may have been rolled back to), so any verdict could be about the wrong
snapshot. They come back as ``TableRef("iceberg", <uri>, catalog=None)``, which ``open_table`` refuses with
``unsupported_table`` naming the folder and the way to audit it: ``iceberg://<catalog>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from attest.errors import CarrierError, Code, TableReferenceError
from carriers.refs import ICEBERG_SCHEME, TableRef, is_local, local_path, parse_ref

# An object-store walk lists at most this many folders (each listing is one request).
MAX_FOLDERS = 10_000


def delta_tables_under(root: Path) -> Iterator[Path]:
    """Delta tables under a local folder (see ``tables_under`` for Iceberg folders too)."""
    for ref in tables_under(root):
        if ref.format == "delta":
            yield Path(ref.location)


def tables_under(root: Path) -> Iterator[TableRef]:
    """Delta tables and catalog-less Iceberg table folders under a local folder."""
    for current, dirs, _files in os.walk(root, followlinks=False):
        if "_delta_log" in dirs:
            yield TableRef.discovered("delta", current)
            dirs.clear()  # a table's own folders (partitions) hold no other tables
            continue
        if "metadata" in dirs and _has_iceberg_metadata(os.listdir(os.path.join(current, "metadata"))):
            yield TableRef.discovered("iceberg", Path(current).as_uri(), catalog=None)
            dirs.clear()
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))


def _has_iceberg_metadata(names: list[str]) -> bool:
    return any(n.endswith(".metadata.json") for n in names)


def remote_tables_under(prefix: str, storage_options: Mapping[str, str] | None = None) -> Iterator[TableRef]:
    """The same walk on an object store: one delimiter listing per folder through delta-rs's object store."""
    from carriers.storage import DeltaStorage, check_supported

    root = prefix.rstrip("/")
    check_supported("delta-rs", root)
    storage = DeltaStorage(root, dict(storage_options or {}))
    pending = [""]
    listed = 0
    while pending:
        rel = pending.pop(0)
        listed += 1
        if listed > MAX_FOLDERS:
            raise CarrierError(f"{prefix} holds more than {MAX_FOLDERS} folders; audit narrower prefixes",
                               code=Code.INVALID_ARGUMENT)
        folders = storage.list_folders(rel)
        here = f"{root}/{rel}" if rel else root
        if "_delta_log" in folders:
            yield TableRef.discovered("delta", here)
            continue
        if "metadata" in folders and _has_iceberg_metadata(storage.list_names(f"{rel}/metadata" if rel else
                                                                               "metadata")):
            yield TableRef.discovered("iceberg", here, catalog=None)
            continue
        pending.extend(f"{rel}/{d}" if rel else d for d in sorted(folders) if not d.startswith(("_", ".")))


def iceberg_tables(catalog_name: str, namespace: str | None) -> Iterator[TableRef]:
    from carriers.iceberg_catalogs import load_catalog

    try:
        catalog = load_catalog(catalog_name)
    except (ValueError, KeyError, NotImplementedError) as exc:
        raise TableReferenceError(f"Iceberg catalog {catalog_name!r} is not configured for pyiceberg (.pyiceberg.yaml "
                                  f"or PYICEBERG_CATALOG__{catalog_name.upper()}__* variables)") from exc
    namespaces = [tuple(namespace.split("."))] if namespace else _all_namespaces(catalog)
    for ns in namespaces:
        for ident in sorted(catalog.list_tables(ns)):
            yield TableRef.discovered("iceberg", ".".join(ident), catalog=catalog_name)


def _all_namespaces(catalog: object) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parent = pending.pop()
        for ns in catalog.list_namespaces(parent):  # type: ignore[attr-defined]
            ns = tuple(ns)
            if ns not in out:
                out.append(ns)
                pending.append(ns)
    return sorted(out)


def expand(target: str, storage_options: Mapping[str, str] | None = None) -> list[TableRef]:
    """The tables ``target`` stands for (see module docstring)."""
    if target.startswith(ICEBERG_SCHEME):
        rest = target[len(ICEBERG_SCHEME):].strip("/")
        catalog, _, ident = rest.partition("/")
        if not catalog:
            raise TableReferenceError(f"{target!r} names no catalog")
        if "." in ident or "@" in ident:
            return [parse_ref(target)]
        return list(iceberg_tables(catalog, ident or None))
    if is_local(target):
        local = local_path(target)
        if local.is_dir() and not (local / "_delta_log").is_dir():
            return list(tables_under(local))
        return [parse_ref(target)]
    if target.endswith("/"):  # a prefix (the trailing slash says so): every table under it
        return list(remote_tables_under(target, storage_options))
    from carriers.storage import DeltaStorage

    if re.search(r"@[0-9]+$", target):
        return [parse_ref(target)]  # one table at a version
    storage = DeltaStorage(target, dict(storage_options or {}))
    if storage.list_names("_delta_log"):
        return [parse_ref(target)]
    return list(remote_tables_under(target, storage_options))
