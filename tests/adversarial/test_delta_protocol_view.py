"""The reader protocol in the reader view (issue 30.4): a commit that changes nothing a reader gets keeps the view; one
that enables a read-changing feature never verifies silently.

A Delta table whose last commit only raised the protocol (3/7 without features, or with the `vacuumProtocolCheck`
reader feature) after its data commit: `record` bound the data version, `verify` said `reader_view_changed` (reader
protocol), and recording again changed nothing. The view now binds the reader features that change reads (carriers/
delta.py, view_reader_features); views attested before keep their stricter comparison (attest.view.REPLACED_KEYS).
Measured with delta-rs 1.6 (QueryBuilder): the same rows after a bare 3/7 bump and after adding any of the kept
features; the query engine refuses `vacuumProtocolCheck` and `typeWidening` tables outright (no rows, never others).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from attest.cli import main
from carriers.delta.carrier import DeltaCarrier
from tests.adversarial.conftest import PROGRAM, assert_refused, verify, write_commit


def record(path: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["record", str(path), "--model", "m", "--program-hash", PROGRAM, "--json"])
    return rc, json.loads(out.getvalue())


def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    return path


def protocol(reader: int, writer: int, readers: list[str] | None = None,
             writers: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if readers is not None:
        out["readerFeatures"] = readers
    if writers is not None:
        out["writerFeatures"] = writers
    return {"protocol": out}


def delta_rs_rows(path: Path) -> list[Any]:
    result = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT v FROM t ORDER BY v").read_all()
    return list(pa.table(result).column("v").to_pylist())


# A protocol that changes nothing a reader gets: its versions, vacuumProtocolCheck, writer-only features.
NEUTRAL = {
    "3/7 without features": protocol(3, 7, [], []),
    "vacuumProtocolCheck": protocol(3, 7, ["vacuumProtocolCheck"], ["vacuumProtocolCheck"]),
    "writer-only features": protocol(1, 7, None, ["appendOnly", "invariants", "checkConstraints"]),
    "writer version only": protocol(1, 4),
}


@pytest.mark.parametrize("case", sorted(NEUTRAL))
def test_a_protocol_commit_after_the_data_commit_leaves_the_latest_version_verifiable(tmp_path: Path,
                                                                                     case: str) -> None:
    path = table(tmp_path)
    write_commit(path, [NEUTRAL[case]])  # version 1: the last commit only changes the protocol
    rc, doc = record(path)
    assert rc == 0 and doc["attested_version"] == "0", doc
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"], doc  # was reader_view_changed (reader protocol), record after record
    if case == "3/7 without features":
        assert delta_rs_rows(path) == [1, 2, 3]


@pytest.mark.parametrize("case", sorted(NEUTRAL))
def test_a_protocol_commit_after_the_attestation_keeps_it_verified(tmp_path: Path, case: str) -> None:
    path = table(tmp_path)
    assert record(path)[0] == 0
    write_commit(path, [NEUTRAL[case]])
    rc, doc = verify(str(path))
    assert rc == 0 and doc["attested_version"] == "0", doc


# Reader features that change what is read (or that this release does not know): never VERIFIED after attestation.
READ_CHANGING = {
    "columnMapping": protocol(3, 7, ["columnMapping"], ["columnMapping"]),
    "deletionVectors": protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
    "timestampNtz": protocol(3, 7, ["timestampNtz"], ["timestampNtz"]),
    "typeWidening": protocol(3, 7, ["typeWidening"], ["typeWidening"]),
    "v2Checkpoint": protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"]),
    "variantType": protocol(3, 7, ["variantType"], ["variantType"]),
    "an unknown feature": protocol(3, 7, ["fooBar"], ["fooBar"]),
    "neutral plus deletionVectors": protocol(3, 7, ["vacuumProtocolCheck", "deletionVectors"],
                                             ["vacuumProtocolCheck", "deletionVectors"]),
    "reader version 2 (column mapping)": protocol(2, 5),
}


@pytest.mark.parametrize("case", sorted(READ_CHANGING))
def test_a_read_changing_reader_feature_after_the_attestation_is_never_verified(tmp_path: Path, case: str) -> None:
    path = table(tmp_path)
    assert record(path)[0] == 0
    write_commit(path, [READ_CHANGING[case]])
    rc, doc = verify(str(path))
    assert rc != 0, doc
    codes = [e["code"] for e in doc["errors"]]
    # delta-rs refuses to load a table with a feature it does not know, and cannot read the deletion vectors of one
    # with vacuumProtocolCheck (measured): unreadable input (exit 2), never VERIFIED.
    expected = {"an unknown feature": ("unsupported_table", 2),
                "neutral plus deletionVectors": ("table_unreadable", 2)}.get(case, ("reader_view_changed", 1))
    assert expected[0] in codes and rc == expected[1], doc


def test_column_mapping_enabled_for_real_after_the_attestation(tmp_path: Path) -> None:
    """The feature, the mode and physical names in one commit, as Spark's ALTER TABLE does it."""
    path = table(tmp_path)
    assert record(path)[0] == 0
    dt = DeltaTable(str(path))
    meta: dict[str, Any] = {}
    for line in (path / "_delta_log" / f"{0:020d}.json").read_text().splitlines():
        meta = json.loads(line).get("metaData") or meta
    schema = json.loads(meta["schemaString"])
    for i, f in enumerate(schema["fields"], start=1):
        f["metadata"] = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f["name"]}
    meta["schemaString"] = json.dumps(schema)
    meta["configuration"] = {**dict(dt.metadata().configuration), "delta.columnMapping.mode": "name",
                             "delta.columnMapping.maxColumnId": str(len(schema["fields"]))}
    write_commit(path, [protocol(3, 7, ["columnMapping"], ["columnMapping"]), {"metaData": meta}])
    assert_refused(path, "reader_view_changed")


def test_an_attestation_made_before_keeps_its_stricter_comparison(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Attestations whose view bound the reader protocol as written verify as they did: unchanged, VERIFIED with no
    note; after a bare protocol bump, reader_view_changed as before (and a new record binds the narrower view)."""
    path = table(tmp_path)
    new = DeltaCarrier._table_view

    def earlier(self: DeltaCarrier, dt: DeltaTable, log: Any) -> dict[str, Any]:
        view = new(self, dt, log)
        view.pop("reader_features")
        p = dt.protocol()
        view["reader_protocol"] = {"min_reader_version": int(p.min_reader_version),
                                   "reader_features": sorted(p.reader_features or [])}
        return view

    with monkeypatch.context() as patched:
        patched.setattr(DeltaCarrier, "_table_view", earlier)
        assert record(path)[0] == 0
    rc, doc = verify(str(path))
    assert rc == 0 and "reader_view_unbound" not in doc and "not bound" not in doc["verdict"], doc
    write_commit(path, [NEUTRAL["3/7 without features"]])
    assert_refused(path, "reader_view_changed")
    rc, doc = record(path)
    assert rc == 0, doc
    rc, doc = verify(str(path))
    assert rc == 0, doc


# ---- record attests what a reader gets now ------------------------------------------------------------------------
# A metadata-only commit after the data commit that does change what readers get (a read-changing property, a reader
# feature): record attested the data version under it, and the latest version was reader_view_changed, record after
# record. It now attests the first version from which readers get the current view (same files).
READ_CHANGING_COMMITS = {
    "change data feed switched on": lambda path: DeltaTable(str(path)).alter.set_table_properties(
        {"delta.enableChangeDataFeed": "true"}),
    "timestampNtz enabled": lambda path: write_commit(path, [READ_CHANGING["timestampNtz"]]),
}


@pytest.mark.parametrize("case", sorted(READ_CHANGING_COMMITS))
def test_record_after_a_read_changing_metadata_commit_binds_the_current_view(tmp_path: Path, case: str) -> None:
    path = table(tmp_path)
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")  # version 1: builds on version 0
    READ_CHANGING_COMMITS[case](path)  # version 2
    for _ in range(2):  # the same version again after the attestation commit on top
        rc, doc = record(path)
        assert rc == 0 and doc["attested_version"] == "2", doc
        rc, doc = verify(str(path))
        assert rc == 0 and doc["attested_version"] == "2", doc  # was reader_view_changed
    rc, doc = verify(str(path), "--version", "2")
    assert rc == 0, doc
    # The data commit under it appended to version 0: that is the attestation's input, as for version 1 itself.
    att = DeltaCarrier(str(path)).read()
    assert att is not None and [i.version for i in att.inputs or ()] == ["0"], att
    # Version 1 is not what this attestation describes (another reader view): it is not VERIFIED by it.
    rc, doc = verify(str(path), "--version", "1")
    assert rc == 1 and doc["errors"][0]["code"] == "unattested", doc
