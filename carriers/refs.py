"""Table references as users type them, resolved to a carrier.

- ``iceberg://<catalog>/<namespace>.<table>[@<snapshot id>]``: an Iceberg table through pyiceberg's own catalog
  configuration (.pyiceberg.yaml, PYICEBERG_CATALOG__<NAME>__* variables);
- anything else is a Delta table path or URI (``/data/t``, ``file:///data/t``, ``s3://bucket/t``), optionally
  ``@<version>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from attest.errors import TableReferenceError
from carriers.base import TableCarrier

_AT_VERSION = re.compile(r"^(?P<base>.+)@(?P<version>[0-9]+)$")
ICEBERG_SCHEME = "iceberg://"


@dataclass(frozen=True)
class TableRef:
    format: str  # "delta" | "iceberg"
    location: str  # Delta: path/URI; Iceberg: "<namespace>.<table>"
    catalog: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        base = f"{ICEBERG_SCHEME}{self.catalog}/{self.location}" if self.format == "iceberg" else self.location
        return base if self.version is None else f"{base}@{self.version}"


def parse_ref(ref: str) -> TableRef:
    if not ref or ref.strip() != ref:
        raise TableReferenceError(f"table reference {ref!r} is empty or has surrounding spaces")
    version = None
    match = _AT_VERSION.match(ref)
    if match:
        ref, version = match.group("base"), match.group("version")
    if ref.startswith(ICEBERG_SCHEME):
        rest = ref[len(ICEBERG_SCHEME):]
        catalog, sep, ident = rest.partition("/")
        if not sep or not catalog or "." not in ident or ident.startswith(".") or ident.endswith("."):
            raise TableReferenceError(
                f"Iceberg reference {ref!r} must look like iceberg://<catalog>/<namespace>.<table>")
        return TableRef("iceberg", ident, catalog=catalog, version=version)
    return TableRef("delta", ref, version=version)


def open_table(ref: str | TableRef, *, storage_options: Mapping[str, str] | None = None) -> TableCarrier:
    """The carrier for a reference (the version part, if any, is for the caller to pass to state/observe)."""
    parsed = parse_ref(ref) if isinstance(ref, str) else ref
    if parsed.format == "iceberg":
        from carriers.iceberg import IcebergCarrier

        assert parsed.catalog is not None
        return IcebergCarrier.from_reference(parsed.catalog, parsed.location)
    from carriers.delta import DeltaCarrier

    return DeltaCarrier(parsed.location, storage_options=dict(storage_options or {}))
