"""Spark post-write hooks: one line in a PySpark job attests every Delta / Iceberg table it writes.

    hook = attest.spark.install(spark)        # ... job ...; hook.flush()

Thin layer over carriers.spark (docs/spark.md). Importing this package imports neither pyspark nor the carriers'
engines (deltalake, pyiceberg): every function imports its implementation when called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.base import WriteResult
    from carriers.spark.hook import Hook

__all__ = ["attested_write", "install", "local_session"]


def local_session(warehouse: str | Path, *, app_name: str = "recipe-attest", iceberg_catalog: str = "iceberg",
                  extra_conf: dict[str, str] | None = None) -> SparkSession:
    """A local[2] SparkSession with Delta and an Iceberg JDBC catalog (carriers.spark.session.local_session)."""
    from carriers.spark.session import local_session as _local_session

    return _local_session(warehouse, app_name=app_name, iceberg_catalog=iceberg_catalog, extra_conf=extra_conf)


def install(spark: SparkSession, policy: Literal["optional", "required", "disabled"] = "optional", *,
            model_namer: Callable[[str], str] | None = None, run_id: str | None = None,
            delta_mode: Literal["alter", "detached"] = "alter", timeout_s: float = 600.0, max_pending: int = 256,
            iceberg_catalogs: Mapping[str, Mapping[str, str]] | None = None, openlineage: bool = False) -> Hook:
    """Attest every successful Delta / Iceberg write of ``spark`` (see carriers.spark.hook.install); with
    ``openlineage=True`` (or ATTEST_OPENLINEAGE=1) also emit one OpenLineage RunEvent per attestation."""
    from carriers.spark.hook import install as _install

    return _install(spark, policy, model_namer=model_namer, run_id=run_id, delta_mode=delta_mode,
                    timeout_s=timeout_s, max_pending=max_pending, iceberg_catalogs=iceberg_catalogs,
                    openlineage=openlineage)


def attested_write(spark: SparkSession, *, model: str, run_id: str | None = None,
                   policy: Literal["optional", "required", "disabled"] = "required", sql: str | None = None,
                   delta_mode: Literal["alter", "detached"] = "alter",
                   iceberg_catalogs: Mapping[str, Mapping[str, str]] | None = None,
                   ) -> AbstractContextManager[list[WriteResult]]:
    """``with attested_write(spark, model="m") as results: df.write...`` — results hold the manifests after."""
    from carriers.spark.hook import attested_write as _attested_write

    return _attested_write(spark, model=model, run_id=run_id, policy=policy, sql=sql, delta_mode=delta_mode,
                           iceberg_catalogs=iceberg_catalogs)


