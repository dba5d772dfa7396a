"""Round 16 on `attest lineage`: attacks that already held, pinned (tests/adversarial/test_lineage_round16.py has
the ones that did not)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.adversarial.test_lineage_attacks import cli


def _table(path: Path, value: int, *inputs: Path) -> None:
    write_deltalake(str(path), pa.table({"a": [value]}), mode="append")
    attest_after_write(str(path), model=path.name, program_hash="a" * 64,
                       inputs=[DeltaCarrier(str(i)).observe() for i in inputs])


def test_an_upstream_version_vacuumed_since_is_not_verified(tmp_path: Path) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    _table(up, 1)
    _table(down, 2, up)
    write_deltalake(str(up), pa.table({"a": [9]}), mode="overwrite")  # the version read, its files removed later
    DeltaTable(str(up)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["passed"] is False, doc["summary"]
    node = doc["inputs"][0]
    assert node["version"] == "0" and node["outcome"] != "VERIFIED" and node["passed"] is False
    assert doc["summary"].startswith("lineage FAILED")


def test_a_diamond_with_one_stale_branch_fails_and_text_and_json_agree(tmp_path: Path) -> None:
    base, left, right, top = (tmp_path / n for n in ("base", "left", "right", "top"))
    _table(base, 1)
    _table(left, 2, base)
    _table(right, 3, base)
    write_deltalake(str(right), pa.table({"a": [4]}), mode="append")  # right@2: a data write nothing attests
    _table(top, 5, left, right)
    rc, text, _ = cli("lineage", str(top))
    rcj, out, _ = cli("lineage", str(top), "--json")
    doc = json.loads(out)
    assert rc == rcj == 1
    assert text.splitlines()[-1] == doc["summary"] and doc["summary"].startswith("lineage FAILED")
    assert [(f["version"], f["outcome"]) for f in doc["walk"]["failures"]] == [("2", "STALE")]
    # base is reached twice (through left, and under the stale right@2) and counted once; right@2 is not counted
    assert doc["walk"]["nodes_verified"] == 3 and doc["walk"]["versions_verified"] == 3


def test_depth_zero_passes_only_with_the_cut_said(tmp_path: Path) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    _table(up, 1)
    _table(down, 2, up)
    rc, out, _ = cli("lineage", str(down), "--depth", "0", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["walk"]["cut"] is True and doc["walk"]["not_walked"] == 1
    assert doc["walk"]["nodes_verified"] == 1 and "1 input(s) not walked" in doc["summary"]


def test_a_heuristic_read_is_never_drawn_as_a_strong_edge(tmp_path: Path) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    write_deltalake(str(up), pa.table({"a": [1]}))  # unattested at version 0: observed by version, heuristic
    write_deltalake(str(up), pa.table({"a": [2]}), mode="append")
    attest_after_write(str(up), model="up", program_hash="a" * 64)
    weak = DeltaCarrier(str(up)).observe(0)
    assert weak.proof_class == "heuristic"
    write_deltalake(str(down), pa.table({"b": [3]}))
    attest_after_write(str(down), model="down", program_hash="b" * 64, inputs=[weak])
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["inputs"][0]["observed_as"] == "heuristic"  # up@0 is unattested: the walk fails
    rc, dot, _ = cli("lineage", str(down), "--format", "dot")
    assert rc == 1 and "heuristic" in dot and "· strong" not in dot


def test_an_iceberg_catalog_name_re_pointed_at_another_table_uuid_is_not_verified(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog name the input records, re-registered to a copy of the table's metadata under another table
    uuid (the same snapshot ids): the attestation binds the table identity, so the node is carrier_tampered."""
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    from carriers.iceberg.carrier import IcebergCarrier
    from tests.iceberg.conftest import CATALOG, PROGRAM, catalog_properties, ns_catalog, rows

    props = catalog_properties(tmp_path)
    for key, value in (("TYPE", "sql"), ("URI", props["uri"]), ("WAREHOUSE", props["warehouse"])):
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key}", value)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    cat = ns_catalog(tmp_path)
    cat.create_table("ns.t", schema=rows(0).schema).append(rows(0))
    IcebergCarrier(cat.load_table("ns.t"), catalog_name=CATALOG).record(model="t", program_hash=PROGRAM)
    read = IcebergCarrier(cat.load_table("ns.t"), catalog_name=CATALOG).observe()
    down = tmp_path / "down"
    write_deltalake(str(down), pa.table({"b": [1]}))
    attest_after_write(str(down), model="down", program_hash="b" * 64, inputs=[read])
    assert cli("lineage", str(down))[0] == 0
    where = Path(cat.load_table("ns.t").metadata_location.removeprefix("file://"))
    doc = json.loads(where.read_text())
    doc["table-uuid"] = str(uuid.uuid4())
    forged = where.with_name("99999-forged.metadata.json")
    forged.write_text(json.dumps(doc))
    cat.drop_table("ns.t")
    cat.register_table("ns.t", f"file://{forged}")
    rc, out, _ = cli("lineage", str(down), "--json")
    report = json.loads(out)
    assert rc == 1 and report["passed"] is False
    assert report["inputs"][0]["outcome"] == "NOT VERIFIED"
