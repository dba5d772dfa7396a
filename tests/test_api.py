"""The Python entry (attest/api.py; issue 34.2): ``attest.verify / record / show / lineage`` take what the command line
takes — a path, a URI, ``iceberg://``, an identifier with ``catalog=``, a deltalake.DeltaTable, a pyiceberg Table — and
return what it prints from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

import attest
from attest.errors import AttestError
from tests.conftest import run_cli

SQL = "select id from raw"


def _tables(tmp_path: Path) -> tuple[Path, Path]:
    raw, orders = tmp_path / "raw", tmp_path / "orders"
    write_deltalake(str(raw), pa.table({"id": [1, 2]}))
    write_deltalake(str(orders), pa.table({"id": [1, 2]}))
    return raw, orders


def test_record_verify_show_lineage_as_the_cli(tmp_path: Path) -> None:
    raw, orders = _tables(tmp_path)
    attest.record(str(raw), model="raw", program_hash="2" * 64)
    done = attest.record(orders, model="orders", sql=SQL, dialect="spark", inputs=[f"{raw}@0"])
    assert done.manifest is not None and done.manifest.inputs_proof_class == "strong"
    report = attest.verify(str(orders), level="bytes")
    assert report.passed and report.level == "bytes"
    cli = json.loads(run_cli("verify", str(orders), "--level", "bytes", "--json").stdout)
    assert report.to_json() == cli  # the very report the command prints
    shown = attest.show(orders)
    assert shown is not None and shown == json.loads(run_cli("show", str(orders)).stdout)
    assert shown["program_hash"] == run_cli("program-hash", "--sql", SQL, "--dialect", "spark").stdout.strip()
    tree = attest.lineage(str(orders))
    assert "\n".join([*tree.lines(), tree.summary()]) == run_cli("lineage", str(orders)).stdout.rstrip("\n")
    assert [Path(child.ref.removeprefix("file://")) for child in tree.inputs] == [raw]
    # a tampered file turns the same call's verdict
    victim = next(p for p in orders.glob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:-1] + b"\0")
    tampered = attest.verify(str(orders), level="bytes")
    assert not tampered.passed and tampered.errors[0].code.value == "artifact_hash_mismatch"


def test_the_package_stays_callable_after_its_submodules_load(tmp_path: Path) -> None:
    _, orders = _tables(tmp_path)
    attest.record(str(orders), model="o", program_hash="1" * 64)
    import importlib

    for name in ("attest.lineage", "attest.record", "attest.verify.table", "attest.verify.manifest"):
        importlib.import_module(name)
    from attest.record import record as decorator  # the module keeps its own names

    assert callable(decorator) and decorator is not attest.record
    assert attest.verify(str(orders)).passed
    assert attest.verify(f"{orders}@0").version == "0"
    assert attest.lineage(str(orders), depth=0).passed


def test_engine_table_objects(tmp_path: Path) -> None:
    _, orders = _tables(tmp_path)
    attest.record(DeltaTable(str(orders)), model="o", program_hash="1" * 64)
    write_deltalake(str(orders), pa.table({"id": [3]}), mode="append")
    # the version the object holds: 1 (the attestation commit) verifies, the latest (2) is stale
    assert attest.verify(DeltaTable(str(orders), version=1)).passed
    latest = attest.verify(DeltaTable(str(orders)))
    assert not latest.passed and latest.errors[0].code.value == "stale"
    shown = attest.show(DeltaTable(str(orders), version=1))
    assert shown is not None and shown["subject"]["model"] == "o"
    # a pyiceberg Table of a catalog nobody configured: read through a catalog built from its own properties
    (tmp_path / "wh").mkdir()
    props = {"uri": f"sqlite:///{tmp_path / 'c.db'}", "warehouse": (tmp_path / "wh").as_uri()}
    cat = SqlCatalog("adhoc", **props)
    cat.create_namespace("ns")
    table = cat.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1]}))
    attest.record(table, model="t", program_hash="1" * 64)
    table = cat.load_table("ns.t")
    assert attest.verify(table, level="bytes").passed
    shown = attest.show(table)
    assert shown is not None and shown["subject"]["model"] == "t"
    # the same table named by identifier, catalog= and uri= / warehouse= (as --catalog / --uri / --warehouse)
    assert attest.verify("ns.t", catalog="adhoc", **props).passed
    assert attest.verify("iceberg://adhoc/ns.t", **props).passed
    assert attest.lineage("ns.t", catalog="adhoc", **props).passed


def test_what_is_refused(tmp_path: Path) -> None:
    _, orders = _tables(tmp_path)
    with pytest.raises(TypeError, match=r"deltalake\.DeltaTable"):
        attest.verify(42)
    from attest.verify.table import verify_table

    with pytest.raises(TypeError, match=r"attest.verify\(table\)"):
        verify_table(str(orders))  # type: ignore[arg-type]
    with pytest.raises(AttestError) as err:
        attest.verify(str(orders), level="nonsense")
    assert err.value.code.value == "invalid_argument"
    with pytest.raises(AttestError) as err:
        attest.record(str(orders), model="m", sql=SQL, program_hash="1" * 64)
    assert err.value.code.value == "invalid_argument"
    with pytest.raises(AttestError) as err:
        attest.verify(str(orders), uri="sqlite:///x.db", catalog=None)
    assert err.value.code.value == "table_reference_invalid"
    with pytest.raises(AttestError) as err:
        attest.verify(tmp_path / "nope")
    assert err.value.code.value == "table_not_found"
    assert attest.show(str(orders)) is None
    unattested = attest.verify(str(orders))
    assert not unattested.passed and unattested.errors[0].code.value == "unattested"
    attest.record(str(orders), model="o", sql=SQL, dialect="spark")
    assert attest.verify(str(orders), program_sql="SELECT id FROM raw", dialect="spark").passed
    wrong = attest.verify(str(orders), program_sql="select 1", dialect="spark")
    assert [e.code.value for e in wrong.errors] == ["program_mismatch"]


def test_import_attest_stays_light() -> None:
    code = ("import sys, attest; attest.__version__; "
            "print(sorted(m for m in ('typing', 'dataclasses', 'inspect', 'attest.api', 'attest.verify', 'deltalake') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
