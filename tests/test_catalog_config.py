"""``attest catalog-config W``: pyiceberg's configuration of the catalog ``attest.spark.local_session(W)`` sets up,
read back by pyiceberg itself and by ``attest verify --catalog iceberg`` (issue 34.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog

from carriers.spark.session import pyiceberg_catalog_properties


def _attest(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd)


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_")}
    env["HOME"] = str(home)  # no user ~/.pyiceberg.yaml
    return env


def _warehouse_with_table(tmp_path: Path) -> Path:
    """A warehouse laid out as local_session makes it, with one attested Iceberg table written through pyiceberg."""
    w = tmp_path / "w"
    (w / "iceberg").mkdir(parents=True)
    cat = SqlCatalog("iceberg", **pyiceberg_catalog_properties(w))
    cat.create_namespace("sales")
    cat.create_table("sales.orders", schema=pa.schema([("id", pa.int64())])).append(pa.table({"id": [1, 2]}))
    return w


def test_yaml_is_what_pyiceberg_reads(tmp_path: Path) -> None:
    w = _warehouse_with_table(tmp_path)
    env = _clean_env(tmp_path)
    done = _attest("catalog-config", str(w), "--write", env=env)
    assert done.returncode == 0, done.stderr
    written = w / ".pyiceberg.yaml"
    assert done.stdout.strip() == written.read_text().strip()
    assert f"PYICEBERG_HOME={w.resolve()}" in done.stderr
    # pyiceberg itself, configured by the file alone, opens the catalog and its table
    script = ("from pyiceberg.catalog import load_catalog; "
              "print(load_catalog('iceberg').load_table('sales.orders').scan().to_arrow().num_rows)")
    read = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**env, "PYICEBERG_HOME": str(w)})
    assert read.stdout.strip() == "2", read.stderr
    env["PYICEBERG_HOME"] = str(w)
    done = _attest("record", "--catalog", "iceberg", "sales.orders", "--model", "o", "--program-hash", "1" * 64,
                   env=env)
    assert done.returncode == 0, done.stderr
    assert _attest("verify", "--catalog", "iceberg", "sales.orders", env=env).returncode == 0
    # written once; the same content again is fine, another is never overwritten
    assert _attest("catalog-config", str(w), "--write", env=env).returncode == 0
    done = _attest("catalog-config", str(w), "--write", "--name", "other", "--json", env=env)
    assert done.returncode == 2 and json.loads(done.stdout)["errors"][0]["code"] == "invalid_argument"
    assert "iceberg:" in written.read_text()


def test_env_form_for_a_shell(tmp_path: Path) -> None:
    w = _warehouse_with_table(tmp_path)
    env = _clean_env(tmp_path)
    done = _attest("catalog-config", str(w), "--format", "env", env=env)
    assert done.returncode == 0, done.stderr
    shell = subprocess.run(["bash", "-c", f'eval "$({sys.executable} -m attest.cli catalog-config {w} --format env)" '
                            f"&& {sys.executable} -m attest.cli record --catalog iceberg sales.orders --model o "
                            "--program-hash " + "1" * 64], capture_output=True, text=True, env=env, timeout=300)
    assert shell.returncode == 0, shell.stderr
    assert "RECORDED — iceberg://iceberg/sales.orders" in shell.stdout
    done = _attest("catalog-config", str(w), "--format", "env", "--name", "my_cat", "--json", env=env)
    assert done.returncode == 2 and json.loads(done.stdout)["errors"][0]["code"] == "invalid_argument"
    assert _attest("catalog-config", str(tmp_path / "nope"), env=env).returncode == 2


def test_properties_are_local_session_catalog(tmp_path: Path) -> None:
    """The printed properties are the ones the Spark session's JDBC catalog shares (same sqlite file, warehouse)."""
    from carriers.spark.session import spark_conf

    w = _warehouse_with_table(tmp_path)
    done = _attest("catalog-config", str(w), "--json", env=_clean_env(tmp_path))
    props = json.loads(done.stdout)["properties"]
    conf = spark_conf(w, jars=[])
    assert props["uri"] == "sqlite:///" + conf["spark.sql.catalog.iceberg.uri"][len("jdbc:sqlite:"):]
    assert props["warehouse"] == conf["spark.sql.catalog.iceberg.warehouse"]
    assert load_catalog("iceberg", **props).load_table("sales.orders") is not None
