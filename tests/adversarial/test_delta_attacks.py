"""Attacks on delta-rs-written Delta tables by someone with write access to the table's storage only."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError, TableInconsistentError
from carriers import properties as props
from carriers.delta.carrier import SIDECAR_DIR, add_action_rows, attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import (
    PROGRAM,
    a_data_file,
    append_actions,
    assert_refused,
    codes,
    copy_table,
    latest,
    log_state,
    metadata_commit,
    remove_properties,
    rows,
    set_properties,
    verify,
    write_commit,
)
from tests.delta.dv import add_deletion_vector, dv_file


def _add(path: str, size: int, **extra: Any) -> dict[str, Any]:
    return {"add": {"path": path, "partitionValues": extra.pop("partitionValues", {"p": "a"}), "size": size,
                    "modificationTime": 1, "dataChange": extra.pop("dataChange", True), **extra}}


def _remove(path: str) -> dict[str, Any]:
    return {"remove": {"path": path, "dataChange": True, "deletionTimestamp": 1}}


def _sidecar(delta: Path) -> Path:
    cfg = DeltaTable(str(delta)).metadata().configuration
    return delta / cfg[props.KEY_SIDECAR_PATH]


# ---- paths the engines resolve differently --------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["./{name}", "d/../{name}", "{root}/{name}", "file://{root}/{name}",
                                      "d%2F..%2F{name}", "sp ace/{name}", "sub//{name}", "{name}#frag", "{name}?v=1",
                                      "b[1]/{name}", "%FF{name}"])
def test_a_path_engines_resolve_differently_is_refused(delta: Path, spelling: str) -> None:
    """The file the engine reads is not the one attest would hash: refused before any verdict, and not attestable.
    ``g.parquet#frag`` and ``g.parquet?v=1``: Spark read ``g.parquet``, delta-rs the file of the whole name
    (measured); ``[`` is not valid in a URI: Spark refuses the path, delta-rs reads it."""
    src = delta / unquote(a_data_file(delta))
    (delta / "d").mkdir(exist_ok=True)
    (delta / "sub").mkdir(exist_ok=True)
    (delta / "sp ace").mkdir(exist_ok=True)  # a raw space is not valid in a URI: Spark refuses, delta-rs reads
    (delta / "b[1]").mkdir(exist_ok=True)
    name = "g.parquet"
    shutil.copy(src, delta / name)
    for literal in ("sp ace/g.parquet", "g.parquet#frag", "g.parquet?v=1", "b[1]/g.parquet"):
        shutil.copy(src, delta / literal)
    raw = spelling.format(name=name, root=delta)
    write_commit(delta, [_add(raw, src.stat().st_size)])
    assert_refused(delta, "path_ambiguous")
    from attest.errors import AttestError

    with pytest.raises(AttestError) as info:
        attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "path_ambiguous"


def test_two_spellings_of_one_file_are_refused(delta: Path) -> None:
    """``a.parquet`` and ``a%2Eparquet`` name one file: some engines read its rows twice."""
    raw = a_data_file(delta)
    head, _, tail = raw.rpartition(".")
    twin = f"{head}%2E{tail}"
    size = (delta / unquote(raw)).stat().st_size
    write_commit(delta, [_add(twin, size)])
    assert_refused(delta, "path_ambiguous")


def test_a_symlinked_data_file_leading_outside_the_table_is_refused(delta: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"not yours")
    victim = delta / unquote(a_data_file(delta))
    victim.unlink()
    victim.symlink_to(outside)
    assert_refused(delta, "file_outside_table")


def test_a_fifo_in_place_of_a_data_file_does_not_hang(delta: Path) -> None:
    victim = delta / unquote(a_data_file(delta))
    victim.unlink()
    os.mkfifo(victim)
    assert_refused(delta, "file_missing")


@pytest.mark.timeout(120)
def test_a_data_file_swapped_for_a_fifo_after_it_was_listed_does_not_hang(delta: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The race: every check by path (stat) still sees the regular file the table listed, but by the time it is
    # opened for hashing a FIFO without a writer is there. The open must neither block nor read anything else.
    victim = delta / unquote(a_data_file(delta))
    kept = tmp_path / "kept.parquet"
    victim.rename(kept)
    os.mkfifo(victim)
    real_stat = os.stat

    def stale_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        same = isinstance(path, (str, os.PathLike)) and os.path.abspath(path) == str(victim)
        return real_stat(kept if same else path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stale_stat)
    assert_refused(delta, "file_missing")


def test_a_fifo_in_place_of_the_sidecar_does_not_hang(delta: Path) -> None:
    sidecar = _sidecar(delta)
    sidecar.unlink()
    os.mkfifo(sidecar)
    assert_refused(delta, "sidecar_missing")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero", "huge", "fifo commit"])
def test_a_log_file_delta_rs_would_block_on_or_read_without_end_is_refused(delta: Path, what: str) -> None:
    # delta-rs reads _last_checkpoint by name, whole: a FIFO blocked it forever (the verify hung), a link to
    # /dev/zero or a sparse file of 100 GiB would fill the memory. A commit file it finds by listing (a FIFO there is
    # skipped, leaving a gap): refused up front all the same, naming the file.
    hint = delta / "_delta_log" / "_last_checkpoint"
    if what == "fifo":
        os.mkfifo(hint)
    elif what == "link to /dev/zero":
        hint.symlink_to("/dev/zero")
    elif what == "huge":
        with hint.open("wb") as f:
            f.truncate(100 << 30)  # sparse: no disk used
    else:
        hint = delta / commit_name(latest(delta) + 1)
        os.mkfifo(hint)
    out = assert_refused(delta, "table_unreadable")
    assert f"_delta_log/{hint.name}" in json.dumps(out)
    from attest.errors import AttestError

    with pytest.raises(AttestError) as info:  # recording too
        attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "table_unreadable"


# ---- the sidecar is required -------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [props.KEY_SIDECAR_PATH, props.KEY_SIDECAR_HASH])
def test_blanked_sidecar_key_is_tampering(delta: Path, key: str) -> None:
    set_properties(delta, {key: ""})
    assert_refused(delta, "carrier_tampered", "--level", "schema")


def test_blanked_sidecar_keys_with_a_forged_program_hash(delta: Path) -> None:
    set_properties(delta, {props.KEY_SIDECAR_PATH: "", props.KEY_SIDECAR_HASH: "",
                           props.PREFIX + "program_hash": "f" * 64})
    assert_refused(delta, "carrier_tampered", "--level", "schema")


def test_append_then_blanked_sidecar_keys_is_not_schema_only(delta: Path) -> None:
    write_deltalake(str(delta), rows(), partition_by=["p"], mode="append")
    set_properties(delta, {props.KEY_SIDECAR_PATH: "", props.KEY_SIDECAR_HASH: ""})
    rc, doc = verify(str(delta))
    assert rc == 1 and doc["passed"] is False and codes(doc), doc


def test_removed_carrier_keys_leave_a_claim_nobody_can_check(delta: Path) -> None:
    remove_properties(delta, [k for k in props.CARRIER_KEYS])
    assert_refused(delta, "carrier_tampered", "--level", "schema")


def test_downgrade_to_another_producers_claim_is_caught(delta: Path) -> None:
    """Our attestation replaced, for the same version, by 'foreign' keys with a forged program hash."""
    remove_properties(delta, [k for k in props.CARRIER_KEYS])
    set_properties(delta, {props.PREFIX + "producer.name": "rocky", props.PREFIX + "program_hash": "f" * 64})
    assert_refused(delta, "carrier_tampered", "--level", "schema")


def test_sidecar_deleted(delta: Path) -> None:
    _sidecar(delta).unlink()
    assert_refused(delta, "sidecar_missing", "--level", "schema")


def test_sidecar_byte_edited(delta: Path) -> None:
    sidecar = _sidecar(delta)
    data = bytearray(sidecar.read_bytes())
    data[len(data) // 2] ^= 0x01
    sidecar.write_bytes(bytes(data))
    assert_refused(delta, "sidecar_mismatch", "--level", "schema")


def test_sidecar_rewritten_consistently_without_its_reader_view(delta: Path) -> None:
    """A new sidecar (hash updated in the properties) that drops the reader view: a v2 sidecar must carry it."""
    from attest.canonical import blake3_hex, canonical_bytes

    doc = json.loads(_sidecar(delta).read_bytes())
    del doc["reader_view"]
    data = canonical_bytes(doc)
    digest = blake3_hex(data)
    (delta / SIDECAR_DIR / f"{digest}.json").write_bytes(data)
    set_properties(delta, {props.KEY_SIDECAR_PATH: f"{SIDECAR_DIR}/{digest}.json", props.KEY_SIDECAR_HASH: digest})
    assert_refused(delta, "sidecar_mismatch", "--level", "schema")


def test_sidecar_path_outside_the_attest_folder(delta: Path) -> None:
    set_properties(delta, {props.KEY_SIDECAR_PATH: "../../etc/passwd"})
    assert_refused(delta, "carrier_tampered", "--level", "schema")


def test_sidecar_of_another_table_is_refused(delta: Path, tmp_path: Path) -> None:
    """Copy another table's attestation (keys and sidecar) onto this one: the sidecar names its own table."""
    other = tmp_path / "other"
    write_deltalake(str(other), rows(), partition_by=["p"])
    attest_after_write(str(other), model="orders", program_hash=PROGRAM)
    cfg = DeltaTable(str(other)).metadata().configuration
    sidecar = other / cfg[props.KEY_SIDECAR_PATH]
    shutil.copy(sidecar, delta / cfg[props.KEY_SIDECAR_PATH])
    set_properties(delta, props.attestation_keys(cfg))
    assert_refused(delta, "carrier_tampered", "--level", "schema")


# ---- single edits of the metadata map ----------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "value"), [
    (props.PREFIX + "program_hash", "f" * 64), (props.PREFIX + "env_hash", "0" * 64),
    (props.PREFIX + "subject.model", "someone_else"), (props.PREFIX + "subject.run_id", "forged"),
    (props.PREFIX + "producer.version", "9.9.9"), (props.PREFIX + "subject.produced_at", "2030-01-01T00:00:00Z"),
    (props.PREFIX + "inputs_hash", "e" * 64), (props.KEY_VERSION, "99"), (props.KEY_OUTPUTS_COUNT, "1"),
    (props.KEY_LAYOUT, "3"), (props.PREFIX + "output_hashes.0.hash", "f" * 64), (props.PREFIX + "program_hash.x", "y"),
])
def test_single_edited_key(delta: Path, key: str, value: str) -> None:
    set_properties(delta, {key: value})
    rc, doc = verify(str(delta), "--level", "schema")
    assert rc == 1 and set(codes(doc)) & {"carrier_tampered", "version_not_found", "manifest_invalid_field",
                                          "inputs_pair_broken"}, doc


# ---- what readers get changes without a data commit ------------------------------------------------------------
def _fields(meta: dict[str, Any]) -> list[dict[str, Any]]:
    schema = json.loads(meta["schemaString"])
    return list(schema["fields"])


def _set_fields(meta: dict[str, Any], fields: list[dict[str, Any]]) -> None:
    schema = json.loads(meta["schemaString"])
    schema["fields"] = fields
    meta["schemaString"] = json.dumps(schema)


def test_two_columns_swap_names(delta: Path) -> None:
    def swap(meta: dict[str, Any]) -> None:
        fields = _fields(meta)
        names = {f["name"]: f for f in fields}
        names["v"]["name"], names["w"]["name"] = "w", "v"
        _set_fields(meta, fields)

    metadata_commit(delta, swap)
    assert_refused(delta, "reader_view_changed", "--level", "schema")


def test_two_columns_of_one_type_swap_names(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2], "w": [10, 20]}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path))[0] == 0

    def swap(meta: dict[str, Any]) -> None:
        fields = _fields(meta)
        fields[0]["name"], fields[1]["name"] = fields[1]["name"], fields[0]["name"]
        _set_fields(meta, fields)

    metadata_commit(path, swap)
    assert_refused(path, "reader_view_changed", "--level", "schema")


def test_column_mapping_physical_names_swapped(tmp_path: Path) -> None:
    path = tmp_path / "cm"
    write_deltalake(str(path), rows(), partition_by=["p"], configuration={"delta.columnMapping.mode": "name"})
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path))[0] == 0

    def swap(meta: dict[str, Any]) -> None:
        fields = _fields(meta)
        by = {f["name"]: f for f in fields}
        a, b = by["v"]["metadata"], by["w"]["metadata"]
        key = "delta.columnMapping.physicalName"
        a[key], b[key] = b[key], a[key]
        _set_fields(meta, fields)

    metadata_commit(path, swap)
    assert_refused(path, "reader_view_changed", "--level", "schema")


def test_column_type_changed(delta: Path) -> None:
    def widen(meta: dict[str, Any]) -> None:
        fields = _fields(meta)
        for f in fields:
            if f["name"] == "v":
                f["type"] = "string"
        _set_fields(meta, fields)

    metadata_commit(delta, widen)
    assert_refused(delta, "reader_view_changed", "--level", "schema")


def test_column_added_through_the_engine(delta: Path) -> None:
    from deltalake.schema import Field, PrimitiveType

    DeltaTable(str(delta)).alter.add_columns([Field("extra", PrimitiveType("string"), nullable=True)])
    assert_refused(delta, "reader_view_changed", "--level", "schema")


def test_partition_columns_changed(delta: Path) -> None:
    metadata_commit(delta, lambda m: m.update(partitionColumns=[]))
    assert_refused(delta, "reader_view_changed", "--level", "schema")


def test_read_changing_property_set_through_the_engine(delta: Path) -> None:
    metadata_commit(delta, lambda m: m["configuration"].update({"delta.columnMapping.mode": "name"}))
    # Under the table's 1/2 protocol the mode is read by Spark, not by delta-rs (test_delta_mapping_protocol.py).
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def test_another_read_changing_property_set_through_the_engine(delta: Path) -> None:
    metadata_commit(delta, lambda m: m["configuration"].update({"delta.enableChangeDataFeed": "true"}))
    assert_refused(delta, "reader_view_changed", "--level", "schema")


def test_reader_feature_added(delta: Path) -> None:
    write_commit(delta, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                       "readerFeatures": ["timestampNtz"], "writerFeatures": ["timestampNtz"]}}])
    assert_refused(delta, "reader_view_changed", "--level", "schema")


# Measured (Spark 4.1 + delta-spark 4.4, delta-rs 1.6; test_spark_attacks pins it): an empty partition value of a
# string column is null for delta-rs and an empty string for Spark; delta-rs writes '' for an empty string, Spark null.
@pytest.mark.parametrize("spelling", ["", None])
def test_an_empty_string_partition_value_is_refused(tmp_path: Path, spelling: str | None) -> None:
    """The attested null rewritten in place as '' (Spark's rows changed from null to '', delta-rs's view did not: it
    was VERIFIED), and a table delta-rs wrote with '' (engines read it differently from the start)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"p": [spelling, "a"], "v": [1, 2]}), partition_by=["p"])
    if spelling is None:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
        assert verify(str(path))[0] == 0
        _rewrite_attested_commit(path, lambda lines: [line.replace('"partitionValues":{"p":null}',
                                                                   '"partitionValues":{"p":""}') for line in lines])
        assert '"p":""' in (path / commit_name(0)).read_text()
        doc = assert_refused(path, "table_inconsistent")
        assert "empty partition value" in json.dumps(doc)
        assert_refused(path, "table_inconsistent", "--level", "schema")
    else:
        assert '"p":""' in (path / commit_name(0)).read_text()
        with pytest.raises(TableInconsistentError, match="empty partition value"):
            attest_after_write(str(path), model="orders", program_hash=PROGRAM)


def test_an_empty_string_partition_value_of_another_type_or_a_mapped_column(tmp_path: Path) -> None:
    """'' of an integer column is null for both engines (measured): no problem. Under column mapping the log keys
    partition values by physical name: the check follows it."""
    path = tmp_path / "ints"
    write_deltalake(str(path), pa.table({"p": pa.array([None, 1], pa.int32()), "v": [1, 2]}), partition_by=["p"])
    _rewrite_attested_commit(path, lambda lines: [line.replace('"partitionValues":{"p":null}',
                                                               '"partitionValues":{"p":""}') for line in lines])
    assert '"p":""' in (path / commit_name(0)).read_text()
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"], doc
    mapped = tmp_path / "mapped"
    write_deltalake(str(mapped), pa.table({"p": ["a"], "v": [1]}), partition_by=["p"],
                    configuration={"delta.columnMapping.mode": "name"})
    meta = log_state(mapped).metadata
    physical = json.loads(meta["schemaString"])["fields"][0]["metadata"]["delta.columnMapping.physicalName"]
    text = (mapped / commit_name(0)).read_text()
    assert f'"{physical}":"a"' in text
    (mapped / commit_name(0)).write_text(text.replace(f'"{physical}":"a"', f'"{physical}":""'))
    with pytest.raises(TableInconsistentError, match="empty partition value"):
        attest_after_write(str(mapped), model="orders", program_hash=PROGRAM)


# Measured (Spark 4.1 in an America/New_York session, delta-rs 1.6): delta-rs writes a timestamp partition value as
# '2024-01-05 10:00:00.000000' and reads it as UTC; Spark reads a value without a zone in its session time zone
# (15:00 UTC there) and writes '2024-01-05T15:00:00.000000Z'. test_spark_attacks pins it.
def _timestamped(tmp_path: Path) -> Path:
    import datetime

    path = tmp_path / "ts"
    write_deltalake(str(path), pa.table({"p": pa.array([datetime.datetime(2024, 1, 5, 10)], pa.timestamp("us", "UTC")),
                                         "v": [1]}), partition_by=["p"])
    return path


def test_a_partition_value_respelled_in_place_changes_the_view(tmp_path: Path) -> None:
    """The attested '…T10:00:00.000000Z' rewritten as '2024-01-05 10:00:00.000000': the same instant for delta-rs
    (its typed value, and so the view from it, unchanged: VERIFIED before), five hours later for Spark in New York.
    The partition values are bound as written."""
    path = _timestamped(tmp_path)
    _rewrite_attested_commit(path, lambda lines: [line.replace('"p":"2024-01-05 10:00:00.000000"',
                                                               '"p":"2024-01-05T10:00:00.000000Z"') for line in lines])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"] and not any("time zone" in n for n in doc.get("notes", [])), doc
    _rewrite_attested_commit(path, lambda lines: [line.replace('"p":"2024-01-05T10:00:00.000000Z"',
                                                               '"p":"2024-01-05 10:00:00.000000"') for line in lines])
    assert DeltaTable(str(path)).get_add_actions(flatten=True).column("partition.p").to_pylist()[0].hour == 10
    doc = assert_refused(path, "reader_view_changed", "--level", "schema")
    assert "file view changed" in json.dumps(doc)


def test_a_timestamp_partition_value_without_a_zone_is_noted(tmp_path: Path) -> None:
    """As delta-rs writes them: VERIFIED (what was attested is what delta-rs reads), with a note that says Spark reads
    them in its session time zone."""
    path = _timestamped(tmp_path)
    assert '"p":"2024-01-05 10:00:00.000000"' in (path / commit_name(0)).read_text()
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"], doc
    assert any("carry no time zone" in n and "session time zone" in n for n in doc["notes"]), doc["notes"]


# Measured (Spark 4.1 in an America/New_York session, delta-rs 1.6): both write statistics' timestamps with 'Z'; a
# minimum respelled without one is the same instant for delta-rs, and 15:00 UTC for Spark, which then skipped the file
# in a query for its 10:00 UTC row. test_spark_attacks pins it.
@pytest.mark.parametrize(("column", "nested"), [("t", False), ("s", True)])
def test_timestamp_statistics_without_a_zone_are_refused(tmp_path: Path, column: str, nested: bool) -> None:
    import datetime

    stamps = pa.array([datetime.datetime(2024, 1, 5, 10), datetime.datetime(2024, 1, 5, 11)], pa.timestamp("us", "UTC"))
    data = pa.table({"t": stamps, "v": [1, 2]})
    if nested:
        data = pa.table({"s": pa.StructArray.from_arrays([stamps], names=["t"]), "v": [1, 2]})
    path = tmp_path / "t"
    write_deltalake(str(path), data)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path))[0] == 0
    text = (path / commit_name(0)).read_text()
    assert "2024-01-05T10:00:00Z" in text
    _rewrite_attested_commit(path, lambda lines: [line.replace("2024-01-05T10:00:00Z", "2024-01-05 10:00:00.000")
                                                  for line in lines])
    minimum = DeltaTable(str(path)).get_add_actions(flatten=True).column(f"min.{column}" + (".t" if nested else ""))
    assert minimum.to_pylist()[0].hour == 10  # delta-rs reads the same instant: the view alone did not change
    doc = assert_refused(path, "table_inconsistent", "--level", "schema")
    assert "without a time zone" in json.dumps(doc)


@pytest.mark.parametrize("spelling", ["2024-01-05T10:00:00+0000", "2024-01-05T10:00:00+00", "2024-01-05T05:00:00-05:00",
                                      "2024-01-05T10:00:00UTC", "2024-01-05T10:00:00.000000999Z"])
def test_timestamp_statistics_with_a_zone_in_another_spelling_still_verify(tmp_path: Path, spelling: str) -> None:
    """Both engines read these as the same instant (measured: delta-rs's minimum, and Spark in a New York session did
    not skip the file): a spelling is refused only when it carries no zone at all."""
    import datetime

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"t": pa.array([datetime.datetime(2024, 1, 5, 10)], pa.timestamp("us", "UTC")),
                                         "v": [1]}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    _rewrite_attested_commit(path, lambda lines: [line.replace("2024-01-05T10:00:00Z", spelling) for line in lines])
    assert spelling in (path / commit_name(0)).read_text()
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"], doc


def _stats_edit(path: Path, edit: Any) -> None:
    """Rewrite the statistics of every add of the attested commit in place: ``edit(stats)`` changes the parsed JSON."""
    def lines_edit(lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            action = json.loads(line)
            if "add" in action:
                stats = json.loads(action["add"]["stats"])
                edit(stats)
                action["add"]["stats"] = json.dumps(stats)
            out.append(json.dumps(action))
        return out
    _rewrite_attested_commit(path, lines_edit)


@pytest.mark.parametrize(("column", "spelling"), [("t", "2024-01-05T10"), ("t", "2024-1-5T11:00:00Z"),
                                                  ("d", "2024-01-05T00")])
def test_statistics_delta_rs_cannot_read_are_refused(tmp_path: Path, column: str, spelling: str) -> None:
    """A table attested without bounds for a column (a writer that kept none), then given bounds delta-rs cannot read
    (null there, so its typed statistics did not change: VERIFIED before) and Spark reads: in a New York session
    Spark read '2024-01-05T10' as 10:00 there and skipped the file in a query for its 10:00 UTC row (measured). The
    view binds such values as written."""
    import datetime

    path = tmp_path / "t"
    stamps = [datetime.datetime(2024, 1, 5, 10), datetime.datetime(2024, 1, 5, 11)]
    write_deltalake(str(path), pa.table({"t": pa.array(stamps, pa.timestamp("us", "UTC")),
                                         "d": pa.array([datetime.date(2024, 1, 5), datetime.date(2024, 1, 6)]),
                                         "v": [1, 2]}))
    _stats_edit(path, lambda st: (st["minValues"].pop(column), st["maxValues"].pop(column)))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path))[0] == 0
    _stats_edit(path, lambda st: (st["minValues"].update({column: spelling}),
                                  st["maxValues"].update({column: spelling})))
    assert DeltaTable(str(path)).get_add_actions(flatten=True).column(f"min.{column}").to_pylist() == [None]
    doc = assert_refused(path, "reader_view_changed", "--level", "schema")
    assert "file view changed" in json.dumps(doc)


def _without_statistics(path: Path) -> None:
    """The attested state of a writer that keeps no statistics: delta-rs reads none, and neither does any reader."""
    _given_statistics_text(path, None)


def _given_statistics(path: Path, stats: dict[str, Any]) -> None:
    _given_statistics_text(path, json.dumps(stats))


def _given_statistics_text(path: Path, text: str | None) -> None:
    """Every add of the attested commit given ``text`` as its statistics (None: no statistics)."""
    def give(lines: list[str]) -> list[str]:
        actions = [json.loads(line) for line in lines]
        for action in actions:
            if "add" in action:
                action["add"].pop("stats", None)
                if text is not None:
                    action["add"]["stats"] = text
        return [json.dumps(a) for a in actions]
    _rewrite_attested_commit(path, give)


# Each makes delta-rs read none of the file's statistics (one value it cannot parse voids them all) or none of one
# bound, while Spark reads the rest: it skipped the file by s = 'z' in a query for s = 'a', and counted numRecords
# (test_spark_attacks pins both).
_UNREAD = {
    "integer overflow beside a string bound": {"numRecords": 1, "minValues": {"i": 4294967297, "s": "z"},
                                               "maxValues": {"i": 4294967297, "s": "z"}, "nullCount": {"i": 0, "s": 0}},
    "an object as a string bound": {"numRecords": 1, "minValues": {"s": {"z": 1}}, "maxValues": {"s": {"z": 1}}},
    "a forged row count beside an overflow": {"numRecords": 1000, "minValues": {"i": 1e20}},
    "a null count beside an overflow": {"numRecords": 1, "nullCount": {"i": 1, "s": 1}, "minValues": {"i": 1e20}},
    "a decimal bound past its precision": {"numRecords": 1, "minValues": {"d": 1e30}, "maxValues": {"d": 1e30}},
}


@pytest.mark.parametrize("case", sorted(_UNREAD))
def test_statistics_delta_rs_reads_none_of_are_refused(tmp_path: Path, case: str) -> None:
    """A file attested without statistics, then given statistics delta-rs cannot read: its typed reading (the view)
    stays empty, so this was VERIFIED before, while Spark reads what it can and skips or counts by it."""
    import decimal

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": pa.array([1], pa.int32()), "s": ["a"],
                                         "d": pa.array([decimal.Decimal("1.50")], pa.decimal128(10, 2))}))
    _without_statistics(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path))[0] == 0
    _given_statistics(path, _UNREAD[case])
    row = add_action_rows(DeltaTable(str(path)))[0]
    assert row["min"] is None or row["min"].get("d") is None  # delta-rs's typed statistics did not change
    doc = assert_refused(path, "reader_view_changed", "--level", "schema")
    assert "file view changed" in json.dumps(doc)


@pytest.mark.parametrize("case", sorted(_UNREAD))
def test_statistics_delta_rs_cannot_read_are_bound_as_written(tmp_path: Path, case: str) -> None:
    """The same statistics at attest time verify, with a note, and any change to them is a change of the view:
    delta-rs's typed reading stays empty, so the view holds them as the log writes them."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": pa.array([1], pa.int32()), "s": ["a"],
                                         "d": pa.array([__import__("decimal").Decimal("1.50")], pa.decimal128(10, 2))}))
    stats = json.loads(json.dumps(_UNREAD[case]))
    _given_statistics(path, stats)
    if case in ("a forged row count beside an overflow", "a null count beside an overflow"):
        # Counts Spark reads whatever delta-rs reads are held to the rows at record since redteam15d
        # (tests/adversarial/test_delta_round15.py): 1000 rows or a null claimed over 1 row without one.
        with pytest.raises(AttestError) as caught:
            attest_after_write(str(path), model="orders", program_hash=PROGRAM)
        assert caught.value.code.value == "table_inconsistent" and "(the log)" in str(caught.value), caught.value
        return
    if case in ("integer overflow beside a string bound", "an object as a string bound"):
        # A string bound Spark reads (an object as its text) above the row 'a': Spark skipped the file in a query
        # for s = 'a' (measured, test_spark_attacks / test_delta_spark_only_bounds); held to the rows at record since
        # rt15b (test_delta_spark_only_bounds.py), as Spark reads them.
        with pytest.raises(AttestError) as caught:
            attest_after_write(str(path), model="orders", program_hash=PROGRAM)
        assert caught.value.code.value == "table_inconsistent" and "s: " in str(caught.value), caught.value
        return
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and any("delta-rs cannot read" in n for n in doc["notes"]), doc
    for side in ("minValues", "maxValues"):
        for column, value in list(stats.get(side, {}).items()):
            stats[side][column] = "0" if isinstance(value, (dict, str)) else value * 10
    stats["numRecords"] += 1
    _given_statistics(path, stats)
    assert_refused(path, "reader_view_changed", "--level", "schema")


@pytest.mark.parametrize("depth", [900, 990, 5000])
def test_statistics_nested_deeper_than_python_parses_are_bound_as_written(tmp_path: Path, depth: int) -> None:
    """Bounds nested ~1,000 deep: Python's parser stops short of that (this was VERIFIED, the text taken for malformed
    and read by no one) or parses it and then a walk of it overflows, while Spark read bounds nested 990 deep and
    skipped the file by them (measured, test_spark_attacks), and delta-rs reads none. The text is bound as written: a
    file given them after the attestation is reader_view_changed, and one attested with them verifies with a note."""
    nested = "[" * depth + "]" * depth
    text = f'{{"numRecords":1,"minValues":{{"i":4294967297,"s":{nested}}},"maxValues":{{"s":{nested}}}}}'
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": pa.array([1], pa.int32()), "s": ["a"]}))
    _without_statistics(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    _given_statistics_text(path, text)
    assert_refused(path, "reader_view_changed", "--level", "schema")

    # Attested with them: refused since rt15b (table_inconsistent): Spark reads them as text below the row 'a' and
    # skipped the file in a query for it (measured, 990 deep), which was VERIFIED with a note.
    other = tmp_path / "other"
    write_deltalake(str(other), pa.table({"i": pa.array([1], pa.int32()), "s": ["a"]}))
    _given_statistics_text(other, text)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(other), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent" and "Spark" in str(caught.value), caught.value


def test_a_decimal_bound_delta_rs_writes_and_cannot_read_verifies_through_its_checkpoint(tmp_path: Path) -> None:
    """delta-rs writes a decimal maximum past 17 digits as a rounded float and reads none back (Spark reads its text):
    rounded up, above every value, Spark reads every row (test_delta_spark_only_bounds): an honest table, verified
    with a note; delta-rs's checkpoint copies the statistics as written, so the view holds. (Rounded down, below the
    greatest value, Spark skipped the file: refused since rt15b, test_delta_spark_only_bounds.)"""
    import decimal

    path = tmp_path / "t"
    big = decimal.Decimal("12345678901234566500.5")  # written as 1.2345678901234567e+19: above it
    write_deltalake(str(path), pa.table({"d": pa.array([big, decimal.Decimal("-1.5")], pa.decimal128(38, 18))}))
    assert "1.2345678901234567e+19" in (path / commit_name(0)).read_text()
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    DeltaTable(str(path)).create_checkpoint()
    rc, doc = verify(str(path))
    assert rc == 0 and any("(it reads none: maxValues.d)" in n for n in doc["notes"]), doc


def test_statistics_of_every_kind_of_column_still_verify(tmp_path: Path) -> None:
    """No false alarm on what writers write: NaN and infinite bounds, a 38-digit decimal (rounded outward), a
    truncated multi-byte string, nested structs, columns without bounds (arrays, maps, binary, booleans, all-null),
    and statistics for more columns than ``delta.dataSkippingNumIndexedCols`` names after it was lowered (delta-rs and
    Spark read those columns' bounds no more, measured)."""
    import decimal

    path = tmp_path / "t"
    data = pa.table({
        "f": pa.array([float("nan"), float("-inf")]),
        # delta-rs writes its maximum rounded up (1.2345678901234567e+19); rounded down it is refused (Spark skips the
        # file: test_delta_spark_only_bounds).
        "d": pa.array([decimal.Decimal("12345678901234566500.123456789012345678"), decimal.Decimal("-1.5")],
                      pa.decimal128(38, 18)),
        "s": ["é" * 40, "abc"],
        "st": pa.array([{"x": 1, "y": [2]}, None], pa.struct([("x", pa.int32()), ("y", pa.list_(pa.int32()))])),
        "a": pa.array([[1], None], pa.list_(pa.int32())),
        "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
        "bin": pa.array([b"\x01", None]),
        "b": [True, None],
        "n": pa.array([None, None], pa.int32()),
    })
    write_deltalake(str(path), data)
    DeltaTable(str(path)).alter.set_table_properties({"delta.dataSkippingNumIndexedCols": "1"},
                                                    raise_if_not_exists=False)
    write_deltalake(str(path), data, mode="append")
    assert [set(r["min"]) for r in add_action_rows(DeltaTable(str(path)))] == [{"f"}, {"f"}]  # the others unread
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"], doc


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_a_column_without_bounds_because_it_is_all_null_still_verifies(tmp_path: Path, mapping: str) -> None:
    """No false alarm: an all-null column has no bounds for any engine; under column mapping delta-rs keys its
    statistics by physical name, as the log does."""
    import datetime

    path = tmp_path / "t"
    ten = datetime.datetime(2024, 1, 5, 10)
    write_deltalake(str(path), pa.table({"t": pa.array([None, None], pa.timestamp("us", "UTC")),
                                         "u": pa.array([ten, ten], pa.timestamp("us", "UTC")),
                                         "d": pa.array([datetime.date(2024, 1, 5), None]), "v": [1, 2]}),
                    configuration={"delta.columnMapping.mode": mapping})
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["passed"], doc


def test_column_comment_is_not_a_change_of_what_readers_get(delta: Path) -> None:
    """The other side of the coin: a metadata-only commit that changes no value read still verifies."""
    def comment(meta: dict[str, Any]) -> None:
        fields = _fields(meta)
        fields[0]["metadata"] = {"comment": "documentation"}
        _set_fields(meta, fields)

    metadata_commit(delta, comment)
    set_properties(delta, {"team.owner": "data"})
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc


# ---- checkpoints and the log -------------------------------------------------------------------------------------
def _checkpoint_rewrite(path: Path, edit: Any) -> Path:
    """Rewrite the newest checkpoint (as a writer can), editing its add actions."""
    import pyarrow.parquet as pq

    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    rows_ = table.to_pylist()
    for row in rows_:
        if row.get("add"):
            edit(row["add"])
    pq.write_table(pa.Table.from_pylist(rows_, schema=table.schema), cp)
    return cp


def _first_partitioned(add: dict[str, Any], state: dict[str, bool]) -> None:
    if not state.get("done"):
        add["partitionValues"] = [("p", "z")]
        state["done"] = True


def test_checkpoint_changes_a_partition_value(delta: Path) -> None:
    state: dict[str, bool] = {}
    _checkpoint_rewrite(delta, lambda add: _first_partitioned(add, state))
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def test_checkpoint_changes_a_partition_value_and_the_log_is_cleaned_up(delta: Path) -> None:
    state: dict[str, bool] = {}
    cp = _checkpoint_rewrite(delta, lambda add: _first_partitioned(add, state))
    version = int(cp.name[:20])
    # Delta's log cleanup deletes the commits before the kept checkpoint's version, never that version's own commit
    # (a log without it: Spark reads no version, table_inconsistent — test_delta_commit_behind_checkpoint.py)
    for v in range(version):
        (delta / commit_name(v)).unlink()
    doc = assert_refused(delta, "reader_view_changed", "--level", "schema")
    assert "file view changed" in doc["errors"][0]["message"]


def test_checkpoint_forges_statistics(delta: Path) -> None:
    """Data skipping statistics that make a filtered query skip the file: readers get other rows."""
    def forge(add: dict[str, Any]) -> None:
        stats = json.loads(add["stats"])
        stats["minValues"]["v"] = 1000
        stats["maxValues"]["v"] = 2000
        add["stats"] = json.dumps(stats)

    _checkpoint_rewrite(delta, forge)
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def test_checkpoint_forges_statistics_and_the_log_is_cleaned_up(delta: Path) -> None:
    def forge(add: dict[str, Any]) -> None:
        stats = json.loads(add["stats"])
        stats["maxValues"]["v"] = -1
        add["stats"] = json.dumps(stats)

    cp = _checkpoint_rewrite(delta, forge)
    # Delta's log cleanup deletes the commits before the kept checkpoint's version, never that version's own commit
    # (a log without it: Spark reads no version, table_inconsistent — test_delta_commit_behind_checkpoint.py)
    for v in range(int(cp.name[:20])):
        (delta / commit_name(v)).unlink()
    assert_refused(delta, "reader_view_changed", "--level", "schema")


def test_two_checkpoints_of_one_version_disagree(delta: Path) -> None:
    """A classic checkpoint and a one-part multi-part checkpoint of the same version, with other contents."""
    import pyarrow.parquet as pq

    DeltaTable(str(delta)).create_checkpoint()
    cp = sorted((delta / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    kept = [r for r in table.to_pylist() if not r.get("add")] + [r for r in table.to_pylist() if r.get("add")][:1]
    twin = cp.with_name(f"{cp.name[:20]}.checkpoint.0000000001.0000000001.parquet")
    pq.write_table(pa.Table.from_pylist(kept, schema=table.schema), twin)
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def test_compacted_log_file_disagrees_with_its_commits(delta: Path) -> None:
    write_deltalake(str(delta), rows(), partition_by=["p"], mode="append")
    n = latest(delta)
    (delta / "_delta_log" / f"{0:020d}.{n:020d}.compacted.json").write_text(
        json.dumps(_add("p=a/forged.parquet", 10)) + "\n")
    assert_refused(delta, "table_inconsistent")


def test_hostile_json_in_a_commit_is_a_coded_outcome(delta: Path) -> None:
    (delta / commit_name(latest(delta) + 1)).write_text("[" * 100_000 + "\n")
    rc, doc = verify(str(delta))
    assert rc != 0 and codes(doc), doc


# ---- versions the protocol calls invalid: their meaning depends on the order an engine applies the actions ---------
def _rewrite_attested_commit(delta: Path, edit: Any) -> None:
    """Rewrite the attested data commit (version 0) in place: ``edit(lines)`` returns its new JSON lines."""
    log = delta / commit_name(0)
    log.write_text("\n".join(edit(log.read_text().splitlines())) + "\n")


def _after(kind: str, make: Any) -> Any:
    """An edit adding, after the commit's first ``kind`` line, the line ``make(that line's action)`` returns."""
    def edit(lines: list[str]) -> list[str]:
        out, done = [], False
        for line in lines:
            out.append(line)
            if not done and line.startswith(f'{{"{kind}"'):
                out.append(json.dumps(make(json.loads(line))))
                done = True
        assert done
        return out
    return edit


def _renamed_column(action: dict[str, Any]) -> dict[str, Any]:
    meta = json.loads(json.dumps(action["metaData"]))
    schema = json.loads(meta["schemaString"])
    schema["fields"][1]["name"] = "renamed"
    meta["schemaString"] = json.dumps(schema)
    return {"metaData": meta}


def _moved_partition(action: dict[str, Any]) -> dict[str, Any]:
    return {"add": {**action["add"], "partitionValues": {"p": "zz"}}}


@pytest.mark.parametrize("edit", [
    # Measured with Spark 4: it read the second metaData (a column of nulls under another name) and the second add
    # (the rows under another partition value); delta-rs read the first of each. Both were VERIFIED.
    _after("metaData", _renamed_column),
    _after("add", _moved_partition),
    _after("protocol", lambda a: {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                               "readerFeatures": ["columnMapping"],
                                               "writerFeatures": ["columnMapping"]}}),
    # Spark applies a commit's actions in file order: this file is gone for it, live for a replay that removes first.
    _after("add", lambda a: {"remove": {"path": a["add"]["path"], "dataChange": True, "deletionTimestamp": 1}}),
    _after("add", lambda a: {"add": a["add"], "remove": {"path": a["add"]["path"], "dataChange": True}}),
], ids=["two-metadata", "one-file-added-twice", "two-protocols", "added-and-removed", "two-actions-on-one-line"])
def test_an_attested_commit_rewritten_into_an_invalid_version_gets_no_verdict(delta: Path, edit: Any) -> None:
    _rewrite_attested_commit(delta, edit)
    doc = assert_refused(delta, "table_inconsistent")
    assert "_delta_log/00000000000000000000.json" in json.dumps(doc)
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def test_a_table_holding_an_invalid_commit_verifies_again_after_a_checkpoint(tmp_path: Path) -> None:
    """What earlier content-addressed overwrites left (delta-rs's add then remove of one file in one commit): later
    versions are refused too — engines replaying the log still disagree — until a checkpoint after it, from which every
    reader starts."""
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["p"])
    # The remove after the add, as delta-rs wrote it (delta-rs then read the file as live, Spark as gone).
    _rewrite_attested_commit(path, _after("add", lambda a: {"remove": {"path": a["add"]["path"], "dataChange": True,
                                                                       "deletionTimestamp": 1}}))
    write_deltalake(str(path), rows(), partition_by=["p"], mode="append")
    with pytest.raises(TableInconsistentError, match="adds and removes"):
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    DeltaTable(str(path)).create_checkpoint()
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


def _twice(text: str, key: str, first: str) -> str:
    """``text`` (a JSON object) with ``"key": first`` inserted before its own ``"key"``: one object, two values."""
    at = text.index(f'"{key}":')
    return f"{text[:at]}\"{key}\": {first}, {text[at:]}"


def _schema_key_twice(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.startswith('{"metaData"'):
            action = json.loads(line)
            forged = action["metaData"]["schemaString"].replace('"v"', '"renamed"')
            line = _twice(line, "schemaString", json.dumps(forged))
        out.append(line)
    return out


def _nested(field_name: str, value: str, inner_key: str) -> Any:
    """An edit naming ``inner_key`` twice inside the JSON string ``field_name`` of the first action holding it."""
    def edit(lines: list[str]) -> list[str]:
        out, done = [], False
        for line in lines:
            action = json.loads(line)
            body = next(iter(action.values()))
            if not done and isinstance(body, dict) and isinstance(body.get(field_name), str):
                body[field_name] = _twice(body[field_name], inner_key, value)
                line, done = json.dumps(action), True
            out.append(line)
        assert done
        return out
    return edit


def _partition_key_twice(lines: list[str]) -> list[str]:
    return [line.replace('"partitionValues": {"p": "a"}', '"partitionValues": {"p": "zz", "p": "a"}', 1)
            .replace('"partitionValues":{"p":"a"}', '"partitionValues":{"p":"zz","p":"a"}', 1) for line in lines]


@pytest.mark.parametrize("edit", [
    _schema_key_twice,
    _nested("schemaString", '[{"name": "p", "type": "string", "nullable": true, "metadata": {}}]', "fields"),
    _nested("stats", "0", "numRecords"),
    _partition_key_twice,
], ids=["schemaString-twice", "fields-twice-in-the-schema", "numRecords-twice-in-statistics",
        "partition-value-twice"])
def test_a_key_named_twice_in_one_object_of_the_log_gets_no_verdict(delta: Path, edit: Any) -> None:
    """JSON parsers keep the first, the last or refuse (Python: the last; delta-rs and Spark: the first for a struct's
    field, the last for a map's key): readers would disagree on what the attested version holds."""
    _rewrite_attested_commit(delta, edit)
    assert_refused(delta, "table_inconsistent", "--level", "schema")


def _checkpoint_rows(path: Path, edit: Any) -> None:
    """Rewrite the newest checkpoint's rows (``edit(rows) -> rows``), keeping its Parquet schema."""
    import pyarrow.parquet as pq

    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    pq.write_table(pa.Table.from_pylist(edit(table.to_pylist()), schema=table.schema), cp)


def _second_metadata_row(rows_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    meta = next(r for r in rows_ if r.get("metaData"))
    return [*rows_, {**meta, "metaData": {**meta["metaData"], "partitionColumns": []}}]


def _partition_key_twice_in_a_map(rows_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    add = next(r for r in rows_ if r.get("add"))
    add["add"]["partitionValues"] = [("p", "zz"), *add["add"]["partitionValues"]]
    return rows_


def _remove_on_an_add_row(rows_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    add = next(r for r in rows_ if r.get("add"))
    add["remove"] = {"path": add["add"]["path"], "dataChange": True}
    return rows_


@pytest.mark.parametrize(("edit", "said"), [
    (_second_metadata_row, "more than one metaData"),
    (_partition_key_twice_in_a_map, "names a key twice"),
    (_remove_on_an_add_row, "holds 2 actions"),
], ids=["two-metadata-rows", "map-key-twice", "two-actions-on-one-row"])
def test_a_checkpoint_rewritten_into_an_invalid_version_gets_no_verdict(delta: Path, edit: Any, said: str) -> None:
    _checkpoint_rows(delta, edit)
    doc = assert_refused(delta, "table_inconsistent", "--level", "schema")
    assert said in json.dumps(doc)


def _checkpoint_with_typed_twins(path: Path, forge: Any) -> None:
    """Rewrite the newest checkpoint as Spark writes one with ``delta.checkpoint.writeStatsAsStruct``: every add also
    holds ``stats_parsed`` and ``partitionValues_parsed``; ``forge(add)`` then edits the first add. Commits before the
    checkpoint are cleaned up, as log cleanup does (the cross-check with them is gone)."""
    import pyarrow.parquet as pq

    DeltaTable(str(path)).create_checkpoint()
    cp = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    table = pq.read_table(cp)
    add_type = table.schema.field("add").type
    long_ = pa.int64()
    stats_type = pa.struct([("numRecords", long_), ("minValues", pa.struct([("v", long_), ("w", pa.string())])),
                            ("maxValues", pa.struct([("v", long_), ("w", pa.string())])),
                            ("nullCount", pa.struct([("v", long_), ("w", long_)]))])
    twins = [pa.field("stats_parsed", stats_type), pa.field("partitionValues_parsed", pa.struct([("p", pa.string())]))]
    with_twins = pa.field("add", pa.struct([*add_type, *twins]))
    schema = pa.schema([with_twins if f.name == "add" else f for f in table.schema])
    rows_ = table.to_pylist()
    adds = [r["add"] for r in rows_ if r.get("add")]
    for add in adds:
        stats = json.loads(add["stats"])
        add["stats_parsed"] = {k: stats[k] for k in ("numRecords", "minValues", "maxValues", "nullCount")}
        add["partitionValues_parsed"] = dict(add["partitionValues"])
    forge(adds[0])
    pq.write_table(pa.Table.from_pylist(rows_, schema=schema), cp)
    for v in range(int(cp.name[:20])):
        (path / commit_name(v)).unlink()


def test_a_checkpoint_with_typed_twins_that_agree_still_verifies(delta: Path) -> None:
    _checkpoint_with_typed_twins(delta, lambda add: None)
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc


def _forge_json_maximum(add: dict[str, Any]) -> None:
    stats = json.loads(add["stats"])
    stats["maxValues"]["v"] = -1  # a filter on v skips the file for readers of the JSON statistics (Spark)
    add["stats"] = json.dumps(stats)


def _forge_typed_partition(add: dict[str, Any]) -> None:
    add["partitionValues_parsed"] = {"p": "zz"}


@pytest.mark.parametrize("forge", [_forge_json_maximum, _forge_typed_partition], ids=["statistics", "partition"])
def test_a_checkpoint_whose_two_renderings_of_a_file_differ_gets_no_verdict(delta: Path, forge: Any) -> None:
    """Measured with a forged JSON maximum and intact stats_parsed: delta-rs (the reader view) read the typed one and
    saw nothing change; Spark read the JSON one and a filtered query skipped the file's rows. VERIFIED before."""
    _checkpoint_with_typed_twins(delta, forge)
    doc = assert_refused(delta, "table_inconsistent", "--level", "schema")
    assert "as typed values differ" in json.dumps(doc)


def test_deletion_vector_added_then_log_cleaned_up(delta: Path) -> None:
    """A DELETE by deletion vector after the attestation, then the log entries removed after a checkpoint."""
    metadata_commit(delta, lambda m: None)  # something to checkpoint past
    write_commit(delta, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                       "readerFeatures": ["deletionVectors"],
                                       "writerFeatures": ["deletionVectors"]}}])
    add_deletion_vector(delta, [0])
    DeltaTable(str(delta)).create_checkpoint()
    # Delta's log cleanup deletes the commits before the kept checkpoint's version, never that version's own commit
    # (a log without it: Spark reads no version, table_inconsistent — test_delta_commit_behind_checkpoint.py)
    for v in range(latest(delta)):
        (delta / commit_name(v)).unlink()
    rc, doc = verify(str(delta), "--level", "schema")
    assert rc == 1 and set(codes(doc)) & {"stale", "reader_view_changed"}, doc


# ---- data changes and staleness ----------------------------------------------------------------------------------
def test_schema_level_never_passes_a_stale_table(delta: Path) -> None:
    write_deltalake(str(delta), rows(), partition_by=["p"], mode="append")
    assert_refused(delta, "stale", "--level", "schema")


def test_hand_written_append_without_commit_info(delta: Path) -> None:
    src = delta / unquote(a_data_file(delta))
    shutil.copy(src, delta / "p=a" / "extra.parquet")
    (delta / commit_name(latest(delta) + 1)).write_text(json.dumps(_add("p=a/extra.parquet", src.stat().st_size))
                                                          + "\n")
    assert_refused(delta, "stale", "--level", "schema")


def test_new_rows_disguised_as_compaction(delta: Path) -> None:
    src = delta / unquote(a_data_file(delta))
    shutil.copy(src, delta / "p=a" / "more.parquet")
    write_commit(delta, [_add("p=a/more.parquet", src.stat().st_size, dataChange=False)])
    # The attestation binds a content digest: the "rewrite" added rows no removed file held (it was compacted).
    doc = assert_refused(delta, "content_changed", "--level", "schema")
    assert "more than the 0" in doc["errors"][0]["message"], doc


def test_replayed_older_attestation_onto_a_newer_version(delta: Path) -> None:
    """Keep the old attestation's keys after an append: they bind the old version, which is no longer current."""
    old = props.attestation_keys(DeltaTable(str(delta)).metadata().configuration)
    write_deltalake(str(delta), rows(), partition_by=["p"], mode="append")
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM)

    def restore(meta: dict[str, Any]) -> None:
        config = {k: v for k, v in meta["configuration"].items() if k not in props.attestation_keys(meta[
            "configuration"])}
        meta["configuration"] = {**config, **old}

    metadata_commit(delta, restore)
    assert_refused(delta, "stale", "--level", "schema")


def test_data_file_bytes_swapped_same_size(delta: Path) -> None:
    victim = delta / unquote(a_data_file(delta))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    assert_refused(delta, "artifact_hash_mismatch")


def test_data_file_deleted(delta: Path) -> None:
    (delta / unquote(a_data_file(delta))).unlink()
    assert_refused(delta, "file_missing")


def test_data_file_replaced_by_a_folder(delta: Path) -> None:
    victim = delta / unquote(a_data_file(delta))
    victim.unlink()
    victim.mkdir()
    assert_refused(delta, "file_missing")


# ---- detached attestations ---------------------------------------------------------------------------------------
def test_forged_detached_pointer_for_a_later_version(tmp_path: Path) -> None:
    path = tmp_path / "d"
    write_deltalake(str(path), rows(), partition_by=["p"])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM, detached=True)
    assert verify(str(path))[0] == 0
    write_deltalake(str(path), rows(), partition_by=["p"], mode="append")
    pointer = path / SIDECAR_DIR / "versions" / "0.json"
    doc = json.loads(pointer.read_text())
    doc["table_version"] = "1"
    doc["properties"][props.KEY_VERSION] = "1"
    (path / SIDECAR_DIR / "versions" / "1.json").write_text(json.dumps(doc))
    assert_refused(path, "carrier_tampered", "--level", "schema")


def test_malformed_detached_pointer(tmp_path: Path) -> None:
    path = tmp_path / "d"
    write_deltalake(str(path), rows(), partition_by=["p"])
    (path / SIDECAR_DIR / "versions").mkdir(parents=True)
    (path / SIDECAR_DIR / "versions" / "0.json").write_text('{"format": "recipe-attest-detached", "properties": 7}')
    assert_refused(path, "carrier_tampered", "--level", "schema")


def test_a_detached_pointer_naming_a_key_twice_is_tampering(tmp_path: Path) -> None:
    """Two "properties" objects in one pointer: Python's json keeps the last, other readers the first — one file, two
    attestations. Refused as manifests are."""
    path = tmp_path / "d"
    write_deltalake(str(path), rows(), partition_by=["p"])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM, detached=True)
    pointer = path / SIDECAR_DIR / "versions" / "0.json"
    text = pointer.read_text()
    at = text.index('"properties":')
    pointer.write_text(f'{text[:at]}"properties": {{"{props.KEY_VERSION}": "0"}}, {text[at:]}')
    doc = assert_refused(path, "carrier_tampered", "--level", "schema")
    assert "duplicate key" in json.dumps(doc)


# ---- copies and other producers ----------------------------------------------------------------------------------
def test_a_byte_identical_copy_still_verifies(delta: Path, tmp_path: Path) -> None:
    """Not an attack: a copied table is the same table; the verdict must not depend on where it lives."""
    rc, doc = verify(str(copy_table(delta, tmp_path / "copy")))
    assert rc == 0 and doc["level"] == "bytes", doc


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_sidecar_is_readable_by_other_users(delta: Path) -> None:
    assert _sidecar(delta).stat().st_mode & 0o044 == 0o044


# ---- logical files: (path, deletion-vector id), as the protocol keys them -------------------------------------
def _with_deletion_vector(delta: Path) -> tuple[int, dict[str, Any]]:
    """The table with a deletion vector committed on one file; (that commit's version, its add)."""
    write_commit(delta, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                       "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}])
    add_deletion_vector(delta, [0])
    n = latest(delta)
    add = next(json.loads(line)["add"] for line in (delta / commit_name(n)).read_text().splitlines()
               if '"add"' in line)
    return n, add


def test_a_file_live_twice_once_without_its_deletion_vector_is_never_verified(delta: Path) -> None:
    """The deletion vector's commit rewritten in place without its remove: the file is live twice, whole and with the
    vector, and Spark reads it once for each (measured: the deleted row came back); the replay by path alone kept only
    the second entry, the very view that was attested."""
    n, _ = _with_deletion_vector(delta)
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(delta))
    assert rc == 0, doc
    commit = delta / commit_name(n)
    commit.write_text("".join(line + "\n" for line in commit.read_text().splitlines() if '"remove"' not in line))
    rc, doc = verify(str(delta))
    assert rc == 1 and "table_inconsistent" in codes(doc), doc
    assert any("live as 2 logical files" in e["message"] for e in doc["errors"]), doc


def test_a_file_added_again_without_its_deletion_vector_is_not_attested(delta: Path) -> None:
    _, add = _with_deletion_vector(delta)
    write_commit(delta, [{"add": {k: v for k, v in add.items() if k != "deletionVector"}}])
    with pytest.raises(TableInconsistentError, match="live as 2 logical files"):
        attest_after_write(str(delta), model="orders", program_hash=PROGRAM)


def test_a_remove_naming_no_deletion_vector_leaves_the_vectored_file_live(delta: Path) -> None:
    """Protocol readers match a remove by (path, deletion-vector id): one naming no vector removes nothing from a
    file that has one. The replay agrees with delta-rs, so the table attests and verifies with the file in it."""
    _, add = _with_deletion_vector(delta)
    write_commit(delta, [{"remove": {"path": add["path"], "dataChange": True, "deletionTimestamp": 1,
                                     "size": add["size"], "partitionValues": add["partitionValues"]}}])
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(delta))
    assert rc == 0, doc
    assert unquote(add["path"]) in {unquote(p) for p in log_state(delta).adds}


def _absolute_deletion_vector(delta: Path, spelling: str) -> None:
    """A deletion vector stored at an absolute path (storage type ``p``), spelled ``spelling`` (``{root}``: the table
    folder), committed on the table's first file."""
    write_commit(delta, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                       "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}])
    add = log_state(delta).adds[a_data_file(delta)]
    data, offset, size = dv_file([0])
    (delta / "ab").mkdir()
    (delta / "ab" / "dv.bin").write_bytes(data)
    dv = {"storageType": "p", "pathOrInlineDv": spelling.format(root=delta), "offset": offset, "sizeInBytes": size,
          "cardinality": 1}
    write_commit(delta, [{"remove": {"path": add["path"], "dataChange": True, "deletionTimestamp": 1,
                                     "size": add["size"], "partitionValues": add["partitionValues"]}},
                         {"add": dict(add, deletionVector=dv)}])


@pytest.mark.parametrize("spelling", ["file://{root}/ab/dv.bin", "file://{root}/ab/dv%2Ebin"])
def test_an_absolute_deletion_vector_under_the_table_is_attested(delta: Path, spelling: str) -> None:
    """The part under the root is a URI path, decoded as engines decode it (``%2E`` is ``.``)."""
    _absolute_deletion_vector(delta, spelling)
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc
    other, _, _ = dv_file([1])  # another row deleted, same size: only the bytes tell
    assert len(other) == (delta / "ab" / "dv.bin").stat().st_size
    (delta / "ab" / "dv.bin").write_bytes(other)
    assert_refused(delta, "artifact_hash_mismatch")


@pytest.mark.parametrize("spelling", ["file://{root}/ab/../ab/dv.bin", "file://{root}//ab/dv.bin"])
def test_an_absolute_deletion_vector_spelled_two_ways_is_not_attested(delta: Path, spelling: str) -> None:
    _absolute_deletion_vector(delta, spelling)
    with pytest.raises(TableInconsistentError):
        attest_after_write(str(delta), model="orders", program_hash=PROGRAM)


# ---- checksum files (<version>.crc) ---------------------------------------------------------------------------------
def _latest_actions(delta: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The newest metaData and protocol of the log (copies), as a checksum file of the latest version holds them."""
    state = log_state(delta)
    return json.loads(json.dumps(state.metadata)), json.loads(json.dumps(state.protocol))


def _write_checksum(delta: Path, meta: dict[str, Any], protocol: dict[str, Any]) -> None:
    crc = {"tableSizeBytes": 1, "numFiles": 1, "numMetadata": 1, "numProtocol": 1, "metadata": meta,
           "protocol": protocol}
    (delta / "_delta_log" / f"{latest(delta):020}.crc").write_text(json.dumps(crc))


def _crc_renamed_column(meta: dict[str, Any], protocol: dict[str, Any]) -> None:
    schema = json.loads(meta["schemaString"])
    next(f for f in schema["fields"] if f["name"] == "v")["name"] = "renamed"  # read as a column of nulls
    meta["schemaString"] = json.dumps(schema)


def _crc_read_property(meta: dict[str, Any], protocol: dict[str, Any]) -> None:
    meta["configuration"] = {**meta["configuration"], "delta.enableChangeDataFeed": "true"}


def _crc_partitioning(meta: dict[str, Any], protocol: dict[str, Any]) -> None:
    meta["partitionColumns"] = []


def _crc_table_id(meta: dict[str, Any], protocol: dict[str, Any]) -> None:
    meta["id"] = "00000000-0000-0000-0000-000000000000"


@pytest.mark.parametrize(("forge", "said"), [
    (_crc_renamed_column, "schema"), (_crc_read_property, "properties"), (_crc_partitioning, "partition columns"),
    (_crc_table_id, "table id"),
], ids=["schema", "properties", "partition-columns", "table-id"])
def test_a_forged_checksum_file_gets_no_verdict(delta: Path, forge: Any, said: str) -> None:
    """delta-rs takes a version's schema, properties, partitioning and table id from its checksum file when there is
    one; Spark replays the log (measured). A checksum file saying other than the log is a table two readers read
    differently (delta-rs read a renamed column as nulls), whichever reader the verifier's view came from."""
    meta, protocol = _latest_actions(delta)
    forge(meta, protocol)
    _write_checksum(delta, meta, protocol)
    doc = assert_refused(delta, "table_inconsistent", "--level", "schema")
    assert f"read other {said}" in json.dumps(doc)


def test_a_checksum_file_that_agrees_with_the_log_still_verifies(delta: Path) -> None:
    _write_checksum(delta, *_latest_actions(delta))
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc


def test_a_content_addressed_write_refuses_a_table_readers_read_differently(delta: Path) -> None:
    """delta-rs would commit the write against its own reading of the table (the checksum file's): refused before any
    byte is written, as the attestation after it would be."""
    from carriers.delta.write import write_content_addressed

    meta, protocol = _latest_actions(delta)
    _crc_renamed_column(meta, protocol)
    _write_checksum(delta, meta, protocol)
    before = sorted(p.relative_to(delta) for p in delta.rglob("*"))
    for mode in ("append", "overwrite"):
        with pytest.raises(TableInconsistentError, match="nothing was written"):
            write_content_addressed(str(delta), rows(), mode=mode, partition_by=["p"], model="orders",
                                    program_hash=PROGRAM)
    assert sorted(p.relative_to(delta) for p in delta.rglob("*")) == before


# ---- digits that are not ASCII --------------------------------------------------------------------------------------
@pytest.mark.parametrize("digits", ["²", "٣", "--1"], ids=["superscript", "arabic-indic", "two-minus"])
def test_a_binding_or_key_of_odd_digits_gets_a_coded_verdict(delta: Path, digits: str) -> None:
    """``'²'.isdigit()`` and ``'٣'.isdigit()`` are true; ``int('²')`` raises, ``int('٣')`` is 3: a version, list index
    or log file name is read as ASCII digits only (attest.numbers.is_digits), or it is no number."""
    set_properties(delta, {props.KEY_VERSION: digits})
    rc, doc = verify(str(delta))
    assert rc == 1 and "carrier_tampered" in codes(doc), doc
    set_properties(delta, {f"{props.PREFIX}output_hashes.{digits}.hash": "a" * 64})
    rc, doc = verify(str(delta))
    assert rc == 1 and "internal_error" not in codes(doc) and doc["errors"], doc


@pytest.mark.parametrize("digit", ["²", "٣"], ids=["superscript", "arabic-indic"])
def test_a_log_file_named_with_odd_digits_is_no_version(delta: Path, digit: str) -> None:
    """delta-rs reads a version number as ASCII digits only; so does every listing here, the commit writer's too."""
    version = latest(delta)
    (delta / "_delta_log" / f"{'0' * 19}{digit}.json").write_text((delta / commit_name(version)).read_text())
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["level"] == "bytes", doc
    attest_after_write(str(delta), model="orders", program_hash=PROGRAM, replace=True)
    assert latest(delta) == version + 1


# ---- log file names only some engines read as versions -------------------------------------------------------------
@pytest.mark.parametrize("name", ["{next}.json", "0{next}.json", "{padded}.checkpoint.x.json",
                                  "1.{next}.compacted.json", "{padded}.abc.json"])
def test_a_log_file_spark_reads_as_a_version_gets_no_verdict(delta: Path, name: str) -> None:
    """Spark takes ``2.json`` (any run of digits) for version 2 and read its rows; delta-rs takes versions from 20-digit
    names only and stayed at version 1 — VERIFIED before (test_spark_attacks measures it). Spark's other patterns
    (checkpoints with any tag, compacted files, unbackfilled commits) are held to the same rule."""
    src = delta / unquote(a_data_file(delta))
    shutil.copy(src, delta / "extra.parquet")
    following = latest(delta) + 1
    body = "\n".join(json.dumps(a) for a in [{"commitInfo": {"operation": "WRITE"}},
                                             _add("extra.parquet", src.stat().st_size)]) + "\n"
    (delta / "_delta_log" / name.format(next=following, padded=f"{following:020}")).write_text(body)
    doc = assert_refused(delta, "table_inconsistent", "--level", "schema")
    assert "named as Spark names" in json.dumps(doc)
    with pytest.raises(TableInconsistentError):
        attest_after_write(str(delta), model="orders", program_hash=PROGRAM)


# ---- removes spelled as engines resolve differently ----------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["./{p}", "d/../{p}", "{p}#x"])
def test_a_remove_engines_resolve_differently_gets_no_verdict(delta: Path, spelling: str) -> None:
    """The attested commit rewritten in place with a remove of ``./x`` for a live ``x``: Spark normalises the path and
    removed x (its rows gone, measured in test_spark_attacks), delta-rs matches paths as written and kept it — the
    view, taken from delta-rs, was unchanged: VERIFIED before."""
    raw = a_data_file(delta)
    append_actions(delta / commit_name(0),
                   [{"remove": {"path": spelling.format(p=raw), "dataChange": True, "deletionTimestamp": 1}}])
    doc = assert_refused(delta, "table_inconsistent", "--level", "schema")
    assert "a path engines resolve differently" in json.dumps(doc)


def _modified_at(milliseconds: int) -> Any:
    """An edit setting every add's modificationTime in a commit."""
    def edit(lines: list[str]) -> list[str]:
        actions = [json.loads(line) for line in lines]
        for action in actions:
            if "add" in action:
                action["add"]["modificationTime"] = milliseconds
        return [json.dumps(a) for a in actions]
    return edit


def test_a_modification_time_rewritten_in_the_attested_commit_changes_the_view(delta: Path) -> None:
    """Spark's ``_metadata.file_modification_time`` is the log's modificationTime (test_spark_attacks pins it):
    rewritten in place, the same files and bytes answered a query on it otherwise (VERIFIED before). Times are bound."""
    _rewrite_attested_commit(delta, _modified_at(1000))
    doc = assert_refused(delta, "reader_view_changed", "--level", "schema")
    assert "file modification times changed" in json.dumps(doc)


def test_a_checkpoint_keeps_the_modification_times(delta: Path) -> None:
    DeltaTable(str(delta)).create_checkpoint()
    rc, doc = verify(str(delta))
    assert rc == 0 and doc["passed"], doc


def test_an_attestation_made_before_the_times_were_bound_says_so(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A view attested without ``file_times`` is compared on what it bound: it still verifies, and says what it does not
    bind — then a rewritten time is not caught, and the verdict said it would not be."""
    import carriers.delta.carrier as delta_carrier
    from attest.view import ReaderView

    def earlier(table: dict[str, Any], files: dict[str, str], **aside: Any) -> ReaderView:
        return ReaderView(table={k: v for k, v in table.items() if k != "file_times"}, files=files, **aside)

    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["p"])
    with monkeypatch.context() as patch:
        patch.setattr(delta_carrier, "ReaderView", earlier)
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    for _ in range(2):
        rc, doc = verify(str(path))
        assert rc == 0 and doc["passed"], doc
        assert any("file modification times" in note and "re-attest" in note for note in doc["notes"]), doc
        assert "not bound: file modification times" in doc["verdict"], doc
        assert doc["reader_view_unbound"] == ["file modification times"], doc
        _rewrite_attested_commit(path, _modified_at(1000))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and not any("file modification times" in note for note in doc.get("notes", [])), doc
    assert "not bound" not in doc["verdict"] and "reader_view_unbound" not in doc, doc
