"""An attested table on a real Iceberg REST catalog: Apache Iceberg's own ``RESTCatalogServer`` (tests/servers/
rest_catalog.py), reached as ``iceberg://apache/ns.t`` through pyiceberg's environment configuration, as a user would.

pyiceberg creates and appends; ``attest record`` commits the follow-up attestation snapshot through the REST API;
``attest verify`` says VERIFIED at the bytes level; a flipped byte is ``artifact_hash_mismatch``; another append makes
it ``stale``. A commit conflict made by another writer through the same server (a real 409) ends ``superseded``,
nothing replayed. Spark uses the same catalog (``spark`` marker) and what it writes through the hook verifies."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from attest.errors import Code, SupersededError
from carriers.iceberg.carrier import attest_after_write as iceberg_attest
from tests.delta.conftest import PROGRAM
from tests.servers.stores import new_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG = "apache"
BINDING = "recipe_attest.binding.version"  # what the follow-up snapshot's summary carries


def env_of(server: Any) -> dict[str, str]:
    """pyiceberg's own environment configuration of the catalog (nothing else: no FileIO secrets needed)."""
    prefix = f"PYICEBERG_CATALOG__{CATALOG.upper()}__"
    return {f"{prefix}TYPE": "rest", f"{prefix}URI": server.uri}


def catalog(server: Any) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog(CATALOG, type="rest", uri=server.uri)


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def codes(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [e["code"] for e in json.loads(done.stdout)["errors"]]


def data_files(table: Any) -> list[Path]:
    root = Path(urlparse(table.location()).path)
    return sorted(p for p in (root / "data").rglob("*.parquet"))


def flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_the_server_jars_are_pinned_and_other_bytes_refused(tmp_path: Path) -> None:
    """Every jar of the server's classpath is pinned; a cached jar whose bytes differ, or a stray jar, is refused."""
    from tests.servers import tools

    pins = tools._pins(tools.ICEBERG_REST_DIR)
    assert {"iceberg-open-api-1.11.0-test-fixtures.jar", "iceberg-core-1.11.0-tests.jar",
            "iceberg-core-1.11.0.jar", "jetty-ee10-servlet-12.1.5.jar", "sqlite-jdbc-3.54.1.0.jar"} <= set(pins)
    assert all(len(d) == 64 for d in pins.values())
    jar_dir = tmp_path / "jars"
    jar_dir.mkdir()
    made = {name: f"bytes of {name}".encode() for name in pins}
    for name, data in made.items():
        (jar_dir / name).write_bytes(data)
    own = {name: hashlib.sha256(data).hexdigest() for name, data in made.items()}
    assert tools._jars_ok(jar_dir, own) and not tools._jars_ok(jar_dir, pins)
    first = sorted(made)[0]
    (jar_dir / first).write_bytes(b"tampered")
    assert not tools._jars_ok(jar_dir, own)
    (jar_dir / first).write_bytes(made[first])
    (jar_dir / "extra-1.0.jar").write_bytes(b"")
    assert not tools._jars_ok(jar_dir, own)


@pytest.fixture
def rest_table(rest_catalog_server: Any) -> Any:
    cat = catalog(rest_catalog_server)
    namespace = new_name()
    cat.create_namespace(namespace)
    table = cat.create_table(f"{namespace}.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": pa.array(range(20), pa.int64()), "v": [f"r{i}" for i in range(20)]}))
    return table


def test_record_verify_tamper_stale_through_the_rest_catalog(rest_catalog_server: Any, rest_table: Any) -> None:
    env = env_of(rest_catalog_server)
    ident = ".".join(rest_table.name()[-2:])
    ref = f"iceberg://{CATALOG}/{ident}"
    data_snapshot = rest_table.current_snapshot().snapshot_id

    recorded = cli("record", ref, "--model", "orders", "--program-hash", PROGRAM, "--json", env=env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert json.loads(recorded.stdout)["attested_version"] == str(data_snapshot)

    # The follow-up snapshot went through the REST API: a fresh client of the server sees it, bound to the data.
    fresh = catalog(rest_catalog_server).load_table(ident)
    current = fresh.current_snapshot()
    assert current is not None and current.snapshot_id != data_snapshot and current.parent_snapshot_id == data_snapshot
    assert current.summary is not None and current.summary.additional_properties[BINDING] == str(data_snapshot)

    verified = cli("verify", ref, "--json", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    out = json.loads(verified.stdout)
    assert out["passed"] and out["level"] == "bytes" and out["files_checked"] == 1, out

    audit = cli("audit", f"iceberg://{CATALOG}/{ident.split('.')[0]}", "--json", env=env)
    assert audit.returncode == 0 and json.loads(audit.stdout)["counts"]["VERIFIED"] == 1, audit.stdout
    assert json.loads(audit.stdout)["skipped"] == [], audit.stdout  # its views listed (none), no listing refused

    target = data_files(fresh)[0]
    flip_byte(target)
    tampered = cli("verify", ref, "--json", env=env)
    assert tampered.returncode == 1 and codes(tampered) == ["artifact_hash_mismatch"], tampered.stdout
    flip_byte(target)  # back to the attested bytes

    fresh.append(pa.table({"id": pa.array([99], pa.int64()), "v": ["later"]}))  # a data commit, unattested
    stale = cli("verify", ref, "--json", env=env)
    assert stale.returncode == 1 and codes(stale) == ["stale"], stale.stdout


def test_a_real_commit_conflict_is_refused_as_superseded(rest_catalog_server: Any, rest_table: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer commits through the server between our read and our commit: the server answers 409 (its
    requirement on the branch fails); the carrier does not replay the follow-up onto the newer snapshot."""
    ident = ".".join(rest_table.name()[-2:])
    other = catalog(rest_catalog_server).load_table(ident)  # a second client of the same server
    cat = rest_table.catalog
    real = cat.commit_table
    answers: list[str] = []

    def another_writer_first(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(cat, "commit_table", real)
        other.append(pa.table({"id": pa.array([7], pa.int64()), "v": ["other"]}))
        try:
            return real(*args, **kwargs)  # the real request: the server refuses it
        except Exception as exc:
            answers.append(type(exc).__name__)
            raise

    monkeypatch.setattr(cat, "commit_table", another_writer_first)
    with pytest.raises(SupersededError) as raised:
        iceberg_attest(rest_table, model="orders", program_hash=PROGRAM)
    assert raised.value.code is Code.SUPERSEDED
    assert answers == ["CommitFailedException"]  # the server's own 409, not a simulated one
    latest = catalog(rest_catalog_server).load_table(ident)
    summaries = [s.summary.additional_properties for s in latest.snapshots() if s.summary is not None]
    assert all(BINDING not in s for s in summaries)  # nothing committed, nothing replayed
    assert len(latest.snapshots()) == 2


def test_a_format_v3_attestation_recorded_by_the_cli_is_kept_by_the_rest_catalog(rest_catalog_server: Any) -> None:
    """A format-v3 table of a REST catalog: ``attest record`` (the CLI, pyiceberg) writes a detached attestation and
    keeps it through the server, which writes the v3 metadata: its Puffin file registered as the attested snapshot's
    statistics file and the retention tag on that snapshot. After what orphan removal and expiry do (every file
    under recipe_attest/ that no metadata names deleted, the older snapshot expired) it still verifies at the bytes
    level. Before, nothing was committed and the table read UNATTESTED."""
    from pyiceberg.table.update import UpgradeFormatVersionUpdate

    from carriers.iceberg.carriage import RETAIN_TAG

    cat = catalog(rest_catalog_server)
    namespace = new_name()
    cat.create_namespace(namespace)
    ident = f"{namespace}.orders3"
    # pyiceberg 0.12 writes no v3 manifest list: the rows go in at v2, then the server upgrades the table to v3
    # (pyiceberg's upgrade_table_version refuses 3; the REST update itself is the one any engine sends)
    table = cat.create_table(ident, schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"a{i}" for i in range(10)]}))
    older = table.current_snapshot().snapshot_id
    table.append(pa.table({"id": pa.array(range(10, 20), pa.int64()), "v": [f"b{i}" for i in range(10)]}))
    attested = table.current_snapshot().snapshot_id
    cat.commit_table(table, (), (UpgradeFormatVersionUpdate(format_version=3),))
    table = cat.load_table(ident)
    assert table.metadata.format_version == 3
    location = table.metadata_location
    env = env_of(rest_catalog_server)
    ref = f"iceberg://{CATALOG}/{ident}"

    recorded = cli("record", ref, "--model", "orders", "--program-hash", PROGRAM, "--json", env=env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert json.loads(recorded.stdout)["attested_version"] == str(attested)
    assert "not registered" not in recorded.stderr, recorded.stderr

    fresh = catalog(rest_catalog_server).load_table(ident)  # what the server wrote, read back by a new client
    assert fresh.metadata_location != location and fresh.metadata.format_version == 3
    assert [s.snapshot_id for s in fresh.snapshots()] == [older, attested]  # metadata only: no snapshot added
    stats = [e for e in fresh.metadata.statistics if e.snapshot_id == attested]
    assert len(stats) == 1 and "/metadata/recipe_attest/" in stats[0].statistics_path
    assert fresh.metadata.refs[RETAIN_TAG].snapshot_id == attested

    # orphan removal: every file under recipe_attest/ that the table metadata does not name is deleted
    kept = Path(urlparse(stats[0].statistics_path).path)
    folder = Path(urlparse(fresh.location()).path) / "metadata" / "recipe_attest"
    removed = [p for p in folder.rglob("*") if p.is_file() and p != kept]
    assert any(p.parent.name == "snapshots" and p.suffix == ".json" for p in removed)  # the pointer among them
    for p in removed:
        p.unlink()
    fresh.maintenance.expire_snapshots().by_id(older).commit()  # through the server, as the keeping commit went
    expired = catalog(rest_catalog_server).load_table(ident)
    assert [s.snapshot_id for s in expired.snapshots()] == [attested]

    verified = cli("verify", ref, "--level", "bytes", "--json", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    out = json.loads(verified.stdout)
    assert out["passed"] and out["level"] == "bytes" and out["files_checked"] == 2, out


@pytest.mark.spark
def test_spark_writes_through_the_same_rest_catalog_and_it_verifies(spark: SparkSession, rest_catalog_server: Any,
                                                                    rest_table: Any) -> None:
    from carriers.spark.hook import attested_write
    from carriers.spark.session import iceberg_rest_catalog_conf

    for key, value in iceberg_rest_catalog_conf(CATALOG, rest_catalog_server.uri).items():
        spark.conf.set(key, value)  # catalogs load on first use: the shared session gains this one
    namespace = rest_table.name()[-2]
    assert spark.table(f"{CATALOG}.{namespace}.orders").count() == 20  # Spark reads what pyiceberg wrote
    props = {"type": "rest", "uri": rest_catalog_server.uri}
    with attested_write(spark, model="events", iceberg_catalogs={CATALOG: props}) as results:
        spark.sql(f"CREATE TABLE {CATALOG}.{namespace}.events USING iceberg AS "
                  "SELECT id, CAST(id AS STRING) AS v FROM range(15)")
    assert len(results) == 1 and results[0].attested_version is not None, results
    env = env_of(rest_catalog_server)
    verified = cli("verify", f"iceberg://{CATALOG}/{namespace}.events", "--json", env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["level"] == "bytes", verified.stdout
    events = catalog(rest_catalog_server).load_table(f"{namespace}.events")  # pyiceberg sees Spark's commits
    assert events.current_snapshot().summary.additional_properties[BINDING] == results[0].attested_version

    spark.sql(f"INSERT INTO {CATALOG}.{namespace}.events VALUES (100, 'x')")  # hook not installed: unattested
    stale = cli("verify", f"iceberg://{CATALOG}/{namespace}.events", "--json", env=env)
    assert stale.returncode == 1 and codes(stale) == ["stale"], stale.stdout
