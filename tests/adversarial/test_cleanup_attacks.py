"""Attacks on the attestation copies table maintenance keeps (docs/maintenance.md, carriers/iceberg/kept.py).

Each Iceberg attestation is also kept in ``metadata/recipe_attest/<sidecar blake3>.puffin``, registered in the table
metadata's ``statistics`` for the attested and the carrier snapshot; the verifier reads a sidecar or an envelope from
it only under the BLAKE3 the metadata records, and keys from it only when they bind the snapshot the entry is
registered for. An attacker with write access to the table's storage and catalog tries to make it attest other data.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import Table
from pyiceberg.table.statistics import StatisticsFile

from carriers import properties as props
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from carriers.iceberg.kept import build_puffin, parse_puffin
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog, iceberg_env, local, rewrite_metadata, rows, table  # noqa: F401

REF = f"iceberg://{CATALOG}/ns.t"


def cli(*args: str) -> tuple[int, dict[str, Any]]:
    from attest.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["verify", REF, "--level", "bytes", *args, "--json"])
    return rc, json.loads(out.getvalue())


def refused(code: str, *args: str) -> dict[str, Any]:
    rc, doc = cli(*args)
    assert rc != 0 and not doc["passed"] and code in [e["code"] for e in doc.get("errors", [])], doc
    return doc


def attested(table: Table, *, retain_tag: bool = True) -> tuple[int, int, Path]:  # noqa: F811
    """(data snapshot, follow-up snapshot, the kept Puffin file) of a fresh attestation (``retain_tag=False``: without
    the retention tag, so the follow-up can be expired by id)."""
    table.append(rows(0))
    attest_after_write(IcebergCarrier(table, catalog_name=CATALOG, retain_tag=retain_tag), model="m",
                       program_hash=PROGRAM)
    table.refresh()
    follow_up = table.current_snapshot()
    assert follow_up is not None and follow_up.parent_snapshot_id is not None
    kept = {s.statistics_path for s in table.metadata.statistics}
    assert len(kept) == 1 and {s.snapshot_id for s in table.metadata.statistics} == \
        {follow_up.snapshot_id, follow_up.parent_snapshot_id}
    return follow_up.parent_snapshot_id, follow_up.snapshot_id, local(kept.pop())


def delete_sidecars(puffin: Path) -> None:
    """What remove_orphan_files does (measured, tests/spark/test_maintenance_iceberg.py): the JSON files go."""
    for path in puffin.parent.glob("*.json"):
        path.unlink()


def register(table: Table, snapshot_id: int, path: Path) -> None:  # noqa: F811
    data = path.read_bytes()
    size = int.from_bytes(data[-12:-8], "little") + 16  # the Puffin footer: magic, payload, size, flags, magic
    with table.update_statistics() as update:
        update.set_statistics(StatisticsFile.model_validate({
            "snapshot-id": snapshot_id, "statistics-path": path.as_uri(), "file-size-in-bytes": len(data),
            "file-footer-size-in-bytes": size, "blob-metadata": []}))
    table.refresh()


def test_kept_copy_verifies_after_the_sidecar_is_deleted(table: Table, iceberg_env: str) -> None:  # noqa: F811
    _data, _follow_up, puffin = attested(table)
    delete_sidecars(puffin)
    rc, doc = cli()
    assert rc == 0 and doc["level"] == "bytes", doc


def test_a_kept_attestation_registered_for_another_snapshot_is_tampered(
        table: Table, iceberg_env: str) -> None:  # noqa: F811
    """S1 attested; S2 (new rows) unattested. The attacker registers S1's Puffin file for S2: its keys bind S1."""
    data, _follow_up, puffin = attested(table)
    table.append(rows(100))
    table.refresh()
    later = table.current_snapshot()
    assert later is not None
    register(table, later.snapshot_id, puffin)
    refused("carrier_tampered")
    refused("carrier_tampered", "--snapshot-id", str(later.snapshot_id))
    assert data != later.snapshot_id


def test_a_kept_attestation_re_pointed_at_another_snapshot_is_tampered(
        table: Table, iceberg_env: str) -> None:  # noqa: F811
    """The attacker rebuilds the Puffin file with S1's sidecar under keys whose binding names S2 (and the blob's
    snapshot id S2), and registers it for S2: the sidecar describes S1."""
    data, _follow_up, puffin = attested(table)
    kept = parse_puffin(puffin.read_bytes())
    assert kept is not None and kept.sidecar_digest is not None
    table.append(rows(100))
    table.refresh()
    later = table.current_snapshot()
    assert later is not None
    keys = {**kept.keys, props.KEY_VERSION: str(later.snapshot_id)}
    forged, _ = build_puffin(sidecar=kept.blobs[kept.sidecar_digest], keys=keys, envelope=None,
                             snapshot_id=later.snapshot_id, sequence_number=later.sequence_number or 0)
    path = puffin.with_name("f" * 64 + ".puffin")
    path.write_bytes(forged)
    register(table, later.snapshot_id, path)
    refused("carrier_tampered")
    assert data != later.snapshot_id


def test_a_kept_file_outside_the_attestation_folder_is_never_read(table: Table, iceberg_env: str) -> None:  # noqa: F811
    """A guard (caught before too: nothing was read from statistics): the sidecar deleted, the statistics entries
    point at a valid copy elsewhere under the table. Only metadata/recipe_attest/<blake3>.puffin is read."""
    data, follow_up, puffin = attested(table)
    elsewhere = Path(local(table.location())) / "data" / puffin.name
    shutil.copy(puffin, elsewhere)
    delete_sidecars(puffin)
    puffin.unlink()
    for snapshot_id in (data, follow_up):
        register(table, snapshot_id, elsewhere)
    refused("sidecar_missing")


@pytest.mark.parametrize("edit", ["bytes", "digest"])
def test_a_kept_sidecar_with_other_bytes_is_not_the_attested_one(table: Table, iceberg_env: str,  # noqa: F811
                                                                 edit: str) -> None:
    """A guard: the Puffin blob edited (its recorded BLAKE3 left, or recomputed): the metadata's sidecar hash is
    not the edited bytes' — nothing is read from it, sidecar_missing."""
    _data, _follow_up, puffin = attested(table)
    kept = parse_puffin(puffin.read_bytes())
    assert kept is not None and kept.sidecar_digest is not None
    sidecar = kept.blobs[kept.sidecar_digest]
    doc = json.loads(sidecar)
    doc["files"][0]["size"] += 1
    changed = json.dumps(doc).encode()
    data = puffin.read_bytes()
    if edit == "bytes":  # same length, other bytes, the old digest recorded
        changed = changed[:len(sidecar)].ljust(len(sidecar), b" ")
        puffin.write_bytes(data.replace(sidecar, changed))
    else:
        forged, _ = build_puffin(sidecar=changed, keys=kept.keys, envelope=None, snapshot_id=kept.snapshot_id or 0,
                                 sequence_number=1)
        puffin.write_bytes(forged)
    delete_sidecars(puffin)
    refused("sidecar_missing")


def test_two_kept_files_for_one_snapshot_are_tampered(table: Table, catalog: Any, iceberg_env: str) -> None:  # noqa: F811
    """The spec allows one statistics file per snapshot; readers disagree on which of two they take (pyiceberg's
    set_statistics replaces, Java's builder keeps the last). The follow-up expired (attested without the retention
    tag, which would keep it), the data snapshot left with two."""
    data, follow_up, _puffin = attested(table, retain_tag=False)
    table.append(rows(100))
    table.maintenance.expire_snapshots().by_id(follow_up).commit()
    table.refresh()
    assert table.snapshot_by_id(follow_up) is None
    rc, doc = cli("--snapshot-id", str(data))
    assert rc == 0 and any("statistics file" in n for n in doc["notes"]), doc  # kept: verifies

    def twice(meta: dict[str, Any]) -> None:
        entry = next(s for s in meta["statistics"] if s["snapshot-id"] == data)
        meta["statistics"].append(dict(entry))

    rewrite_metadata(catalog, table, twice)
    refused("carrier_tampered", "--snapshot-id", str(data))


def test_a_signed_attestation_keeps_its_envelope(table: Table, iceberg_env: str) -> None:  # noqa: F811
    """remove_orphan_files deletes the envelope beside the sidecar too: the kept copy holds it, and the signature
    still verifies under the key (another key still refuses it)."""
    from attest.signing.keys import PemSigner, generate_keypair
    from attest.signing.policy import TrustPolicy
    from attest.verify.table import verify_table

    pair = generate_keypair("ed25519")
    table.append(rows(0))
    attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash=PROGRAM,
                       signer=PemSigner.load(pair.private_pem))
    table.refresh()
    folder = local(table.metadata_location).parent / "recipe_attest"
    assert any(p.name.endswith(".dsse.json") for p in folder.iterdir())
    delete_sidecars(folder / "x.puffin")  # the .json and the .dsse.json
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG), policy=TrustPolicy.from_public_key(
        pair.public_pem))
    assert report.passed and report.signer == pair.key_id and report.level == "bytes", report.human()
    other = verify_table(IcebergCarrier(table, catalog_name=CATALOG), policy=TrustPolicy.from_public_key(
        generate_keypair("ed25519").public_pem))
    assert not other.passed


def _re_recorded(table: Table) -> tuple[int, int, int]:  # noqa: F811
    """(data snapshot, first follow-up, second follow-up) of an attestation recorded twice (a re-record: a second
    follow-up on top of the first, binding the same data snapshot)."""
    data, first, _puffin = attested(table)
    attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash="2" * 64, replace=True)
    table.refresh()
    second = table.current_snapshot()
    assert second is not None and second.parent_snapshot_id == first
    return data, first, second.snapshot_id


def test_a_re_record_whose_first_follow_up_expired_still_verifies(table: Table, iceberg_env: str) -> None:  # noqa: F811
    """Found by the sequence walk (tests/test_maintenance_sequences.py): record twice, then expire the first
    follow-up (``expire_snapshots().by_id``). pyiceberg clears the parent of the second follow-up, which binds the
    data snapshot, no longer its ancestor: it was ``carrier_tampered`` on an honest table. It holds exactly the data
    snapshot's files: in force. (Java's expiry leaves the parent id naming the expired snapshot, a shape
    test_iceberg_ancestry_attacks refuses: still carrier_tampered, docs/maintenance.md.)"""
    data, first, second = _re_recorded(table)
    table.maintenance.expire_snapshots().by_id(first).commit()
    table.refresh()
    assert table.snapshot_by_id(second).parent_snapshot_id is None  # type: ignore[union-attr]
    rc, doc = cli()
    assert rc == 0 and doc["level"] == "bytes" and doc["attested_version"] == str(data), doc
    rc, doc = cli("--snapshot-id", str(data))
    assert rc == 0, doc
    table.append(rows(50))  # and a data change after it is stale, not tampered
    refused("stale")


def test_a_follow_up_with_an_expired_parent_and_other_files_is_refused(table: Table, catalog: Any,  # noqa: F811
                                                                        iceberg_env: str) -> None:  # noqa: F811
    """The attack on that rule: a snapshot claiming to be such a follow-up (an append of no file, no parent,
    binding the data snapshot) that holds other files than the data snapshot — a data change hidden under a
    re-record's shape — is not taken as a follow-up: carrier_tampered, as before."""
    _data, first, second = _re_recorded(table)
    table.maintenance.expire_snapshots().by_id(first).commit()
    table.refresh()
    keys = dict(table.snapshot_by_id(second).summary.additional_properties)  # type: ignore[union-attr]
    table.append(rows(50))
    table.refresh()
    forged = table.current_snapshot()
    assert forged is not None

    def disguise(meta: dict[str, Any]) -> None:
        snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == forged.snapshot_id)
        snap["parent-snapshot-id"] = None  # as pyiceberg's expiry leaves it
        snap["summary"] = {**keys, "operation": "append", "added-data-files": "0", "added-records": "0",
                           "added-files-size": "0"}

    rewrite_metadata(catalog, table, disguise)
    refused("carrier_tampered")


@pytest.mark.parametrize("honest", [True, False])
def test_a_rewrite_after_a_cut_chain_of_follow_ups_is_judged_by_content(table: Table, catalog: Any,  # noqa: F811
                                                                         iceberg_env: str, honest: bool) -> None:  # noqa: F811
    """Found by the sequence walk: three records of one data snapshot (follow-ups F1, F2, F3), F1 expired (pyiceberg
    clears F2's parent), then a rewrite. The attested snapshot is no ancestor of the rewrite any more: it was
    ``compacted`` (not judged). The follow-up in force holds its files, so the rewrite is judged from it: an honest one
    verifies by content, one that changes a value is ``content_changed``."""
    import pyarrow as pa

    from tests.iceberg.rewrites import replace, with_ids

    data, first, _second = _re_recorded(table)
    attest_after_write(IcebergCarrier(table, catalog_name=CATALOG), model="m", program_hash="3" * 64, replace=True)
    table.maintenance.expire_snapshots().by_id(first).commit()
    table.refresh()
    rows_now = table.scan().to_arrow()
    if not honest:
        rows_now = rows_now.set_column(1, "v", pa.array(["changed", *rows_now.column("v").to_pylist()[1:]]))
    table = replace(catalog, table, [with_ids(rows_now, [1, 2])])
    if honest:
        rc, doc = cli()
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), doc
        assert doc["attested_version"] == str(data), doc
    else:
        refused("content_changed")
