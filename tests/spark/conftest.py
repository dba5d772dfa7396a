"""Spark tests share one local SparkSession (Delta + Iceberg JDBC catalog on sqlite).

Startup takes 10-15 s, so the session is session-scoped: tests must not stop it or change static conf,
and should use unique table names (the warehouse is shared too). The jars come from ensure_jars(), i.e.
$RECIPE_ATTEST_CACHE or ~/.cache/recipe-attest, downloaded and SHA-256-checked on first use. The fixtures
(spark, spark_warehouse) live in tests/conftest.py, because tests/adversarial uses them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook


@pytest.fixture
def hook(spark: SparkSession) -> Iterator[Callable[..., Hook]]:
    """``hook(**kw)`` installs a hook on the shared session (``attest.spark.install``); each is uninstalled after the
    test."""
    from attest.spark import install

    made: list[Hook] = []

    def make(**kw: Any) -> Hook:
        h = install(spark, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.uninstall()
