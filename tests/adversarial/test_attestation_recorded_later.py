"""Attacks on the attestation found *after* a metadata-only version (docs/delta.md, "Staleness, compaction, time
travel"): verify --version N at a metadata-only N that carries no attestation of its data version D uses the
attestation of D recorded later, before the next file-changing commit. An attacker with storage access places that
later commit, or edits the versions around it; none of it may make N VERIFIED unless N's data and reader view are
D's as attested.

Each attack removes the attestation at N (as the UNSET commit of older Spark hooks did) and puts an attestation
binding D after it; the control (the honest keys put back unchanged, nothing else edited) verifies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from carriers import properties as props
from tests.adversarial.conftest import (
    a_data_file,
    assert_refused,
    metadata_commit,
    remove_properties,
    verify,
    write_commit,
)


def _owned(path: Path) -> dict[str, str]:
    return props.attestation_keys(DeltaTable(str(path)).metadata().configuration)


def _put_back(path: Path, keys: dict[str, str]) -> int:
    return metadata_commit(path, lambda m: m["configuration"].update(keys))


def test_control_the_honest_keys_put_back_verify_at_the_version_without_them(delta: Path) -> None:
    keys = _owned(delta)
    n = remove_properties(delta, sorted(keys))  # version 2: no attestation (an older hook's UNSET)
    _put_back(delta, keys)  # version 3: the attestation of version 0
    rc, doc = verify(str(delta), "--version", str(n))
    assert rc == 0 and doc["attested_version"] == "0" and doc["level"] == "bytes", doc


def test_a_read_property_changed_at_the_version_is_caught(delta: Path) -> None:
    """N also turns on a property that changes what readers get; the later attestation binds version 0's view."""
    keys = _owned(delta)

    def edit(m: dict[str, Any]) -> None:
        for k in keys:
            m["configuration"].pop(k, None)
        m["configuration"]["delta.enableChangeDataFeed"] = "true"

    n = metadata_commit(delta, edit)
    _put_back(delta, keys)
    assert_refused(delta, "reader_view_changed", "--version", str(n))


def test_a_schema_changed_at_the_version_is_caught(delta: Path) -> None:
    """N adds a column (readers of N get a column of nulls the attested version has not)."""
    keys = _owned(delta)

    def edit(m: dict[str, Any]) -> None:
        for k in keys:
            m["configuration"].pop(k, None)
        schema = json.loads(m["schemaString"])
        schema["fields"].append({"name": "extra", "type": "string", "nullable": True, "metadata": {}})
        m["schemaString"] = json.dumps(schema)

    n = metadata_commit(delta, edit)
    _put_back(delta, keys)
    assert_refused(delta, "reader_view_changed", "--version", str(n))


def test_a_forged_field_in_the_later_attestation_is_caught(delta: Path) -> None:
    keys = _owned(delta)
    n = remove_properties(delta, sorted(keys))
    _put_back(delta, {**keys, props.PREFIX + "program_hash": "f" * 64})
    assert_refused(delta, "carrier_tampered", "--version", str(n))


def test_an_attestation_after_a_later_data_commit_is_not_borrowed(delta: Path) -> None:
    """The honest keys of version 0 put back after a data commit that follows N: N's data is version 0's, but the
    search ends at the data commit, so nothing is claimed for N."""
    keys = _owned(delta)
    n = remove_properties(delta, sorted(keys))
    write_deltalake(str(delta), pa.table({"p": ["c"], "v": [9], "w": ["q"]}), mode="append")
    _put_back(delta, keys)
    assert_refused(delta, "unattested", "--version", str(n))


def test_a_hand_written_file_change_between_is_a_data_commit(delta: Path) -> None:
    """N removes a data file with ``dataChange: false`` (a compaction's spelling) and the attestation of version 0 is
    put back after it: N is a file-changing commit, its own data version, and no later attestation binds it."""
    keys = _owned(delta)
    victim = a_data_file(delta)
    n = write_commit(delta, [{"remove": {"path": victim, "dataChange": False, "deletionTimestamp": 1}}])
    remove_properties(delta, sorted(keys))
    _put_back(delta, keys)
    # N still carries version 0's attestation, of other files, never the one put back as if for N: its content digest
    # shows the "compaction" dropped the file's rows (it was compacted before content digests).
    doc = assert_refused(delta, "content_changed", "--version", str(n))
    assert doc["attested_version"] == "0", doc
