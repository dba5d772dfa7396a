"""Spark post-write hooks: one line in a PySpark job attests every Delta / Iceberg table it writes.

    hook = attest.spark.install(spark)        # ... job ...; hook.flush()   (signer=... signs each attestation)
    gate = attest.spark.require_verified(spark, "trust.toml")   # reads only verified table versions

Re-exports what ``carriers.spark`` defines (docs/spark.md) — the very same objects, so signatures, defaults and
docstrings cannot drift apart. Importing this package imports neither pyspark nor the carriers' engines
(deltalake, pyiceberg), nor even ``carriers.spark``: a name is imported from its module on first access
(module ``__getattr__``); type checkers see the real definitions through the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from carriers.spark.catalog_audit import audit
    from carriers.spark.distributed import verify
    from carriers.spark.gate import ReadGate, require_verified
    from carriers.spark.hook import DeltaMode, Hook, Policy, attested_write, install
    from carriers.spark.session import local_session, pyiceberg_catalog_properties, spark_conf

# name -> the module that defines it (keep in step with the TYPE_CHECKING imports; tests/spark/test_reexports.py)
_EXPORTS: dict[str, str] = {
    "DeltaMode": "carriers.spark.hook",
    "Hook": "carriers.spark.hook",
    "Policy": "carriers.spark.hook",
    "ReadGate": "carriers.spark.gate",
    "audit": "carriers.spark.catalog_audit",
    "attested_write": "carriers.spark.hook",
    "install": "carriers.spark.hook",
    "local_session": "carriers.spark.session",
    "pyiceberg_catalog_properties": "carriers.spark.session",
    "require_verified": "carriers.spark.gate",
    "spark_conf": "carriers.spark.session",
    "verify": "carriers.spark.distributed",
}

__all__ = [
    "DeltaMode",
    "Hook",
    "Policy",
    "ReadGate",
    "attested_write",
    "audit",
    "install",
    "local_session",
    "pyiceberg_catalog_properties",
    "require_verified",
    "spark_conf",
    "verify",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
