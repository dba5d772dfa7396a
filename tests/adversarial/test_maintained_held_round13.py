"""Attacks on attestations through maintenance tried in round 13c that held (carry-forward chains, mixed histories,
disguised deletes): pinned so that they keep holding. The one that did not hold — a signed carry-forward laundering an
unsigned continued attestation — is tests/adversarial/test_carry_forward_signature.py."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from attest.errors import CarrierError
from attest.signing.keys import PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.delta.dv import add_deletion_vector

KEY = generate_keypair("ed25519")
OTHER_PROGRAM = "e" * 64


def _table(path: Path, *, dv: bool = False) -> None:
    for i in range(3):
        write_deltalake(str(path), pa.table({"x": pa.array([i, i + 10], pa.int64()), "y": [str(i), "z"]}),
                        mode="append", configuration={"delta.enableDeletionVectors": "true"} if dv and i == 0
                        else None)


def _rows(path: Path) -> int:
    """How many rows delta-rs reads (deletion vectors applied)."""
    return int(QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all().num_rows)


def test_a_delete_disguised_as_a_rewrite_by_a_new_deletion_vector(tmp_path: Path) -> None:
    """A commit saying OPTIMIZE and `dataChange: false` that only puts a deletion vector on an attested file (a row
    gone for every reader): never VERIFIED, and not carried forward."""
    path = tmp_path / "t"
    _table(path, dv=True)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rows_before = _rows(path)
    add_deletion_vector(path, [0])
    commit = path / commit_name(latest(path))
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        for kind in ("add", "remove"):
            if kind in action:
                action[kind]["dataChange"] = False
        if "commitInfo" in action:
            action["commitInfo"]["operation"] = "OPTIMIZE"
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert _rows(path) == rows_before - 1  # delta-rs applies the vector
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and not doc["verdict"].startswith("VERIFIED"), doc
    assert codes(doc) == ["content_changed"], doc
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).carry_forward()
    assert err.value.code.value == "content_changed"


def test_an_optimize_merging_attested_and_later_appended_files_carries_nothing(tmp_path: Path) -> None:
    """Attested v, an append (dataChange: true), OPTIMIZE merging the attested files with the appended one: stale;
    no carry-forward (the producer never wrote the appended rows); `record` attests the program it is given."""
    path = tmp_path / "t"
    _table(path)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    write_deltalake(str(path), pa.table({"x": pa.array([99], pa.int64()), "y": ["late"]}), mode="append")
    DeltaTable(str(path)).optimize.compact()
    assert len(DeltaTable(str(path)).file_uris()) == 1  # every file, attested and appended, merged into one
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["stale"], doc
    assert DeltaCarrier(str(path)).carry_forward() is None
    result = DeltaCarrier(str(path)).record(model="m2", program_hash=OTHER_PROGRAM)
    assert result.continues is None and result.manifest is not None
    assert result.manifest.program_hash == OTHER_PROGRAM


def test_a_rewrite_removing_only_files_appended_after_the_attestation(tmp_path: Path) -> None:
    """Attested v, an append, then a `dataChange: false` commit that removes the appended file (its rows gone with no
    data change declared): never VERIFIED (the append alone makes it stale), nothing carried."""
    path = tmp_path / "t"
    _table(path)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    attested = {p.rsplit("/", 1)[-1] for p in DeltaTable(str(path)).file_uris()}
    write_deltalake(str(path), pa.table({"x": pa.array([99], pa.int64()), "y": ["late"]}), mode="append")
    late = next(p.rsplit("/", 1)[-1] for p in DeltaTable(str(path)).file_uris()
                if p.rsplit("/", 1)[-1] not in attested)
    size = (path / late).stat().st_size
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in [
        {"commitInfo": {"operation": "OPTIMIZE"}},
        {"remove": {"path": late, "dataChange": False, "deletionTimestamp": 1, "size": size}}]) + "\n")
    assert {p.rsplit("/", 1)[-1] for p in DeltaTable(str(path)).file_uris()} == attested  # the attested files again
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and not doc["verdict"].startswith("VERIFIED"), doc
    assert DeltaCarrier(str(path)).carry_forward() is None


def test_a_signed_chain_of_carry_forwards_stays_signed(tmp_path: Path) -> None:
    """A → B → C by the producer's key (compact, then z-order): each carry-forward checks the one before it (B's own
    signature, not only A's); the last verifies at bytes level, signed, with the producer's program."""
    path = tmp_path / "t"
    _table(path)
    signer = PemSigner.load(KEY.private_pem)
    attest_after_write(str(path), model="m", program_hash=PROGRAM, signer=signer)
    continued = []
    for optimize in (lambda t: t.optimize.compact(), lambda t: t.optimize.z_order(["x"])):
        before = DeltaTable(str(path)).version()
        optimize(DeltaTable(str(path)))
        assert DeltaTable(str(path)).version() > before  # the rewrite committed
        result = DeltaCarrier(str(path)).carry_forward(signer=signer)
        assert result is not None and result.continues is not None and result.manifest is not None
        assert result.manifest.program_hash == PROGRAM
        continued.append(result.continues)
    assert continued[0] != continued[1]  # C continues B, not A
    report = verify_table(DeltaCarrier(str(path)), policy=TrustPolicy.from_public_key(KEY.public_pem))
    assert report.passed and report.signer == KEY.key_id and report.level == "bytes", report.verdict()


def test_iceberg_a_delete_file_committed_as_a_replace(tmp_path: Path) -> None:
    """Iceberg: a snapshot adding a position delete file (a row gone for every reader) whose summary says
    `operation: replace`, as rewrite_data_files' snapshots do: never VERIFIED, and not carried forward."""
    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.iceberg.carrier import attest_after_write as iceberg_attest
    from tests.iceberg.conftest import CATALOG, commit_delete_file, local, ns_catalog, rows
    from tests.iceberg.rewrites import rewrite_metadata

    catalog = ns_catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=rows(0).schema, properties={"format-version": "2"})
    table.append(rows(0))
    table.append(rows(3))
    iceberg_attest(table, model="m", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    before = table.scan().to_arrow().num_rows
    commit_delete_file(table, local(table.location()) / "data" / "del.parquet")
    table = catalog.load_table("ns.t")
    head = table.current_snapshot()
    assert head is not None

    def as_replace(doc: dict[str, object]) -> None:
        for snap in doc["snapshots"]:  # type: ignore[attr-defined]
            if snap["snapshot-id"] == head.snapshot_id:
                snap["summary"]["operation"] = "replace"

    table = rewrite_metadata(catalog, table, as_replace)
    assert table.current_snapshot().summary.operation.value == "replace"  # type: ignore[union-attr]
    assert table.scan().to_arrow().num_rows == before - 1
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert not report.passed, report.verdict()
    assert [e.code.value for e in report.errors] == ["content_changed"], report.verdict()
    with pytest.raises(CarrierError) as err:
        IcebergCarrier(table, catalog_name=CATALOG).carry_forward()
    assert err.value.code.value == "content_changed"


def test_a_carry_forward_of_a_tampered_attestation_is_not_written(tmp_path: Path) -> None:
    """The continued attestation's sidecar swapped for other bytes before OPTIMIZE: nothing carried (the hook writes
    nothing), verify says so (`sidecar_mismatch`); never a carry-forward naming a sidecar nobody can check."""
    path = tmp_path / "t"
    _table(path)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    sidecars = [p for p in (path / "_recipe_attest").rglob("*") if p.is_file() and p.suffix == ".json"
                and not p.name.endswith(".dsse.json")]
    assert sidecars
    for sidecar in sidecars:
        doc = json.loads(sidecar.read_text())
        doc["tampered"] = True
        sidecar.write_text(json.dumps(doc))
    DeltaTable(str(path)).optimize.compact()
    version = DeltaTable(str(path)).version()
    assert DeltaCarrier(str(path)).carry_forward() is None
    assert DeltaTable(str(path)).version() == version
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and "sidecar_mismatch" in codes(doc), doc
