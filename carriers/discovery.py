"""Finding the tables an auditor wants checked: Delta tables under a directory, Iceberg tables in a catalog.

- a local directory: every Delta table below it (a folder holding ``_delta_log/``); the walk does not enter a
  table, nor folders starting with ``_`` or ``.``, and never follows symlinks (a link loop cannot trap it);
- ``iceberg://<catalog>``: every table of every namespace; ``iceberg://<catalog>/<namespace>``: that namespace;
- anything else is taken as one table reference as given.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from attest.errors import TableReferenceError
from carriers.refs import ICEBERG_SCHEME


def delta_tables_under(root: Path) -> Iterator[Path]:
    for current, dirs, _files in os.walk(root, followlinks=False):
        if "_delta_log" in dirs:
            yield Path(current)
            dirs.clear()  # a table's own folders (partitions) hold no other tables
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))


def iceberg_tables(catalog_name: str, namespace: str | None) -> Iterator[str]:
    from pyiceberg.catalog import load_catalog

    try:
        catalog = load_catalog(catalog_name)
    except (ValueError, KeyError, NotImplementedError) as exc:
        raise TableReferenceError(f"Iceberg catalog {catalog_name!r} is not configured for pyiceberg: {exc}") from exc
    namespaces = [tuple(namespace.split("."))] if namespace else _all_namespaces(catalog)
    for ns in namespaces:
        for ident in sorted(catalog.list_tables(ns)):
            yield f"{ICEBERG_SCHEME}{catalog_name}/{'.'.join(ident)}"


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


def expand(target: str) -> list[str]:
    """The table references ``target`` stands for (see module docstring)."""
    if target.startswith(ICEBERG_SCHEME):
        rest = target[len(ICEBERG_SCHEME):].strip("/")
        catalog, _, ident = rest.partition("/")
        if not catalog:
            raise TableReferenceError(f"{target!r} names no catalog")
        if "." in ident:
            return [target]
        return list(iceberg_tables(catalog, ident or None))
    local = Path(target[len("file://"):] if target.startswith("file://") else target)
    is_local = "://" not in target or target.startswith("file://")
    if is_local and local.is_dir() and not (local / "_delta_log").is_dir():
        return [str(p) for p in delta_tables_under(local)]
    return [target]
