"""OpenLineage events as evidence: `attest record --openlineage-events FILE` turns the input datasets of real
openlineage-spark output into observed inputs — strong when they resolve to an attested table version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import OpenLineageError
from attest.openlineage.evidence import read_events
from attest.openlineage.naming import dataset_name, location_of
from tests.openlineage.conftest import Endpoint
from tests.openlineage.spec import validate_event

FIXTURE = Path(__file__).parent / "fixtures" / "openlineage-spark-1.53.0.jsonl"


def attest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _events(tmp_path: Path, warehouse: Path) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text(FIXTURE.read_text().replace("@WAREHOUSE@", str(warehouse)))
    return path


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """The demo's Delta tables where the listener saw them, bronze attested at version 0."""
    wh = tmp_path / "wh"
    tables = wh / "spark-warehouse"
    write_deltalake(str(tables / "bronze_orders"), pa.table({"id": [1, 2, 3], "amount": [10.0, 20.5, 7.25]}))
    write_deltalake(str(tables / "silver_orders"), pa.table({"id": [1, 2, 3], "amount": [10.0, 20.5, 7.25]}))
    assert attest("record", str(tables / "bronze_orders"), "--model", "bronze", "--sql", "SELECT 1",
                  cwd=tmp_path).returncode == 0
    return wh


def _inputs(table: Path, cwd: Path) -> list[dict[str, Any]]:
    proc = attest("show", str(table), "--inputs", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    inputs: list[dict[str, Any]] = json.loads(proc.stdout)
    return inputs


def test_the_real_listener_output_is_valid_openlineage(tmp_path: Path) -> None:
    for line in _events(tmp_path, tmp_path).read_text().splitlines():
        validate_event(json.loads(line))  # the validator accepts what a real producer writes


def test_an_attested_input_read_by_the_spark_job_becomes_strong(warehouse: Path, tmp_path: Path) -> None:
    silver = warehouse / "spark-warehouse" / "silver_orders"
    proc = attest("record", str(silver), "--model", "silver_orders", "--sql", "SELECT 1",
                  "--openlineage-events", str(_events(tmp_path, warehouse)), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["manifest"]["inputs_proof_class"] == "strong"
    (bronze,) = _inputs(silver, tmp_path)  # silver itself (read by the gold job) is the target: skipped
    assert bronze["proof_class"] == "strong" and bronze["version"] == "0"
    assert dataset_name(bronze["location"]) == dataset_name(str(warehouse / "spark-warehouse" / "bronze_orders"))
    # The lineage walk now goes through the evidence the events gave.
    walked = json.loads(attest("lineage", str(silver), "--json", cwd=tmp_path).stdout)
    assert walked["passed"] is True and walked["inputs"][0]["model"] == "bronze"


def test_an_unattested_input_is_heuristic(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    tables = wh / "spark-warehouse"
    for name in ("bronze_orders", "silver_orders"):
        write_deltalake(str(tables / name), pa.table({"id": [1]}))
    proc = attest("record", str(tables / "silver_orders"), "--model", "s", "--sql", "SELECT 1",
                  "--openlineage-events", str(_events(tmp_path, wh)), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (bronze,) = _inputs(tables / "silver_orders", tmp_path)
    assert bronze["proof_class"] == "heuristic" and bronze["version"] == "0"


def _write_events(path: Path, inputs: list[dict[str, Any]], event_type: str = "COMPLETE",
                  run_id: str = "01a22dc4-63ce-7a66-9344-71a7d1e18317") -> Path:
    event = {"eventTime": "2026-01-01T00:00:00Z", "eventType": event_type, "producer": "https://example.invalid/x",
             "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
             "run": {"runId": run_id}, "job": {"namespace": "n", "name": "j"}, "inputs": inputs, "outputs": []}
    with path.open("a") as handle:
        handle.write(json.dumps(event) + "\n")
    return path


def _version(v: str) -> dict[str, Any]:
    return {"version": {"_producer": "https://example.invalid/x", "_schemaURL": "https://x/y#z", "datasetVersion": v}}


def test_what_cannot_be_resolved_is_recorded_as_stated(warehouse: Path, tmp_path: Path) -> None:
    tables = warehouse / "spark-warehouse"
    events = _write_events(tmp_path / "e.jsonl", [
        {"namespace": "file", "name": str(tables / "bronze_orders")},  # no version: what was read is unknown
        {"namespace": "file", "name": str(tmp_path / "landing.csv"), "facets": _version("3")},  # not a table
        {"namespace": "postgres://db:5432", "name": "shop.public.orders", "facets": _version("7")},
        {"namespace": "file", "name": str(tables / "bronze_orders"), "facets": _version("99")},  # no such version
    ])
    proc = attest("record", str(tables / "silver_orders"), "--model", "s", "--sql", "SELECT 1",
                  "--openlineage-events", str(events), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = {i.get("location") or i.get("name"): i for i in _inputs(tables / "silver_orders", tmp_path)}
    assert all(i["proof_class"] == "heuristic" for i in got.values())
    assert got[str(tmp_path / "landing.csv")]["table"].startswith("path:")
    assert got["postgres://db:5432/shop.public.orders"]["table"] == "openlineage:postgres://db:5432/shop.public.orders"
    bronze = [i for i in got.values() if i["table"] == f"path:{tables / 'bronze_orders'}"]
    assert {i.get("version") for i in bronze} == {"99"}  # the version-less sighting is redundant next to it


def test_a_version_less_dataset_is_heuristic_by_event_time(warehouse: Path, tmp_path: Path) -> None:
    tables = warehouse / "spark-warehouse"
    events = _write_events(tmp_path / "e.jsonl", [{"namespace": "file", "name": str(tables / "bronze_orders")}])
    assert attest("record", str(tables / "silver_orders"), "--model", "s", "--sql", "SELECT 1",
                  "--openlineage-events", str(events), cwd=tmp_path).returncode == 0
    (bronze,) = _inputs(tables / "silver_orders", tmp_path)
    assert bronze["proof_class"] == "heuristic" and bronze["watermark"] == "openlineage-event:2026-01-01T00:00:00Z"


def test_failed_runs_are_no_evidence() -> None:
    ok = {"run": {"runId": "a"}, "job": {}, "eventType": "COMPLETE",
          "inputs": [{"namespace": "file", "name": "/ok", "facets": _version("1")}]}
    failed = [{"run": {"runId": "b"}, "job": {}, "eventType": "START",
               "inputs": [{"namespace": "file", "name": "/bad", "facets": _version("1")}]},
              {"run": {"runId": "b"}, "job": {}, "eventType": "FAIL", "inputs": []}]
    data = "\n".join(json.dumps(e) for e in (ok, *failed)).encode()
    assert [(d.name, d.version) for d in read_events(data, "e")] == [("/ok", "1")]


@pytest.mark.parametrize("content", [b"", b"not json\n", b'{"run": {}, "job": {}}\n{"a": 1, "a": 2}\n', b"[1, 2]",
                                     b'{"eventType": "COMPLETE"}'])
def test_malformed_event_files_are_coded(content: bytes, tmp_path: Path) -> None:
    with pytest.raises(OpenLineageError):
        read_events(content, "e")
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1]}))
    (tmp_path / "e.jsonl").write_bytes(content)
    proc = attest("record", str(table), "--model", "m", "--sql", "SELECT 1", "--openlineage-events",
                  str(tmp_path / "e.jsonl"), "--json", cwd=tmp_path)
    assert proc.returncode == 2 and json.loads(proc.stdout)["errors"][0]["code"] == "openlineage_events_invalid"
    assert attest("verify", str(table), cwd=tmp_path).returncode == 1  # nothing was recorded


def test_a_missing_events_file_is_coded(tmp_path: Path) -> None:
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"a": [1]}))
    proc = attest("record", str(table), "--model", "m", "--sql", "SELECT 1", "--openlineage-events",
                  str(tmp_path / "absent.jsonl"), cwd=tmp_path)
    assert proc.returncode == 2 and "openlineage_events_invalid" in proc.stderr and "Traceback" not in proc.stderr


def test_our_own_events_round_trip_through_the_naming(warehouse: Path, tmp_path: Path, ol_env: dict[str, str],
                                                      endpoint: Endpoint) -> None:
    """What `record --openlineage` emits for an input names the same table `--openlineage-events` resolves."""
    tables = warehouse / "spark-warehouse"
    env = {**ol_env, "OPENLINEAGE_URL": endpoint.url}
    proc = subprocess.run([sys.executable, "-m", "attest.cli", "record", str(tables / "silver_orders"), "--model",
                           "s", "--sql", "SELECT 1", "--input", str(tables / "bronze_orders"), "--openlineage"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (event,) = endpoint.events
    gold = tmp_path / "gold"
    write_deltalake(str(gold), pa.table({"a": [1]}))
    events = tmp_path / "ours.jsonl"
    events.write_text(json.dumps(event) + "\n")
    assert attest("record", str(gold), "--model", "g", "--sql", "SELECT 1", "--openlineage-events", str(events),
                  cwd=tmp_path).returncode == 0
    (bronze,) = _inputs(gold, tmp_path)
    assert bronze["proof_class"] == "strong"


@pytest.mark.parametrize("location", ["/data/lake/orders", "s3://bucket/lake/orders", "s3a://bucket/lake/orders",
                                      "gs://b/t", "abfss://c@acct.dfs.core.windows.net/t", "hdfs://nn:8020/w/t",
                                      "iceberg://cat/ns.orders"])
def test_naming_round_trips(location: str) -> None:
    name = dataset_name(location)
    back = location_of(name.namespace, name.name)
    assert back is not None and dataset_name(back) == name
    if location.startswith("s3a"):
        assert name.namespace == "s3://bucket"


@pytest.mark.parametrize("namespace,name", [("file", "relative/path"), ("postgres://h:1", "db.t"), ("kafka://b", "t"),
                                            ("file", "/a\x00b"), ("iceberg://", "ns.t"), ("iceberg://c/x", "ns.t"),
                                            ("s3://bucket/extra", "k")])
def test_names_that_are_no_table_location(namespace: str, name: str) -> None:
    assert location_of(namespace, name) is None
