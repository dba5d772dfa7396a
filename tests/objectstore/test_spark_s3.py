"""Spark on S3 (the SeaweedFS server of tests/servers): a Spark job writes Delta on ``s3a://`` and Iceberg through
S3FileIO with the post-write hook installed; the CLI verifies what the hook recorded at the bytes level, a flipped
byte on the store fails with ``artifact_hash_mismatch``, another Spark append makes it ``stale``.

The session's S3 settings come from carriers/spark/session.py (`s3a_hadoop_conf` / `iceberg_rest_catalog_conf`'s
S3 part), credentials from the environment only (docs/spark.md, "S3 and REST catalogs")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from carriers.spark.session import configure_s3, iceberg_s3_catalog_conf, s3a_hadoop_conf
from tests.servers.stores import Bucket

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def verdict(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(done.stdout)  # one JSON object on every path
    return out


def error_codes(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [e["code"] for e in verdict(done)["errors"]]


def data_keys(bucket: Bucket, prefix: str) -> list[str]:
    return sorted(k for k in bucket.keys(prefix) if k.endswith(".parquet") and "/metadata/" not in k)


@pytest.fixture
def s3_spark(spark: SparkSession, s3: Bucket, monkeypatch: pytest.MonkeyPatch) -> Iterator[SparkSession]:
    """The shared session, pointed at this test's bucket through the environment (as a job's would be)."""
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)  # the hook's carriers (delta-rs, pyiceberg) read the same variables
    conf = s3a_hadoop_conf()
    assert conf["fs.s3a.endpoint"] == s3.env["AWS_ENDPOINT_URL"] and conf["fs.s3a.path.style.access"] == "true"
    configure_s3(spark, conf)
    yield spark


def test_s3a_conf_takes_credentials_from_the_environment_only() -> None:
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "k",
           "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}
    conf = s3a_hadoop_conf(environ=env)
    assert conf["fs.s3a.secret.key"] == "s" and conf["fs.s3a.session.token"] == "t"
    assert conf["fs.s3a.connection.ssl.enabled"] == "false" and conf["fs.s3a.endpoint.region"] == "eu-west-1"
    bare = s3a_hadoop_conf(environ={})  # AWS itself, S3A's default credential chain: nothing invented
    assert bare == {"fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}


def test_spark_delta_on_s3a_verifies_then_tamper_and_stale(s3_spark: SparkSession, s3: Bucket) -> None:
    from carriers.spark.hook import attested_write

    path = f"s3a://{s3.name}/orders"
    rows = s3_spark.range(40).selectExpr("id", "concat('r', cast(id as string)) as v")
    with attested_write(s3_spark, model="orders") as results:
        rows.write.format("delta").save(path)
    assert [r.attested_version for r in results] == ["0"], results
    assert any(k.startswith("orders/_delta_log/") for k in s3.keys("orders/"))  # Spark wrote on the server

    verified = cli("verify", s3.uri("orders"), "--json", env=s3.env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verdict(verified)["level"] == "bytes" and verdict(verified)["files_checked"] >= 1
    assert s3.secret not in verified.stdout + verified.stderr
    as_written = cli("verify", path, "--json", env=s3.env)  # the s3a:// URI the job wrote is read the same way
    assert as_written.returncode == 0 and verdict(as_written)["level"] == "bytes", as_written.stdout
    metadata = [k for k in s3.keys("orders/") if not k.endswith(".parquet")]  # log, sidecar, checksums
    assert any("_recipe_attest/" in k for k in metadata)
    assert not [k for k in metadata if s3.secret.encode() in s3.get(k)]  # the job's credentials stayed in its conf

    s3.flip_byte(data_keys(s3, "orders/")[0])
    tampered = cli("verify", s3.uri("orders"), "--json", env=s3.env)
    assert tampered.returncode == 1 and error_codes(tampered) == ["artifact_hash_mismatch"], tampered.stdout


def test_spark_delta_on_s3a_goes_stale_after_another_append(s3_spark: SparkSession, s3: Bucket) -> None:
    from carriers.spark.hook import attested_write

    path = f"s3a://{s3.name}/events"
    with attested_write(s3_spark, model="events") as results:
        s3_spark.range(10).write.format("delta").save(path)
    assert results and results[0].attested_version == "0"
    s3_spark.range(10, 15).write.format("delta").mode("append").save(path)  # no hook: an unattested commit
    stale = cli("verify", s3.uri("events"), "--json", env=s3.env)
    assert stale.returncode == 1 and error_codes(stale) == ["stale"], stale.stdout


# ---- Iceberg through Spark's S3FileIO (a JDBC catalog on sqlite, the warehouse on the S3 server) -----------------
def iceberg_env(bucket: Bucket, name: str, db: Path, wh: str) -> dict[str, str]:
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    env = {f"{prefix}TYPE": "sql", f"{prefix}URI": f"sqlite:///{db}", f"{prefix}WAREHOUSE": wh,
           f"{prefix}SCHEMA_VERSION": "v1"}
    for key, value in bucket.iceberg_properties.items():
        env[prefix + key.replace(".", "__").replace("-", "_").upper()] = value
    return env


def test_spark_iceberg_on_s3_verifies_then_tamper_and_stale(s3_spark: SparkSession, s3: Bucket,
                                                            tmp_path: Path) -> None:
    from carriers.spark.hook import attested_write

    name = f"s3{s3.name}"  # a catalog per test: Spark caches a catalog by name for the session's life
    db, wh = tmp_path / "catalog.db", s3.uri("wh")
    cat = f"spark.sql.catalog.{name}"
    settings = {cat: "org.apache.iceberg.spark.SparkCatalog", f"{cat}.type": "jdbc", f"{cat}.uri": f"jdbc:sqlite:{db}",
                f"{cat}.jdbc.schema-version": "V1", f"{cat}.warehouse": wh, **iceberg_s3_catalog_conf(name)}
    assert settings[f"{cat}.s3.endpoint"] == s3.env["AWS_ENDPOINT_URL"]  # from the environment, as a job's
    for key, value in settings.items():
        s3_spark.conf.set(key, value)  # catalogs load on first use: a running session can add one
    s3_spark.sql(f"CREATE NAMESPACE {name}.ns")
    s3_spark.sql(f"CREATE TABLE {name}.ns.t (id BIGINT, v STRING) USING iceberg")
    env = iceberg_env(s3, name, db, wh)
    pyiceberg_props = {k.removeprefix(f"PYICEBERG_CATALOG__{name.upper()}__").lower().replace("__", ".")
                       .replace("_", "-") if "__S3__" in k else
                       k.removeprefix(f"PYICEBERG_CATALOG__{name.upper()}__").lower(): v for k, v in env.items()}
    with attested_write(s3_spark, model="orders", iceberg_catalogs={name: pyiceberg_props}) as results:
        s3_spark.range(30).selectExpr("id", "cast(id as string) as v").writeTo(f"{name}.ns.t").append()
    assert len(results) == 1 and results[0].attested_version is not None, results
    assert data_keys(s3, "wh/")  # the data files are on the S3 server

    ref = f"iceberg://{name}/ns.t"
    verified = cli("verify", ref, "--json", env=env)
    assert verified.returncode == 0 and verdict(verified)["level"] == "bytes", verified.stdout + verified.stderr

    s3.flip_byte(data_keys(s3, "wh/")[0])
    tampered = cli("verify", ref, "--json", env=env)
    assert tampered.returncode == 1 and error_codes(tampered) == ["artifact_hash_mismatch"], tampered.stdout
    s3.flip_byte(data_keys(s3, "wh/")[0])  # flipped back: the bytes are the attested ones again
    s3_spark.range(30, 35).selectExpr("id", "cast(id as string) as v").writeTo(f"{name}.ns.t").append()
    stale = cli("verify", ref, "--json", env=env)
    assert stale.returncode == 1 and error_codes(stale) == ["stale"], stale.stdout


# ---- the same tables verified with their bytes hashed on Spark executors (docs/distributed.md) ---------------------
def _codes(report: Any) -> list[str]:
    return sorted(p.code.value for p in report.errors)


def test_executors_verify_delta_on_s3_as_the_driver_does(s3_spark: SparkSession, s3: Bucket) -> None:
    """The executors read the objects through the table's own storage (credentials travel in the task's recipe):
    the verdict and codes are the driver's, intact and with a flipped byte."""
    from attest.spark import verify as verify_on_executors
    from attest.verify.table import verify_table
    from carriers.refs import open_table
    from carriers.spark.hook import attested_write

    path = f"s3a://{s3.name}/spread"
    with attested_write(s3_spark, model="spread") as results:
        s3_spark.range(200).repartition(4).selectExpr("id", "repeat('x', 100) as v").write.format("delta").save(path)
    assert [r.attested_version for r in results] == ["0"], results
    for tampered in (False, True):
        if tampered:
            s3.flip_byte(data_keys(s3, "spread/")[0])
        local = verify_table(open_table(s3.uri("spread")), level="bytes")
        spread = verify_on_executors(s3_spark, s3.uri("spread"), level="bytes")
        assert spread.passed is local.passed is (not tampered), (spread.human(), local.human())
        assert _codes(spread) == _codes(local) and spread.files_checked == local.files_checked >= 4
        assert any("Spark executors" in n for n in spread.notes), spread.notes
        assert not tampered or _codes(spread) == ["artifact_hash_mismatch"]


def test_executors_verify_iceberg_on_s3_as_the_driver_does(s3_spark: SparkSession, s3: Bucket,
                                                           tmp_path: Path) -> None:
    """An Iceberg table on the S3 server: the executors open the data files through the table's FileIO (its S3
    properties travel in the task's recipe)."""
    from pyiceberg.catalog import load_catalog

    from attest.spark import verify as verify_on_executors
    from attest.verify.table import verify_table
    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.spark.hook import attested_write

    name = f"x{s3.name}"
    db, wh = tmp_path / "catalog.db", s3.uri("ewh")
    cat = f"spark.sql.catalog.{name}"
    settings = {cat: "org.apache.iceberg.spark.SparkCatalog", f"{cat}.type": "jdbc", f"{cat}.uri": f"jdbc:sqlite:{db}",
                f"{cat}.jdbc.schema-version": "V1", f"{cat}.warehouse": wh, **iceberg_s3_catalog_conf(name)}
    for key, value in settings.items():
        s3_spark.conf.set(key, value)
    s3_spark.sql(f"CREATE NAMESPACE {name}.ns")
    s3_spark.sql(f"CREATE TABLE {name}.ns.t (id BIGINT, v STRING) USING iceberg")
    env = iceberg_env(s3, name, db, wh)
    props = {k.removeprefix(f"PYICEBERG_CATALOG__{name.upper()}__").lower().replace("__", ".").replace("_", "-")
             if "__S3__" in k else k.removeprefix(f"PYICEBERG_CATALOG__{name.upper()}__").lower(): v
             for k, v in env.items()}
    with attested_write(s3_spark, model="orders", iceberg_catalogs={name: props}) as results:
        s3_spark.range(100).repartition(3).selectExpr("id", "cast(id as string) as v").writeTo(f"{name}.ns.t").append()
    assert len(results) == 1 and results[0].attested_version is not None, results


    def carrier() -> IcebergCarrier:  # pyiceberg reads its environment once per process: properties given here
        return IcebergCarrier(load_catalog(name, **props).load_table("ns.t"), catalog_name=name)

    for tampered in (False, True):
        if tampered:
            s3.flip_byte(data_keys(s3, "ewh/")[0])
        local = verify_table(carrier(), level="bytes")
        spread = verify_on_executors(s3_spark, carrier(), level="bytes")
        assert spread.passed is local.passed is (not tampered), (spread.human(), local.human())
        assert _codes(spread) == _codes(local) and spread.files_checked == local.files_checked >= 3
        assert any("Spark executors" in n for n in spread.notes), spread.notes
