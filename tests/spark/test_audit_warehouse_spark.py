"""`attest audit W` on the warehouse ``attest.spark.local_session(W)`` made (issue 30.6): Spark writes a managed Delta
table under ``W/spark-warehouse`` and an Iceberg table under ``W/iceberg`` through its JDBC catalog; W named
relatively, as a user in its parent folder types it. Every table is audited — the Iceberg folder from its own newest
metadata file (no catalog is configured for pyiceberg here), labelled so — and nothing is an internal error.
The same layout without Spark is tests/test_audit_warehouse.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import run_cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
PROGRAM = "a" * 64


def test_audit_of_a_local_session_warehouse(spark: SparkSession, spark_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.delta.carrier import attest_after_write
    from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write
    from carriers.spark.session import pyiceberg_catalog_properties

    spark.sql("CREATE TABLE audit_wh_orders (id INT) USING delta")
    spark.sql("INSERT INTO audit_wh_orders VALUES (1), (2)")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.audit_wh")
    spark.sql("CREATE TABLE iceberg.audit_wh.events (n BIGINT) USING iceberg")
    spark.sql("INSERT INTO iceberg.audit_wh.events VALUES (1), (2)")
    delta = spark_warehouse / "spark-warehouse" / "audit_wh_orders"
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    table = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse)).load_table("audit_wh.events")
    iceberg_attest_after_write(table, model="events", program_hash=PROGRAM)

    name = spark_warehouse.name
    done = run_cli("audit", name, "--json", cwd=spark_warehouse.parent)
    doc = json.loads(done.stdout)
    rows = {t["table"]: t for t in doc["tables"]}
    assert rows[f"{name}/spark-warehouse/audit_wh_orders"]["outcome"] == "VERIFIED", doc
    events = rows[f"{name}/iceberg/audit_wh/events"]
    assert events["outcome"] == "VERIFIED" and events["level"] == "bytes", events
    assert any(n.startswith("read without a catalog from metadata/") for n in events["notes"]), events
    assert not [t for t in doc["tables"] if t["code"] == "internal_error"], doc
    # Other tests share this warehouse and leave forged metadata in their own folders (e.g. the round-14 Iceberg number
    # edits, written beside an attested table): an ERROR there is theirs; this layout's tables are never unsupported.
    assert not [t for t in doc["tables"] if t["code"] == "unsupported_table" and "audit_wh" in t["table"]], doc
    # The exit code is the worst outcome's (docs/audit.md): other tests share this warehouse.
    outcomes = {t["outcome"] for t in doc["tables"]}
    assert done.returncode == (2 if "ERROR" in outcomes else 0 if outcomes == {"VERIFIED"} else 1), doc
    text = run_cli("audit", name, cwd=spark_warehouse.parent)
    for line in text.stdout.splitlines():
        if line.startswith(("STALE", "COMPACTED", "UNATTESTED", "NOT VERIFIED", "ERROR")):
            assert ") " not in line.split("(", 1)[0] and "): " in line, line  # its code and its message
