"""One local SparkSession (Delta + Iceberg JDBC catalog on sqlite) shared by every Spark test.

Startup takes 10-15 s, so the session is session-scoped: tests must not stop it or change static conf,
and should use unique table names (the warehouse is shared too). The jars come from ensure_jars(), i.e.
$RECIPE_ATTEST_CACHE or ~/.cache/recipe-attest, downloaded and SHA-256-checked on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The warehouse directory of the shared session (see carriers.spark.session for the layout)."""
    return tmp_path_factory.mktemp("spark-warehouse")


@pytest.fixture(scope="session")
def spark(spark_warehouse: Path) -> Iterator[SparkSession]:
    pytest.importorskip("pyspark", reason="needs the `spark` extra")
    from carriers.spark.session import local_session

    session = local_session(spark_warehouse, app_name="recipe-attest-tests")
    yield session
    session.stop()
