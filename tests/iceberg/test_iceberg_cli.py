"""`attest record` / `attest verify` on iceberg:// references, in a fresh process configured like a user's shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pyiceberg.table import Table

from tests.iceberg.conftest import CATALOG, catalog_properties, rows


def _attest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    props = catalog_properties(tmp_path)
    env = dict(os.environ)
    env.update({f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE": "sql",
                f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI": props["uri"],
                f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE": props["warehouse"],
                "PYICEBERG_HOME": str(tmp_path)})  # no user ~/.pyiceberg.yaml leaks in
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_record_then_verify_through_a_reference(table: Table, tmp_path: Path) -> None:
    ref = f"iceberg://{CATALOG}/ns.t"
    table.append(rows(0))
    data_snapshot = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    done = _attest(tmp_path, "record", ref, "--model", "orders", "--program-hash", "1" * 64)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"RECORDED — {ref} snapshot {data_snapshot}:"), done.stdout
    done = _attest(tmp_path, "verify", ref, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] and report["level"] == "bytes"
    assert report["attested_version"] == str(data_snapshot)
    table.append(rows(3))
    done = _attest(tmp_path, "verify", ref)
    assert done.returncode == 1 and done.stdout.rstrip().endswith(": stale")
    done = _attest(tmp_path, "verify", f"{ref}@{data_snapshot}")
    assert done.returncode == 0, done.stdout + done.stderr
    done = _attest(tmp_path, "verify", f"{ref}@42")
    assert done.returncode != 0 and "never existed" in (done.stdout + done.stderr)
    done = _attest(tmp_path, "verify", ref, "--version", "3", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["errors"][0]["code"] == "invalid_argument"
    done = _attest(tmp_path, "verify", f"iceberg://{CATALOG}/ns.nope", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["errors"][0]["code"] == "table_not_found"
    done = _attest(tmp_path, "verify", "iceberg://unconfigured/ns.t")
    assert done.returncode == 2 and "table_reference_invalid" in done.stderr and "--uri" not in done.stderr


def test_audit_a_whole_catalog_and_a_namespace(table: Table, catalog: object, tmp_path: Path) -> None:
    table.append(rows(0))
    other = catalog.create_table("ns.unattested", schema=rows(0).schema)  # type: ignore[attr-defined]
    other.append(rows(0))
    assert _attest(tmp_path, "record", f"iceberg://{CATALOG}/ns.t", "--model", "t", "--program-hash",
                   "1" * 64).returncode == 0
    done = _attest(tmp_path, "audit", f"iceberg://{CATALOG}", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    outcomes = {row["table"]: row["outcome"] for row in report["tables"]}
    assert outcomes == {f"iceberg://{CATALOG}/ns.t": "VERIFIED", f"iceberg://{CATALOG}/ns.unattested": "UNATTESTED"}
    assert _attest(tmp_path, "audit", f"iceberg://{CATALOG}/ns.t").returncode == 0
    assert _attest(tmp_path, "audit", f"iceberg://{CATALOG}/ns").returncode == 1
