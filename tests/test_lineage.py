"""`attest lineage`: walking upstream through recorded inputs, with each node checked."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.lineage import walk
from tests.conftest import run_cli


def _pipeline(tmp_path: Path) -> tuple[Path, Path, Path]:
    bronze, raw, silver = tmp_path / "bronze", tmp_path / "raw", tmp_path / "silver"
    write_deltalake(str(bronze), pa.table({"a": [1, 2, 3]}))
    write_deltalake(str(raw), pa.table({"a": [0]}))
    write_deltalake(str(silver), pa.table({"a": [2, 4, 6]}))
    assert run_cli("record", str(bronze), "--model", "bronze", "--sql", "SELECT 1").returncode == 0
    result = run_cli("record", str(silver), "--model", "silver", "--sql", "SELECT a * 2 AS a FROM bronze",
                     "--input", str(bronze), "--input", f"{raw}@0")
    assert result.returncode == 0, result.stderr
    return bronze, raw, silver


def test_lineage_tree_marks_strong_heuristic_and_unattested(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    root = walk(str(silver))
    assert root.attested and root.passed and root.model == "silver" and root.inputs_proof_class == "heuristic"
    by_model = {child.model: child for child in root.inputs}
    assert by_model["bronze"].observed_as == "strong" and by_model["bronze"].passed
    unattested = by_model[None]
    assert unattested.observed_as == "heuristic" and not unattested.attested and unattested.version == "0"


def test_lineage_shows_a_broken_upstream(tmp_path: Path) -> None:
    bronze, _, silver = _pipeline(tmp_path)
    (original,) = bronze.glob("*.parquet")
    write_deltalake(str(bronze), pa.table({"a": [9]}), mode="append")
    # silver observed bronze at version 0, which still verifies by time travel: the walk uses that version.
    root = walk(str(silver))
    bronze_node = next(c for c in root.inputs if c.model == "bronze")
    assert bronze_node.version == "0" and bronze_node.passed
    # Flipping a byte of that version's file breaks it at the bytes level, and the tree says so.
    data = bytearray(original.read_bytes())
    data[-12] ^= 1
    original.write_bytes(bytes(data))
    assert next(c for c in walk(str(silver), level="files").inputs if c.model == "bronze").passed
    broken = next(c for c in walk(str(silver), level="bytes").inputs if c.model == "bronze")
    assert not broken.passed and "artifact_hash_mismatch" in broken.verdict


def test_cli_lineage_text_and_json(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    text = run_cli("lineage", str(silver))
    assert text.returncode == 1  # an upstream is unattested: the chain of evidence is not whole
    assert "ATTESTED ✓ model=silver" in text.stdout and "[read as strong]" in text.stdout
    assert "UNATTESTED" in text.stdout
    tree = json.loads(run_cli("lineage", str(silver), "--json").stdout)
    assert tree["model"] == "silver" and len(tree["inputs"]) == 2
    assert run_cli("lineage", str(tmp_path / "missing")).returncode == 2


# ---- a table's own history: appends, the chain of its versions, the version before its first attestation -------
PROGRAM = "a" * 64


def _appended(tmp_path: Path, times: int, *, spelling: str = "") -> tuple[Path, Path]:
    """``up`` attested once; ``orders`` written, then appended to and recorded ``times`` times (each record lists
    the version it built on and ``up``). ``spelling``: "file:" records through Spark's ``file:/p`` spelling."""
    from carriers.delta.carrier import DeltaCarrier, attest_after_write

    up, orders = tmp_path / "up", tmp_path / "orders"
    write_deltalake(str(up), pa.table({"a": [1]}))
    attest_after_write(str(up), model="up", program_hash=PROGRAM)
    write_deltalake(str(orders), pa.table({"a": [0]}))  # version 0: never attested
    for i in range(times):
        write_deltalake(str(orders), pa.table({"a": [i]}), mode="append")
        attest_after_write(f"{spelling}{orders}", model="orders", program_hash=PROGRAM,
                           inputs=[DeltaCarrier(str(up)).observe()])
    return up, orders


def test_a_table_recorded_after_twelve_appends_is_one_node_with_its_upstream_once(tmp_path: Path) -> None:
    up, orders = _appended(tmp_path, 12)
    proc = run_cli("lineage", str(orders))
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{orders.as_uri()}@1..24 (12 versions): ATTESTED ✓ model=orders")
    assert sum(1 for line in lines if f"{up.as_uri()}@0" in line) == 1  # the real upstream, once
    pre = [line for line in lines if line.strip().startswith(f"{orders.as_uri()}@0 ")]
    assert len(pre) == 1 and "UNATTESTED — pre-attestation history" in pre[0]
    assert "not walked" not in proc.stdout  # the chain is one level: nothing was cut
    assert lines[-1] == ("lineage PASSED: 2 node(s) verified (13 table version(s)); 1 pre-attestation history ("
                         f"{orders.as_uri()} starts at unattested version 0: what came before is not attested)")
    tree = json.loads(run_cli("lineage", str(orders), "--json").stdout)
    assert tree["passed"] is True and tree["version"] == "24" and tree["oldest_version"] == "1"
    assert [m["version"] for m in tree["chain"]] == [str(v) for v in range(21, 0, -2)]
    assert all(m["passed"] for m in tree["chain"]) and tree["chain_passed"] is True
    assert [(i["ref"], i["version"]) for i in tree["inputs"]] == [(up.as_uri(), "0"), (orders.as_uri(), "0")]
    assert tree["inputs"][1]["pre_attestation"] is True and tree["inputs"][1]["outcome"] == "UNATTESTED"
    assert tree["walk"]["pre_attestation"] == [{"ref": orders.as_uri(), "version": "0", "outcome": "UNATTESTED"}]
    assert tree["walk"]["failures"] == [] and tree["walk"]["cut"] is False
    assert tree["summary"] == lines[-1]


def test_the_version_before_the_first_attestation_does_not_fail_the_walk(tmp_path: Path) -> None:
    """Three records: the walk reaches version 0 (which the old walk failed on: exit 1 for an ordinary append)."""
    _, orders = _appended(tmp_path, 3)
    proc = run_cli("lineage", str(orders))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[0].startswith(f"{orders.as_uri()}@1..6 (3 versions)")
    assert "1 pre-attestation history" in proc.stdout.splitlines()[-1]


def _tamper_sidecar(table: Path, version: str) -> None:
    """Change one file hash in the sidecar of the attestation of ``version``: that version alone no longer verifies."""
    (sidecar,) = [p for p in (table / "_recipe_attest").glob("*.json")
                  if json.loads(p.read_text()).get("attested_version") == version]
    doc = json.loads(sidecar.read_text())
    doc["files"][0]["hash"] = "0" * 64
    sidecar.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True))


def test_a_tampered_middle_version_of_the_chain_fails_the_walk_and_is_named(tmp_path: Path) -> None:
    _, orders = _appended(tmp_path, 5)
    _tamper_sidecar(orders, "5")
    assert run_cli("verify", str(orders)).returncode == 0  # the newest version still verifies on its own
    proc = run_cli("lineage", str(orders))
    assert proc.returncode == 1, proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{orders.as_uri()}@") and "ATTESTED ✗" in lines[0]
    assert any(line.strip().startswith("@5: NOT VERIFIED") for line in lines)
    assert lines[-1].startswith(f"lineage FAILED: {orders.as_uri()}@5 NOT VERIFIED (")
    tree = json.loads(run_cli("lineage", str(orders), "--json").stdout)
    assert tree["passed"] is False and tree["node_passed"] is True and tree["chain_passed"] is False
    bad = [m for m in tree["chain"] if not m["passed"]]
    assert [m["version"] for m in bad] == ["5"] and bad[0]["outcome"] == "NOT VERIFIED" and bad[0]["code"]
    assert tree["walk"]["failures"] == [{"ref": orders.as_uri(), "version": "5", "outcome": "NOT VERIFIED",
                                         "code": bad[0]["code"]}]


def test_spark_file_colon_slash_and_delta_rs_file_uris_are_one_table(tmp_path: Path) -> None:
    """Spark names a local table ``file:/p``, delta-rs ``file:///p``: the same table, one node, one chain."""
    from carriers.delta.carrier import DeltaCarrier, attest_after_write

    up, orders = _appended(tmp_path, 3, spelling="file:")
    assert DeltaCarrier(f"file:{orders}").input_location == f"file:{orders}"  # what the records hold
    gold = tmp_path / "gold"
    write_deltalake(str(gold), pa.table({"a": [1]}))
    spark_up = DeltaCarrier(f"file:{up}").observe()
    assert spark_up.location == f"file:{up}"
    attest_after_write(str(gold), model="gold", program_hash=PROGRAM,
                       inputs=[DeltaCarrier(str(orders)).observe(), spark_up])
    proc = run_cli("lineage", str(gold))
    assert proc.returncode == 0, proc.stdout
    assert f"file:{up}" not in proc.stdout.replace("file:///", "") and f"file:{orders}" not in proc.stdout.replace(
        "file:///", "")
    root = walk(str(gold))
    graph = root.graph()
    assert sorted(n.key for n in graph.nodes) == sorted([f"{gold.as_uri()}@1", f"{orders.as_uri()}@5",
                                                        f"{up.as_uri()}@0", f"{orders.as_uri()}@0"])
    orders_node = graph.node(f"{orders.as_uri()}@5")
    assert orders_node.versions == 3 and orders_node.version_label == "v1..v5 (3 versions)"
    assert len([e for e in graph.edges if e.source == f"{up.as_uri()}@0"]) == 2  # read by gold and by orders


def test_an_unattested_different_upstream_still_fails(tmp_path: Path) -> None:
    from carriers.delta.carrier import DeltaCarrier, attest_after_write

    _, orders = _appended(tmp_path, 2)
    raw = tmp_path / "raw"
    write_deltalake(str(raw), pa.table({"a": [1]}))
    write_deltalake(str(raw), pa.table({"a": [2]}), mode="append")
    write_deltalake(str(orders), pa.table({"a": [9]}), mode="append")
    attest_after_write(str(orders), model="orders", program_hash=PROGRAM, inputs=[DeltaCarrier(str(raw)).observe(0)])
    proc = run_cli("lineage", str(orders))
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.splitlines()[-1].startswith(f"lineage FAILED: {raw.as_uri()}@0 UNATTESTED (no attestation)")
    assert "1 pre-attestation history" in proc.stdout.splitlines()[-1]  # orders' own version 0 is still not one


def _tables(tmp_path: Path, names: str) -> list[Path]:
    """A line of tables, each recorded as reading the one before: a -> b -> c -> ..."""
    from carriers.delta.carrier import DeltaCarrier, attest_after_write

    out: list[Path] = []
    for name in names:
        path = tmp_path / name
        write_deltalake(str(path), pa.table({"a": [1]}))
        inputs = [DeltaCarrier(str(out[-1])).observe()] if out else []
        attest_after_write(str(path), model=name, program_hash=PROGRAM, inputs=inputs)
        out.append(path)
    return out


def test_the_depth_cut_is_shown_and_said(tmp_path: Path) -> None:
    _, b, c, d = _tables(tmp_path, "abcd")
    whole = run_cli("lineage", str(d))
    assert whole.returncode == 0 and "not walked" not in whole.stdout and "walk cut" not in whole.stdout
    proc = run_cli("lineage", str(d), "--depth", "1")
    assert proc.returncode == 0, proc.stdout  # a cut is not a failure; it is said
    lines = proc.stdout.splitlines()
    assert f"{c.as_uri()}@0" in proc.stdout and f"{b.as_uri()}" not in proc.stdout
    assert "    … 1 input(s) not walked (--depth 1)" in lines
    assert lines[-1] == ("lineage PASSED: 2 node(s) verified (2 table version(s)); walk cut at --depth 1: "
                         "1 input(s) not walked")
    tree = json.loads(run_cli("lineage", str(d), "--depth", "1", "--json").stdout)
    assert tree["walk"]["cut"] is True and tree["walk"]["not_walked"] == 1 and tree["walk"]["depth_limit"] == 1
    assert tree["inputs"][0]["not_walked"] == 1 and tree["inputs"][0]["inputs"] == []
    zero = run_cli("lineage", str(d), "--depth", "0")
    assert zero.returncode == 0 and zero.stdout.splitlines()[-2] == "  … 1 input(s) not walked (--depth 0)"


def test_an_iceberg_table_appended_and_recorded_is_one_node_too(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Iceberg snapshot ids are not ordered: the chain follows a snapshot's ancestors, and the first (unattested)
    snapshot is the table's pre-attestation history."""
    import pyiceberg.catalog
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.utils.config import Config

    from carriers.iceberg.carrier import IcebergCarrier
    from tests.iceberg.conftest import CATALOG, catalog_properties, rows

    props = catalog_properties(tmp_path)
    for key, value in (("TYPE", "sql"), ("URI", props["uri"]), ("WAREHOUSE", props["warehouse"])):
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key}", value)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **props)
    catalog.create_namespace("ns")
    catalog.create_table("ns.t", schema=rows(0).schema).append(rows(0))  # the first snapshot: never attested
    first = catalog.load_table("ns.t").current_snapshot()
    assert first is not None
    for i in range(4):
        catalog.load_table("ns.t").append(rows(10 * (i + 1)))
        IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG).record(model="t", program_hash=PROGRAM)
    root = walk(f"iceberg://{CATALOG}/ns.t")
    assert not root.failed(), "\n".join(root.lines())
    current = catalog.load_table("ns.t").current_snapshot()
    assert current is not None and root.version == str(current.snapshot_id) and len(root.chain) == 3
    assert all(m.passed and m.outcome == "VERIFIED" for m in root.chain)
    (before,) = root.inputs
    assert before.pre_attestation and before.version == str(first.snapshot_id) and before.outcome == "UNATTESTED"
    span = f"{root.chain[-1].version}..{root.version}"
    assert root.lines()[0].startswith(f"iceberg://{CATALOG}/ns.t@{span} (4 snapshots): ATTESTED ✓")
    assert root.graph().nodes[0].version_label == f"snapshots {span} (4)"
    assert root.summary().startswith("lineage PASSED: 1 node(s) verified (4 table version(s)); 1 pre-attestation")


def test_a_stream_fed_table_is_one_node_with_each_streaming_source_once(tmp_path: Path) -> None:
    """Every micro-batch of a streaming query is a version attested detached with its source's offset range
    (docs/streaming.md): the walk shows the table once with its version range, and the source once — not one
    leaf per batch."""
    from attest.identity.inputs import ObservedInput
    from carriers.delta.carrier import DeltaCarrier

    table = tmp_path / "bronze"
    source = "stream:RateStreamV2[rowsPerSecond=5, rampUpTimeSeconds=0, numPartitions=default"
    for batch in range(4):
        write_deltalake(str(table), pa.table({"a": [batch]}), mode="append")
        rate = ObservedInput(table=source, watermark=f"offsets {batch * 10} -> {batch * 10 + 10}")
        DeltaCarrier(str(table), detached=True).record(model="bronze", program_hash="ab" * 32, inputs=[rate],
                                                      version=batch)
    proc = run_cli("lineage", str(table))
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{table.as_uri()}@0..3 (4 versions): ATTESTED ✓ model=bronze"), proc.stdout
    assert sum(1 for line in lines if source in line) == 1, proc.stdout


def test_lineage_after_a_compaction_shows_the_real_producer(tmp_path: Path) -> None:
    """silver is OPTIMIZEd and recorded again (issue 32): the carry-forward attestation keeps silver's model,
    program and inputs, so the walk still shows the job that produced the rows and its upstream bronze."""
    from deltalake import DeltaTable

    _, _, silver = _pipeline(tmp_path)
    write_deltalake(str(silver), pa.table({"a": [8]}), mode="append")
    assert run_cli("record", str(silver), "--model", "silver", "--sql", "SELECT a * 2 AS a FROM bronze",
                   "--input", str(tmp_path / "bronze"), "--input", f"{tmp_path / 'raw'}@0").returncode == 0
    DeltaTable(str(silver)).optimize.compact()
    result = run_cli("record", str(silver), "--model", "optimize", "--sql", "OPTIMIZE silver", "--json")
    assert result.returncode == 0, result.stderr
    recorded = json.loads(result.stdout)
    assert recorded["continues"] and recorded["manifest"]["subject"]["model"] == "silver", recorded
    root = walk(str(silver))
    assert root.attested and root.passed and root.model == "silver", root
    assert {child.model for child in root.inputs} >= {"bronze"}
