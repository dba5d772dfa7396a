"""Attacks on what issue 14 added: lineage pictures and notebook views, OpenLineage events read as evidence, and the
kept audit. An attacker writes table storage (so: sidecars and their input records, property values) or hands us an
events file; none of it may escape its format, crash a command, over-claim strength or write into user data."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.identity.inputs import ObservedInput
from attest.tables import Attestation
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.conftest import cli_in_process as cli

EVIL = '"]; n9 --> n0; <script>alert(1)</script> %%{init}%% \\N \x1b[2J\u202e'


@pytest.fixture
def poisoned(tmp_path: Path) -> Path:
    """A table whose attestation records hostile upstreams: a file source and a location that is no table."""
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1]}))
    attest_after_write(str(table), model=EVIL, program_hash="a" * 64, inputs=[
        ObservedInput(table=f"path:{EVIL}", watermark=EVIL, location=EVIL, name=EVIL),
        ObservedInput(table="delta:evil", version="0", location=str(tmp_path / EVIL)),
    ])
    return table


def test_hostile_input_records_cannot_escape_a_picture(poisoned: Path) -> None:
    rc, svg, _ = cli("lineage", str(poisoned), "--format", "svg")
    assert rc == 1  # an upstream could not be opened: the chain is not whole
    root = ET.fromstring(svg)
    assert sum(1 for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("data-outcome")) == 3
    assert "<script" not in svg and "\x1b" not in svg
    rc, mermaid, _ = cli("lineage", str(poisoned), "--format", "mermaid")
    assert rc == 1 and "-->" not in mermaid.replace("-.->", "") and '"]' not in mermaid.replace('"]\n', "\n")
    rc, dot, _ = cli("lineage", str(poisoned), "--format", "dot")
    assert rc == 1 and dot.count(" -> ") == 2 and "\\N" not in dot.replace("\\\\N", "")
    rc, text, _ = cli("lineage", str(poisoned), "--json")
    assert rc == 1 and json.loads(text)["inputs"][1]["outcome"] == "ERROR"


def test_hostile_manifest_fields_cannot_escape_notebook_html(poisoned: Path) -> None:
    att = DeltaCarrier(str(poisoned)).read()
    assert att is not None
    forged = Attestation(document={**att.document, "subject": {"model": EVIL, "run_id": EVIL}, "program_hash": EVIL},
                         attested_version=EVIL, location=EVIL, inputs=att.inputs, problems=(EVIL,))
    for html in (forged._repr_html_(), att._repr_html_()):
        assert "<script" not in html and "\x1b" not in html and 'data-attest="attestation"' in html


def _record(table: Path, events: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    rc, out, _ = cli("record", str(table), "--model", "m", "--sql", "SELECT 1", "--openlineage-events", str(events),
                     "--json", *extra)
    return rc, json.loads(out)


def _events(path: Path, inputs: list[dict[str, Any]]) -> Path:
    event = {"eventTime": "2026-01-01T00:00:00Z", "eventType": "COMPLETE", "run": {"runId": "r"},
             "job": {"namespace": "n", "name": "j"}, "inputs": inputs}
    path.write_text(json.dumps(event) + "\n")
    return path


def _version(v: str) -> dict[str, Any]:
    return {"version": {"datasetVersion": v}}


def test_an_event_cannot_borrow_a_later_attestation(tmp_path: Path) -> None:
    upstream, table = tmp_path / "up", tmp_path / "t"
    write_deltalake(str(upstream), pa.table({"a": [1]}))  # version 0: never attested
    write_deltalake(str(upstream), pa.table({"a": [2]}), mode="append")
    attest_after_write(str(upstream), model="up", program_hash="b" * 64)  # attests version 1 only
    write_deltalake(str(table), pa.table({"a": [1]}))
    events = _events(tmp_path / "e.jsonl", [{"namespace": "file", "name": str(upstream), "facets": _version("0")}])
    rc, result = _record(table, events)
    assert rc == 0 and result["manifest"]["inputs_proof_class"] == "heuristic"


def test_event_names_are_normalised_and_never_read_as_tables_unless_they_are(tmp_path: Path) -> None:
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1]}))
    events = _events(tmp_path / "e.jsonl", [
        {"namespace": "file", "name": "/../../../../etc", "facets": _version("1")},
        {"namespace": "file", "name": "/dev/zero", "facets": _version("1")},
        {"namespace": "iceberg://no-such-catalog", "name": "ns.t", "facets": _version("1")},
        {"namespace": "s3://", "name": "x", "facets": _version("1")},
    ])
    rc, result = _record(table, events)
    assert rc == 0 and result["manifest"]["inputs_proof_class"] == "heuristic"
    rc, out, _ = cli("show", str(table), "--inputs")
    tables = sorted(i["table"] for i in json.loads(out))
    assert tables == sorted(["path:/etc", "path:/dev/zero", "path:iceberg://no-such-catalog/ns.t",
                             "openlineage:s3:///x"])


def test_oversized_and_overlong_event_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import attest.model
    import attest.openlineage.evidence

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1]}))
    many = _events(tmp_path / "many.jsonl", [{"namespace": "file", "name": f"/d{i}", "facets": _version("1")}
                                             for i in range(5)])
    monkeypatch.setattr(attest.openlineage.evidence, "MAX_DATASETS", 3)
    rc, result = _record(table, many)
    assert rc == 2 and result["errors"][0]["code"] == "openlineage_events_invalid"
    monkeypatch.setattr(attest.model, "MAX_DOCUMENT_BYTES", 64)  # a file longer than the reader takes, cut on a line
    lines = tmp_path / "long.jsonl"
    lines.write_text((json.dumps({"run": {"runId": "r"}, "job": {}, "inputs": []}) + "\n") * 10)
    rc, result = _record(table, lines)
    assert rc == 2 and "more than 64 bytes" in result["errors"][0]["message"]
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    monkeypatch.setattr(attest.model, "MAX_DOCUMENT_BYTES", 256 * 2**20)
    rc, result = _record(table, deep)
    assert rc == 2 and result["errors"][0]["code"] == "openlineage_events_invalid"
    assert cli("verify", str(table))[0] == 1  # nothing was recorded by any of these


def test_the_audit_is_never_appended_through_a_link_into_a_table(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    write_deltalake(str(victim), pa.table({"a": [1]}))
    (tmp_path / "lake").mkdir()
    link = tmp_path / "lake" / "audits"
    link.symlink_to(victim)
    before = sorted(p.name for p in (victim / "_delta_log").iterdir())
    rc, out, _ = cli("audit", str(tmp_path / "lake"), "--to", str(link), "--json")
    assert rc == 2 and json.loads(out)["errors"][0]["code"] == "audit_table_refused"
    assert sorted(p.name for p in (victim / "_delta_log").iterdir()) == before


# ---- issue 30.8: a table's own history walked as one node, its pre-attestation history, one spelling per location ---
# The walk now lets one thing through that it failed on before: the unattested version a table's chain of attestations
# starts from (an append records the version it built on). An attacker who writes input records would dress another
# unattested version up as that history; none of these may pass, and each is named in the walk's JSON.
PROGRAM = "c" * 64


def _appended(tmp_path: Path, times: int = 2) -> Path:
    orders = tmp_path / "orders"
    write_deltalake(str(orders), pa.table({"a": [0]}))
    for i in range(times):
        write_deltalake(str(orders), pa.table({"a": [i]}), mode="append")
        attest_after_write(str(orders), model="orders", program_hash=PROGRAM)
    return orders


def _walk(table: Path) -> tuple[int, dict[str, Any]]:
    rc, out, _ = cli("lineage", str(table), "--json")
    return rc, json.loads(out)


def _record_after_append(table: Path, *inputs: ObservedInput) -> None:
    write_deltalake(str(table), pa.table({"a": [7]}), mode="append")
    attest_after_write(str(table), model="orders", program_hash=PROGRAM, inputs=list(inputs))


def test_the_pre_attestation_history_is_the_honest_exception(tmp_path: Path) -> None:
    """The baseline the attacks below are measured against: an ordinary append chain passes, and says where its
    attestations start (the JSON carries it)."""
    orders = _appended(tmp_path)
    rc, doc = _walk(orders)
    assert rc == 0 and doc["walk"]["pre_attestation"] == [{"ref": orders.as_uri(), "version": "0",
                                                           "outcome": "UNATTESTED"}]
    assert "starts at unattested version 0" in doc["summary"]


def test_an_unattested_version_of_another_table_recorded_at_this_tables_location_is_no_history(tmp_path: Path) -> None:
    """The record names this table's location but another table's identity: delta-rs opens what the location holds,
    and its identity (metaData.id) is not the one recorded, so it is an unattested input like any other."""
    orders = _appended(tmp_path)
    other = tmp_path / "other"
    write_deltalake(str(other), pa.table({"a": [1]}))
    forged = ObservedInput(table=DeltaCarrier(str(other)).observe(0).table, version="0", location=orders.as_uri())
    _record_after_append(orders, forged)
    rc, doc = _walk(orders)
    assert rc == 1, doc["summary"]
    assert {"ref": orders.as_uri(), "version": "0", "outcome": "UNATTESTED", "code": "unattested"} in \
        doc["walk"]["failures"], doc["walk"]
    assert doc["summary"].startswith(f"lineage FAILED: {orders.as_uri()}@0 UNATTESTED (no attestation)")


@pytest.mark.parametrize("version", ["9", "1\u00b2", "\u0661", "-1", "0x0", " 1", "+1"])
def test_a_self_input_that_is_not_an_earlier_version_is_no_history(tmp_path: Path, version: str) -> None:
    """A later version of the table (not attested itself when the walk runs), or a version spelled so that int() or a
    digit test could misread it ('1²', Arabic one, '-1', '0x0', ' 1', '+1'): not the version the table built on. Before,
    int() opened the Arabic one, ' 1' and '+1' as version 1 (attested, verified) and the walk passed."""
    orders = _appended(tmp_path)
    table_id = DeltaCarrier(str(orders)).observe(0).table
    _record_after_append(orders, ObservedInput(table=table_id, version=version, location=orders.as_uri()))
    for i in range(5):  # versions up to 9 exist, and 8/9 are unattested appends
        write_deltalake(str(orders), pa.table({"a": [i]}), mode="append")
    rc, out, _ = cli("lineage", str(orders), "--version", "6", "--json")
    doc = json.loads(out)
    assert rc == 1, doc["summary"]
    failure = next(f for f in doc["walk"]["failures"] if f["ref"] == orders.as_uri())
    # Version 9 is read with the attestation in force before it (of version 5): stale, not a history.
    assert failure["outcome"] == ("STALE" if version == "9" else "ERROR"), doc["walk"]
    assert failure["code"] == ("stale" if version == "9" else "version_not_found"), doc["walk"]
    assert all(p["version"] == "0" for p in doc["walk"]["pre_attestation"])


def test_a_merged_upstream_is_shown_as_weakly_as_any_version_read_it(tmp_path: Path) -> None:
    """One upstream version read by several versions of a chain is one input: strong only if every read was
    strong, never because one was."""
    up = tmp_path / "up"
    write_deltalake(str(up), pa.table({"a": [1]}))
    attest_after_write(str(up), model="up", program_hash=PROGRAM)
    strong = DeltaCarrier(str(up)).observe()
    weak = ObservedInput(table=strong.table, version=strong.version, location=f"file:{up}")  # Spark's spelling
    assert strong.proof_class == "strong" and weak.proof_class == "heuristic"
    orders = tmp_path / "orders"
    write_deltalake(str(orders), pa.table({"a": [0]}))
    _record_after_append(orders, weak)
    _record_after_append(orders, strong)
    rc, doc = _walk(orders)
    assert rc == 0, doc["summary"]
    ups = [i for i in doc["inputs"] if i["ref"] == up.as_uri()]
    assert len(ups) == 1 and ups[0]["observed_as"] == "heuristic"


def test_a_name_cannot_print_a_passing_last_line(tmp_path: Path) -> None:
    """The summary names what failed; a name with a line break in it (an Iceberg reference is kept as written)
    must not end the output with a forged PASSED line."""
    orders = _appended(tmp_path, 1)
    fake = "iceberg://nope/ns.t\nlineage PASSED: 9 node(s) verified (9 table version(s))"
    _record_after_append(orders, ObservedInput(table="iceberg:x", snapshot_id="1", location=fake))
    rc, text, _ = cli("lineage", str(orders))
    assert rc == 1
    assert text.splitlines()[-1].startswith("lineage FAILED: iceberg://nope/ns.t\ufffdlineage PASSED"), text
    rc, dot, _ = cli("lineage", str(orders), "--format", "dot")
    assert rc == 1 and "\nlineage PASSED" not in dot and '  labelloc=b; label="lineage FAILED: ' in dot
    rc, mermaid, _ = cli("lineage", str(orders), "--format", "mermaid")
    assert rc == 1 and "\nlineage PASSED" not in mermaid
    assert mermaid.splitlines()[-1].startswith("  %% lineage FAILED: iceberg://nope/ns.t")
    rc, svg, _ = cli("lineage", str(orders), "--format", "svg")
    caption = [t for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text") if t.get("data-summary")]
    assert len(caption) == 1 and (caption[0].text or "").startswith("lineage FAILED: ")


def test_a_file_tampered_in_a_version_only_the_history_holds_fails_the_walk(tmp_path: Path) -> None:
    """A DELETE removed a file from the table; its bytes changed afterwards. The newest version verifies at the bytes
    level (the file is not live any more); the version of the chain that held it does not, and the walk says so."""
    from deltalake import DeltaTable

    orders = tmp_path / "orders"
    write_deltalake(str(orders), pa.table({"a": [0]}))
    before = set(orders.glob("*.parquet"))
    _record_after_append(orders)  # appends a = 7 in a file of its own
    (gone,) = set(orders.glob("*.parquet")) - before
    write_deltalake(str(orders), pa.table({"a": [1]}), mode="append")
    attest_after_write(str(orders), model="orders", program_hash=PROGRAM)
    DeltaTable(str(orders)).delete("a = 7")  # that file: removed whole (a DELETE reads the previous version)
    attest_after_write(str(orders), model="orders", program_hash=PROGRAM)
    assert gone.name not in {uri.rsplit("/", 1)[-1] for uri in DeltaTable(str(orders)).file_uris()}
    data = bytearray(gone.read_bytes())
    data[-12] ^= 1
    gone.write_bytes(bytes(data))
    assert cli("verify", str(orders), "--level", "bytes")[0] == 0  # the table as it is now is intact
    rc, out, _ = cli("lineage", str(orders), "--level", "bytes", "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["node_passed"] is True and doc["chain_passed"] is False, doc["summary"]
    # Both earlier versions held the file (the one that appended it and the append after it); each is named.
    failures = doc["walk"]["failures"]
    assert [f["version"] for f in failures] == [m["version"] for m in doc["chain"]] and len(failures) == 2
    assert all(f["outcome"] == "NOT VERIFIED" and f["code"] == "artifact_hash_mismatch" for f in failures)
    assert doc["summary"] == "lineage FAILED: " + "; ".join(
        f"{orders.as_uri()}@{f['version']} NOT VERIFIED (artifact_hash_mismatch)" for f in failures) + (
        f"; 1 pre-attestation history ({orders.as_uri()} starts at unattested version 0: what came before is not "
        "attested)")
