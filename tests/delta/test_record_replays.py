"""A Delta ``record`` replays the log of the version it attests once: the live files and reader view are judged on
that replay, and the attestation commit takes the table's metadata from the same one (carriers/delta/commit.py),
instead of replaying the log a second time. Counted, not timed: every replay goes through ``carriers.delta.log.replay``
as the carrier and the commit module name it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import carriers.delta.carrier as carrier_module
import carriers.delta.commit as commit_module
import carriers.delta.log as log_module
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import commit_name, read_commit, replay
from carriers.storage.base import Storage
from tests.delta.conftest import PROGRAM
from tests.delta.row_tracking import give_row_tracking


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """How many times each version's log was replayed (by the carrier, by the attestation commit, and by any other
    reader that asks the log module for a replay: the content reader did)."""
    counted: Counter[int] = Counter()

    def counting(storage: Storage, version: int) -> object:
        counted[version] += 1
        return replay(storage, version)

    monkeypatch.setattr(carrier_module, "replay", counting)
    monkeypatch.setattr(commit_module, "replay", counting)
    monkeypatch.setattr(log_module, "replay", counting)
    return counted


def test_record_of_a_first_version_replays_it_once(tmp_path: Path, replays: Counter[int]) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))  # version 0
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "0"
    assert replays == Counter({0: 1})
    commit = read_commit(DeltaCarrier(str(path)).storage, 1)  # the attestation commit, from that replay's metadata
    assert commit is not None and commit.configuration is not None
    assert props.attestation_keys(commit.configuration)[props.KEY_VERSION] == "0"
    assert verify_table(DeltaCarrier(str(path)), level="bytes").passed


def test_record_of_an_append_on_an_unattested_base_replays_only_the_version_it_attests(
        tmp_path: Path, replays: Counter[int]) -> None:
    """The append builds on version 0, which record observes as an input: with no attestation in force there, the input
    is heuristic whatever its files are, so version 0 is neither listed nor replayed (AttestedTable.observe)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 1
    carrier = DeltaCarrier(str(path))
    result = carrier.record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "1"
    assert replays == Counter({1: 1})
    assert result.manifest.inputs_proof_class == "heuristic"
    # Once the record is over, a reading operation sees the log as it is now: replayed again.
    assert verify_table(carrier, level="files").passed
    assert replays == Counter({1: 1, 2: 1})


def test_record_of_an_append_replays_it_once_though_observing_its_base_forgets_what_was_read(
        tmp_path: Path, replays: Counter[int]) -> None:
    """The append builds on version 0, attested, which record observes as an input (a reading operation of its own,
    after which the carrier forgets what it loaded): the replay of the attested version still serves the commit."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)  # its attestation commit: version 1
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 2
    replays.clear()
    carrier = DeltaCarrier(str(path))
    result = carrier.record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "2"
    assert replays == Counter({2: 1, 0: 1})
    assert result.manifest.inputs_proof_class == "strong"
    # Once the record is over, a reading operation sees the log as it is now: replayed again.
    assert verify_table(carrier, level="files").passed
    assert replays == Counter({2: 1, 0: 1, 3: 1})


def test_what_a_record_replayed_is_not_kept_past_it(tmp_path: Path, replays: Counter[int]) -> None:
    """A kept carrier's next reading operation, or next record, replays the log as it is then."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    carrier = DeltaCarrier(str(path))
    carrier.record(model="orders", program_hash=PROGRAM)  # version 1 carries it
    assert replays == Counter({0: 1})
    assert verify_table(carrier, version=0, level="files").passed
    assert replays == Counter({0: 2})
    write_deltalake(str(path), pa.table({"v": [3]}), mode="overwrite")  # version 2
    carrier.record(model="orders", program_hash=PROGRAM)  # version 3 carries it
    assert replays == Counter({0: 2, 2: 1})


def _tracked(path: Path) -> None:
    """Versions 0 and 1 written by delta-rs (each file's statistics in the log), then given row tracking as Spark
    writes it (``delta.enableRowTracking``, the writer feature, ``baseRowId``/``defaultRowCommitVersion``)."""
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    write_deltalake(str(path), pa.table({"v": [4, 5]}), mode="append")
    give_row_tracking(path, {0: (0, 2), 1: (3, 4)}, enabled=True, require_stats=True)


def test_record_of_a_table_with_statistics_and_row_tracking_replays_it_once(tmp_path: Path,
                                                                            replays: Counter[int]) -> None:
    """The content reader reads each file's statistics and row-tracking ids from the carrier's replay of the version,
    not from one of its own (before: two replays of version 1)."""
    path = tmp_path / "t"
    _tracked(path)
    replays.clear()
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "1"
    assert replays == Counter({1: 1}), replays
    state = DeltaCarrier(str(path)).state()
    assert state.attestation is not None and isinstance(state.attestation.content, dict)
    assert state.attestation.content["row_ids"] is not None and state.attestation.content["rows"] == 5
    assert verify_table(DeltaCarrier(str(path)), level="bytes").passed


@pytest.mark.parametrize("checkpoint", [False, True])
def test_verify_of_a_compaction_replays_each_version_once(tmp_path: Path, replays: Counter[int],
                                                          checkpoint: bool) -> None:
    """Verifying a compaction by content reads the attested version's and the current version's files with their
    statistics: from the carrier's replay of each (before: each replayed again by the content reader). ``checkpoint``:
    the compaction's adds read from a checkpoint's columns (the fields kept of them shared)."""
    from deltalake import DeltaTable

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))  # version 0
    write_deltalake(str(path), pa.table({"v": [4, 5]}), mode="append")  # version 1
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)  # version 2 carries it
    DeltaTable(str(path)).optimize.compact()  # version 3: one file of the same rows
    if checkpoint:
        DeltaTable(str(path)).create_checkpoint()
    replays.clear()
    report = verify_table(DeltaCarrier(str(path)), level="bytes")
    assert report.passed and report.to_json()["content"]["passed"], report.to_json()
    assert replays and set(replays.values()) == {1}, replays


@pytest.mark.parametrize("columns", [False, True])
def test_the_fields_kept_for_the_content_reader_are_the_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                columns: bool) -> None:
    """``Adds.project`` keeps each live add's fields the content reader reads, as the whole replay has them, in the
    same order (``columns``: the commits read in columns, as a large table's are, their columns of them shared)."""
    from deltalake import DeltaTable

    from carriers.delta.adds import Columns
    from carriers.delta.carrier import _CONTENT_FIELDS

    if columns:
        monkeypatch.setattr(log_module, "COMMIT_ROWS_MIN", 2)  # each small commit read in columns
    path = tmp_path / "t"
    _hand_written(path)
    DeltaTable(str(path)).optimize.compact()  # removes on top of the columns
    write_deltalake(str(path), pa.table({"v": [99]}), mode="append")
    storage = DeltaCarrier(str(path)).storage
    for version in (3, DeltaTable(str(path)).version()):
        log, _ = replay(storage, version)
        kept = log.adds.project(_CONTENT_FIELDS)
        fields = {"path", *_CONTENT_FIELDS}
        assert [(p, dict(a)) for p, a in kept.items()] == [
            (p, {k: v for k, v in a.items() if k in fields}) for p, a in log.adds.items()]
        assert all(a.get("stats") for a in kept.values())
        assert isinstance(kept._base, Columns) is isinstance(log.adds._base, Columns) is columns
        # Held without its index of paths (Adds.kept), it is rebuilt the same: keys, rows and order.
        held = log.adds.kept(_CONTENT_FIELDS)
        if columns:
            assert held._adds._base is not None and held._adds._base.index is not kept._base.index  # dropped
        again = held.adds()
        assert [(p, dict(a)) for p, a in again.items()] == [(p, dict(a)) for p, a in kept.items()]
        assert again._base is None or list(again._base.index.items()) == list(kept._base.index.items())
        assert held.adds() is again  # rebuilt once


def _hand_written(path: Path) -> None:
    """Versions 0 (protocol and metaData alone) to 3, each adding two one-row files with statistics: commits as a
    replay reads in columns (delta-rs's own name null fields, which send them to the line reader)."""
    import pyarrow.parquet as pq

    log = path / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "v", "type": "long", "nullable": True, "metadata": {}}]}
    meta = {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema), "partitionColumns": [], "createdTime": 1, "configuration": {}}
    info = {"commitInfo": {"timestamp": 1, "operation": "WRITE", "operationParameters": {"mode": "Append"}}}
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in (
        info, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": meta})) + "\n")
    for v in (1, 2, 3):
        lines = [info]
        for i in (2 * v, 2 * v + 1):
            pq.write_table(pa.table({"v": pa.array([i], pa.int64())}), path / f"f{i}.parquet")
            stats = {"numRecords": 1, "minValues": {"v": i}, "maxValues": {"v": i}, "nullCount": {"v": 0}}
            lines.append({"add": {"path": f"f{i}.parquet", "partitionValues": {}, "modificationTime": 1,
                                  "size": (path / f"f{i}.parquet").stat().st_size, "dataChange": True,
                                  "stats": json.dumps(stats)}})
        (path / commit_name(v)).write_text("\n".join(json.dumps(a) for a in lines) + "\n")
