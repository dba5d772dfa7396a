"""Round 16 attacks on `attest lineage`: an upstream a downstream attestation names by location that now resolves
to another table (the path re-created), or to a version whose content is not the content the run read. The walk
opened the location at the recorded version and verified whatever attestation it found there: a different table,
attested, was shown VERIFIED [read as strong] and the walk PASSED."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from attest.identity.inputs import ObservedInput, inputs_identity
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.adversarial.test_lineage_attacks import cli


def _pipeline(tmp_path: Path) -> tuple[Path, Path]:
    up, down = tmp_path / "up", tmp_path / "down"
    write_deltalake(str(up), pa.table({"a": [1, 2]}))
    attest_after_write(str(up), model="up", program_hash="a" * 64)
    observed = DeltaCarrier(str(up)).observe()
    assert observed.proof_class == "strong"
    write_deltalake(str(down), pa.table({"b": [3]}))
    attest_after_write(str(down), model="down", program_hash="b" * 64, inputs=[observed])
    rc, _, _ = cli("lineage", str(down))
    assert rc == 0
    return up, down


def test_an_upstream_path_recreated_as_another_table_is_not_the_version_read(tmp_path: Path) -> None:
    up, down = _pipeline(tmp_path)
    shutil.rmtree(up)  # the path re-created: another table (another table id), attested at the same version 0
    write_deltalake(str(up), pa.table({"a": [666]}))
    attest_after_write(str(up), model="up", program_hash="a" * 64)
    rc, text, _ = cli("lineage", str(down))
    assert rc == 1, text
    assert "lineage PASSED" not in text and "lineage_input_mismatch" in text.splitlines()[-1]
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["passed"] is False
    node = doc["inputs"][0]
    assert node["outcome"] == "NOT VERIFIED" and node["code"] == "lineage_input_mismatch"
    assert doc["walk"]["failures"][0]["code"] == "lineage_input_mismatch"
    for fmt in ("svg", "dot", "mermaid"):
        rc, _, _ = cli("lineage", str(down), "--format", fmt)
        assert rc == 1


def test_an_upstream_with_the_same_table_id_but_other_content_is_not_read_strongly(tmp_path: Path) -> None:
    up, down = _pipeline(tmp_path)
    table_id = DeltaTable(str(up)).metadata().id
    shutil.rmtree(up)  # re-created with the old table id copied into its metaData: only the content tells them apart
    write_deltalake(str(up), pa.table({"a": [666]}))
    log = up / "_delta_log" / "00000000000000000000.json"
    lines = []
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "metaData" in action:
            action["metaData"]["id"] = table_id
        lines.append(json.dumps(action))
    log.write_text("\n".join(lines) + "\n")
    attest_after_write(str(up), model="up", program_hash="a" * 64)
    assert DeltaTable(str(up)).metadata().id == table_id
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["passed"] is False, doc["summary"]
    assert doc["inputs"][0]["code"] == "lineage_input_mismatch"


def test_an_input_location_pointed_at_another_attested_table_is_not_that_input(tmp_path: Path) -> None:
    """``location`` is not hashed into inputs_hash: an input record (the sidecar an attacker writes) that keeps the
    identity and content of the table read but names another attested table's location has the same inputs_hash."""
    up, other, down = tmp_path / "up", tmp_path / "other", tmp_path / "down"
    for path, value in ((up, 1), (other, 2)):
        write_deltalake(str(path), pa.table({"a": [value]}))
        attest_after_write(str(path), model=path.name, program_hash="a" * 64)
    read = DeltaCarrier(str(up)).observe()
    forged = ObservedInput(table=read.table, content=read.content, version=read.version, location=str(other))
    assert inputs_identity([forged]) == inputs_identity([read])
    write_deltalake(str(down), pa.table({"b": [3]}))
    attest_after_write(str(down), model="down", program_hash="b" * 64, inputs=[forged])
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["passed"] is False, doc["summary"]
    assert doc["inputs"][0]["code"] == "lineage_input_mismatch"
    assert doc["walk"]["nodes_verified"] == 1  # the root alone


def test_a_table_read_at_no_recorded_version_is_not_its_current_version_verified(tmp_path: Path) -> None:
    """A run that read ``up`` at no recorded version (a stream source whose version is unknown; a record by
    watermark alone), before ``up`` was ever attested: the walk opened ``up``'s current version — written and
    attested afterwards — showed it VERIFIED, drew ``read @2`` and PASSED."""
    up, down = tmp_path / "up", tmp_path / "down"
    write_deltalake(str(up), pa.table({"a": [1]}))
    identity = DeltaCarrier(str(up)).observe().table
    write_deltalake(str(down), pa.table({"b": [1]}))
    attest_after_write(str(down), model="down", program_hash="b" * 64, inputs=[
        ObservedInput(table=f"stream:DeltaSource[{up}]", watermark="0..3", location=str(up)),
        ObservedInput(table=identity, watermark="read at 12:00", location=str(up))])
    write_deltalake(str(up), pa.table({"a": [2]}), mode="append")  # later: a version the run never read, attested
    attest_after_write(str(up), model="up", program_hash="a" * 64)
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 0 and [(i["outcome"], i.get("version")) for i in doc["inputs"]] == [("UNCHECKED", None)] * 2, doc

    assert doc["walk"]["nodes_verified"] == 1 and doc["walk"]["unchecked"] == 1  # one location, counted once
    assert "or version, not checked" in doc["summary"]
    rc, dot, _ = cli("lineage", str(down), "--format", "dot")
    assert rc == 0 and "read @2" not in dot and "VERIFIED" not in dot.split("n1 [", 1)[1].split("]", 1)[0]


def _x_read_twice_and_a_forged_record(tmp_path: Path) -> tuple[Path, Path, ObservedInput]:
    """``x`` at two attested versions; ``down`` records ``x``'s latest and a record of ``x@0`` naming another table
    and other content. Returns (x, down, x's first observation)."""
    x, down = tmp_path / "x", tmp_path / "down"
    write_deltalake(str(x), pa.table({"a": [1]}))
    attest_after_write(str(x), model="x", program_hash="a" * 64)
    first = DeltaCarrier(str(x)).observe()
    write_deltalake(str(x), pa.table({"a": [2]}), mode="append")
    attest_after_write(str(x), model="x", program_hash="a" * 64)
    forged = ObservedInput(table="delta:another-table", content="f" * 64, version=first.version, location=str(x))
    write_deltalake(str(down), pa.table({"b": [1]}))
    attest_after_write(str(down), model="down", program_hash="b" * 64,
                       inputs=[DeltaCarrier(str(x)).observe(), forged])
    return x, down, first


def test_an_input_record_of_another_table_cannot_hide_inside_an_upstreams_chain(tmp_path: Path) -> None:
    """A run records ``x@2`` and ``x@0``: ``x@0`` is walked inside ``x``'s chain (opened by x's own record of it)
    and the run's record of it was skipped unchecked — one naming another table and other content passed."""
    x, down, first = _x_read_twice_and_a_forged_record(tmp_path)
    rc, out, _ = cli("lineage", str(down), "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["passed"] is False, doc["summary"]
    assert [f["code"] for f in doc["walk"]["failures"]] == ["lineage_input_mismatch"]
    honest = tmp_path / "honest"  # the run's record of x@0 is x's own: still one node, the chain
    write_deltalake(str(honest), pa.table({"b": [1]}))
    attest_after_write(str(honest), model="honest", program_hash="b" * 64,
                       inputs=[DeltaCarrier(str(x)).observe(), first])
    rc, out, _ = cli("lineage", str(honest), "--json")
    doc = json.loads(out)
    assert rc == 0 and len(doc["inputs"]) == 1 and doc["inputs"][0]["versions"] == 2, doc["summary"]


def test_two_records_of_one_location_and_version_are_each_checked(tmp_path: Path) -> None:
    """Two input records of one location at one version were merged into one node (the first kept): a second one
    naming another table and another content was never checked."""
    up, _ = _pipeline(tmp_path)
    read = DeltaCarrier(str(up)).observe()
    forged = ObservedInput(table="delta:another-table", content="f" * 64, version=read.version, location=str(up))
    for name, inputs in (("both", [read, forged]), ("content", [read, ObservedInput(
            table=read.table, content="e" * 64, version=read.version, location=str(up))])):
        other = tmp_path / name
        write_deltalake(str(other), pa.table({"b": [1]}))
        attest_after_write(str(other), model=name, program_hash="b" * 64, inputs=inputs)
        rc, out, _ = cli("lineage", str(other), "--json")
        doc = json.loads(out)
        assert rc == 1 and doc["passed"] is False, (name, doc["summary"])
        assert [f["code"] for f in doc["walk"]["failures"]] == ["lineage_input_mismatch"]


def test_a_failing_reach_of_a_version_is_drawn_failing(tmp_path: Path) -> None:
    """The picture draws a version once: a reach that fails (a record naming another table) must not be drawn as
    the passing box of an earlier reach or of the chain that holds that version."""
    _, down, _ = _x_read_twice_and_a_forged_record(tmp_path)
    rc, svg, _ = cli("lineage", str(down), "--format", "svg")
    assert rc == 1
    outcomes = [g.get("data-outcome") for g in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}g")
                if g.get("data-outcome")]
    assert "NOT VERIFIED" in outcomes, outcomes
