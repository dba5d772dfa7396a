"""Environment identity: what the run's semantics depend on, never where or when it ran.

In: producer name/version, engine names/versions, SQL dialect, table-format protocol.
Out by construction: host names, paths, users, times, process ids (the builder takes no such argument).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attest._signature import arguments_of
from attest.canonical import digest


def env_document(
    *,
    producer_name: str,
    producer_version: str,
    engines: Mapping[str, str] | None = None,
    dialect: str | None = None,
    table_format: str | None = None,
    protocol: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {"producer": {"name": producer_name, "version": producer_version}}
    if engines:
        doc["engines"] = {str(k): str(v) for k, v in engines.items()}
    if dialect:
        doc["dialect"] = dialect.lower()
    if table_format:
        fmt: dict[str, Any] = {"name": table_format}
        if protocol:
            fmt["protocol"] = dict(protocol)
        doc["format"] = fmt
    return doc


@arguments_of(env_document)
def env_identity(**fields: Any) -> str:
    """BLAKE3 (v1) of the environment document (``env_document``, which takes the same keywords); see
    docs/identities.md for the field list."""
    return digest(env_document(**fields))
