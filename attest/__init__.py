"""recipe-attest: attest lakehouse table versions as rocky-manifest v0.1 documents.

The Python entry (attest/api.py): ``attest.verify(table, level=...)``, ``attest.record(table, model=..., sql=...)``,
``attest.show(table)`` and ``attest.lineage(table)``, taking what the command line takes (a path, a URI,
``iceberg://...``, an identifier with ``catalog=``, a deltalake.DeltaTable or a pyiceberg Table). Imported on first
use: ``import attest`` stays light."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    import importlib  # not "from attest import api": that asks this very __getattr__ for "api" first

    if name in ("verify", "record", "lineage"):  # callable modules (attest/_callable.py)
        return importlib.import_module(f"attest.{name}")
    if name in ("show", "api"):
        api = importlib.import_module("attest.api")
        return api if name == "api" else api.show
    raise AttributeError(f"module 'attest' has no attribute {name!r}")
