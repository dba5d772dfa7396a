"""Shared fixtures: a valid manifest document and helpers to run the CLI as a user would."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# The storage servers' fixtures (tests/servers/fixtures.py), defined here once for every test. A module importing a
# session-scoped fixture defines a fixture of its own, with its own instance: each of the 13 modules that imported
# them started a SeaweedFS (Azurite, fake-gcs-server) of its own, and the last test's teardown stopped them all, one
# after the other (27 s in CI).
from tests.servers.fixtures import (  # noqa: F401  (fixtures, registered by import)
    azure,
    azurite_server,
    bucket,
    gcs,
    gcs_server,
    hive_metastore_server,
    rest_catalog_server,
    s3,
    seaweed_server,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

HEX_A = "a" * 64
HEX_B = "b" * 64
HEX_C = "c" * 64

VALID: dict[str, Any] = {
    "manifest_version": "0.1",
    "hash_scheme": "v1",
    "producer": {"name": "rocky", "version": "1.56.0"},
    "subject": {"model": "orders_clean", "run_id": "run-1", "produced_at": "2026-07-08T01:52:41Z",
                "status": "success"},
    "program_hash": HEX_A,
    "inputs_hash": HEX_B,
    "inputs_proof_class": "heuristic",
    "env_hash": HEX_C,
}


@pytest.fixture
def valid_doc() -> dict[str, Any]:
    return copy.deepcopy(VALID)


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `attest` in a fresh interpreter, as a user's shell would."""
    return subprocess.run(
        [sys.executable, "-m", "attest.cli", *args],
        input=None if stdin is None else stdin.decode("utf-8", "surrogateescape"),
        capture_output=True, text=True, cwd=cwd, timeout=600,
    )


def cli_in_process(*args: str) -> tuple[int, str, str]:
    """Run ``attest.cli.main`` in this process: (exit code, stdout, stderr), argparse's exits included."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from attest.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as exc:  # argparse
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


# ---- one local SparkSession (Delta + Iceberg JDBC catalog on sqlite) for every Spark test ------------------------
@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The warehouse directory of the shared session (see carriers.spark.session for the layout)."""
    return tmp_path_factory.mktemp("spark-warehouse")


@pytest.fixture(scope="session")
def spark(spark_warehouse: Path) -> Iterator[SparkSession]:
    pytest.importorskip("pyspark", reason="needs the `spark` extra")
    from carriers.spark.session import local_session

    session = local_session(spark_warehouse, app_name="recipe-attest-tests")
    yield session
    session.stop()


@pytest.fixture
def required_hook(spark: SparkSession) -> Iterator[Hook]:
    """The hook as a job installs it, ``attest.spark.install(spark, policy="required")``, on the shared session for one
    test, uninstalled after it. A module takes it as its ``hook`` with ``hook = required_hook`` (tests/spark's own
    ``hook`` is a factory, tests/spark/conftest.py)."""
    from attest.spark import install

    h = install(spark, policy="required")
    yield h
    h.uninstall()


# ---- parallel runs (`make test`: pytest-xdist, two workers) -----------------------------------------------------
# Every test on the shared SparkSession (the `spark` fixture) is in one xdist group: one worker runs them in turn,
# on one JVM, while the other runs the rest. A `spark` test that starts JVMs of its own (a cluster, jobs in
# subprocesses, a session it stops) is no group's: it runs on whichever worker is free, as it ran beside others before.
# xdist 3.8's own `--dist loadgroup` groups nothing under pytest 9 (it renames `item._nodeid`, which pytest 9 no
# longer reads: measured, marked tests spread over both workers), so the groups travel from the workers' collection
# to the controller's scheduler in a file (tests/xdist_groups.py). Without xdist the marker is inert.
JVM_GROUP = "jvm"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests import xdist_groups

    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(JVM_GROUP))
    xdist_groups.publish(items)


def pytest_configure(config: pytest.Config) -> None:
    from tests import xdist_groups

    xdist_groups.configure(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from tests import xdist_groups

    return xdist_groups.scheduler(config, log)
