"""A Delta data version whose own properties claim to bind it: attestation keys copied from another table.

``CREATE TABLE … LIKE`` and ``CLONE`` copy a table's properties, attestation keys included, and every later commit
of the copy inherits them. Where the copied binding is the number of one of the copy's later data versions, that
version's own properties claim it — and the carrier took that claim as the attestation in force even after the
version's real attestation was recorded (a later metadata-only commit binding it): ``record`` wrote its attestation
and then refused it as "not in force" (``superseded``, sidecar missing), every time, so the table could never be
attested (round 27, found with Spark's ``CREATE TABLE … LIKE``; carriers/delta/carriage.py). An attestation of the
version recorded after it now takes over; with none the copied claim is judged as before — not verified."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from attest.api import verify
from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM


def _attested_at_version_2(folder: Path) -> dict[str, str]:
    """A table attested at its data version 2; its attestation keys (what a copy of its properties carries)."""
    for mode in ("error", "append", "append"):
        write_deltalake(str(folder), pa.table({"id": pa.array([1], pa.int64())}), mode=mode)
    attest_after_write(str(folder), model="src", program_hash=PROGRAM)
    config = DeltaTable(str(folder)).metadata().configuration
    assert config["recipe_attest.binding.version"] == "2"
    return {k: v for k, v in config.items() if k.startswith(("recipe_attest.", "recipe_manifest."))}


def test_a_version_claimed_by_copied_keys_is_attested_by_its_own_record(tmp_path: Path) -> None:
    copied = _attested_at_version_2(tmp_path / "src")
    table = tmp_path / "copy"
    write_deltalake(str(table), pa.table({"id": pa.array([], pa.int64())}))
    DeltaTable(str(table)).alter.set_table_properties(copied, raise_if_not_exists=False)  # version 1: the copy
    write_deltalake(str(table), pa.table({"id": pa.array([7], pa.int64())}), mode="append")  # version 2 claims it
    before = verify(str(table))
    assert not before.passed and before.errors[0].code.value == "sidecar_missing"  # the copied claim, not verified
    copy_commit = verify(str(table), version=1)  # the copy's own commit: a claim on a version later than itself
    assert [e.message for e in copy_commit.errors if e.code.value == "carrier_tampered" and
            "copied from another table" in e.message], copy_commit.errors
    attest_after_write(str(table), model="copy", program_hash=PROGRAM)  # was: SupersededError, every time
    after = verify(str(table))
    assert after.passed, after.verdict()
    assert after.attested_version == "2"
