"""A job on a Hive metastore (embedded Derby) for tests/spark/test_catalog_audit_cli.py, in its own process: a
session's catalog implementation is fixed when its context starts (the shared test session's is in-memory), and
embedded Derby admits one JVM at a time.

    python -m tests.spark.metastore_job <warehouse> <metastore-url>

Two external Delta tables of database ``sales`` at locations outside the warehouse, each written and attested by
the hook; then ``sales.ext`` appended by the same job with the hook uninstalled: its readers read a row no
attestation binds."""

from __future__ import annotations

import sys
from pathlib import Path


def main(root: Path, metastore: str) -> None:
    from attest.spark import install
    from carriers.spark.session import local_session

    spark = local_session(root, app_name="metastore-job", extra_conf={
        "spark.sql.catalogImplementation": "hive", "spark.hadoop.javax.jdo.option.ConnectionURL": metastore})
    hook = install(spark, policy="required")
    spark.sql("CREATE DATABASE sales")
    for name in ("ok", "ext"):
        spark.sql(f"CREATE TABLE sales.{name} (id BIGINT) USING delta LOCATION '{root / 'elsewhere' / name}'")
        spark.sql(f"INSERT INTO sales.{name} VALUES (1)")
    hook.flush()
    hook.uninstall()
    spark.sql("INSERT INTO sales.ext VALUES (666)")
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
