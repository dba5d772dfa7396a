"""``--catalog NAME`` with a ``<namespace>.<table>`` identifier and ``--uri`` / ``--warehouse`` overrides on every
command that takes a table, as pyiceberg's own CLI spells them (issue 34.1); ``iceberg://`` keeps working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from tests.iceberg.conftest import CATALOG, catalog_properties, rows


def _attest(tmp_path: Path, *args: str, configured: bool = True) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process; ``configured``: pyiceberg's environment names the test catalog, else nothing does."""
    props = catalog_properties(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_")}
    env["PYICEBERG_HOME"] = str(tmp_path)  # no user ~/.pyiceberg.yaml leaks in
    if configured:
        env.update({f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE": "sql",
                    f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI": props["uri"],
                    f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE": props["warehouse"]})
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)


def _error_code(done: subprocess.CompletedProcess[str]) -> str:
    return str(json.loads(done.stdout)["errors"][0]["code"])


def test_every_table_command_takes_catalog_and_identifier(table: Table, catalog: SqlCatalog, tmp_path: Path) -> None:
    table.append(rows(0))
    snapshot = str(table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    done = _attest(tmp_path, "record", "--catalog", CATALOG, "ns.t", "--model", "t", "--program-hash", "1" * 64)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"RECORDED — iceberg://{CATALOG}/ns.t snapshot {snapshot}:"), done.stdout
    done = _attest(tmp_path, "verify", "--catalog", CATALOG, "ns.t", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["attested_version"] == snapshot
    # the same table as iceberg://: both spellings give one verdict
    assert _attest(tmp_path, "verify", f"iceberg://{CATALOG}/ns.t", "--json").stdout == done.stdout
    done = _attest(tmp_path, "show", "--catalog", CATALOG, "ns.t", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["program_hash"] == "1" * 64
    done = _attest(tmp_path, "lineage", "--catalog", CATALOG, "ns.t", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["passed"] is True
    # a snapshot as @N or --snapshot-id, as with iceberg://
    assert _attest(tmp_path, "verify", "--catalog", CATALOG, f"ns.t@{snapshot}").returncode == 0
    assert _attest(tmp_path, "verify", "--catalog", CATALOG, "ns.t", "--snapshot-id", snapshot).returncode == 0
    # audit: the whole catalog (no target), a namespace, a table
    other = catalog.create_table("ns.unattested", schema=rows(0).schema)
    other.append(rows(0))
    done = _attest(tmp_path, "audit", "--catalog", CATALOG, "--json")
    assert done.returncode == 1, done.stderr
    outcomes = {row["table"]: row["outcome"] for row in json.loads(done.stdout)["tables"]}
    assert outcomes == {f"iceberg://{CATALOG}/ns.t": "VERIFIED", f"iceberg://{CATALOG}/ns.unattested": "UNATTESTED"}
    assert _attest(tmp_path, "audit", "--catalog", CATALOG, "ns").returncode == 1
    assert _attest(tmp_path, "audit", "--catalog", CATALOG, "ns.t").returncode == 0
    # publish: a branch through --catalog (refused here: the branch does not exist, a coded error naming it)
    done = _attest(tmp_path, "publish", "--catalog", CATALOG, "ns.t", "--branch", "audit", "--json")
    assert done.returncode != 0 and "audit" in done.stdout


def test_uri_and_warehouse_need_no_configuration(table: Table, tmp_path: Path) -> None:
    """pyiceberg --catalog C --uri U --warehouse W: the same catalog without any .pyiceberg.yaml or variable."""
    table.append(rows(0))
    props = catalog_properties(tmp_path)
    given = ("--uri", props["uri"], "--warehouse", props["warehouse"])
    done = _attest(tmp_path, "verify", "--catalog", CATALOG, "ns.t", "--json", configured=False)
    assert done.returncode == 2 and _error_code(done) == "table_reference_invalid"
    done = _attest(tmp_path, "record", "--catalog", CATALOG, "ns.t", *given, "--model", "t", "--program-hash",
                   "1" * 64, configured=False)
    assert done.returncode == 0, done.stderr
    assert _attest(tmp_path, "verify", "--catalog", CATALOG, "ns.t", *given, configured=False).returncode == 0
    # iceberg:// references take the overrides too (of the catalog they name)
    assert _attest(tmp_path, "verify", f"iceberg://{CATALOG}/ns.t", *given, configured=False).returncode == 0
    done = _attest(tmp_path, "audit", "--catalog", CATALOG, *given, "--json", configured=False)
    assert done.returncode == 0, done.stdout
    # --uri overrides the configured one: a wrong uri on the command line is what is used
    wrong = f"sqlite:///{tmp_path / 'other.db'}"
    done = _attest(tmp_path, "verify", "--catalog", CATALOG, "ns.t", "--uri", wrong, "--json")
    assert done.returncode == 2 and _error_code(done) == "table_not_found"


def test_uri_without_catalog_is_pyiceberg_default_catalog(tmp_path: Path) -> None:
    """As ``pyiceberg --uri U``: without --catalog, the catalog named ``default``."""
    (tmp_path / "warehouse").mkdir()
    props = catalog_properties(tmp_path)
    cat = SqlCatalog("default", **props)
    cat.create_namespace("ns")
    cat.create_table("ns.t", schema=rows(0).schema).append(rows(0))
    given = ("--uri", props["uri"], "--warehouse", props["warehouse"])
    done = _attest(tmp_path, "record", "ns.t", *given, "--model", "t", "--program-hash", "1" * 64, configured=False)
    assert done.returncode == 0, done.stderr
    assert "iceberg://default/ns.t" in done.stdout
    assert _attest(tmp_path, "verify", "ns.t", *given, configured=False).returncode == 0


def test_catalog_mistakes_are_coded(tmp_path: Path) -> None:
    done = _attest(tmp_path, "verify", "--catalog", CATALOG, "iceberg://other/ns.t", "--json")
    assert done.returncode == 2 and _error_code(done) == "invalid_argument"
    assert "two catalogs" in json.loads(done.stdout)["errors"][0]["message"]
    for bad in ("t", "/data/t", "ns.", ".t", "a/b.c"):
        done = _attest(tmp_path, "verify", "--catalog", CATALOG, bad, "--json")
        assert done.returncode == 2 and _error_code(done) == "table_reference_invalid", (bad, done.stdout)
    done = _attest(tmp_path, "audit", "--catalog", CATALOG, "/data", "--json")
    assert done.returncode == 2 and _error_code(done) == "invalid_argument"
    done = _attest(tmp_path, "audit", "--json")
    assert done.returncode == 2 and _error_code(done) == "invalid_argument"
    done = _attest(tmp_path, "verify", "iceberg://a/ns.t", "iceberg://b/ns.t", "--json")
    assert done.returncode == 2  # one target only: argparse's error, coded
    done = _attest(tmp_path, "audit", "iceberg://a", "iceberg://b", "--uri", "sqlite:///x.db", "--json")
    assert done.returncode == 2 and _error_code(done) == "invalid_argument"
