"""A Hive-enabled Spark job for tests/adversarial/test_spark_hive_round23.py (its own process: a session's catalog
implementation is fixed when its context starts, and the shared test session's is in-memory).

    python -m tests.adversarial.hive_job <warehouse> <result.json>

An attested Delta table whose folder still holds an overwrite's removed rows; Hive-format (SerDe) tables over it —
one partition at its folder, and an unpartitioned table at its folder —, read with ``convertMetastoreParquet`` off
(the read stays a ``HiveTableRelation``). Records what Spark reads, what the read gate does, and the inputs the hook
records for a job reading a Hive table and the Delta table."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def main(root: Path, result: Path) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import install, require_verified
    from carriers.spark.session import local_session
    from carriers.storage.base import local_path_of

    root.mkdir(parents=True, exist_ok=True)
    os.chdir(root)  # Derby writes derby.log into the JVM's working folder: the test's, not the repository
    spark = local_session(root, app_name="hive-job", extra_conf={
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={root}/metastore_db;create=true",
        "spark.sql.hive.convertMetastoreParquet": "false"})
    out: dict[str, Any] = {}
    hook = install(spark, policy="required")
    delta = str(root / "delta")
    spark.range(4).write.format("delta").save(delta)
    spark.range(100, 101).write.format("delta").mode("overwrite").save(delta)  # attested: one row
    hook.flush()
    spark.sql(f"CREATE TABLE default.parts (id BIGINT) PARTITIONED BY (p INT) STORED AS PARQUET "
              f"LOCATION '{root / 'parts'}'")
    spark.sql(f"ALTER TABLE default.parts ADD PARTITION (p=1) LOCATION '{delta}'")
    spark.sql(f"CREATE TABLE default.flat (id BIGINT) STORED AS PARQUET LOCATION '{delta}'")
    spark.sql(f"CREATE TABLE default.plain (id BIGINT) PARTITIONED BY (p INT) STORED AS PARQUET "
              f"LOCATION '{root / 'plain'}'")
    spark.sql("INSERT INTO default.plain PARTITION (p=0) VALUES (7)")
    out["plan"] = str(spark.table("default.parts")._jdf.queryExecution().analyzed().toString())
    out["spark_rows"] = {t: spark.table(f"default.{t}").count() for t in ("parts", "flat", "plain")}
    out["gate"] = {}
    with require_verified(spark) as gate:
        out["delta_rows"] = spark.read.format("delta").load(delta).count()
        for t in ("parts", "flat", "plain"):
            try:
                out["gate"][t] = ["let through", spark.table(f"default.{t}").count()]
            except VerificationRefusedError as exc:
                out["gate"][t] = ["refused", exc.code.value, str(exc)]
        out["gate_refused"] = list(gate.refused)
    target = str(root / "out")
    spark.sql(f"CREATE TABLE delta.`{target}` (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO delta.`{target}` SELECT h.id FROM default.parts h JOIN delta.`{delta}` x ON true")
    hook.flush()
    written = [r for r in hook.results if r.location.rstrip("/").endswith("out")][-1]
    sidecar = json.loads(Path(local_path_of(written.sidecar) or written.sidecar).read_text())
    out["proof_class"] = written.manifest.to_dict()["inputs_proof_class"]
    out["inputs"] = [{"table": i["table"], "proof_class": i["proof_class"]} for i in sidecar["inputs"]]
    out["hook_failed"] = hook.failed
    result.write_text(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
