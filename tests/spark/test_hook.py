"""The Spark post-write hook (attest.spark): every Delta / Iceberg commit attested once, verifiable without Spark."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def _attest(*args: str, warehouse: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter (no Spark in it); Iceberg refs resolve through PYICEBERG_* variables."""
    import os

    env = dict(os.environ)
    if warehouse is not None:
        env.update({"PYICEBERG_CATALOG__ICEBERG__TYPE": "sql",
                    "PYICEBERG_CATALOG__ICEBERG__URI": f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                    "PYICEBERG_CATALOG__ICEBERG__WAREHOUSE": (warehouse / "iceberg").as_uri(),
                    "PYICEBERG_CATALOG__ICEBERG__SCHEMA_VERSION": "v1"})
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def _verify(ref: str, warehouse: Path) -> None:
    proc = _attest("verify", ref, "--level", "bytes", warehouse=warehouse)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _show(ref: str, warehouse: Path, *extra: str) -> Any:
    proc = _attest("show", ref, *extra, warehouse=warehouse)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _delta_path(spark: SparkSession, name: str) -> str:
    row = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]
    location = str(row["location"])
    return location[len("file:"):] if location.startswith("file:") else location


def _uid() -> str:
    return uuid.uuid4().hex[:8]


def test_import_leaves_engines_out() -> None:
    code = ("import sys, attest, attest.spark, attest.cli, attest.verify, carriers.spark.hook, carriers.spark.plan, "
            "carriers.spark.stamp; "
            "bad = [m for m in ('pyspark', 'py4j', 'deltalake', 'pyiceberg') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bronze_silver_gold_pipeline(spark: SparkSession, spark_warehouse: Path, hook: Callable[..., Hook]) -> None:
    u = _uid()
    h = hook(policy="required")
    hashes: dict[str, dict[str, Any]] = {}

    def run(rows: list[tuple[int, str]], factor: int) -> None:
        spark.createDataFrame(rows, "id int, s string").write.format("delta").mode("overwrite") \
            .saveAsTable(f"bronze_{u}")
        h.flush()
        spark.sql(f"CREATE OR REPLACE TABLE silver_{u} USING delta AS "
                  f"SELECT id, upper(s) AS s, id * {factor} AS w FROM bronze_{u}")
        h.flush()
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.p{u}")
        spark.sql(f"CREATE OR REPLACE TABLE iceberg.p{u}.gold USING iceberg AS "
                  f"SELECT s, sum(w) AS total FROM silver_{u} GROUP BY s")
        h.flush()

    run([(1, "a"), (2, "b")], 2)
    assert h.failed == 0 and h.attested == 3, h.errors
    for name in (f"bronze_{u}", f"silver_{u}"):
        _verify(_delta_path(spark, name), spark_warehouse)
    _verify(f"iceberg://iceberg/p{u}.gold", spark_warehouse)
    silver = _show(_delta_path(spark, f"silver_{u}"), spark_warehouse)
    assert silver["inputs_proof_class"] == "strong"
    gold = _show(f"iceberg://iceberg/p{u}.gold", spark_warehouse)
    assert gold["inputs_proof_class"] == "strong"
    inputs = _show(_delta_path(spark, f"silver_{u}"), spark_warehouse, "--inputs")
    assert [i["proof_class"] for i in inputs] == ["strong"] and inputs[0]["table"].startswith("delta:")
    hashes["first"] = silver

    run([(1, "a"), (2, "b"), (3, "c")], 2)  # same job, new bronze data
    second = _show(_delta_path(spark, f"silver_{u}"), spark_warehouse)
    assert second["program_hash"] == silver["program_hash"]
    assert second["inputs_hash"] != silver["inputs_hash"]
    assert _show(f"iceberg://iceberg/p{u}.gold", spark_warehouse)["program_hash"] == gold["program_hash"]

    run([(1, "a"), (2, "b"), (3, "c")], 3)  # a logic change
    third = _show(_delta_path(spark, f"silver_{u}"), spark_warehouse)
    assert third["program_hash"] != silver["program_hash"]
    _verify(_delta_path(spark, f"silver_{u}"), spark_warehouse)
    assert h.failed == 0 and h.attested == 9


DELTA_WRITES = ["saveAsTable", "insertInto", "save", "ctas", "rtas", "insert", "insert_overwrite", "merge",
                "update", "delete"]


def _write(spark: SparkSession, fmt: str, op: str, name: str, path: str) -> str:
    """Perform ``op`` on a table prepared with rows 1..3; returns the table reference for attest."""
    df = spark.createDataFrame([(7, "x")], "id int, s string")
    using = "delta" if fmt == "delta" else "iceberg"
    if op == "saveAsTable":
        df.write.format(using).mode("append").saveAsTable(name)
    elif op == "insertInto":
        df.write.insertInto(name)
    elif op == "save":
        df.write.format("delta").mode("append").save(path)
    elif op == "ctas":
        spark.sql(f"CREATE TABLE {name}_c USING {using} AS SELECT * FROM {name} WHERE id > 1")
    elif op == "rtas":
        spark.sql(f"CREATE OR REPLACE TABLE {name} USING {using} AS SELECT id + 10 AS id, s FROM {name}")
    elif op == "insert":
        spark.sql(f"INSERT INTO {name} SELECT id + 100, s FROM {name}")
    elif op == "insert_overwrite":
        spark.sql(f"INSERT OVERWRITE {name} SELECT id, s FROM {name} WHERE id < 3")
    elif op == "merge":
        df.createOrReplaceTempView("src_merge")
        spark.sql(f"MERGE INTO {name} t USING src_merge s ON t.id = s.id OR t.id = 1 "
                  "WHEN MATCHED THEN UPDATE SET t.s = s.s WHEN NOT MATCHED THEN INSERT *")
    elif op == "update":
        spark.sql(f"UPDATE {name} SET s = 'u' WHERE id = 2")
    elif op == "delete":
        spark.sql(f"DELETE FROM {name} WHERE id = 3")
    return f"{name}_c" if op == "ctas" else name


WRITES = [(fmt, op) for fmt in ("delta", "iceberg") for op in DELTA_WRITES
          if not (fmt == "iceberg" and op == "save")]  # path-based save() is a Delta-only API


@pytest.mark.parametrize(("fmt", "op"), WRITES)
def test_every_write_command_is_attested_once(spark: SparkSession, spark_warehouse: Path,
                                              hook: Callable[..., Hook], fmt: str, op: str) -> None:
    u = _uid()
    path = str(spark_warehouse / f"paths/t_{u}")
    if fmt == "delta":
        name = f"w_{u}"
        if op == "save":
            spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, s string").write.format("delta").save(path)
        else:
            spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING delta")
            spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    else:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.w{u}")
        name = f"iceberg.w{u}.t"
        spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg")
        spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark._jsparkSession.sparkContext().listenerBus().waitUntilEmpty()
    h = hook(policy="required")
    written = _write(spark, fmt, op, name, path)
    h.flush()
    assert (h.attested, h.failed, h.skipped) == (1, 0, 0), h.errors
    if fmt == "delta":
        ref = path if op == "save" else _delta_path(spark, written)
    else:
        ref = f"iceberg://iceberg/{written.split('.', 1)[1]}"
    _verify(ref, spark_warehouse)
    # The commit was found by the write id the hook stamped it with (carriers/spark/stamp.py), on every path.
    assert _write_id(spark, fmt, ref if fmt == "delta" else written, h.results[0].attested_version)
    # A DELETE that matches nothing: Delta commits nothing (nothing to attest); Iceberg commits an empty
    # "delete" snapshot, which is a commit like any other and is attested once.
    if op == "delete":
        spark.sql(f"DELETE FROM {name} WHERE id = 999")
        h.flush()
        assert h.attested == (1 if fmt == "delta" else 2)
        assert h.failed == 0 and h.not_found == 0  # the table did not move: not a missed attestation


def _write_id(spark: SparkSession, fmt: str, table: str, version: str | None) -> str:
    """The write id the attested commit carries: Delta commitInfo.userMetadata, Iceberg a summary key (the newest
    snapshot that is not our own attestation snapshot)."""
    from carriers.spark.stamp import ICEBERG_STAMP_KEY, STAMP_PREFIX

    if fmt == "delta":
        assert version is not None
        lines = (Path(table) / "_delta_log" / f"{int(version):020d}.json").read_bytes().split(b"\n")
        info = next(json.loads(x)["commitInfo"] for x in lines if b'"commitInfo"' in x)
        value = str(info.get("userMetadata", ""))
    else:
        rows = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC").collect()
        ours = [r["summary"] for r in rows if not any(k.startswith("recipe_manifest.") for k in r["summary"])]
        value = str(ours[0].get(ICEBERG_STAMP_KEY, ""))
    return value if value.startswith(STAMP_PREFIX) else ""


def test_failure_is_contained_under_optional(spark: SparkSession, hook: Callable[..., Hook],
                                             caplog: pytest.LogCaptureFixture,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.errors import PolicyError
    from carriers.delta.carrier import DeltaCarrier

    def boom(self: Any, **kw: Any) -> Any:
        raise OSError("disk on fire")

    monkeypatch.setattr(DeltaCarrier, "record", boom)
    u = _uid()
    h = hook(policy="optional")
    with caplog.at_level(logging.WARNING, logger="attest.spark"):
        spark.createDataFrame([(1,)], "id int").write.format("delta").saveAsTable(f"f_{u}")
        h.flush()
    assert h.failed == 1 and h.attested == 0
    assert any("disk on fire" in r.getMessage() for r in caplog.records)
    assert spark.table(f"f_{u}").count() == 1  # the job itself succeeded
    h.uninstall()
    r = hook(policy="required")
    spark.sql(f"INSERT INTO f_{u} VALUES (2)")
    with pytest.raises(PolicyError):
        r.flush()


def test_disabled_registers_nothing(spark: SparkSession, hook: Callable[..., Hook]) -> None:
    h = hook(policy="disabled")
    spark.createDataFrame([(1,)], "id int").write.format("delta").saveAsTable(f"d_{_uid()}")
    h.flush()
    assert (h.attested, h.failed, h.skipped) == (0, 0, 0)


def test_hostile_identifiers(spark: SparkSession, spark_warehouse: Path, hook: Callable[..., Hook]) -> None:
    # Spark's session catalog refuses table names outside [A-Za-z0-9_], so the hostile text goes where it can:
    # the table path (what the hook's ALTER names), the model name (a property value) and an Iceberg identifier.
    u = _uid()
    model = "'); DROP TABLE x; --\\ \u00e9`"
    h = hook(policy="required", model_namer=lambda _t: model)
    path = str(spark_warehouse / f"we'ird`{u}; DROP TABLE y --")
    spark.createDataFrame([(1, "a")], "id int, s string").write.format("delta").save(path)
    quoted_path = "`" + path.replace("`", "``") + "`"
    spark.sql(f"INSERT INTO delta.{quoted_path} VALUES (2, 'b')")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.`h{u}`")
    spark.sql(f"CREATE TABLE iceberg.`h{u}`.`t'q;x` (id INT) USING iceberg")
    spark.sql(f"INSERT INTO iceberg.`h{u}`.`t'q;x` VALUES (1)")
    h.flush()
    assert (h.attested, h.failed) == (3, 0), h.errors
    assert spark.read.format("delta").load(path).count() == 2  # nothing was dropped or altered but properties
    for ref in (path, f"iceberg://iceberg/h{u}.t'q;x"):
        _verify(ref, spark_warehouse)
        assert _show(ref, spark_warehouse)["subject"]["model"] == model


def test_quoting_functions() -> None:
    from carriers.spark.hook import quote_identifier, sql_string

    assert quote_identifier("a`b") == "`a``b`"
    assert sql_string("it's \\ fine") == "'it\\'s \\\\ fine'"


def test_back_to_back_writes_to_one_table_are_never_aborted(spark: SparkSession, spark_warehouse: Path,
                                                           hook: Callable[..., Hook]) -> None:
    # Without the write guard the hook's ALTER for one INSERT races the next INSERT on the same table and Delta
    # aborts the job's write with MetadataChangedException.
    u = _uid()
    h = hook(policy="required")
    spark.sql(f"CREATE TABLE b2b_{u} (id INT) USING delta")
    for i in range(5):
        spark.sql(f"INSERT INTO b2b_{u} VALUES ({i})")
    h.flush()
    assert spark.table(f"b2b_{u}").count() == 5
    assert (h.attested, h.failed) == (5, 0), h.errors  # one per INSERT (an empty CREATE TABLE writes no data)
    _verify(_delta_path(spark, f"b2b_{u}"), spark_warehouse)


def test_attested_write_explicit_api(spark: SparkSession, spark_warehouse: Path) -> None:
    from attest.identity.program import program_identity_sql
    from attest.spark import attested_write

    u = _uid()
    sql = f"CREATE TABLE e_{u} USING delta AS SELECT 1 AS id"
    with attested_write(spark, model="explicit", sql=sql) as results:
        spark.sql(sql)
    assert len(results) == 1 and results[0].manifest is not None
    assert results[0].manifest.program_hash == program_identity_sql(sql, "spark")
    _verify(_delta_path(spark, f"e_{u}"), spark_warehouse)


def test_detached_mode_does_not_abort_a_concurrent_writer(spark: SparkSession, spark_warehouse: Path,
                                                          hook: Callable[..., Hook]) -> None:
    u = _uid()
    path = str(spark_warehouse / f"detached_{u}")
    spark.createDataFrame([(0,)], "id int").write.format("delta").save(path)
    h = hook(policy="required", delta_mode="detached")
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(4):
                spark.createDataFrame([(100 + i,)], "id int").write.format("delta").mode("append").save(path)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    for i in range(4):
        spark.createDataFrame([(i + 1,)], "id int").write.format("delta").mode("append").save(path)
    t.join()
    h.flush()
    assert not errors
    assert spark.read.format("delta").load(path).count() == 9
    assert h.failed == 0 and h.attested == 8, h.errors
    assert len(list((Path(path) / "_recipe_attest" / "versions").iterdir())) == 8
    _verify(path, spark_warehouse)
    _verify(f"{path}@3", spark_warehouse)


def test_program_hash_is_stable_across_sessions_and_input_versions(spark: SparkSession, spark_warehouse: Path) -> None:
    from attest.spark import install

    u = _uid()
    spark.sql(f"CREATE TABLE src_{u} (id INT, s STRING) USING delta")
    spark.sql(f"INSERT INTO src_{u} VALUES (1, 'a')")
    hashes: list[str] = []
    for i, session in enumerate((spark, spark.newSession(), spark.newSession())):
        session.sql("SELECT 1").collect()  # advance expression ids: they must not leak into the identity
        h = install(session, policy="required")
        try:
            session.sql(f"INSERT INTO src_{u} VALUES ({i + 2}, 'x')")  # a newer input version each round
            session.sql(f"CREATE OR REPLACE TABLE out_{u} USING delta AS SELECT id * 2 AS d, s FROM src_{u}")
            h.flush()
            out = [r for r in h.results if r.manifest and "out_" in (r.manifest.subject.model or "")]
            assert len(out) == 1, h.errors
            assert out[0].manifest is not None
            hashes.append(out[0].manifest.program_hash)
        finally:
            h.uninstall()
    assert len(set(hashes)) == 1, hashes
