"""``attest audit --spark-catalog``: a Spark session's catalogs audited from the command line (round 30).

``attest.spark.audit`` (round 29) needed a job or a notebook holding the session. An auditor at a shell had no way to
audit an Iceberg catalog configured in Spark alone: ``attest audit iceberg://prod`` needs pyiceberg's configuration of
``prod``, which such a lakehouse does not have. The command now starts a session of its own, with Spark's own
configuration (``SPARK_CONF_DIR/spark-defaults.conf``) and ``--spark-conf``, and audits what its catalogs name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.sax.saxutils import escape

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from carriers.iceberg.carrier import attest_after_write
from carriers.spark.session import spark_defaults

PROGRAM = "2" * 64
ROOT = Path(__file__).resolve().parents[2]


def _rows(values: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _catalog(root: Path) -> SqlCatalog:
    (root / "iceberg").mkdir(parents=True, exist_ok=True)
    return SqlCatalog("prod", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=(root / "iceberg").as_uri(),
                      schema_version="v1")


def _spark_conf(root: Path) -> dict[str, str]:
    """The catalog as a Spark job configures it (Iceberg's JDBC catalog on the same sqlite file)."""
    cat = "spark.sql.catalog.prod"
    return {cat: "org.apache.iceberg.spark.SparkCatalog", f"{cat}.type": "jdbc",
            f"{cat}.uri": f"jdbc:sqlite:{root / 'catalog.db'}", f"{cat}.warehouse": (root / "iceberg").as_uri(),
            f"{cat}.jdbc.schema-version": "V1"}


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, dict[str, object], str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_")}  # no pyiceberg config of prod
    done = subprocess.run([sys.executable, "-m", "attest.cli", "audit", *args, "--json"], capture_output=True,
                          text=True, timeout=900, env={**clean, **(env or {})}, cwd=cwd)
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else {}), done.stderr


@pytest.mark.spark
def test_a_catalog_configured_in_spark_alone_is_audited(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    catalog.create_namespace("ns")
    good = catalog.create_table("ns.good", schema=_rows([]).schema)
    good.append(_rows([1, 2]))
    attest_after_write(catalog.load_table("ns.good"), model="m", program_hash=PROGRAM)
    bad = catalog.create_table("ns.bad", schema=_rows([]).schema)
    bad.append(_rows([3]))
    attest_after_write(catalog.load_table("ns.bad"), model="m", program_hash=PROGRAM)
    catalog.load_table("ns.bad").append(_rows([666]))  # no attestation binds this row

    # Without pyiceberg's configuration of prod, its own audit cannot open it.
    code, out, _ = _cli("iceberg://prod")
    assert code == 2, out
    # Half the settings in Spark's own configuration file, half on the command line: both are read.
    conf = _spark_conf(tmp_path)
    folder = tmp_path / "spark-conf"
    folder.mkdir()
    keys = sorted(conf)
    (folder / "spark-defaults.conf").write_text("# a job's settings\n" + "".join(
        f"{k}\t{conf[k]}\n" for k in keys[:2]))
    flags = [a for k in keys[2:] for a in ("--spark-conf", f"{k}={conf[k]}")]
    code, out, err = _cli("--spark-catalog", "prod", "--master", "local[1]", *flags,
                          env={"SPARK_CONF_DIR": str(folder)})
    rows = {r["table"]: (r["outcome"], r["code"]) for r in out.get("tables", [])}  # type: ignore[union-attr]
    assert rows == {"prod.ns.good": ("VERIFIED", None), "prod.ns.bad": ("STALE", "stale")}, (rows, err[-2000:])
    assert code == 1
    assert all(r["level"] == "bytes" or r["outcome"] != "VERIFIED" for r in out["tables"])  # type: ignore[union-attr]


@pytest.mark.spark
def test_a_metastores_external_tables_are_audited(tmp_path: Path) -> None:
    """Round 29's finding, from the command line: external Delta tables a Hive metastore registers outside any
    audited folder. The metastore is named in Spark's own configuration file, as a lakehouse's jobs name it."""
    metastore = f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    done = subprocess.run([sys.executable, "-m", "tests.spark.metastore_job", str(tmp_path / "w"), metastore],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path,  # Derby's log goes there
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    # The metastore named in spark-defaults.conf, then as most clusters name it: hive-site.xml in SPARK_CONF_DIR
    # (Spark's launcher puts that folder on the JVM's classpath, where Hive's configuration is read from).
    hive_site = ("<configuration><property><name>javax.jdo.option.ConnectionURL</name>"
                 f"<value>{escape(metastore)}</value></property></configuration>\n")
    for name, files in (("defaults", {"spark-defaults.conf": "spark.sql.catalogImplementation hive\n"
                                      f"spark.hadoop.javax.jdo.option.ConnectionURL {metastore}\n"}),
                        ("hive-site", {"spark-defaults.conf": "spark.sql.catalogImplementation hive\n",
                                       "hive-site.xml": hive_site})):
        folder = tmp_path / f"spark-conf-{name}"
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        elsewhere = tmp_path / f"cwd-{name}"  # not the job's folder: Derby's default database is ./metastore_db
        elsewhere.mkdir()
        code, out, err = _cli("--spark-catalog", "spark_catalog.sales", "--master", "local[1]",
                              env={"SPARK_CONF_DIR": str(folder)}, cwd=elsewhere)
        rows = {r["table"]: (r["outcome"], r["code"]) for r in out.get("tables", [])}  # type: ignore[union-attr]
        assert rows == {"spark_catalog.sales.ok": ("VERIFIED", None),
                        "spark_catalog.sales.ext": ("STALE", "stale")}, (name, rows, err[-2000:])
        assert code == 1, name


def test_the_spark_options_are_checked_before_any_table(tmp_path: Path) -> None:
    for args, words in ((["--spark-conf", "a=b", str(tmp_path)], "--spark-conf applies only with --spark-catalog"),
                        (["--spark-catalog", "x", "--spark"], "cannot be given together"),
                        (["--spark-catalog", "x", "--spark-conf", "novalue"], "expected KEY=VALUE"),
                        (["--spark-catalog", "x", "--master", "locl[2]"], "is not a Spark master")):
        code, out, err = _cli(*args)
        assert code == 2, (args, out, err)
        [error] = out["errors"]  # type: ignore[index]
        assert error["code"] == "invalid_argument" and words in error["message"], (args, error)


def test_spark_defaults_are_read_as_spark_submit_reads_them(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text(
        "# comment\n\nspark.a   one two\nspark.b\tx=y\n  spark.c z  \nspark.a again\n")
    assert spark_defaults({"SPARK_CONF_DIR": str(tmp_path)}) == {"spark.a": "again", "spark.b": "x=y", "spark.c": "z"}
    assert spark_defaults({"SPARK_HOME": str(tmp_path.parent / "nowhere")}) == {}
    assert spark_defaults({}) == {}


def test_without_the_spark_extra_is_one_coded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from tests.conftest import cli_in_process

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    code, out, err = cli_in_process("audit", "--spark-catalog", "prod", "--json")
    assert code == 2 and json.loads(out)["errors"][0]["code"] == "extra_missing", (out, err)
