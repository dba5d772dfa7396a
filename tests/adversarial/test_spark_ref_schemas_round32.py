"""Round 32, held: the schema Spark reads an Iceberg tag and a branch under after the table's columns were swapped.

Iceberg's Spark reads a *tag* (``t.tag_v1``, ``VERSION AS OF``) under the tagged snapshot's own schema and a *branch*
(``t.branch_b``) under the table's current schema (``SnapshotUtil.schemaFor``) — measured here: after ``a`` and ``b``
swap names, the tag reads ``a`` as it was written, the branch reads the other column as ``a``. pyiceberg reads both
under the snapshot's schema. An audit checks each as Spark reads it: the tag's line ``VERIFIED`` (its readers get the
attested columns), the branch's ``NOT VERIFIED`` (``reader_view_changed``: its readers get ``a`` holding ``b``'s
values), and Spark's read gate lets the tag's read through and refuses the branch's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.test_spark_audit_branches import _attested_main, _cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_a_tag_reads_its_snapshot_s_schema_a_branch_the_table_s(spark: SparkSession, spark_warehouse: Path) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import install, require_verified

    ns, name = _attested_main(spark, "r32s", "a BIGINT, b BIGINT", "(1, 10)")
    spark.sql(f"ALTER TABLE {name} CREATE TAG v1")
    hook = install(spark, policy="required")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (2, 20)")
        hook.flush()
        spark.sql(f"ALTER TABLE {name} CREATE BRANCH keep")
        spark.sql(f"ALTER TABLE {name} CREATE TAG v2")  # at the branch's head
        spark.sql(f"INSERT INTO {name} VALUES (3, 30)")  # main moves on, attested
        hook.flush()
    finally:
        hook.uninstall()
    for old, new in (("a", "tmp"), ("b", "a"), ("tmp", "b")):
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN {old} TO {new}")
    spark.sql(f"REFRESH TABLE {name}")
    assert [tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}.tag_v1").collect()] == [(1, 10)]
    assert sorted(tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}.branch_keep").collect()) == [(10, 1), (20, 2)]
    assert sorted(tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}.tag_v2").collect()) == [(1, 10), (2, 20)]

    code, out = _cli(spark_warehouse, "audit", f"iceberg://iceberg/{ns}")
    lines = {r["table"]: (r["outcome"], r.get("code")) for r in out["tables"]}
    table = f"iceberg://iceberg/{ns}.t"
    assert code == 1 and lines[f"{table}.tag_v1"][0] == "VERIFIED", out
    assert lines[f"{table}.branch_keep"][0] == "NOT VERIFIED", out
    # A tag at the branch's head has no line (it reads that snapshot): here its readers get the attested columns while
    # the branch's get them swapped, and the branch's line fails the audit. The other way round cannot pass: a head
    # whose own schema-id is not the one its attestation binds is not verified (test_iceberg_retention_names_round32).
    assert f"{table}.tag_v2" not in lines, out
    [problem] = [e for e in out["tables"] if e["table"] == f"{table}.branch_keep"]
    assert "reader_view_changed" in str(problem), problem

    with require_verified(spark):
        assert [tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}.tag_v1").collect()] == [(1, 10)]
        with pytest.raises(VerificationRefusedError) as refused:
            spark.sql(f"SELECT a, b FROM {name}.branch_keep").collect()
        assert refused.value.code.value == "reader_view_changed", str(refused.value)
