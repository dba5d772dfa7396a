"""Finding the tables an auditor wants checked: Delta tables under a folder or an object-store prefix, Iceberg tables
in a catalog. Every table found is a ``TableRef`` taken as found: a folder named ``orders@7`` is that folder.

- a local folder: every Delta table below it (a folder holding ``_delta_log/``); the walk does not enter a table, nor
  folders starting with ``_`` or ``.``, and never follows symlinks (a link loop cannot trap it);
- ``iceberg://<catalog>``: every table of every namespace; ``iceberg://<catalog>/<namespace>``: that namespace;
- anything else is one table reference, parsed as typed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from attest.errors import TableReferenceError
from carriers.refs import ICEBERG_SCHEME, TableRef, is_local, local_path, parse_ref


def delta_tables_under(root: Path) -> Iterator[Path]:
    for current, dirs, _files in os.walk(root, followlinks=False):
        if "_delta_log" in dirs:
            yield Path(current)
            dirs.clear()  # a table's own folders (partitions) hold no other tables
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))


def iceberg_tables(catalog_name: str, namespace: str | None) -> Iterator[TableRef]:
    from pyiceberg.catalog import load_catalog

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


def expand(target: str) -> list[TableRef]:
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
            return [TableRef.discovered("delta", str(p)) for p in delta_tables_under(local)]
    return [parse_ref(target)]
