"""`attest audit W` on a warehouse as ``attest.spark.local_session(W)`` lays it out (issue 30.6), built here without
Spark: ``W/spark-warehouse/<delta table>`` with delta-rs, ``W/iceberg/<ns>/<table>`` with pyiceberg's SQL catalog on
``W/iceberg_catalog.db`` (``pyiceberg_catalog_properties(W)``, the catalog Spark's session uses). The Spark-made one
is tests/spark/test_audit_warehouse_spark.py.

Before: W relative gave one ``internal_error`` row (``ValueError: relative path can't be expressed as a file URI``)
and no table audited; W absolute gave the Iceberg folder ``ERROR (unsupported_table)`` and exit 2. Now every table of
the folder is audited: the Iceberg folder through a configured catalog that owns it, else statically from its newest
metadata file, labelled either way; one unreadable part never hides the others (docs/audit.md).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from carriers.delta.carrier import attest_after_write
from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write
from carriers.spark.session import pyiceberg_catalog_properties
from tests.conftest import run_cli

PROGRAM = "a" * 64
TRIPPED: list[str] = []


class Tripwire:
    """A FileIO class a hostile metadata file names (``py-io-impl``): constructing it would be running its code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        TRIPPED.append("constructed")
        raise RuntimeError("the table's metadata chose the code run here")


def warehouse(root: Path) -> dict[str, Any]:
    """W with one attested Delta table and one attested Iceberg table (two appends: three metadata files)."""
    w = root / "W"
    (w / "iceberg").mkdir(parents=True)
    delta = w / "spark-warehouse" / "orders"
    write_deltalake(str(delta), pa.table({"x": [1, 2]}))
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(w))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("x", pa.int64())]))
    table.append(pa.table({"x": [1, 2]}))
    iceberg_attest_after_write(table, model="t", program_hash=PROGRAM)
    return {"w": w, "delta": delta, "iceberg": w / "iceberg" / "ns" / "t", "catalog": catalog, "table": table}


def audit_json(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "attest.cli", "audit", *args, "--json"], capture_output=True,
                          text=True, cwd=cwd, timeout=600, env={**os.environ, **(env or {})})
    return done.returncode, json.loads(done.stdout)


def rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["table"]: t for t in doc["tables"]}


def test_a_relative_warehouse_audits_every_table(tmp_path: Path) -> None:
    wh = warehouse(tmp_path)
    rc, doc = audit_json("W", cwd=tmp_path)
    found = rows(doc)
    assert set(found) == {"W/spark-warehouse/orders", "W/iceberg/ns/t"}, doc
    assert rc == 0 and all(t["outcome"] == "VERIFIED" for t in found.values()), doc
    iceberg = found["W/iceberg/ns/t"]
    assert iceberg["table_format"] == "iceberg" and iceberg["level"] == "bytes"
    newest = max(p.name for p in (wh["iceberg"] / "metadata").glob("*.metadata.json"))
    assert any(f"read without a catalog from metadata/{newest}" in n for n in iceberg["notes"]), iceberg
    text = run_cli("audit", "W", cwd=tmp_path)
    assert text.returncode == 0 and "note: read without a catalog" in text.stdout, text.stdout + text.stderr
    assert text.stdout.strip().splitlines()[-1].startswith("2 table(s): 2 verified"), text.stdout


def test_the_absolute_warehouse_and_the_folder_itself(tmp_path: Path) -> None:
    wh = warehouse(tmp_path)
    rc, doc = audit_json(str(wh["w"]))
    assert rc == 0 and doc["counts"]["VERIFIED"] == 2, doc
    # `verify` of an Iceberg table folder reads it the same way, and says so.
    done = run_cli("verify", str(wh["iceberg"]), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"] and report["level"] == "bytes", report
    assert any(n.startswith("read without a catalog") for n in report["notes"]), report
    # a snapshot of it by id, as for a catalog table
    done = run_cli("verify", str(wh["iceberg"]), "--snapshot-id", str(wh["table"].metadata.snapshots[0].snapshot_id))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_configured_catalog_that_owns_the_folder_is_used(tmp_path: Path) -> None:
    wh = warehouse(tmp_path)
    props = pyiceberg_catalog_properties(wh["w"])
    env = {"PYICEBERG_CATALOG__ICEBERG__TYPE": "sql", "PYICEBERG_CATALOG__ICEBERG__URI": props["uri"],
           "PYICEBERG_CATALOG__ICEBERG__WAREHOUSE": props["warehouse"]}
    # A newer metadata file no commit made current (a failed commit): static reading would pick it; the catalog not.
    metadata = wh["iceberg"] / "metadata"
    newest = max(metadata.glob("*.metadata.json"))
    doc = json.loads(newest.read_text())
    doc["properties"] = {**doc.get("properties", {}), "failed": "commit"}
    (metadata / f"{int(newest.name[:5]) + 1:05d}-0000-failed.metadata.json").write_text(json.dumps(doc))
    rc, out = audit_json("W", cwd=tmp_path, env=env)
    row = rows(out)["W/iceberg/ns/t"]
    assert rc == 0 and row["outcome"] == "VERIFIED", out
    assert any("verified through catalog 'iceberg', whose table ns.t it is" in n for n in row["notes"]), row
    rc, out = audit_json("W", cwd=tmp_path)  # without the catalog: the newest file, and it says which
    row = rows(out)["W/iceberg/ns/t"]
    assert any("-0000-failed.metadata.json" in n for n in row["notes"]), row


def test_metadata_files_that_cannot_tell_which_is_current_are_refused(tmp_path: Path) -> None:
    """Two files claiming the newest version (a commit race), the newest a symlink, or metadata naming another
    location (a copied table): ERROR unsupported_table, and the Delta table is audited all the same."""
    wh = warehouse(tmp_path)
    metadata = wh["iceberg"] / "metadata"
    newest = max(metadata.glob("*.metadata.json"))
    number = int(newest.name[:5])
    race = metadata / f"{number:05d}-ffffffff-race.metadata.json"
    shutil.copy(newest, race)
    rc, doc = audit_json("W", cwd=tmp_path)
    row = rows(doc)["W/iceberg/ns/t"]
    assert rc == 2 and row["outcome"] == "ERROR" and row["code"] == "unsupported_table", doc
    assert "claim version" in row["message"], row
    assert rows(doc)["W/spark-warehouse/orders"]["outcome"] == "VERIFIED", doc
    race.unlink()
    link = metadata / f"{number + 1:05d}-link.metadata.json"
    link.symlink_to(newest)
    rc, doc = audit_json("W", cwd=tmp_path)
    row = rows(doc)["W/iceberg/ns/t"]
    assert rc == 2 and row["code"] == "unsupported_table" and "not a regular file" in row["message"], doc
    link.unlink()
    copy = tmp_path / "W" / "copied"
    shutil.copytree(wh["iceberg"], copy)
    rc, doc = audit_json("W", cwd=tmp_path)
    row = rows(doc)["W/copied"]
    assert rc == 2 and row["code"] == "unsupported_table" and "names the table location" in row["message"], doc
    assert rows(doc)["W/iceberg/ns/t"]["outcome"] == "VERIFIED", doc


def test_an_unreadable_table_among_readable_ones(tmp_path: Path) -> None:
    """The newest metadata file is not JSON: that table is an ERROR with its code and message; the others are
    audited; the exit code is the worst outcome's (2), as docs/audit.md says."""
    wh = warehouse(tmp_path)
    newest = max((wh["iceberg"] / "metadata").glob("*.metadata.json"))
    (newest.parent / f"{int(newest.name[:5]) + 1:05d}-broken.metadata.json").write_text("{not json")
    rc, doc = audit_json("W", cwd=tmp_path)
    row = rows(doc)["W/iceberg/ns/t"]
    assert rc == 2 and row["outcome"] == "ERROR" and row["code"] == "table_unreadable", doc
    assert rows(doc)["W/spark-warehouse/orders"]["outcome"] == "VERIFIED"
    text = run_cli("audit", "W", cwd=tmp_path)
    line = next(x for x in text.stdout.splitlines() if x.startswith("ERROR"))
    assert "W/iceberg/ns/t (table_unreadable): " in line and "broken.metadata.json" in line, text.stdout


def test_a_metadata_file_naming_code_never_runs_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyiceberg's StaticTable.from_metadata builds its FileIO from the table's own properties: a ``py-io-impl``
    there is imported and constructed. The folder reader never does."""
    from attest.cli import main

    wh = warehouse(tmp_path)
    with wh["table"].transaction() as tx:
        tx.set_properties({"py-io-impl": f"{__name__}.Tripwire"})
    TRIPPED.clear()
    monkeypatch.chdir(tmp_path)
    rc = main(["audit", "W", "--json"])
    assert TRIPPED == [] and rc == 0


@pytest.mark.parametrize("name", ["relative", "absolute"])
def test_audit_of_an_unconfigured_catalog_and_of_nothing_prints_the_error(tmp_path: Path, name: str) -> None:
    """Issue 30.7: every target gets a line with its code and message, text output included."""
    target = "notatable" if name == "relative" else str(tmp_path / "notatable")
    for args in (["iceberg://prod"], [target]):
        done = run_cli("audit", *args, cwd=tmp_path)
        lines = done.stdout.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 2, done.stdout
        code = "table_reference_invalid" if args[0].startswith("iceberg") else "table_not_found"
        assert lines[0].startswith("ERROR") and f"({code}): " in lines[0] and len(lines[0].split(": ", 1)[1]) > 10
        assert lines[1].endswith("1 error")


def test_a_signed_table_read_statically_is_never_passed_as_signed(tmp_path: Path) -> None:
    """The statement names ``iceberg://iceberg/ns.t``; read from its folder without the catalog the table cannot be
    shown to be that one: under a key it is statement_mismatch; through the owning catalog it verifies, signed."""
    from attest.signing.keys import PemSigner, generate_keypair

    w = tmp_path / "W"
    (w / "iceberg").mkdir(parents=True)
    pair = generate_keypair("ed25519")
    (tmp_path / "ci.pub").write_bytes(pair.public_pem)
    props = pyiceberg_catalog_properties(w)
    catalog = SqlCatalog("iceberg", **props)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("x", pa.int64())]))
    table.append(pa.table({"x": [1]}))
    iceberg_attest_after_write(table, model="t", program_hash=PROGRAM, signer=PemSigner.load(pair.private_pem))
    rc, doc = audit_json("W", "--key", "ci.pub", cwd=tmp_path)
    row = rows(doc)["W/iceberg/ns/t"]
    assert rc == 1 and row["code"] == "statement_mismatch", doc
    env = {"PYICEBERG_CATALOG__ICEBERG__TYPE": "sql", "PYICEBERG_CATALOG__ICEBERG__URI": props["uri"],
           "PYICEBERG_CATALOG__ICEBERG__WAREHOUSE": props["warehouse"]}
    rc, doc = audit_json("W", "--key", "ci.pub", cwd=tmp_path, env=env)
    row = rows(doc)["W/iceberg/ns/t"]
    assert rc == 0 and row["signer"] == pair.key_id, doc
    done = run_cli("record", str(w / "iceberg" / "ns" / "t"), "--model", "x", "--sql", "SELECT 1")
    assert done.returncode == 2 and "unsupported_table" in done.stderr, done.stderr  # never written statically
