"""OpenLineage events from `attest record` and the Spark hook: valid under the spec's schemas, received over HTTP,
one per attestation, off by default, never able to undo an attestation."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.canonical import canonical_bytes, digest
from attest.openlineage.event import RUN_NAMESPACE, run_uuid
from attest.tables import attestation_identity
from tests.openlineage.conftest import Endpoint
from tests.openlineage.spec import validate_event

ROOT = Path(__file__).resolve().parents[2]


def attest(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def chain(tmp_path: Path, ol_env: dict[str, str]) -> tuple[Path, Path]:
    """bronze (attested) and silver (written, not yet attested), local Delta tables."""
    bronze, silver = tmp_path / "lake" / "bronze", tmp_path / "lake" / "silver"
    write_deltalake(str(bronze), pa.table({"a": [1, 2, 3]}))
    write_deltalake(str(silver), pa.table({"a": [2, 4, 6]}))
    assert attest("record", str(bronze), "--model", "bronze", "--sql", "SELECT 1", env=ol_env,
                  cwd=tmp_path).returncode == 0
    return bronze, silver


def _record_silver(chain: tuple[Path, Path], env: dict[str, str], cwd: Path, *extra: str) -> dict[str, Any]:
    bronze, silver = chain
    proc = attest("record", str(silver), "--model", "silver", "--sql", "SELECT a * 2 FROM bronze", "--input",
                  str(bronze), "--run-id", "nightly-42", "--json", *extra, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)  # one object, whatever the transport printed elsewhere
    return result


def test_record_emits_one_valid_event_over_http(chain: tuple[Path, Path], ol_env: dict[str, str],
                                                endpoint: Endpoint, tmp_path: Path) -> None:
    bronze, silver = chain
    result = _record_silver(chain, {**ol_env, "OPENLINEAGE_URL": endpoint.url}, tmp_path, "--openlineage")
    assert len(endpoint.events) == 1 and endpoint.paths == ["/api/v1/lineage"]
    event = endpoint.events[0]
    validate_event(event)
    manifest = result["manifest"]
    assert event["eventType"] == "COMPLETE"
    assert event["job"] == {"namespace": "recipe-attest", "name": "silver", "facets": event["job"].get("facets", {})}
    assert event["run"]["runId"] == run_uuid("recipe-attest", "silver", "nightly-42") == \
        result["openlineage"]["run_id"]
    assert result["openlineage"]["emitted"] is True and result["openlineage"]["transport"] == "http"
    (read,) = event["inputs"]
    assert (read["namespace"], read["name"]) == ("file", str(bronze))
    assert read["facets"]["version"]["datasetVersion"] == "0"  # the exact version silver's run read
    assert read["facets"]["storage"]["storageLayer"] == "delta"
    (output,) = event["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(silver))
    assert output["facets"]["version"]["datasetVersion"] == result["attested_version"]
    facet = output["facets"]["attestation"]
    assert facet["_schemaURL"].endswith("AttestationDatasetFacet.json#/$defs/AttestationDatasetFacet")
    assert facet["manifestIdentity"] == attestation_identity(manifest)
    for ours, theirs in (("programHash", "program_hash"), ("envHash", "env_hash"), ("inputsHash", "inputs_hash"),
                         ("inputsProofClass", "inputs_proof_class")):
        assert facet[ours] == manifest[theirs]
    assert facet["runId"] == "nightly-42" and facet["model"] == "silver" and facet["tableFormat"] == "delta"
    assert facet["sidecar"] == result["sidecar"] and Path(facet["sidecar"]).is_file()
    # A consumer recomputes inputsHash from the facet alone, as docs/identities.md defines it.
    docs = {canonical_bytes(i["identity"]): i["identity"] for i in facet["inputs"]}
    assert digest({"inputs": [docs[k] for k in sorted(docs)]}) == facet["inputsHash"]
    assert [i["proofClass"] for i in facet["inputs"]] == ["strong"]


def test_off_by_default(chain: tuple[Path, Path], ol_env: dict[str, str], endpoint: Endpoint, tmp_path: Path) -> None:
    result = _record_silver(chain, {**ol_env, "OPENLINEAGE_URL": endpoint.url}, tmp_path)
    assert endpoint.events == [] and "openlineage" not in result


def test_one_switch_in_the_environment_and_the_job_namespace(chain: tuple[Path, Path], ol_env: dict[str, str],
                                                            endpoint: Endpoint, tmp_path: Path) -> None:
    env = {**ol_env, "OPENLINEAGE_URL": endpoint.url, "ATTEST_OPENLINEAGE": "1", "OPENLINEAGE_NAMESPACE": "prod"}
    _record_silver(chain, env, tmp_path)
    (event,) = endpoint.events
    validate_event(event)
    assert event["job"]["namespace"] == "prod" and event["run"]["runId"] == run_uuid("prod", "silver", "nightly-42")


def test_run_ids_are_uuids_derived_deterministically() -> None:
    first = run_uuid("ns", "silver", "run-1")
    assert first == run_uuid("ns", "silver", "run-1") and uuid.UUID(first).version == 5
    assert len({first, run_uuid("ns", "gold", "run-1"), run_uuid("ns", "silver", "run-2"),
                run_uuid("other", "silver", "run-1")}) == 4
    assert first == str(uuid.uuid5(RUN_NAMESPACE, "ns\nsilver\nrun-1"))  # as docs/lineage.md states it


@pytest.mark.parametrize("backend", ["status 500", "closed port"])
def test_a_failed_emit_never_undoes_the_attestation(chain: tuple[Path, Path], ol_env: dict[str, str],
                                                     endpoint: Endpoint, tmp_path: Path, backend: str) -> None:
    bronze, silver = chain
    url = endpoint.url
    if backend == "status 500":
        endpoint.status = 500
    else:
        import socket

        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{s.getsockname()[1]}"
    # The HTTP transport set by OpenLineage's own variables (OPENLINEAGE_URL takes no retry settings): its urllib3
    # retries all run and fail, with no backoff between them (the default backoff slept ~10 s per emit).
    env = {**ol_env, "OPENLINEAGE__TRANSPORT__TYPE": "http", "OPENLINEAGE__TRANSPORT__URL": url,
           "OPENLINEAGE__TRANSPORT__TIMEOUT": "5", "OPENLINEAGE__TRANSPORT__RETRY__BACKOFF_FACTOR": "0"}
    result = _record_silver(chain, env, tmp_path, "--openlineage")
    assert result["recorded"] is True and result["openlineage"]["emitted"] is False
    assert result["openlineage"]["errors"][0]["code"] == "openlineage_emit_failed"
    assert backend != "status 500" or endpoint.events  # the backend was reached, and failed
    assert attest("verify", str(silver), env=ol_env, cwd=tmp_path).returncode == 0
    text = attest("record", str(silver), "--model", "silver", "--sql", "SELECT 2", "--input", str(bronze),
                  "--openlineage", "--replace", env=env, cwd=tmp_path)
    assert text.returncode == 0 and text.stdout.startswith("RECORDED")
    assert "openlineage_emit_failed" in text.stderr and "the attestation stands" in text.stderr


def test_transports_come_from_openlineage_yml(chain: tuple[Path, Path], ol_env: dict[str, str],
                                              tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    (tmp_path / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {events}\n  append: true\n")
    _record_silver(chain, ol_env, tmp_path, "--openlineage")
    lines = events.read_text().splitlines()
    assert len(lines) == 1
    validate_event(json.loads(lines[0]))


def test_console_transport_prints_to_stderr_and_json_stays_one_object(chain: tuple[Path, Path],
                                                                      ol_env: dict[str, str], tmp_path: Path) -> None:
    bronze, silver = chain
    proc = attest("record", str(silver), "--model", "silver", "--sql", "SELECT 1", "--input", str(bronze),
                  "--json", "--openlineage", env={**ol_env, "OPENLINEAGE__TRANSPORT__TYPE": "console"}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["openlineage"]["transport"] == "console"
    printed = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert len(printed) == 1
    validate_event(printed[0])


def test_an_iceberg_output_is_named_by_location_with_its_catalog_name(tmp_path: Path, ol_env: dict[str, str],
                                                                      endpoint: Endpoint) -> None:
    from pyiceberg.catalog import load_catalog

    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    conf = {"type": "sql", "uri": f"sqlite:///{warehouse}/catalog.db", "warehouse": warehouse.as_uri()}
    env = {**ol_env, "OPENLINEAGE_URL": endpoint.url,
           **{f"PYICEBERG_CATALOG__DEMO__{k.upper()}": v for k, v in conf.items()}}
    catalog = load_catalog("demo", **conf)
    catalog.create_namespace("sales")
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    catalog.create_table("sales.orders", schema=rows.schema).append(rows)
    catalog.create_table("sales.summary", schema=rows.schema).append(rows)
    assert attest("record", "iceberg://demo/sales.orders", "--model", "orders", "--sql", "SELECT 1", env=env,
                  cwd=tmp_path).returncode == 0
    proc = attest("record", "iceberg://demo/sales.summary", "--model", "summary", "--sql", "SELECT 1", "--input",
                  "iceberg://demo/sales.orders", "--openlineage", "--json", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    (event,) = endpoint.events
    validate_event(event)
    summary, orders = catalog.load_table("sales.summary"), catalog.load_table("sales.orders")
    (output,) = event["outputs"]
    assert (output["namespace"], output["name"]) == ("file", summary.location().removeprefix("file://"))
    assert output["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "iceberg://demo", "name": "sales.summary", "type": "TABLE"}]
    assert output["facets"]["version"]["datasetVersion"] == result["attested_version"]
    assert output["facets"]["storage"]["storageLayer"] == "iceberg"
    (read,) = event["inputs"]
    assert (read["namespace"], read["name"]) == ("file", orders.location().removeprefix("file://"))
    assert read["facets"]["symlinks"]["identifiers"][0]["name"] == "sales.orders"
    assert output["facets"]["attestation"]["inputsProofClass"] == "strong"


def test_hostile_table_names_still_make_valid_events(tmp_path: Path, ol_env: dict[str, str],
                                                     endpoint: Endpoint) -> None:
    table = tmp_path / 'we"ird <name> & ü'
    write_deltalake(str(table), pa.table({"a": [1]}))
    proc = attest("record", str(table), "--model", 'm"<\u202e>', "--sql", "SELECT 1", "--openlineage", "--json",
                  env={**ol_env, "OPENLINEAGE_URL": endpoint.url}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (event,) = endpoint.events
    validate_event(event)
    assert event["outputs"][0]["name"] == str(table) and event["job"]["name"] == 'm"<\u202e>'


@pytest.mark.spark
@pytest.mark.slow
def test_the_spark_hook_emits_one_event_per_attestation(spark: Any, spark_warehouse: Path, endpoint: Endpoint,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.spark import install

    for key in [k for k in __import__("os").environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("OPENLINEAGE_URL", endpoint.url)
    uid = uuid.uuid4().hex[:8]
    hook = install(spark, openlineage=True, run_id=f"spark-{uid}")
    try:
        spark.createDataFrame([(1, "eu", 10.0), (2, "us", 20.5)], "id int, region string, amount double") \
            .write.format("delta").saveAsTable(f"ol_bronze_{uid}")
        spark.sql(f"CREATE TABLE ol_silver_{uid} USING delta AS SELECT id, upper(region) AS region, amount "
                  f"FROM ol_bronze_{uid}")
        spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.ol")
        spark.sql(f"CREATE TABLE iceberg.ol.gold_{uid} USING iceberg AS SELECT region, sum(amount) AS revenue "
                  f"FROM ol_silver_{uid} GROUP BY region")
        hook.flush()
    finally:
        hook.uninstall()
    assert hook.attested == 3 and [e.emitted for e in hook.emitted] == [True, True, True], hook.errors
    assert len(endpoint.events) == 3
    for event in endpoint.events:
        validate_event(event)
    by_job = {e["outputs"][0]["facets"]["attestation"]["table"].rsplit("/", 1)[-1]: e for e in endpoint.events}
    gold = by_job[f"ol.gold_{uid}"]
    (read,) = gold["inputs"]
    assert read["name"].endswith(f"ol_silver_{uid}") and read["facets"]["version"]["datasetVersion"] == "0"
    assert gold["outputs"][0]["facets"]["symlinks"]["identifiers"][0]["namespace"] == "iceberg://iceberg"
    assert gold["outputs"][0]["facets"]["attestation"]["inputsProofClass"] == "strong"
    assert len({e["run"]["runId"] for e in endpoint.events}) == 3  # one run per job, from one Spark run id


def test_without_the_extra_the_event_is_reported_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.openlineage.emit import emit
    from attest.openlineage.event import AttestedRun

    monkeypatch.setitem(sys.modules, "openlineage", None)
    emitted = emit(AttestedRun(document={}, manifest_identity="0" * 64, table="/t", table_format="delta",
                               location="/t", attested_version="0", sidecar="/t/_recipe_attest/x.json"))
    assert not emitted.emitted and emitted.problem is not None and emitted.problem.code.value == "extra_missing"
