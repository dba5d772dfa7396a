"""Driver programs run against a standalone cluster by tests/spark/test_cluster.py, each in its own process (one
SparkContext per process); each prints one JSON object as its last stdout line.

    python tests/spark/cluster_job.py probe MASTER
    python tests/spark/cluster_job.py hook MASTER WAREHOUSE

probe: where executors find ``carriers`` before and after ``ship_code`` (their working directory and the module's
origin). hook: Delta and Iceberg writes through Spark SQL with the post-write hook hashing on the executors
(``executor_hash_bytes=1``); the hook's hashing stats, the Spark job groups' final status and a local verification
of each table.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _where(_: object) -> tuple[str, str | None]:
    import importlib.util
    import os

    spec = importlib.util.find_spec("carriers")
    return os.getcwd(), (spec.origin if spec is not None else None)


def probe(master: str) -> dict[str, Any]:
    from carriers.spark.distributed import cli_session, ship_code

    spark = cli_session(master, app_name="cluster-probe")
    try:
        sc = spark.sparkContext
        before = sc.parallelize(range(8), 8).map(_where).collect()
        shipped = ship_code(sc)
        after = sc.parallelize(range(8), 8).map(_where).collect()
        again = ship_code(sc)  # once per application
        return {"before": before, "after": after, "zip": str(shipped), "again": str(again),
                "python": sc.pythonExec}
    finally:
        spark.stop()


def hook(master: str, warehouse: str) -> dict[str, Any]:
    import attest.spark
    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier
    from carriers.spark.session import local_session

    spark = local_session(warehouse, app_name="cluster-hook",
                          extra_conf={"spark.master": master, "spark.executor.memory": "768m",
                                      "spark.default.parallelism": "4",
                                      # Delta's state reconstruction in 2 tasks, not 50: a small table on 2 cores
                                      "spark.databricks.delta.snapshotPartitions": "2"})
    import attest.content

    driver_digests: list[int] = []  # digest_table in this process: the driver reading rows (never, on executors)
    digest_table = attest.content.digest_table

    def counted(*args: Any, **kwargs: Any) -> Any:
        driver_digests.append(1)
        return digest_table(*args, **kwargs)

    attest.content.digest_table = counted  # type: ignore[assignment]
    try:
        h = attest.spark.install(spark, policy="required", executor_hash_bytes=1)
        try:
            spark.sql("CREATE TABLE d USING delta PARTITIONED BY (p) AS SELECT id, CAST(id % 4 AS STRING) AS p, "
                      "sha2(CAST(id AS STRING), 256) AS h FROM range(20000)")
            spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.ns")
            spark.sql("CREATE TABLE iceberg.ns.i (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p)")
            spark.sql("INSERT INTO iceberg.ns.i SELECT id, CAST(id % 3 AS STRING) FROM range(5000)")
            h.flush()
        finally:
            h.uninstall()
        tracker = spark.sparkContext.statusTracker()
        jobs = [j for g in h.hashing.job_groups for j in tracker.getJobIdsForGroup(g)]
        statuses = [str(getattr(tracker.getJobInfo(j), "status", None)) for j in jobs]
        location = str(spark.sql("DESCRIBE DETAIL d").collect()[0]["location"]).removeprefix("file:")
    finally:
        spark.stop()
        attest.content.digest_table = digest_table  # type: ignore[assignment]

    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.spark.content_check import against_driver

    delta = verify_table(DeltaCarrier(location), level="bytes")  # hashed here, independently of the executors
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
    iceberg = verify_table(IcebergCarrier(catalog.load_table("ns.i"), catalog_name="iceberg"), level="bytes")
    stats = h.hashing
    content = {"delta": against_driver(DeltaCarrier(location), first=True),
               "iceberg": against_driver(IcebergCarrier(catalog.load_table("ns.i"), catalog_name="iceberg"),
                                         first=True)}
    return {"attested": h.attested, "failed": h.failed, "errors": [str(e) for e in h.errors],
            "executor_files": stats.executor_files, "driver_files": stats.driver_files,
            "executor_content_files": stats.executor_content_files, "driver_digests": len(driver_digests),
            "content": content,
            "fallbacks": stats.fallbacks, "tasks": stats.tasks, "job_statuses": statuses,
            "delta": {"passed": delta.passed, "files": delta.files_checked, "verdict": delta.verdict()},
            "iceberg": {"passed": iceberg.passed, "files": iceberg.files_checked, "verdict": iceberg.verdict()}}


def main(argv: list[str]) -> int:
    if argv[0] == "probe":
        out = probe(argv[1])
    elif argv[0] == "hook":
        out = hook(argv[1], argv[2])
    else:
        raise SystemExit(f"unknown job {argv[0]!r}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
