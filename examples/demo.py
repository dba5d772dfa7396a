"""The main job, end to end on embedded defaults (README: `make demo`).

Each step runs the real `attest` CLI in a subprocess, as a user would, and checks the exit code it expects:
the demo fails loudly if the product does not behave as documented.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

OUT = Path(os.environ.get("DEMO_OUT", "demo-out")).resolve()
ATTEST = [sys.executable, "-m", "attest.cli"]


def step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def attest(*args: str, expect: int, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    shown = " ".join(a if " " not in a else repr(a) for a in args)
    print(f"$ attest {shown}", flush=True)
    proc = subprocess.run([*ATTEST, *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})})
    out = (proc.stdout + proc.stderr).rstrip()
    lines = out.splitlines()
    print("\n".join(lines if len(lines) <= 14 else [*lines[:6], "  ...", *lines[-6:]]))
    if proc.returncode != expect:
        sys.exit(f"demo: expected exit {expect}, got {proc.returncode}")
    return proc.stdout


def flip_byte(path: Path, offset: int = -20) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    print(f"(flipped one byte of {path.relative_to(OUT)})")


def standalone() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attest.build import build_manifest
    from attest.hashing import hash_file
    from attest.identity import env_identity, program_identity_sql
    from carriers.standalone import StandaloneCarrier

    step("1. Standalone: a content-addressed output, its manifest, verification, tampering")
    out = OUT / "standalone"
    out.mkdir(parents=True)
    sql = "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region"
    table = pa.table({"region": ["EU", "US", "APAC"], "revenue": [120.5, 99.0, 42.25]})
    tmp = out / ".part.parquet"
    pq.write_table(table, tmp)
    digest = hash_file(tmp)
    # Content-addressed: the file's name is the BLAKE3 of its bytes, known before anything points at it.
    final = out / f"{digest}.parquet"
    tmp.rename(final)
    manifest = build_manifest(
        model="revenue_by_region",
        program_hash=program_identity_sql(sql, "spark"),
        env_hash=env_identity(producer_name="recipe-attest", producer_version="demo", dialect="spark"),
        outputs=[(final.name, digest)],
        run_id="demo-run-1",
    )
    StandaloneCarrier(out).write(manifest, marker=True)
    print((out / "manifest.json").read_text())
    attest("verify", str(out / "manifest.json"), expect=0)
    attest("verify", str(out / "manifest.json"), "--artifacts-dir", str(out), expect=0)
    attest("digest", str(out / "manifest.json"), expect=0)
    flip_byte(final)
    attest("verify", str(out / "manifest.json"), "--artifacts-dir", str(out), expect=1)


def delta() -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    step("2. Delta: write a partitioned table, attest its version, verify, tamper, go stale")
    table = OUT / "delta" / "orders"
    orders = pa.table({
        "order_id": [1, 2, 3, 4, 5],
        "region": ["EU", "US", "EU", None, "APAC / Oceania"],
        "amount": [10.0, 20.5, 7.25, 3.0, 99.9],
    })
    write_deltalake(str(table), orders, partition_by=["region"])
    sql = "SELECT order_id, region, amount FROM raw_orders WHERE amount > 0"
    attest("record", str(table), "--model", "orders", "--sql", sql, "--dialect", "spark", "--run-id", "demo-1",
           expect=0)
    attest("verify", str(table), expect=0)
    shown = attest("show", str(table), expect=0)
    attest("verify", "-", stdin=shown, expect=0)
    print("(the reconstituted manifest validates on its own: schema only, its bytes live in the table)")
    victim = sorted(p for p in table.rglob("*.parquet"))[0]
    original = victim.read_bytes()
    flip_byte(victim)
    attest("verify", str(table), "--level", "files", expect=0)
    attest("verify", str(table), "--level", "bytes", expect=1)
    victim.write_bytes(original)
    attest("verify", str(table), expect=0)
    write_deltalake(str(table), orders.slice(0, 1), mode="append", partition_by=["region"])
    print("(an unattested append)")
    attest("verify", str(table), expect=1)
    attest("verify", str(table), "--version", "0", expect=0)
    print("(the attested version still verifies by time travel)")
    attest("record", str(table), "--model", "orders", "--sql", sql, "--dialect", "spark", expect=0)
    attest("verify", str(table), "--json", expect=0)


def iceberg() -> None:
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    step("3. Iceberg: a pyiceberg table on a sqlite catalog, attested and verified through iceberg://")
    warehouse = OUT / "iceberg"
    warehouse.mkdir(parents=True)
    # pyiceberg's own configuration, as a user would set it: no catalog settings of ours.
    env = {
        "PYICEBERG_CATALOG__DEMO__TYPE": "sql",
        "PYICEBERG_CATALOG__DEMO__URI": f"sqlite:///{warehouse}/catalog.db",
        "PYICEBERG_CATALOG__DEMO__WAREHOUSE": warehouse.as_uri(),
    }
    catalog = load_catalog("demo", **{"type": "sql", "uri": env["PYICEBERG_CATALOG__DEMO__URI"],
                                      "warehouse": env["PYICEBERG_CATALOG__DEMO__WAREHOUSE"]})
    catalog.create_namespace("sales")
    rows = pa.table({"order_id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([5.0, 6.5, 7.0])})
    table = catalog.create_table("sales.orders", schema=rows.schema)
    table.append(rows)
    ref = "iceberg://demo/sales.orders"
    attest("record", ref, "--model", "orders", "--sql", "SELECT * FROM staging.orders", "--dialect", "spark",
           env=env, expect=0)
    attest("verify", ref, env=env, expect=0)
    shown = attest("show", ref, env=env, expect=0)
    attest("verify", "-", stdin=shown, expect=0)
    table = catalog.load_table("sales.orders")
    attested_snapshot = table.current_snapshot().parent_snapshot_id  # the follow-up's parent is the data
    victim = next(p for p in warehouse.rglob("*.parquet") if "/data/" in str(p))
    original = victim.read_bytes()
    flip_byte(victim)
    attest("verify", ref, "--level", "bytes", env=env, expect=1)
    victim.write_bytes(original)
    table.append(rows.slice(0, 1))
    print("(an unattested append)")
    attest("verify", ref, env=env, expect=1)
    attest("verify", ref, "--snapshot-id", str(attested_snapshot), env=env, expect=0)
    print("(the attested snapshot still verifies by id)")


def spark_stack() -> str:
    """Java + the pinned jars (carriers.spark.stack), set up while stages 1-3 run; raises SparkStackError."""
    from carriers.spark.stack import ensure_stack

    return ensure_stack().describe()


def spark_pipeline(stack: Future[str]) -> None:
    import attest.spark as attest_spark  # the module; `attest` here is the CLI runner above
    from carriers.spark.errors import SparkStackError

    step("4. Spark: one line turns the hook on; every table the job writes is attested")
    try:
        print(f"(spark stack: {stack.result()})")
    except SparkStackError as exc:
        sys.exit(f"demo: stage 4 needs the Spark stack: {exc}")
    warehouse = OUT / "spark"
    try:
        spark = attest_spark.local_session(warehouse)
    except SparkStackError as exc:
        sys.exit(f"demo: stage 4 could not start Spark: {exc}")
    except ImportError as exc:  # a verifier-only or partial install
        sys.exit(f"demo: stage 4 needs pyspark ({exc}): pip install 'recipe-attest[spark]'")
    hook = attest_spark.install(spark)  # the one line
    spark.createDataFrame([(1, "eu", 10.0), (2, "us", 20.5), (3, "eu", 7.25)], "id int, region string, amount double") \
        .write.format("delta").saveAsTable("bronze_orders")
    spark.sql("CREATE TABLE silver_orders USING delta AS SELECT id, upper(region) AS region, amount "
              "FROM bronze_orders WHERE amount > 0")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.gold")
    spark.sql("CREATE TABLE iceberg.gold.revenue USING iceberg AS "
              "SELECT region, sum(amount) AS revenue FROM silver_orders GROUP BY region")
    hook.flush()
    print(f"hook: attested={hook.attested} failed={hook.failed} skipped={hook.skipped} ({hook.seconds:.2f}s)")
    if hook.attested != 3 or hook.failed:
        sys.exit(f"demo: the hook attested {hook.attested} table(s), failed {hook.failed}: {hook.errors}")
    spark.stop()
    # From here on: a fresh process with no Spark, as an auditor would run it.
    env = {
        "PYICEBERG_CATALOG__ICEBERG__TYPE": "sql",
        "PYICEBERG_CATALOG__ICEBERG__URI": f"sqlite:///{warehouse}/iceberg_catalog.db",
        "PYICEBERG_CATALOG__ICEBERG__WAREHOUSE": (warehouse / "iceberg").as_uri(),
        "PYICEBERG_CATALOG__ICEBERG__SCHEMA_VERSION": "v1",
    }
    tables = warehouse / "spark-warehouse"
    for ref in (str(tables / "bronze_orders"), str(tables / "silver_orders"), "iceberg://iceberg/gold.revenue"):
        attest("verify", ref, "--level", "bytes", env=env, expect=0)
    attest("lineage", "iceberg://iceberg/gold.revenue", env=env, expect=0)
    picture = subprocess.run([*ATTEST, "lineage", "iceberg://iceberg/gold.revenue", "--format", "svg"],
                             capture_output=True, text=True, env={**os.environ, **env})
    if picture.returncode != 0 or not picture.stdout.startswith("<svg"):
        sys.exit(f"demo: the lineage picture was not drawn: {picture.stderr}")
    (OUT / "lineage.svg").write_text(picture.stdout)
    print(f"$ attest lineage iceberg://iceberg/gold.revenue --format svg > {OUT / 'lineage.svg'}")
    attest("audit", str(tables), "iceberg://iceberg", "--to", str(warehouse / "audits"), env=env, expect=0)
    victim = next(p for p in (warehouse / "iceberg").rglob("*.parquet") if "/data/" in str(p))
    flip_byte(victim)
    attest("verify", "iceberg://iceberg/gold.revenue", env=env, expect=1)


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    # Stages 1-3 need no Spark: they run while a worker finds Java and fetches the jars (once; cached after).
    with ThreadPoolExecutor(max_workers=1) as pool:
        stack = pool.submit(spark_stack)
        for stage in (standalone, delta, iceberg):
            stage()
        spark_pipeline(stack)
    print(f"\ndemo: every step behaved as documented (outputs under {OUT})")


if __name__ == "__main__":
    main()
