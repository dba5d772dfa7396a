"""pyiceberg catalogs that never run code a table's own metadata names (docs/security.md).

pyiceberg builds a table's FileIO from the catalog's properties merged with the table's own — ``metadata.json``,
which anyone with write access to the table's storage edits — and imports and calls the class a ``py-io-impl`` there
names (``s3.retry-strategy-impl`` likewise). A hostile table could so make a verifier import any installed module,
print the catalog's properties (credentials included) into its output, or exit: measured with ``sys.exit``,
``builtins.print`` and ``this``. Catalogs opened through :func:`load_catalog` (or given to :func:`guard`) drop every
``...impl`` key from the table's side before the FileIO is built; the catalog's own configuration — the user's —
still chooses. Carriers say when a table carried such keys (:func:`code_keys`).

Writes are another matter: pyiceberg's commits honour the table's ``write.py-location-provider.impl``, as every
writer of that table does (docs/iceberg.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["code_keys", "guard", "load_catalog", "names_code"]

_GUARDED = "_recipe_attest_guarded"


def names_code(key: str) -> bool:
    """Whether a property names code for pyiceberg (or a Java engine) to load: ``py-io-impl``,
    ``s3.retry-strategy-impl``, ``write.py-location-provider.impl``, ``io-impl``, and any later ``...impl``."""
    return key.strip().lower().endswith("impl")


def code_keys(properties: Mapping[str, Any]) -> list[str]:
    """The keys of ``properties`` that name code, sorted."""
    return sorted(k for k in properties if isinstance(k, str) and names_code(k))


def guard(catalog: Any) -> Any:
    """Make ``catalog`` (a pyiceberg ``Catalog``) build every table's FileIO without the table's code-naming keys.

    pyiceberg's catalogs call ``self._load_file_io(table_properties, location)`` when they load a table (the
    metadata file itself is read with the catalog's properties alone); the instance's method is wrapped, once."""
    if getattr(catalog, _GUARDED, False):
        return catalog
    original = catalog._load_file_io

    def _load_file_io(properties: Mapping[str, str] | None = None, location: str | None = None) -> Any:
        kept = {k: v for k, v in (properties or {}).items() if not names_code(k)}
        return original(kept, location)

    catalog._load_file_io = _load_file_io
    setattr(catalog, _GUARDED, True)
    return catalog


def load_catalog(name: str | None, **properties: str) -> Any:
    """``pyiceberg.catalog.load_catalog``, guarded (see the module docstring)."""
    from pyiceberg.catalog import load_catalog as load

    return guard(load(name, **properties))
