"""Round 20 variants on the Spark hook and the read gate that held (tests/adversarial/test_spark_hook_round20.py has
the ones that did not): each is an honest-looking job the hook or the gate could have over-claimed for.

- A Delta write declaring ``dataChange=false`` (a rewrite) that changes rows: never carried forward as the earlier
  producer's rows — the hook's attestation of it fails (``content_changed``, counted), so does a later OPTIMIZE's
  carry-forward, and the table verifies as ``content_changed``.
- Iceberg reads of a branch (``t.branch_b``, ``option("branch")``, ``VERSION AS OF 'b'``) while only main is attested:
  the hook records the branch head, heuristic; the gate checks the branch head, not main's snapshot, and refuses.
- Delta time travel to a version before the attested one (``versionAsOf``, ``timestampAsOf``, ``path@v0``): the gate
  checks that version, not the latest, and refuses it; the hook records the version a ``path@vN`` read reads.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_spark_hook_round14 import _recorded

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _verdict(path: str) -> str:
    from attest.verify.table import verify_state
    from carriers.delta.carrier import DeltaCarrier

    carrier = DeltaCarrier(path)
    report = verify_state(carrier.state(None), carrier, level="bytes")
    return "verified" if report.passed else report.errors[0].code.value


def test_a_data_change_false_write_that_changes_rows_is_never_carried_forward(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    from attest.errors import PolicyError

    path = str(spark_warehouse / f"r20_dc_{uuid.uuid4().hex[:6]}")
    spark.range(5).write.format("delta").save(path)
    hook.flush()
    assert _verdict(path) == "verified"
    # "Only a rearrangement", the job says; the rows are others.
    spark.range(50, 53).write.format("delta").mode("overwrite").option("dataChange", "false").save(path)
    with pytest.raises(PolicyError):
        hook.flush()
    assert hook.carried == 0 and hook.failed == 1 and "cannot carry forward" in hook.errors[-1], hook.errors
    assert _verdict(path) == "content_changed"
    spark.sql(f"OPTIMIZE delta.`{path}`")  # maintenance after it: still nothing carried
    with pytest.raises(PolicyError):
        hook.flush()
    assert hook.carried == 0 and _verdict(path) == "content_changed"


def _ice_inputs(hook: Hook, table: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    result = hook.results[-1]
    assert result.location.endswith(table), (result.location, table)
    return _recorded(result)


def test_iceberg_branch_reads_are_the_branch_head_for_the_hook_and_the_gate(spark: SparkSession, hook: Hook) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import install, require_verified

    ns = f"iceberg.r20_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.src (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.src SELECT id FROM range(2)")  # main: attested
    hook.flush()
    spark.sql(f"ALTER TABLE {ns}.src CREATE BRANCH b")
    hook.uninstall()
    spark.sql(f"INSERT INTO {ns}.src.branch_b SELECT 666L")  # the branch: unattested
    head = spark.sql(f"SELECT snapshot_id FROM {ns}.src.refs WHERE name = 'b'").collect()[0][0]
    reads = {
        "suffix": lambda: spark.table(f"{ns}.src.branch_b"),
        "option": lambda: spark.read.option("branch", "b").table(f"{ns}.src"),
        "sql": lambda: spark.sql(f"SELECT * FROM {ns}.src VERSION AS OF 'b'"),
    }
    again = install(spark, policy="required")
    try:
        for i, read in enumerate(reads.values()):
            read().writeTo(f"{ns}.d{i}").create()
            again.flush()
            doc, inputs = _ice_inputs(again, f"{ns.split('.', 1)[1]}.d{i}")
            assert doc["inputs_proof_class"] == "heuristic", inputs
            assert [x.get("snapshot_id") for x in inputs] == [str(head)], inputs  # the branch head, not main's
    finally:
        again.uninstall()
    with require_verified(spark) as gate:
        assert spark.table(f"{ns}.src").count() == 2  # main: attested
        for what, read in reads.items():
            with pytest.raises(VerificationRefusedError) as refused:
                read().collect()
            assert refused.value.code.value == "stale" and str(head) in str(refused.value), (what, gate.refused)


def test_the_gate_checks_the_version_a_delta_time_travel_read_reads(
    spark: SparkSession, hook: Hook, spark_warehouse: Path
) -> None:
    import deltalake
    import pyarrow as pa

    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    path = str(spark_warehouse / f"r20_tt_{uuid.uuid4().hex[:6]}")
    deltalake.write_deltalake(path, pa.table({"id": pa.array([666], pa.int64())}))  # version 0: unattested
    spark.range(3).write.format("delta").mode("overwrite").save(path)  # version 1: attested (2: the attestation)
    hook.flush()
    log0 = Path(path) / "_delta_log" / ("0" * 20 + ".json")
    stamp = int(log0.stat().st_mtime * 1000)  # a version's timestamp, as Delta reads it without in-commit timestamps
    assert all("inCommitTimestamp" not in json.dumps(json.loads(line)) for line in log0.read_text().splitlines())
    when = spark.sql(f"SELECT CAST(timestamp_millis({stamp}) AS STRING)").collect()[0][0]  # the session's zone
    with require_verified(spark) as gate:
        assert spark.read.format("delta").load(path).count() == 3
        old = [
            lambda: spark.read.format("delta").option("versionAsOf", 0).load(path),
            lambda: spark.read.format("delta").load(f"{path}@v0"),
            lambda: spark.sql(f"SELECT * FROM delta.`{path}` VERSION AS OF 0"),
        ]
        old.append(lambda: spark.read.format("delta").option("timestampAsOf", when).load(path))
        for read in old:
            with pytest.raises(VerificationRefusedError) as refused:
                read().collect()
            assert "version 0" in str(refused.value), gate.refused
    # The hook records the version such a read reads: version 0 (unattested) heuristic, version 1 by its content.
    for at, proof in (("0", "heuristic"), ("1", "strong")):
        dst = f"{path}_dst{at}"
        spark.read.format("delta").load(f"{path}@v{at}").write.format("delta").save(dst)
        hook.flush()
        doc, inputs = _recorded(hook.results[-1])
        assert hook.results[-1].location.endswith(Path(dst).name), hook.results[-1].location
        assert [(i.get("version"), i["proof_class"]) for i in inputs] == [(at, proof)], inputs
        assert doc["inputs_proof_class"] == proof, inputs
