"""The Delta carrier against real delta-rs tables: record, read back, verify, tamper, staleness, time travel."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import attest.hashing as hashing
from attest.errors import Code, UnsupportedTableError
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.base import TableCarrier
from carriers.delta.carrier import SIDECAR_DIR, DeltaCarrier, attest_after_write
from carriers.delta.write import write_content_addressed
from tests.delta.conftest import PROGRAM, SPECIAL, special_table
from tests.delta.dv import add_deletion_vector


def codes(report: Any) -> list[str]:
    return [p.code.value for p in report.errors]


def attest(path: Path, **kw: Any) -> Any:
    return attest_after_write(str(path), model="orders", program_hash=PROGRAM, **kw)


def config(path: Path) -> dict[str, str]:
    return dict(DeltaTable(str(path)).metadata().configuration)


def a_live_file(path: Path) -> Path:
    files = [f for f in DeltaCarrier(str(path)).list_files() if f.kind == "data"]
    return path.joinpath(*files[0].path.split("/"))


# ---- the happy path --------------------------------------------------------------------------------------------
def test_carrier_implements_the_protocol(partitioned: Path) -> None:
    carrier = DeltaCarrier(str(partitioned))
    assert isinstance(carrier, TableCarrier)
    assert carrier.kind == "delta"


def test_unattested_table_is_labelled(partitioned: Path) -> None:
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert not report.attested and codes(report) == ["unattested"]
    assert DeltaCarrier(str(partitioned)).read() is None


def test_partitioned_special_values_verify_at_bytes_level(partitioned: Path) -> None:
    result = attest(partitioned)
    assert result.attested_version == "0"
    carrier = DeltaCarrier(str(partitioned))
    paths = {f.path for f in carrier.list_files()}
    # URL-decoded, POSIX, relative: exactly the on-disk names.
    assert all(partitioned.joinpath(*p.split("/")).is_file() for p in paths)
    assert any(p.startswith("p=__HIVE_DEFAULT_PARTITION__/") for p in paths)
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    assert report.files_checked == len(SPECIAL)
    attestation = carrier.read()
    assert attestation is not None and attestation.files is not None
    assert [o["path"] for o in attestation.document["output_hashes"]] == sorted(paths)
    assert result.manifest is not None and attestation.document == result.manifest.to_dict()


def test_attestation_is_a_separate_metadata_commit_and_keeps_user_properties(partitioned: Path) -> None:
    DeltaTable(str(partitioned)).alter.set_table_properties({"team.owner": "data", "delta.logRetentionDuration":
                                                             "interval 30 days"}, raise_if_not_exists=False)
    write_deltalake(str(partitioned), special_table(), partition_by=["p"], mode="append")
    attest(partitioned)
    log = partitioned / "_delta_log"
    last = sorted(log.glob("*.json"))[-1]
    actions = [json.loads(line) for line in last.read_text().splitlines()]
    assert not any("add" in a or "remove" in a for a in actions)
    cfg = config(partitioned)
    assert cfg["team.owner"] == "data" and cfg["delta.logRetentionDuration"] == "interval 30 days"
    assert cfg[props.KEY_VERSION] == "2"
    assert verify_table(DeltaCarrier(str(partitioned))).passed


def test_version_of_the_data_commit_uses_the_follow_up_attestation(partitioned: Path) -> None:
    attest(partitioned)  # data version 0, attestation commit 1
    carrier = DeltaCarrier(str(partitioned))
    report = verify_table(carrier, version=0)
    assert report.passed and report.attested_version == "0", report.human()
    assert verify_table(carrier, version=1).passed


def test_sidecar_always_written_and_content_addressed(partitioned: Path) -> None:
    result = attest(partitioned)
    assert result.sidecar is not None
    sidecar = partitioned / result.sidecar
    from attest.canonical import blake3_hex

    assert sidecar.parent.name == SIDECAR_DIR
    assert sidecar.name == blake3_hex(sidecar.read_bytes()) + ".json"
    assert not list(sidecar.parent.glob("*.tmp"))


def test_many_files_move_to_the_sidecar_and_read_back_in_full(table_dir: Path) -> None:
    data = pa.table({"p": [str(i) for i in range(props.INLINE_OUTPUTS_MAX + 3)],
                     "v": list(range(props.INLINE_OUTPUTS_MAX + 3))})
    write_deltalake(str(table_dir), data, partition_by=["p"])
    result = attest(table_dir)
    cfg = config(table_dir)
    assert cfg[props.KEY_OUTPUTS_COUNT] == str(props.INLINE_OUTPUTS_MAX + 3)
    # The file list lives only in the sidecar: the reference convention has no lists.
    assert not any(k.startswith(props.PREFIX + "output_hashes") for k in cfg)
    attestation = DeltaCarrier(str(table_dir)).read()
    assert attestation is not None and result.manifest is not None
    assert attestation.document == result.manifest.to_dict()
    assert len(attestation.document["output_hashes"]) == props.INLINE_OUTPUTS_MAX + 3
    assert verify_table(DeltaCarrier(str(table_dir))).passed


def test_dataframe_style_table_object_and_storage_options(partitioned: Path) -> None:
    attest(partitioned)
    carrier = DeltaCarrier(DeltaTable(str(partitioned)), storage_options={})
    assert verify_table(carrier).passed


# ---- tampering -------------------------------------------------------------------------------------------------
def test_one_flipped_byte_fails_bytes_but_passes_files(partitioned: Path) -> None:
    attest(partitioned)
    victim = a_live_file(partitioned)
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    victim.write_bytes(bytes(raw))
    carrier = DeltaCarrier(str(partitioned))
    assert verify_table(carrier, level="files").passed
    report = verify_table(carrier, level="bytes")
    assert codes(report) == ["artifact_hash_mismatch"], report.human()


def test_removed_file_is_missing_at_bytes_level(partitioned: Path) -> None:
    attest(partitioned)
    a_live_file(partitioned).unlink()
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert codes(report) == ["file_missing"], report.human()


def test_extra_file_on_disk_outside_the_log_is_not_a_change(partitioned: Path) -> None:
    attest(partitioned)
    (partitioned / "p=plain" / "stray-orphan.parquet").write_bytes(b"not in the log")
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert report.passed, report.human()


def test_edited_output_hash_property_is_caught(partitioned: Path) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).alter.set_table_properties(
        {props.PREFIX + "output_hashes.0.hash": "f" * 64}, raise_if_not_exists=False)
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert not report.passed
    assert "carrier_tampered" in codes(report), report.human()


@pytest.mark.parametrize(("key", "value"), [("program_hash", "f" * 64), ("env_hash", "0" * 64),
                                            ("subject.model", "someone_else"), ("subject.run_id", "forged")])
def test_any_single_edited_manifest_field_is_caught(partitioned: Path, key: str, value: str) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).alter.set_table_properties({props.PREFIX + key: value}, raise_if_not_exists=False)
    report = verify_table(DeltaCarrier(str(partitioned)), level="schema")
    assert codes(report) == ["carrier_tampered"], report.human()


def test_edited_binding_version_is_caught(partitioned: Path) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).alter.set_table_properties({props.KEY_VERSION: "99"}, raise_if_not_exists=False)
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert "carrier_tampered" in codes(report), report.human()


def test_edited_inputs_hash_is_caught_against_the_sidecar(partitioned: Path) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).alter.set_table_properties(
        {props.PREFIX + "inputs_hash": "e" * 64, props.PREFIX + "inputs_proof_class": "strong"},
        raise_if_not_exists=False)
    assert "carrier_tampered" in codes(verify_table(DeltaCarrier(str(partitioned))))


def test_edited_sidecar_is_a_sidecar_mismatch(partitioned: Path) -> None:
    result = attest(partitioned)
    sidecar = partitioned / result.sidecar
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"size":', b'"size": '))
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert codes(report) == ["sidecar_mismatch"], report.human()
    assert report.level == "schema"


def test_deleted_sidecar_is_missing(partitioned: Path) -> None:
    result = attest(partitioned)
    (partitioned / result.sidecar).unlink()
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert codes(report) == ["sidecar_missing"], report.human()


def test_sidecar_reference_outside_the_attest_dir_is_refused(partitioned: Path) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).alter.set_table_properties(
        {props.KEY_SIDECAR_PATH: "../../etc/passwd"}, raise_if_not_exists=False)
    assert "carrier_tampered" in codes(verify_table(DeltaCarrier(str(partitioned))))


# ---- staleness, compaction, time travel ------------------------------------------------------------------------
def test_unattested_append_is_stale_and_time_travel_still_verifies(partitioned: Path) -> None:
    attest(partitioned)  # data 0, attestation 1
    write_deltalake(str(partitioned), special_table(), partition_by=["p"], mode="append")  # 2
    carrier = DeltaCarrier(str(partitioned))
    report = verify_table(carrier)
    assert codes(report) == ["stale"] and "WRITE" in report.errors[0].message, report.human()
    for version in (0, 1):
        old = verify_table(carrier, version=version)
        assert old.passed and old.level == "bytes", old.human()


def test_delete_is_stale(partitioned: Path) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).delete("v = 3")
    assert codes(verify_table(DeltaCarrier(str(partitioned)))) == ["stale"]


def test_overwrite_is_stale(partitioned: Path) -> None:
    attest(partitioned)
    write_deltalake(str(partitioned), special_table(), partition_by=["p"], mode="overwrite")
    assert codes(verify_table(DeltaCarrier(str(partitioned)))) == ["stale"]


def test_optimize_compaction_is_carried_over_by_content(table_dir: Path) -> None:
    for i in range(3):
        write_deltalake(str(table_dir), pa.table({"v": [i]}), mode="append")
    first = attest(table_dir)
    DeltaTable(str(table_dir)).optimize.compact()
    report = verify_table(DeltaCarrier(str(table_dir)))
    assert report.passed and report.verdict().startswith("VERIFIED (content; compacted at version 4: 3 files → 1, "
                                                         "same rows; bytes"), report.human()
    # Re-attesting after compaction carries the attestation forward: the new layout, the same program and run.
    again = attest(table_dir)
    assert again.continues is not None and again.manifest is not None and first.manifest is not None
    assert again.manifest.program_hash == first.manifest.program_hash
    assert again.manifest.subject == first.manifest.subject
    report = verify_table(DeltaCarrier(str(table_dir)))
    assert report.passed and report.content_check is None, report.human()


def test_reattestation_with_fewer_fields_drops_inputs_hash(table_dir: Path) -> None:
    from attest.identity.inputs import ObservedInput

    write_deltalake(str(table_dir), pa.table({"v": [1]}))
    upstream = ObservedInput(table="delta:upstream", version="3")
    first = attest(table_dir, inputs=[upstream])
    assert first.manifest is not None and first.manifest.inputs_hash is not None
    from attest.errors import EvidenceDroppedError

    with pytest.raises(EvidenceDroppedError, match="delta:upstream"):
        attest(table_dir)  # dropping recorded evidence needs an explicit replace
    second = attest(table_dir, replace=True)
    assert second.replaced and "delta:upstream" in second.replaced[0]
    document = DeltaCarrier(str(table_dir)).read()
    assert document is not None and second.manifest is not None
    assert "inputs_hash" not in document.document and "inputs_proof_class" not in document.document
    assert document.document == second.manifest.to_dict()
    assert props.PREFIX + "inputs_hash" not in config(table_dir)  # removed, not blanked
    assert verify_table(DeltaCarrier(str(table_dir))).passed


# ---- inputs and hash reuse -------------------------------------------------------------------------------------
def test_append_reuses_hashes_and_observes_the_previous_version(partitioned: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    attest(partitioned)
    old = {f.path for f in DeltaCarrier(str(partitioned)).list_files()}
    write_deltalake(str(partitioned), pa.table({"p": ["new"], "v": [100]}), partition_by=["p"], mode="append")
    seen: list[str] = []
    real = hashing.hash_sized_files

    def counting(paths: dict[str, int], **kw: Any) -> dict[str, str]:
        seen.extend(paths)
        return real(paths, **kw)

    monkeypatch.setattr(hashing, "hash_sized_files", counting)
    result = attest(partitioned)
    assert len(seen) == 1 and "p=new" in seen[0]
    assert not any(str(partitioned.joinpath(*p.split("/"))) in seen for p in old)
    assert result.manifest is not None and result.manifest.inputs_proof_class == "strong"
    attestation = DeltaCarrier(str(partitioned)).read()
    assert attestation is not None and attestation.inputs is not None
    (previous,) = attestation.inputs
    # The previous *data* version (0), not the attestation commit on top of it (1): same data, same identity.
    assert previous.table.startswith("delta:") and previous.content is not None and previous.version == "0"
    monkeypatch.setattr(hashing, "hash_sized_files", real)
    assert verify_table(DeltaCarrier(str(partitioned))).passed


def test_same_size_rewrite_is_not_reused_from_a_tampered_sidecar(partitioned: Path) -> None:
    result = attest(partitioned)
    sidecar = partitioned / result.sidecar
    sidecar.write_bytes(sidecar.read_bytes() + b" ")
    write_deltalake(str(partitioned), pa.table({"p": ["new"], "v": [1]}), partition_by=["p"], mode="append")
    attest(partitioned)  # the broken sidecar is not trusted: every file is re-read
    assert verify_table(DeltaCarrier(str(partitioned))).passed


def test_overwrite_does_not_observe_the_previous_version(partitioned: Path) -> None:
    write_deltalake(str(partitioned), special_table(), partition_by=["p"], mode="overwrite")
    result = attest(partitioned)
    assert result.manifest is not None and result.manifest.inputs_hash is None


def test_observe_is_strong_only_when_attested_and_unchanged(partitioned: Path) -> None:
    carrier = DeltaCarrier(str(partitioned))
    assert carrier.observe().proof_class == "heuristic"
    attest(partitioned)
    strong = carrier.observe()
    assert strong.proof_class == "strong" and strong.table == f"delta:{DeltaTable(str(partitioned)).metadata().id}"
    write_deltalake(str(partitioned), special_table(), partition_by=["p"], mode="append")
    assert carrier.observe().proof_class == "heuristic"
    assert carrier.observe(0).content == strong.content


# ---- the content-addressed write path --------------------------------------------------------------------------
def test_content_addressed_write_names_files_by_their_hash(table_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.canonical import blake3_hex

    seen: list[str] = []
    real = hashing.hash_sized_files
    monkeypatch.setattr(hashing, "hash_sized_files", lambda paths, **kw: seen.extend(paths) or real(paths, **kw))
    result = write_content_addressed(str(table_dir), special_table(), partition_by=["p"], model="orders",
                                     program_hash=PROGRAM)
    assert seen == []  # the output identity was known before the commit: nothing is read back
    carrier = DeltaCarrier(str(table_dir))
    files = carrier.list_files()
    assert len(files) == len(SPECIAL)
    for f in files:
        on_disk = table_dir.joinpath(*f.path.split("/"))
        assert on_disk.name == blake3_hex(on_disk.read_bytes()) + ".parquet"
    assert {f.path.split("/")[0] for f in files} >= {"p=__HIVE_DEFAULT_PARTITION__", "p=x%2Fy", "p=k%3Dv",
                                                      "p=50%25", "p=a b", "p=ünï"}
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
    assert result.manifest is not None
    # delta-rs reads the table back with the partition values intact.
    back = DeltaTable(str(table_dir)).to_pyarrow_table().sort_by("v")
    assert back.column("p").to_pylist() == SPECIAL
    # Append through the same path: reuses, stays verifiable, observes the previous version.
    again = write_content_addressed(str(table_dir), pa.table({"p": ["z"], "v": [99]}), partition_by=["p"],
                                    model="orders", program_hash=PROGRAM)
    assert again.manifest is not None and again.manifest.inputs_proof_class == "strong"
    assert verify_table(DeltaCarrier(str(table_dir))).passed


def test_content_addressed_overwrite_and_unpartitioned(table_dir: Path) -> None:
    write_content_addressed(str(table_dir), pa.table({"v": list(range(10))}), model="m", program_hash=PROGRAM,
                            max_rows_per_file=3)
    assert len(DeltaCarrier(str(table_dir)).list_files()) == 4
    write_content_addressed(str(table_dir), pa.table({"v": [1]}), mode="overwrite", model="m", program_hash=PROGRAM)
    carrier = DeltaCarrier(str(table_dir))
    assert len(carrier.list_files()) == 1
    assert verify_table(carrier).passed


def test_content_addressed_append_of_identical_bytes_is_refused_not_lost(table_dir: Path) -> None:
    from attest.errors import CarrierError

    data = pa.table({"v": [1, 2, 3]})
    write_content_addressed(str(table_dir), data, model="m", program_hash=PROGRAM)
    before = sorted(p.name for p in table_dir.glob("*.parquet"))
    with pytest.raises(CarrierError, match="nothing was written"):
        write_content_addressed(str(table_dir), data, model="m", program_hash=PROGRAM)  # same bytes again
    with pytest.raises(CarrierError, match="nothing was written"):  # two identical chunks in one write
        write_content_addressed(str(table_dir), pa.table({"v": [9, 9]}), model="m", program_hash=PROGRAM,
                                max_rows_per_file=1)
    assert sorted(p.name for p in table_dir.glob("*.parquet")) == before
    assert DeltaTable(str(table_dir)).to_pyarrow_table().num_rows == 3
    # Overwriting with the same bytes is not a loss: the table keeps exactly those rows, still verified.
    write_content_addressed(str(table_dir), data, mode="overwrite", model="m", program_hash=PROGRAM)
    assert DeltaTable(str(table_dir)).to_pyarrow_table().num_rows == 3
    assert verify_table(DeltaCarrier(str(table_dir)), level="bytes").passed


def _file_actions(table_dir: Path, version: int) -> tuple[list[str], list[str]]:
    lines = [json.loads(x) for x in (table_dir / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]
    return [a["add"]["path"] for a in lines if "add" in a], [a["remove"]["path"] for a in lines if "remove" in a]


def test_an_overwrite_keeping_identical_files_neither_removes_nor_adds_them(table_dir: Path) -> None:
    """delta-rs's own overwrite removes and adds a kept file in one commit, a version the protocol calls invalid:
    Spark read it as empty (measured). The kept file gets no action; the others are removed, the new ones added."""
    first = pa.table({"v": [1, 2, 3], "p": ["a b", "c%d", "x"]})
    write_content_addressed(str(table_dir), first, partition_by=["p"], model="m", program_hash=PROGRAM)
    before = {f.path for f in DeltaCarrier(str(table_dir)).list_files()}
    second = pa.table({"v": [1, 5], "p": ["a b", "c%d"]})  # "a b" holds the same bytes again; "c%d" new ones
    write_content_addressed(str(table_dir), second, mode="overwrite", partition_by=["p"], model="m",
                            program_hash=PROGRAM)
    data_version = 2  # 0: the first write, 1: its attestation
    adds, removes = _file_actions(table_dir, data_version)
    assert not set(adds) & set(removes)
    assert len(adds) == 1 and len(removes) == 2, (adds, removes)
    after = {f.path for f in DeltaCarrier(str(table_dir)).list_files()}
    assert len(before & after) == 1 and len(after) == 2
    assert sorted(DeltaTable(str(table_dir)).to_pyarrow_table().column("v").to_pylist()) == [1, 5]
    assert verify_table(DeltaCarrier(str(table_dir)), level="bytes").passed


def test_an_overwrite_keeping_files_of_a_table_with_deletion_vectors_is_refused(table_dir: Path) -> None:
    from attest.errors import CarrierError

    data = pa.table({"v": [1, 2, 3]})
    write_content_addressed(str(table_dir), data, model="m", program_hash=PROGRAM)
    add_deletion_vector(table_dir, [0])
    version = DeltaTable(str(table_dir)).version()
    with pytest.raises(CarrierError, match=r"deletion vectors.*nothing was written"):
        write_content_addressed(str(table_dir), data, mode="overwrite", model="m", program_hash=PROGRAM)
    assert DeltaTable(str(table_dir)).version() == version


def test_an_overwrite_keeping_files_of_a_table_naming_a_file_ambiguously_is_refused(table_dir: Path) -> None:
    """A remove must name a file as the log does; delta-rs encodes the path it is given, so a log path engines resolve
    differently cannot be removed reliably: refused before anything is written."""
    from attest.errors import CarrierError

    data = pa.table({"v": [1, 2, 3]})
    write_content_addressed(str(table_dir), data, model="m", program_hash=PROGRAM)
    kept = next(table_dir.glob("*.parquet"))
    (table_dir / "d").mkdir()
    shutil.copy(kept, table_dir / "copy.parquet")
    version = DeltaTable(str(table_dir)).version() + 1
    add = {"path": "d/../copy.parquet", "partitionValues": {}, "size": kept.stat().st_size, "modificationTime": 1,
           "dataChange": True}
    (table_dir / "_delta_log" / f"{version:020d}.json").write_text(
        json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n" + json.dumps({"add": add}) + "\n")
    with pytest.raises(CarrierError, match=r"cannot be written and attested.*nothing was written") as caught:
        write_content_addressed(str(table_dir), data, mode="overwrite", model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "path_ambiguous"
    assert DeltaTable(str(table_dir)).version() == version
    # The same check on the version the commit is made against (such an add committed after the table was read).
    from carriers.delta import write as delta_write
    from carriers.storage.delta import DeltaStorage

    with pytest.raises(CarrierError, match=r"cannot be overwritten in place.*nothing was written") as caught:
        delta_write._keeping(DeltaStorage(str(table_dir)), version, {kept.name}, str(table_dir))
    assert caught.value.code.value == "path_ambiguous"


def test_an_overwrite_whose_kept_file_a_concurrent_commit_removes_is_never_attested_short(
        table_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept file has no action in the overwrite's commit, so no conflict check covers it: removed by another writer
    before the commit (nothing written) or after it (the new version is reported, not attested short)."""
    from attest.errors import CarrierError
    from carriers.delta import write as delta_write
    from carriers.storage.delta import DeltaStorage

    data = pa.table({"v": [1, 2, 3]})
    write_content_addressed(str(table_dir), data, model="m", program_hash=PROGRAM)
    version = DeltaTable(str(table_dir)).version()
    with pytest.raises(CarrierError, match="changed while writing"):
        delta_write._keeping(DeltaStorage(str(table_dir)), version, {"elsewhere.parquet"}, str(table_dir))
    calls: list[int] = []

    def listed(self: DeltaCarrier, version: str | int | None = None) -> list[Any]:
        calls.append(1)
        return []  # the listing after the commit: the kept file is gone

    monkeypatch.setattr(DeltaCarrier, "list_files", listed)
    with pytest.raises(CarrierError, match=r"concurrent commit removed it.*not attested"):
        write_content_addressed(str(table_dir), data, mode="overwrite", model="m", program_hash=PROGRAM)
    monkeypatch.undo()
    assert calls == [1]
    assert DeltaTable(str(table_dir)).version() == version + 1  # the commit landed, and no attestation after it
    attestation = DeltaCarrier(str(table_dir)).state().attestation
    assert attestation is not None and attestation.attested_version == "0"  # the first write's, not the new version


# ---- other engines' features -----------------------------------------------------------------------------------
def test_column_mapping_table(table_dir: Path) -> None:
    write_deltalake(str(table_dir), special_table(), partition_by=["p"],
                    configuration={"delta.columnMapping.mode": "name"})
    attest(table_dir)
    assert verify_table(DeltaCarrier(str(table_dir))).passed


def test_checkpointed_table(table_dir: Path) -> None:
    for i in range(4):
        write_deltalake(str(table_dir), pa.table({"v": [i]}), mode="append")
    DeltaTable(str(table_dir)).create_checkpoint()
    attest(table_dir)
    DeltaTable(str(table_dir)).create_checkpoint()
    assert verify_table(DeltaCarrier(str(table_dir))).passed


def _dv_table(table_dir: Path) -> str:
    """A table whose live file carries a deletion vector (storage type 'u'), committed by hand as Spark would."""
    write_deltalake(str(table_dir), pa.table({"v": [1, 2, 3]}), configuration={"delta.enableDeletionVectors": "true"})
    return add_deletion_vector(table_dir, [1])


@pytest.mark.parametrize("checkpoint", [False, True])
def test_deletion_vector_files_are_part_of_the_version(table_dir: Path, checkpoint: bool) -> None:
    dv = _dv_table(table_dir)
    if checkpoint:
        DeltaTable(str(table_dir)).create_checkpoint()
    carrier = DeltaCarrier(str(table_dir))
    files = carrier.list_files()
    assert [f.kind for f in files].count("deletion_vector") == 1
    assert any(f.path == dv and f.size == (table_dir / dv).stat().st_size for f in files)
    attest(table_dir)
    assert verify_table(carrier).passed
    # Another valid vector of the same size (row 2 deleted instead of row 1): the engine reads it, bytes differ.
    from tests.delta.dv import dv_file

    other, _, _ = dv_file([2])
    assert len(other) == (table_dir / dv).stat().st_size
    (table_dir / dv).write_bytes(other)
    report = verify_table(DeltaCarrier(str(table_dir)))
    assert codes(report) == ["artifact_hash_mismatch"] and report.errors[0].path == dv
    # A corrupt vector (checksum broken): the engine cannot read the table at all.
    raw = bytearray(other)
    raw[-1] ^= 0xFF
    (table_dir / dv).write_bytes(bytes(raw))
    assert codes(verify_table(DeltaCarrier(str(table_dir)))) == ["table_unreadable"]


def test_unsupported_writer_feature_refuses_in_one_line(table_dir: Path) -> None:
    write_deltalake(str(table_dir), pa.table({"v": [1]}))
    protocol = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                             "writerFeatures": ["appendOnly", "invariants", "someFutureFeature"]}}
    (table_dir / "_delta_log" / f"{1:020d}.json").write_text(
        json.dumps({"commitInfo": {"operation": "UPGRADE PROTOCOL"}}) + "\n" + json.dumps(protocol) + "\n")
    with pytest.raises(UnsupportedTableError) as info:
        attest(table_dir)
    assert "\n" not in info.value.message and "someFutureFeature" in info.value.message
    report = verify_table(DeltaCarrier(str(table_dir)))
    assert codes(report) == [Code.UNATTESTED.value]


def test_log_cleanup_falls_back_to_comparing_file_sets(partitioned: Path) -> None:
    attest(partitioned)
    DeltaTable(str(partitioned)).alter.set_table_properties({"x.y": "1"}, raise_if_not_exists=False)
    DeltaTable(str(partitioned)).create_checkpoint()
    os.remove(partitioned / "_delta_log" / f"{1:020d}.json")
    report = verify_table(DeltaCarrier(str(partitioned)))
    assert report.passed, report.human()


def test_copied_table_verifies_elsewhere(partitioned: Path, tmp_path: Path) -> None:
    attest(partitioned)
    copy = tmp_path / "copy"
    shutil.copytree(partitioned, copy)
    assert verify_table(DeltaCarrier(str(copy))).passed


def test_content_addressed_write_of_an_empty_string_partition_value(tmp_path: Path) -> None:
    """Written as null, as Spark writes it (delta-rs writes '' and reads it back as null, Spark reads ''): the version
    reads alike in both engines and verifies; attesting a table holding '' is refused (test_delta_attacks)."""
    table_dir = tmp_path / "t"
    write_content_addressed(str(table_dir), pa.table({"p": ["", None, "a"], "v": [1, 2, 3]}), partition_by=["p"],
                            model="orders", program_hash=PROGRAM)
    adds = [json.loads(line)["add"] for line in (table_dir / "_delta_log" / f"{0:020}.json").read_text().splitlines()
            if line.startswith('{"add"')]
    assert sorted(str(a["partitionValues"]["p"]) for a in adds) == ["None", "None", "a"]
    back = DeltaTable(str(table_dir)).to_pyarrow_table().sort_by("v")
    assert back.column("p").to_pylist() == [None, None, "a"]
    assert verify_table(DeltaCarrier(str(table_dir))).passed
