"""Catalog properties given on the command line (``--uri``, ``--warehouse``, as pyiceberg's own CLI spells them) or
to the Python API: they override what pyiceberg's configuration (.pyiceberg.yaml, ``PYICEBERG_CATALOG__<NAME>__*``)
says for that catalog, in every catalog this process opens through ``carriers.iceberg.catalogs.load_catalog`` — the
table a command names, the tables an audit lists, the upstream tables a lineage walk opens. Set once per command
(:func:`overriding`), never per call site.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

__all__ = ["default_catalog_name", "overrides_for", "overriding"]

_OVERRIDES: ContextVar[tuple[str, Mapping[str, str]] | None] = ContextVar("_recipe_attest_catalog_overrides",
                                                                          default=None)


@contextlib.contextmanager
def overriding(catalog: str, properties: Mapping[str, str]) -> Iterator[None]:
    """Within the block, catalog ``catalog`` is opened with ``properties`` over its configured ones."""
    token = _OVERRIDES.set((catalog, dict(properties)) if properties else None)
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


def overrides_for(name: str | None) -> dict[str, str]:
    """The properties given for catalog ``name`` (``None``: pyiceberg's default catalog), else none."""
    current = _OVERRIDES.get()
    if current is None:
        return {}
    catalog, properties = current
    if catalog != (name if name is not None else default_catalog_name()):
        return {}
    return dict(properties)


def default_catalog_name() -> str:
    """The catalog pyiceberg opens when none is named: ``default-catalog`` of its configuration, else ``default``
    (``pyiceberg --uri ...`` without ``--catalog`` opens that one too)."""
    try:
        from pyiceberg.utils.config import Config
    except ImportError:
        return "default"
    try:
        return str(Config().get_default_catalog_name())
    except ValueError:
        return "default"
