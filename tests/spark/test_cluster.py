"""Verification and the hook's hashing on a real Spark standalone cluster (docs/distributed.md, "On a cluster").

A master and two workers run as separate processes (tests/spark/cluster.py: ``spark-class`` from the installed
pyspark, loopback only), in directories and an environment without the project, and their executors run a Python
that has recipe-attest's dependencies but not recipe-attest: what they import of it is what the job ships
(``carriers.spark.distributed.ship_code``). Drivers are separate processes too (``attest verify --spark --master
spark://...`` and tests/spark/cluster_job.py), each compared with local verification of the same table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import DeltaCarrier
from carriers.delta.carrier import attest_after_write as attest_delta
from carriers.spark.distributed import code_zip, ship_code
from carriers.spark.errors import SparkJobError
from carriers.storage.base import local_path_of
from tests.spark.cluster import StandaloneCluster, group_alive

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("cluster_job.py")
PROGRAM = "a" * 64
ICEBERG_CATALOG = "clustercat"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    c = StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2, cores=1, memory="1g").start()
    groups = [p.pid for p in c.processes]
    try:
        yield c
    finally:
        c.stop()
    assert not [g for g in groups if group_alive(g)], "cluster processes outlived the fixture"


def _run(cluster: StandaloneCluster, cwd: Path, args: list[str], env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    full = cluster.driver_env(ROOT)
    full.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=600)


def _verify(cluster: StandaloneCluster, cwd: Path, ref: str, *, spark: bool,
            env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    extra = ["--spark", "--master", cluster.master_url] if spark else []
    done = _run(cluster, cwd, ["-m", "attest.cli", "verify", ref, "--level", "bytes", "--json", *extra], env)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(done.stdout + done.stderr) from None
    return done.returncode, report


def _outcome(code: int, report: dict[str, Any]) -> dict[str, Any]:
    return {"exit": code, "passed": report["passed"], "level": report["level"],
            "errors": [(e["code"], e.get("path")) for e in report["errors"]],
            "files": report.get("files_checked"), "bytes": report.get("bytes_checked")}


def _local_and_cluster(cluster: StandaloneCluster, cwd: Path, ref: str,
                       env: dict[str, str] | None = None) -> dict[str, Any]:
    """The local outcome; fails unless the cluster's is the same and says its bytes were hashed there."""
    local = _outcome(*_verify(cluster, cwd, ref, spark=False, env=env))
    code, report = _verify(cluster, cwd, ref, spark=True, env=env)
    assert _outcome(code, report) == local, (report, local)
    assert any(f"bytes hashed on Spark executors ({cluster.master_url})" in n for n in report["notes"]), report
    return local


def _flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_executors_import_only_the_code_the_job_ships(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """Without the shipped zip the executors cannot import recipe-attest at all (their Python, directory and
    environment lack it); after ``ship_code`` every task on both workers imports it from the zip."""
    bare = subprocess.run([str(cluster.executor_python), "-c", "import blake3, deltalake, pyiceberg, carriers"],
                          cwd=tmp_path, env=cluster.process_env("check"), capture_output=True, text=True, timeout=120)
    assert bare.returncode != 0 and "No module named 'carriers'" in bare.stderr, bare.stderr
    done = _run(cluster, tmp_path, [str(JOB), "probe", cluster.master_url])
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["python"] == str(cluster.executor_python)
    assert [origin for _, origin in out["before"]] == [None] * 8  # the executors have no recipe-attest of their own
    assert all(origin and origin.endswith(".zip/carriers/__init__.py") and Path(out["zip"]).name in origin
               for _, origin in out["after"]), out["after"]
    assert out["again"] == out["zip"]  # shipped once per application
    dirs = {cwd for cwd, _ in out["before"] + out["after"]}
    assert all(str(ROOT) not in d and d.startswith(str(cluster.root)) for d in dirs), dirs
    assert {Path(d).relative_to(cluster.root).parts[0] for d in dirs} == {"worker-0", "worker-1"}, dirs


def test_the_shipped_zip_is_the_packages_without_bytecode_and_cached_by_content(tmp_path: Path) -> None:
    first = code_zip(tmp_path)
    assert code_zip(tmp_path) == first and first.parent == tmp_path / "pyfiles"
    names = zipfile.ZipFile(first).namelist()
    assert "attest/__init__.py" in names and "carriers/spark/distributed.py" in names
    assert "carriers/spark/log4j2.xml" in names  # package data travels too
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert {n.split("/")[0] for n in names} == {"attest", "carriers"}
    with zipfile.ZipFile(first, "a") as z:  # a cached zip that holds anything else is not handed to executors
        z.writestr("carriers/evil.py", "raise SystemExit")
    assert code_zip(tmp_path) == first and zipfile.ZipFile(first).namelist() == names
    first.write_bytes(first.read_bytes()[:100])  # nor a truncated one
    assert code_zip(tmp_path) == first and zipfile.ZipFile(first).namelist() == names


class _FakeContext:
    def __init__(self, master: str, app: str, fail: bool = False) -> None:
        self.master, self.applicationId, self.fail = master, app, fail
        self.added: list[str] = []

    def addPyFile(self, path: str) -> None:
        if self.fail:
            raise RuntimeError("py4j.protocol.Py4JError: An error occurred while calling o1.addFile")
        self.added.append(path)


def test_code_is_shipped_once_per_application_and_never_to_a_local_master(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECIPE_ATTEST_CACHE", str(tmp_path))
    local = _FakeContext("local[2]", "local-1")
    assert ship_code(local) is None and local.added == []  # type: ignore[arg-type]
    cluster = _FakeContext("spark://127.0.0.1:7077", f"app-{uuid.uuid4().hex}")
    first = ship_code(cluster)  # type: ignore[arg-type]
    assert first is not None and first.parent == tmp_path / "pyfiles"
    assert ship_code(cluster) == first and cluster.added == [str(first)]  # type: ignore[arg-type]
    broken = _FakeContext("spark://127.0.0.1:7077", f"app-{uuid.uuid4().hex}", fail=True)
    with pytest.raises(SparkJobError, match="could not hand the executors the code they run: Py4JError"):
        ship_code(broken)  # type: ignore[arg-type]


@pytest.mark.slow
def test_cli_verify_of_delta_on_the_cluster_agrees_with_local(cluster: StandaloneCluster, tmp_path: Path) -> None:
    table = tmp_path / "orders"
    for part in ("a", "b", "c"):
        write_deltalake(str(table), pa.table({"p": [part] * 500, "v": list(range(500))}), partition_by=["p"],
                        mode="append")
    attest_delta(str(table), model="orders", program_hash=PROGRAM)
    intact = _local_and_cluster(cluster, tmp_path, str(table))
    assert intact["exit"] == 0 and intact["passed"] and intact["files"] == 3

    victim = local_path_of(DeltaCarrier(str(table)).state().live_files[0].location)
    assert victim is not None
    size = Path(victim).stat().st_size
    _flip_middle_byte(Path(victim))
    assert Path(victim).stat().st_size == size
    tampered = _local_and_cluster(cluster, tmp_path, str(table))
    assert tampered["exit"] == 1 and not tampered["passed"]
    assert [code for code, _ in tampered["errors"]] == ["artifact_hash_mismatch"]


@pytest.mark.slow
def test_cli_verify_of_iceberg_on_the_cluster_agrees_with_local(cluster: StandaloneCluster, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.iceberg.carrier import attest_after_write as attest_iceberg

    (tmp_path / "warehouse").mkdir()
    props = {"uri": f"sqlite:///{tmp_path / 'catalog.db'}", "warehouse": (tmp_path / "warehouse").as_uri()}
    catalog = SqlCatalog(ICEBERG_CATALOG, **props)
    catalog.create_namespace("ns")
    rows = pa.table({"id": pa.array(range(1000), pa.int64()), "v": [f"row-{i}" for i in range(1000)]})
    table = catalog.create_table("ns.t", schema=rows.schema)
    table.append(rows.slice(0, 500))
    table.append(rows.slice(500))
    attest_iceberg(table, model="t", program_hash=PROGRAM)
    env = {f"PYICEBERG_CATALOG__{ICEBERG_CATALOG.upper()}__TYPE": "sql",
           f"PYICEBERG_CATALOG__{ICEBERG_CATALOG.upper()}__URI": props["uri"],
           f"PYICEBERG_CATALOG__{ICEBERG_CATALOG.upper()}__WAREHOUSE": props["warehouse"],
           "PYICEBERG_HOME": str(tmp_path)}
    ref = f"iceberg://{ICEBERG_CATALOG}/ns.t"
    intact = _local_and_cluster(cluster, tmp_path, ref, env)
    assert intact["exit"] == 0 and intact["passed"] and intact["files"] == 2

    carrier = IcebergCarrier(catalog.load_table("ns.t"), catalog_name=ICEBERG_CATALOG)
    victim = local_path_of(carrier.state().live_files[0].location)
    assert victim is not None
    _flip_middle_byte(Path(victim))
    tampered = _local_and_cluster(cluster, tmp_path, ref, env)
    assert tampered["exit"] == 1 and not tampered["passed"]
    assert [code for code, _ in tampered["errors"]] == ["artifact_hash_mismatch"]


@pytest.mark.slow
def test_the_hook_hashes_delta_and_iceberg_writes_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """Spark SQL writes on the cluster, attested by the hook with every new file hashed by an executor job (no
    fallback to the driver) and its content digest computed in the same task (no row read on the driver, the
    driver's path recomputing the same digests, companion file and content object), and each table verifies when
    hashed here, independently."""
    done = _run(cluster, tmp_path, [str(JOB), "hook", cluster.master_url, str(tmp_path / "warehouse")])
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert (out["attested"], out["failed"], out["errors"]) == (2, 0, []), out
    assert out["fallbacks"] == 0 and out["driver_files"] == 0, out
    assert out["job_statuses"] and set(out["job_statuses"]) == {"SUCCEEDED"}, out
    assert out["delta"]["passed"] and out["iceberg"]["passed"], out
    assert out["executor_files"] == out["delta"]["files"] + out["iceberg"]["files"] >= 7, out
    # The content digests too, in the same tasks (the executors import attest.content from the shipped zip), with no
    # row read on the driver; what they recorded is what the driver's path computes, byte for byte.
    assert out["driver_digests"] == 0, out
    data_files = out["content"]["delta"]["files"] + out["content"]["iceberg"]["files"]
    assert out["executor_content_files"] == data_files >= 7, out
    for fmt in ("delta", "iceberg"):
        assert out["content"][fmt]["differ"] == [] and out["content"][fmt]["total_same"], out
        assert out["content"][fmt]["content_same"], out


@pytest.mark.slow
def test_bench_cluster_runs_at_a_toy_size(tmp_path: Path) -> None:
    """benchmarks/bench_cluster.py end to end on a toy table (its own clusters of one and two workers; a process
    of its own, as a user runs it): every verification passes, the ratio is printed beside the machine's load."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cluster.py"), "--dir", str(tmp_path),
                           "--gib", "0.02", "--files", "4", "--rounds", "1"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [ln for ln in lines if ln.startswith("  1 worker(s): verify")], done.stdout
    assert [ln for ln in lines if ln.startswith("  2 worker(s): verify")], done.stdout
    ratio = [ln for ln in lines if ln.startswith("scaling 1 worker / 2 workers: verify ")]
    assert len(ratio) == 1 and "x, hashing job " in ratio[0] and "load " in ratio[0], done.stdout
