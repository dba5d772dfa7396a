"""Table carriers read as a third party reads them (issue 10, (a) and (c)).

(c) The reference's own property convention (tests/conformance/reference.py) reconstitutes a schema-valid manifest —
    accepted by rocky-verify — from the Delta properties and Iceberg summaries we write, equal to our manifest
    without its file list (the convention has no lists).
(a) Every manifest our table carriers produce (``attest show``, with its file list) gets the same verdict from
    rocky-verify as from ``attest verify``, at schema level and at bytes level against the table's files.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from carriers import properties as props
from carriers.delta.carrier import attest_after_write as attest_delta
from tests.conformance.reference import naive_properties_reader, rocky_verify

pytestmark = pytest.mark.usefixtures("reference_built")
PROGRAM = "a" * 64


def _ours(*args: str) -> int:
    with redirect_stdout(io.StringIO()):
        return main(list(args))


def _same_verdicts(manifest: dict[str, Any], tmp_path: Path, artifacts: Path | None = None) -> None:
    """Both verifiers on the same manifest. Table files live in partition folders, which the reference does not
    search (it looks up base names and hashes; ours tries the recorded path first — docs/conformance.md), so the
    bytes are given to both as an export bundle would hold them: one flat folder."""
    import shutil

    path = tmp_path / "m.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    if artifacts is not None:
        flat = tmp_path / "bundle"
        shutil.rmtree(flat, ignore_errors=True)
        flat.mkdir()
        for entry in manifest.get("output_hashes") or []:
            source = artifacts / entry["path"]
            if source.is_file():
                shutil.copyfile(source, flat / Path(entry["path"]).name)
        artifacts = flat
    extra = [] if artifacts is None else ["--artifacts-dir", str(artifacts)]
    theirs, text = rocky_verify(path, artifacts)
    assert theirs == _ours("verify", str(path), *extra), text


def _naive(keys: dict[str, str], ours: dict[str, Any], tmp_path: Path) -> None:
    manifest = naive_properties_reader(keys)
    assert manifest == {k: v for k, v in ours.items() if k != "output_hashes"}
    path = tmp_path / "naive.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    code, text = rocky_verify(path)
    assert code == 0, text


@pytest.mark.parametrize("partitioned", [False, True])
def test_delta_properties_read_by_the_reference_convention(tmp_path: Path, partitioned: bool) -> None:
    table = tmp_path / "t"
    data = pa.table({"p": ["a b", "x/y", None], "v": [1, 2, 3]})
    write_deltalake(str(table), data, partition_by=["p"] if partitioned else None)
    up = tmp_path / "up"
    write_deltalake(str(up), pa.table({"v": [1]}))
    attest_delta(str(up), model="up", program_hash=PROGRAM)
    from carriers.delta.carrier import DeltaCarrier

    result = attest_delta(str(table), model="orders", program_hash=PROGRAM, inputs=[DeltaCarrier(str(up)).observe()])
    assert result.manifest is not None
    ours = result.manifest.to_dict()
    _naive(DeltaTable(str(table)).metadata().configuration, ours, tmp_path)
    # (a) the full manifest: schema level, then bytes against the table folder (partition paths).
    _same_verdicts(ours, tmp_path)
    _same_verdicts(ours, tmp_path, artifacts=table)
    # A tampered file: both say no.
    victim = next(p for p in table.rglob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:-1] + b"\x01")
    _same_verdicts(ours, tmp_path, artifacts=table)


def test_a_reattestation_leaves_nothing_the_convention_would_misread(tmp_path: Path) -> None:
    """A later attestation without inputs removes (never blanks) the older inputs_hash."""
    from attest.identity.inputs import ObservedInput

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"v": [1]}))
    attest_delta(str(table), model="orders", program_hash=PROGRAM, inputs=[ObservedInput("delta:x", version="1")])
    second = attest_delta(str(table), model="orders", program_hash=PROGRAM, replace=True)
    assert second.manifest is not None and second.manifest.inputs_hash is None
    _naive(DeltaTable(str(table)).metadata().configuration, second.manifest.to_dict(), tmp_path)


def test_a_carry_forward_attestation_is_a_manifest_the_reference_accepts(tmp_path: Path) -> None:
    """After OPTIMIZE, record carries the attestation forward (issue 32): the same manifest but its file list, which
    the reference verifier accepts at schema and bytes level, as ours does; the properties read by its convention."""
    from carriers.delta.carrier import DeltaCarrier

    table = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(table), pa.table({"p": ["a", "b"], "v": [i, i + 1]}), mode="append", partition_by=["p"])
    first = attest_delta(str(table), model="orders", program_hash=PROGRAM)
    DeltaTable(str(table)).optimize.compact()
    carried = DeltaCarrier(str(table)).record(model="ignored", program_hash="b" * 64)
    assert carried.continues is not None and carried.manifest is not None and first.manifest is not None
    ours = carried.manifest.to_dict()
    assert {k: v for k, v in ours.items() if k != "output_hashes"} == \
        {k: v for k, v in first.manifest.to_dict().items() if k != "output_hashes"}
    _naive(DeltaTable(str(table)).metadata().configuration, ours, tmp_path)
    _same_verdicts(ours, tmp_path)
    _same_verdicts(ours, tmp_path, artifacts=table)


def test_iceberg_summaries_read_by_the_reference_convention(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import attest_after_write as attest_iceberg

    (tmp_path / "wh").mkdir()
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("v", pa.int64())]))
    table.append(pa.table({"v": [1, 2]}))
    table.append(pa.table({"v": [3]}))
    result = attest_iceberg(table, model="orders", program_hash=PROGRAM)
    assert result.manifest is not None
    summary = dict(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    assert any(k.startswith(props.CARRIER_PREFIX) for k in summary)
    _naive(summary, result.manifest.to_dict(), tmp_path)
    _same_verdicts(result.manifest.to_dict(), tmp_path)
    _same_verdicts(result.manifest.to_dict(), tmp_path, artifacts=Path(table.location()[len("file://"):]))


@pytest.mark.spark
def test_spark_written_tables_read_by_the_reference(spark: Any, spark_warehouse: Path, tmp_path: Path) -> None:
    import uuid

    from attest.spark import install
    from carriers.refs import open_table, parse_ref

    hook = install(spark, policy="required")
    try:
        name = f"conf_{uuid.uuid4().hex[:8]}"
        spark.sql(f"CREATE TABLE {name} (id INT, p STRING) USING delta PARTITIONED BY (p)")
        spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b c')")
        ns = f"conf{uuid.uuid4().hex[:6]}"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
        spark.sql(f"CREATE TABLE iceberg.{ns}.t USING iceberg AS SELECT * FROM {name}")
        hook.flush()
        assert hook.failed == 0, hook.errors
    finally:
        hook.uninstall()
    location = str(spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"])
    path = location[len("file:"):] if location.startswith("file:") else location
    delta = open_table(parse_ref(path))
    att = delta.read()
    assert att is not None
    _naive(DeltaTable(path).metadata().configuration, att.document, tmp_path)
    _same_verdicts(att.document, tmp_path, artifacts=Path(path))
    from tests.spark.test_hook import _attest

    shown = _attest("show", f"iceberg://iceberg/{ns}.t", warehouse=spark_warehouse)
    assert shown.returncode == 0, shown.stderr
    _same_verdicts(json.loads(shown.stdout), tmp_path)
