"""`attest lineage` on tables the Spark hook attested after appends (issue 30.8): Spark names a local table
``file:/p``, and every INSERT records the version it built on; the walk is one node per table, the upstream once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import required_hook

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def _attest(*args: str, warehouse: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter (no Spark in it); Iceberg refs resolve through PYICEBERG_* variables."""
    env = {**os.environ, "PYICEBERG_CATALOG__ICEBERG__TYPE": "sql",
           "PYICEBERG_CATALOG__ICEBERG__URI": f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
           "PYICEBERG_CATALOG__ICEBERG__WAREHOUSE": (warehouse / "iceberg").as_uri(),
           "PYICEBERG_CATALOG__ICEBERG__SCHEMA_VERSION": "v1"}
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


hook = required_hook  # attest.spark.install(spark, policy="required") for the test (tests/conftest.py)


def _walk(ref: str, warehouse: Path) -> tuple[int, dict[str, Any]]:
    proc = _attest("lineage", ref, "--json", warehouse=warehouse)
    return proc.returncode, json.loads(proc.stdout)


def test_tables_appended_through_spark_walk_as_one_node_each(spark: SparkSession, spark_warehouse: Path,
                                                              hook: Hook) -> None:
    u = uuid.uuid4().hex[:8]
    spark.createDataFrame([(1, 10.0)], "id int, amount double").write.format("delta").saveAsTable(f"up_{u}")
    spark.createDataFrame([(0, 0.0)], "id int, amount double").write.format("delta").saveAsTable(f"orders_{u}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.l{u}")
    spark.sql(f"CREATE TABLE iceberg.l{u}.sums USING iceberg AS SELECT 0 AS id, 0.0D AS amount")
    hook.flush()
    for i in range(3):
        spark.sql(f"INSERT INTO orders_{u} SELECT id + {i + 1}, amount FROM up_{u}")
        spark.sql(f"INSERT INTO iceberg.l{u}.sums SELECT id + {i + 1}, amount FROM orders_{u}")
        hook.flush()
    assert hook.failed == 0 and hook.attested == 9, hook.errors
    row = spark.sql(f"DESCRIBE DETAIL orders_{u}").collect()[0]
    location = str(row["location"])
    assert location.startswith("file:/") and not location.startswith("file://")  # Spark's spelling
    orders = location[len("file:"):]
    inputs = json.loads(_attest("show", orders, "--inputs", warehouse=spark_warehouse).stdout)
    assert {i["location"] for i in inputs} == {location, location.replace(f"orders_{u}", f"up_{u}")}

    rc, doc = _walk(orders, spark_warehouse)
    # Before: every version was a level of its own with the upstream under each, and the table in two spellings.
    assert rc == 0, doc["summary"]
    assert doc["ref"] == Path(orders).as_uri() and len(doc["chain"]) == 3 and doc["chain_passed"]
    # orders' first version came from createDataFrame: rows of an RDD, which the hook records as code it cannot see,
    # a heuristic input (docs/spark.md, "User code the plan does not show")
    code = [i for i in doc["inputs"] if i["ref"].startswith("code:")]
    assert [(i["ref"], i["observed_as"]) for i in code] == [("code:LogicalRDD", "heuristic")], doc["inputs"]
    assert [(i["ref"], i["version"]) for i in doc["inputs"] if i not in code] == [(Path(orders).as_uri().replace(
        f"orders_{u}", f"up_{u}"), "0")]
    assert doc["walk"]["pre_attestation"] == [] and doc["walk"]["failures"] == []

    rc, doc = _walk(f"iceberg://iceberg/l{u}.sums", spark_warehouse)
    assert rc == 0, doc["summary"]
    assert len(doc["chain"]) == 3 and doc["chain_passed"], doc["summary"]
    # It read three versions of orders: one node (orders' chain holds the older two), not one per read.
    (read,) = doc["inputs"]
    assert read["ref"] == Path(orders).as_uri() and len(read["chain"]) == 3, doc
