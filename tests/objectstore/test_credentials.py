"""Credentials come from the environment or the engines' own configuration and never appear in output; a store's
failures are coded outcomes, one JSON object under --json, never a raw OSError or a Rust panic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.servers import seaweed as sw
from tests.servers.stores import Bucket


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def args_for(options: dict[str, str]) -> list[str]:
    return [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]


def attested(s3: Bucket) -> str:
    uri = s3.uri("t")
    write_deltalake(uri, special_table(), storage_options=s3.storage_options)
    attest_after_write(uri, model="m", program_hash=PROGRAM, storage_options=s3.storage_options)
    return uri


def test_secret_never_in_manifest_sidecar_properties_or_output(s3: Bucket) -> None:
    uri = attested(s3)
    everything = b"".join(s3.get(k) for k in s3.keys("t/") if not k.endswith(".parquet"))
    assert s3.secret.encode() not in everything  # log (table properties), sidecar, nothing else carries it
    for command in (["verify", uri, "--json"], ["show", uri], ["audit", uri, "--json"], ["lineage", uri, "--json"],
                    ["record", uri, "--model", "m", "--program-hash", PROGRAM, "--json"]):
        done = cli(*command, *args_for(s3.storage_options))
        assert done.returncode in (0, 1), done.stdout + done.stderr
        assert s3.secret not in done.stdout + done.stderr, command


def test_credentials_from_the_environment(s3: Bucket) -> None:
    uri = attested(s3)
    env = {k: v for k, v in s3.storage_options.items()}
    done = cli("verify", uri, "--json", env=env)  # no --storage-option at all: delta-rs reads AWS_* itself
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["level"] == "bytes"


@pytest.mark.parametrize("json_flag", [True, False])
def test_wrong_secret_is_coded_and_not_echoed(s3: Bucket, json_flag: bool) -> None:
    uri = attested(s3)
    wrong = "wrong-secret-value-7f3a9c"
    options = {**s3.storage_options, "AWS_SECRET_ACCESS_KEY": wrong}
    done = cli("verify", uri, *(["--json"] if json_flag else []), *args_for(options))
    assert done.returncode == 2, done.stdout + done.stderr
    assert wrong not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr
    if json_flag:
        error = json.loads(done.stdout)["errors"][0]  # one JSON object
        assert error["code"] == "table_unreadable" and "access denied" in error["message"], error
    else:
        assert done.stderr.startswith("attest: table_unreadable:") and "access denied" in done.stderr


def test_mistyped_storage_option_value_not_echoed(s3: Bucket) -> None:
    uri = attested(s3)
    options = {**s3.storage_options, "AWS_ALLOW_HTTP": "maybe-a-secret-xyz"}
    done = cli("verify", uri, "--json", *args_for(options))
    assert done.returncode == 2 and "maybe-a-secret-xyz" not in done.stdout + done.stderr, done.stdout
    assert json.loads(done.stdout)["errors"][0]["code"] in ("table_unreadable", "invalid_argument")


@pytest.mark.parametrize("endpoint", ["::::not-a-url", "http://", "http://127.0.0.1:99999", "ftp://127.0.0.1"])
def test_malformed_endpoint_is_refused_before_delta_rs_panics(s3: Bucket, endpoint: str) -> None:
    options = {**s3.storage_options, "AWS_ENDPOINT_URL": endpoint}
    done = cli("verify", s3.uri("t"), "--json", *args_for(options), env={"RUST_BACKTRACE": "1"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "panicked" not in done.stderr and "stack backtrace" not in done.stderr, done.stderr
    error = json.loads(done.stdout)["errors"][0]
    assert error["code"] == "invalid_argument" and "AWS_ENDPOINT_URL" in error["message"], error


def test_iceberg_wrong_secret_is_coded(s3: Bucket, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    db = tmp_path / "c.db"
    catalog = SqlCatalog("wrongcat", uri=f"sqlite:///{db}", warehouse=s3.uri("wh"), **s3.iceberg_properties)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    wrong = "wrong-iceberg-secret-4b2e"
    env = {"PYICEBERG_CATALOG__WRONGCAT__TYPE": "sql", "PYICEBERG_CATALOG__WRONGCAT__URI": f"sqlite:///{db}",
           "PYICEBERG_CATALOG__WRONGCAT__S3__ENDPOINT": s3.iceberg_properties["s3.endpoint"],
           "PYICEBERG_CATALOG__WRONGCAT__S3__ACCESS_KEY_ID": sw.KEY_ID,
           "PYICEBERG_CATALOG__WRONGCAT__S3__SECRET_ACCESS_KEY": wrong,
           "PYICEBERG_CATALOG__WRONGCAT__S3__REGION": sw.REGION}
    for command in (["verify", "iceberg://wrongcat/ns.t", "--json"], ["audit", "iceberg://wrongcat", "--json"]):
        done = cli(*command, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        out = json.loads(done.stdout)  # one JSON object, coded
        codes = [e["code"] for e in out["errors"]]
        assert codes == ["table_unreadable"] and "access denied" in out["errors"][0]["message"], out
        assert wrong not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_the_executors_recipe_carries_the_drivers_store_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Spark executor reads a Delta table's objects as the driver's delta-rs does: the store's variables in the
    driver's environment travel in the task's recipe (explicit options win), and nothing else does."""
    from carriers.spark.distributed import storage_recipe
    from carriers.storage.delta import DeltaStorage
    from carriers.storage.options import environment_options

    for key in [k for k in os.environ if k.startswith(("AWS_", "AZURE_", "GOOGLE_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    monkeypatch.setenv("HOME_SECRET", "not a store's")
    recipe = storage_recipe(DeltaStorage("s3://bucket/t", {"AWS_ACCESS_KEY_ID": "explicit"}))
    assert dict(recipe.options) == {"AWS_ACCESS_KEY_ID": "explicit", "AWS_SECRET_ACCESS_KEY": "secret",
                                    "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    assert "secret" not in repr(recipe)  # never printed
    assert environment_options("abfss://c@acct.dfs.core.windows.net/t") == {"AZURE_STORAGE_ACCOUNT_NAME": "acct"}
    assert environment_options("gs://b/t") == {} and environment_options("/local/table") == {}
