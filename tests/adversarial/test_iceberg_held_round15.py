"""Round 15 variants on the Iceberg side that held, pinned (the refused ones: tests/adversarial/test_iceberg_round15.py,
test_spark_iceberg_round15.py). Measured with Spark 4.1 / Iceberg 1.12 and pyiceberg 0.12:

- write-audit-publish with ``write.wap.enabled`` and ``spark.wap.id``: Spark stages a snapshot (``wap.id`` in its
  summary) that no ref names; both readers' main stays at the attested rows and ``verify`` of main stays VERIFIED;
  ``verify`` of the staged snapshot by id walks its ancestry to the attestation and says ``stale`` (it appended);
  ``record`` of it is refused (``record`` attests the latest data snapshot); ``cherrypick_snapshot`` fast-forwards
  main to the staged snapshot itself (no new snapshot) and main is then ``stale``.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import pyiceberg_ids, spark_ids
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.mark.spark
def test_a_staged_write_audit_publish_snapshot(spark: SparkSession, spark_warehouse: Path) -> None:
    table = f"t{uuid.uuid4().hex[:8]}"
    name, ident, ref = f"iceberg.wap15.{table}", f"wap15.{table}", f"iceberg://iceberg/wap15.{table}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.wap15")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.wap.enabled'='true')")
    spark.sql(f"INSERT INTO {name} SELECT id FROM range(0, 3)")
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    with session_conf(spark, "spark.wap.id", "audit-1"):
        spark.sql(f"INSERT INTO {name} SELECT id FROM range(10, 13)")
    staged = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots WHERE summary['wap.id'] = 'audit-1'").collect()
    assert len(staged) == 1
    sid = int(staged[0][0])
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == [0, 1, 2]
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
    rc, doc = _cli(spark_warehouse, "verify", f"{ref}@{sid}")
    assert rc != 0 and codes(doc) == ["stale"], doc
    rc, doc = _cli(spark_warehouse, "record", f"{ref}@{sid}", "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and codes(doc) == ["invalid_argument"], doc
    spark.sql(f"CALL iceberg.system.cherrypick_snapshot(table => '{ident}', snapshot_id => {sid})").collect()
    current = spark.sql(f"SELECT snapshot_id FROM {name}.history ORDER BY made_current_at DESC LIMIT 1").collect()
    assert int(current[0][0]) == sid  # fast-forwarded: the staged snapshot itself is main's head
    assert spark_ids(spark, name) == pyiceberg_ids(spark_warehouse, ident) == [0, 1, 2, 10, 11, 12]
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and codes(doc) == ["stale"], doc
