"""Attacks on pyiceberg-written Iceberg tables by someone with write access to the table's storage (and, for a sqlite
catalog kept beside the data, to the catalog file)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers import properties as props
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, codes, verify
from tests.iceberg.conftest import (
    CATALOG,
    catalog_properties,
    commit_delete_file,
    local,
    manifest_writer,
    rewrite_metadata,
    rows,
)


@pytest.fixture
def catalog(tmp_path: Path, iceberg_env: str) -> SqlCatalog:
    (tmp_path / "warehouse").mkdir(exist_ok=True)
    cat = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    cat.create_namespace("ns")
    return cat


@pytest.fixture
def iceberg_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    p = catalog_properties(tmp_path)
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE", "sql")
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI", p["uri"])
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE", p["warehouse"])
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    return CATALOG


REF = f"iceberg://{CATALOG}/ns.t"


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    """An Iceberg table with two appends, attested by a follow-up snapshot, verifying at bytes level."""
    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    t.append(rows(3))
    attest_after_write(t, model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["level"] == "bytes", doc
    return t


def _edit_summary(catalog: SqlCatalog, table: Table, edit: Any) -> Table:
    def apply(doc: dict[str, Any]) -> None:
        for snap in doc["snapshots"]:
            if snap["snapshot-id"] == doc["current-snapshot-id"]:
                edit(snap["summary"])
    return rewrite_metadata(catalog, table, apply)


def _sidecar(table: Table) -> Path:
    keys = props.attestation_keys(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    return local(f"{table.metadata_location.rsplit('/', 1)[0]}/{keys[props.KEY_SIDECAR_PATH]}")


# ---- the sidecar and the summary ---------------------------------------------------------------------------------
def test_summary_loses_its_carrier_keys(catalog: SqlCatalog, table: Table) -> None:
    _edit_summary(catalog, table, lambda s: [s.pop(k) for k in list(s) if k.startswith(props.CARRIER_PREFIX)])
    assert_refused(REF, "carrier_tampered", "--level", "schema")


def test_summary_sidecar_keys_blanked(catalog: SqlCatalog, table: Table) -> None:
    _edit_summary(catalog, table, lambda s: s.update({props.KEY_SIDECAR_PATH: "", props.KEY_SIDECAR_HASH: ""}))
    assert_refused(REF, "carrier_tampered", "--level", "schema")


@pytest.mark.parametrize(("key", "value"), [(props.PREFIX + "program_hash", "f" * 64),
                                            (props.PREFIX + "subject.run_id", "forged"),
                                            (props.KEY_OUTPUTS_COUNT, "99"), (props.KEY_LAYOUT, "1"),
                                            # '²'.isdigit() is true, int('²') raises; int('٣') is 3; '--3' passed
                                            # lstrip('-'): each was read as a snapshot id or crashed the verify.
                                            (props.KEY_VERSION, "²"), (props.KEY_VERSION, "٣"),
                                            (props.KEY_VERSION, "--3")])
def test_single_summary_edit(catalog: SqlCatalog, table: Table, key: str, value: str) -> None:
    _edit_summary(catalog, table, lambda s: s.update({key: value}))
    assert_refused(REF, "carrier_tampered", "--level", "schema")


def test_sidecar_edited(table: Table) -> None:
    sidecar = _sidecar(table)
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"size":', b'"size": '))
    assert_refused(REF, "sidecar_mismatch", "--level", "schema")


def test_sidecar_deleted(table: Table) -> None:
    """The sidecar and its copy in the registered statistics file both deleted (the JSON alone is what
    remove_orphan_files deletes: the copy still verifies, tests/adversarial/test_cleanup_attacks.py)."""
    sidecar = _sidecar(table)
    sidecar.unlink()
    for kept in sidecar.parent.glob("*.puffin"):
        kept.unlink()
    assert_refused(REF, "sidecar_missing", "--level", "schema")


def test_forged_no_data_snapshot_on_top(catalog: SqlCatalog, table: Table) -> None:
    """A new empty snapshot carrying a copy of the attestation with a forged program hash."""
    keys = props.attestation_keys(table.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    keys[props.PREFIX + "program_hash"] = "f" * 64
    keys[props.KEY_VERSION] = str(table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    table.append(rows(0, 0), snapshot_properties=keys)
    assert_refused(REF, "carrier_tampered", "--level", "schema")


def test_follow_up_that_hides_an_added_file(catalog: SqlCatalog, table: Table) -> None:
    """An append whose summary claims it changed nothing: the live files give it away."""
    table.append(rows(6))
    _edit_summary(catalog, table, lambda s: s.update({k: "0" for k in list(s) if k.startswith("added-")}))
    assert_refused(REF, "stale", "--level", "schema")


# ---- schema, partitioning, properties ------------------------------------------------------------------------------
def test_column_renamed(table: Table) -> None:
    with table.update_schema() as update:
        update.rename_column("v", "value")
    assert_refused(REF, "reader_view_changed", "--level", "schema")


def test_two_columns_swap_names(table: Table) -> None:
    with table.update_schema() as update:
        update.rename_column("v", "tmp")
    with table.update_schema() as update:
        update.rename_column("id", "v")
    with table.update_schema() as update:
        update.rename_column("tmp", "id")
    assert_refused(REF, "reader_view_changed", "--level", "schema")


def test_columns_reordered(table: Table) -> None:
    with table.update_schema() as update:
        update.move_first("v")
    assert_refused(REF, "reader_view_changed", "--level", "schema")


def test_partition_spec_evolved(table: Table) -> None:
    with table.update_spec() as update:
        update.add_identity("v")
    assert_refused(REF, "reader_view_changed", "--level", "schema")


def test_name_mapping_changed(table: Table) -> None:
    mapping = json.loads(table.metadata.schema().name_mapping.model_dump_json())
    mapping[0]["names"], mapping[1]["names"] = mapping[1]["names"], mapping[0]["names"]
    table.transaction().set_properties({"schema.name-mapping.default": json.dumps(mapping)}).commit_transaction()
    assert_refused(REF, "reader_view_changed", "--level", "schema")


def test_column_doc_is_not_a_change_of_what_readers_get(table: Table) -> None:
    with table.update_schema() as update:
        update.update_column("v", doc="documentation")
    rc, doc = verify(REF)
    assert rc == 0 and doc["level"] == "bytes", doc


# ---- delete files and data changes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("equality", [False, True])
def test_delete_file_added_after_the_attestation(table: Table, tmp_path: Path, equality: bool) -> None:
    data_dir = local(table.location()) / "data"
    commit_delete_file(table, data_dir / ("eq.parquet" if equality else "pos.parquet"), equality=equality)
    assert_refused(REF, "stale", "--level", "schema")


def test_a_delete_file_listed_in_a_data_manifest(catalog: SqlCatalog, table: Table) -> None:
    """A position-delete file committed in a data manifest (pyiceberg's snapshot producer does that when handed one):
    pyiceberg applies it by the file's content field, Java readers read it as a data file by its manifest's."""
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    path = local(table.location()) / "data" / "pos.parquet"
    target = next(iter(table.scan().plan_files())).file.file_path
    pq.write_table(pa.table({"file_path": [target], "pos": pa.array([0], pa.int64())}), path)
    with table.transaction() as tx:
        producer = tx.update_snapshot().fast_append()
        producer.append_data_file(DataFile.from_args(
            content=DataFileContent.POSITION_DELETES, file_path=f"file://{path}", file_format=FileFormat.PARQUET,
            partition=Record(), record_count=1, file_size_in_bytes=path.stat().st_size))
        producer.commit()
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert any("delete file" in e["message"] and "data manifest" in e["message"] for e in doc["errors"]), doc


# ---- ids the table metadata gives twice ----------------------------------------------------------------------------
def _second_snapshot_of_the_attested_id(doc: dict[str, Any]) -> None:
    """The attested snapshot listed again under its id, with the first append's manifest list (fewer rows)."""
    snaps = doc["snapshots"]
    current = next(s for s in snaps if s["snapshot-id"] == doc["current-snapshot-id"])
    attested = next(s for s in snaps if s["snapshot-id"] == current["parent-snapshot-id"])
    snaps.append({**attested, "manifest-list": snaps[0]["manifest-list"]})


def _second_schema_of_the_current_id(doc: dict[str, Any]) -> None:
    """The current schema listed again under its id, its two columns' names swapped."""
    forged = json.loads(json.dumps(next(s for s in doc["schemas"] if s["schema-id"] == doc["current-schema-id"])))
    forged["fields"][0]["name"], forged["fields"][1]["name"] = forged["fields"][1]["name"], forged["fields"][0]["name"]
    doc["schemas"].append(forged)


def _second_spec_of_the_default_id(doc: dict[str, Any]) -> None:
    spec = next(s for s in doc["partition-specs"] if s["spec-id"] == doc["default-spec-id"])
    doc["partition-specs"].append({**spec, "fields": [{"source-id": 1, "field-id": 1000, "name": "by_id",
                                                        "transform": "identity"}]})


@pytest.mark.parametrize("edit", [_second_snapshot_of_the_attested_id, _second_schema_of_the_current_id,
                                  _second_spec_of_the_default_id], ids=["snapshot", "schema", "partition-spec"])
def test_an_id_the_table_metadata_gives_twice_gets_no_verdict(catalog: SqlCatalog, table: Table, edit: Any) -> None:
    """The spec makes ids unique; readers resolve a shared one differently. pyiceberg takes the first snapshot and
    schema of an id (the attested ones: VERIFIED before), its ``spec()`` the first spec and its ``specs()`` the last
    (measured); Java's parser refuses the table; a reader indexing by id keeps the last."""
    before = table.metadata
    forged = rewrite_metadata(catalog, table, edit)
    assert forged.metadata.schema() == before.schema()  # pyiceberg still reads the first of each
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "sharing an id" in json.dumps(doc)


def test_a_main_branch_elsewhere_than_the_current_snapshot_gets_no_verdict(catalog: SqlCatalog, table: Table) -> None:
    """``refs.main`` moved to the first append while ``current-snapshot-id`` still names the attested follow-up:
    pyiceberg read the current snapshot (VERIFIED before); a reader of the branch reads the first append's rows, and
    Java refuses metadata where the two differ."""
    def move_main(doc: dict[str, Any]) -> None:
        doc["refs"]["main"]["snapshot-id"] = doc["snapshots"][0]["snapshot-id"]

    forged = rewrite_metadata(catalog, table, move_main)
    assert forged.current_snapshot() == table.current_snapshot()
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert "main branch" in json.dumps(doc)


def test_data_file_bytes_flipped(table: Table) -> None:
    victim = local(IcebergCarrier(table, catalog_name=CATALOG).list_files()[0].location)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    assert_refused(REF, "artifact_hash_mismatch")


def test_data_file_deleted(table: Table) -> None:
    local(IcebergCarrier(table, catalog_name=CATALOG).list_files()[0].location).unlink()
    assert_refused(REF, "file_missing")


def test_manifest_rewritten_in_place(catalog: SqlCatalog, table: Table) -> None:
    """The same manifest path with other contents (statistics a filter would skip on): the reader view changes."""
    from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION, write_manifest

    snap = table.current_snapshot()
    assert snap is not None
    manifest = snap.manifests(table.io)[0]
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    upper = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields].index("upper_bounds")
    for entry in entries:
        entry.data_file._data[upper] = {1: (-1).to_bytes(8, "little", signed=True)}
    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with write_manifest(format_version=table.metadata.format_version, spec=table.spec(), schema=table.schema(),
                        output_file=table.io.new_output(f"file://{tmp}"), snapshot_id=entries[0].snapshot_id,
                        avro_compression="null") as writer:
        for entry in entries:
            writer.add_entry(entry)
    shutil.move(tmp, path)
    assert_refused(REF, "reader_view_changed", "--level", "schema")


def test_path_with_dot_segments(catalog: SqlCatalog, table: Table) -> None:
    """add_files of a path whose '..' a Hadoop FileIO normalises and an object store does not."""
    data_dir = local(table.location()) / "data"
    (data_dir / "sub").mkdir()
    src = local(IcebergCarrier(table, catalog_name=CATALOG).list_files()[0].location)
    shutil.copy(src, data_dir / "copy.parquet")
    table.add_files([f"file://{data_dir}/sub/../copy.parquet"], check_duplicate_files=False)
    assert_refused(REF, "path_ambiguous")


@pytest.mark.parametrize("spelling", ["file://{host}/{rest}", "file:{rel}"])
def test_a_file_uri_read_from_the_working_directory_is_refused(catalog: SqlCatalog, table: Table, spelling: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``file://tmp/w/t/data/f.parquet`` (a host) and ``file:tmp/...`` (relative): pyiceberg reads ``tmp/w/...`` from
    its working directory — the rows from '/', FileNotFoundError from /tmp, measured — and Hadoop refuses the host.
    Attested from '/', the table verified there and named other bytes (or none) for a reader anywhere else."""
    data_dir = local(table.location()) / "data"
    src = local(IcebergCarrier(table, catalog_name=CATALOG).list_files()[0].location)
    shutil.copy(src, data_dir / "odd.parquet")
    absolute = str(data_dir / "odd.parquet").lstrip("/")
    host, _, rest = absolute.partition("/")
    monkeypatch.chdir("/")
    table.add_files([spelling.format(host=host, rest=rest, rel=absolute)], check_duplicate_files=False)
    assert_refused(REF, "path_ambiguous")
    from attest.errors import AttestError

    with pytest.raises(AttestError) as info:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "path_ambiguous"


@pytest.mark.parametrize("suffix", ["#frag", "?v=1"])
def test_a_location_with_a_fragment_or_query_is_refused(catalog: SqlCatalog, table: Table, suffix: str) -> None:
    """``file:///t/data/odd.parquet#frag``: pyiceberg reads ``odd.parquet`` (measured), a Hadoop FileIO the file of the
    whole name, Java's S3FileIO drops the suffix of an s3:// key. Attested, the bytes one reader reads bound nothing
    the other reads (another file planted under the whole name)."""
    data_dir = local(table.location()) / "data"
    src = local(IcebergCarrier(table, catalog_name=CATALOG).list_files()[0].location)
    shutil.copy(src, data_dir / "odd.parquet")
    pq.write_table(rows(7), data_dir / f"odd.parquet{suffix}")
    table.add_files([f"file://{data_dir}/odd.parquet{suffix}"], check_duplicate_files=False)
    assert_refused(REF, "path_ambiguous")
    from attest.errors import AttestError

    with pytest.raises(AttestError) as info:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "path_ambiguous"


def test_a_manifest_read_from_the_working_directory_is_refused(catalog: SqlCatalog, table: Table,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The same spelling for a manifest in the list, rewritten in place: the table's rows depend on where its reader
    runs."""
    def relative(manifest: Any) -> None:
        assert manifest._data[0] == manifest.manifest_path  # the record's first field (read-only property)
        manifest._data[0] = "file://" + local(manifest.manifest_path).as_posix().lstrip("/")

    monkeypatch.chdir("/")
    _rewrite_manifest_list(table, relative)
    assert_refused(REF, "path_ambiguous")


def test_a_manifest_location_no_uri_parser_reads_alike_is_refused(catalog: SqlCatalog, table: Table) -> None:
    """``file://[/...``: Python's urlsplit raises on the unbalanced '[' (an internal error before); others read a
    host."""
    def bracketed(manifest: Any) -> None:
        manifest._data[0] = "file://[" + local(manifest.manifest_path).as_posix()

    _rewrite_manifest_list(table, bracketed)
    assert_refused(REF, "path_ambiguous")


def test_data_file_outside_the_table(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    pq.write_table(rows(20), outside / "x.parquet")
    table.add_files([f"file://{outside}/x.parquet"])
    rc, doc = verify(REF)
    assert rc != 0 and set(codes(doc)) & {"file_outside_table", "stale"}, doc
    from attest.errors import AttestError

    with pytest.raises(AttestError) as info:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "file_outside_table"


def test_sidecar_of_another_table(catalog: SqlCatalog, table: Table) -> None:
    other = catalog.create_table("ns.other", schema=rows(0).schema)
    other.append(rows(0))
    attest_after_write(other, model="orders", program_hash=PROGRAM)
    keys = props.attestation_keys(other.current_snapshot().summary.additional_properties)  # type: ignore[union-attr]
    sidecar = local(f"{other.metadata_location.rsplit('/', 1)[0]}/{keys[props.KEY_SIDECAR_PATH]}")
    mine = local(table.metadata_location).parent / keys[props.KEY_SIDECAR_PATH]
    shutil.copy(sidecar, mine)
    current = table.current_snapshot()
    assert current is not None
    keys[props.KEY_VERSION] = str(current.snapshot_id)
    table.append(rows(0, 0), snapshot_properties=keys)
    assert_refused(REF, "carrier_tampered", "--level", "schema")


def test_forged_detached_pointer(catalog: SqlCatalog, table: Table) -> None:
    """Detached attestations (no commit; what format-v3 tables get): a pointer edited in place."""
    table.append(rows(9))
    IcebergCarrier(table, catalog_name=CATALOG, detached=True).record(model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["level"] == "bytes", doc
    pointer = next((local(table.metadata_location).parent / "recipe_attest" / "snapshots").glob("*.json"))
    forged = json.loads(pointer.read_text())
    forged["properties"][props.PREFIX + "program_hash"] = "f" * 64
    pointer.write_text(json.dumps(forged))
    assert_refused(REF, "carrier_tampered", "--level", "schema")


# ---- table metadata that names code ------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "impl"), [("py-io-impl", "planted_io.Planted"), ("py-io-impl", "sys.exit"),
                                           ("py-io-impl", "builtins.print"), ("py-io-impl", "this.s"),
                                           ("PY-IO-IMPL ", "planted_io.Planted"),
                                           ("s3.retry-strategy-impl", "planted_io.Planted")])
def test_table_metadata_naming_code_never_runs_it(table: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str], key: str, impl: str) -> None:
    # pyiceberg builds a table's FileIO from the catalog's properties merged with the table's own, and imports and
    # calls what py-io-impl names: sys.exit ended the verifier printing the catalog's properties, print put them in
    # the JSON output, `this` printed the Zen of Python there. An edit of metadata.json in place, as storage allows.
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "ran"
    (planted / "planted_io.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass Planted:\n"
                                           "    def __init__(self, properties):\n        raise SystemExit(9)\n")
    monkeypatch.syspath_prepend(str(planted))
    path = local(table.metadata_location)
    doc = json.loads(path.read_text())
    doc["properties"][key] = impl
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    rc, out = verify(REF)  # parses the command's whole stdout as one JSON object
    printed = capsys.readouterr()
    assert rc == 0 and out["passed"] and out["level"] == "bytes", out  # the attestation holds: bytes and view unchanged
    assert any("naming code" in note and key in note for note in out["notes"]), out["notes"]
    assert not marker.exists() and "planted_io" not in sys.modules
    assert "sqlite" not in printed.err and "Beautiful is better" not in printed.out + printed.err


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("which", "code"), [("metadata", "table_not_found"), ("manifest list", "table_unreadable"),
                                             ("manifest", "table_unreadable")])
def test_a_fifo_in_place_of_iceberg_metadata_does_not_hang(table: Table, which: str, code: str) -> None:
    # pyiceberg opens metadata by path through PyArrow: a FIFO without a writer blocked open(2) forever. Now it is
    # what a missing file is (the metadata file named by the catalog: the table is not found).
    snapshot = table.current_snapshot()
    assert snapshot is not None
    victim = local({"metadata": table.metadata_location, "manifest list": snapshot.manifest_list,
                    "manifest": snapshot.manifests(table.io)[0].manifest_path}[which])
    victim.unlink()
    os.mkfifo(victim)
    assert_refused(REF, code)


# ---- sequence numbers: which delete files apply to which data files ------------------------------------------------
def _rewrite_manifest_list(table: Table, edit: Any, *, keep_cache: bool = False) -> None:
    """Rewrite the current snapshot's manifest list in place, applying ``edit`` to each manifest's record (read from
    the file: pyiceberg's cached records are left alone). Then pyiceberg's cache is cleared, so that its readers see
    the file — unless ``keep_cache``, as in a process that read the list before."""
    from pyiceberg.manifest import clear_manifest_cache, read_manifest_list, write_manifest_list

    snap = table.current_snapshot()
    assert snap is not None
    manifests = list(read_manifest_list(table.io.new_input(snap.manifest_list)))
    for m in manifests:
        edit(m)
    path = local(snap.manifest_list)
    tmp = path.with_suffix(".new.avro")
    with write_manifest_list(format_version=table.metadata.format_version,
                             output_file=table.io.new_output(f"file://{tmp}"), snapshot_id=snap.snapshot_id,
                             parent_snapshot_id=snap.parent_snapshot_id, sequence_number=snap.sequence_number,
                             avro_compression="null") as writer:
        writer.add_manifests(manifests)
    shutil.move(tmp, path)
    if not keep_cache:
        clear_manifest_cache()


def _rewrite_manifest_entries(table: Table, edit: Any) -> None:
    """Rewrite every manifest of the current snapshot in place, applying ``edit`` to each entry, and the manifest list
    with the minimum sequence numbers that match: the same files, the same bytes, the same paths, a consistent
    table."""
    from pyiceberg.manifest import ManifestContent

    snap = table.current_snapshot()
    assert snap is not None
    lowest: dict[str, int] = {}
    for manifest in snap.manifests(table.io):
        entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
        for entry in entries:
            edit(entry)
        lowest[manifest.manifest_path] = min(e.sequence_number for e in entries)
        path = local(manifest.manifest_path)
        tmp = path.with_suffix(".new.avro")
        with manifest_writer(table.spec(), table.schema(), table.io.new_output(f"file://{tmp}"),
                             entries[0].snapshot_id, deletes=manifest.content == ManifestContent.DELETES) as writer:
            for entry in entries:
                writer.add_entry(entry)
        shutil.move(tmp, path)

    def consistent(m: Any) -> None:
        m.min_sequence_number = lowest[m.manifest_path]

    _rewrite_manifest_list(table, consistent)


@pytest.fixture
def with_deletes(catalog: SqlCatalog, table: Table) -> Table:
    """The table with a position delete file hiding one row, attested (data sequence numbers 1, 2; deletes 4)."""
    commit_delete_file(table, local(table.location()) / "data" / "pos.parquet")
    table = catalog.load_table("ns.t")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["level"] == "bytes", doc
    return table


def _rows_read(catalog: SqlCatalog) -> int:
    return catalog.load_table("ns.t").scan().to_arrow().num_rows


@pytest.mark.parametrize("victim", ["data", "delete"])
def test_sequence_numbers_rewritten_so_a_delete_file_no_longer_applies(catalog: SqlCatalog, with_deletes: Table,
                                                                       victim: str) -> None:
    """Raising a data file's sequence number past its delete file's (or lowering the delete file's below it) brings
    the deleted row back for every reader: the same files, bytes and manifest paths, other rows."""
    before = _rows_read(catalog)

    def bump(entry: Any) -> None:
        is_data = int(entry.data_file.content.value) == 0
        if is_data and victim == "data":
            entry.sequence_number = entry.file_sequence_number = 10
        elif not is_data and victim == "delete":
            entry.sequence_number = entry.file_sequence_number = 0

    _rewrite_manifest_entries(with_deletes, bump)
    assert _rows_read(catalog) == before + 1  # the attack works on a real reader
    rc, doc = verify(REF, "--level", "schema")
    assert rc != 0, doc
    # A data entry raised above its manifest's listed sequence number is refused first as no writer writes it (round
    # 19, carriers/iceberg/manifests.py); the delete entry lowered changes the view.
    assert ("table_inconsistent" if victim == "data" else "reader_view_changed") in codes(doc), doc


@pytest.mark.parametrize("spelling", ["/{path}", "file:/{path}"])
def test_a_data_file_respelled_so_its_position_deletes_no_longer_apply(catalog: SqlCatalog, with_deletes: Table,
                                                                       spelling: str) -> None:
    """Position deletes name their data file by its location string, and readers match the strings: the manifests
    rewritten with the data file's ``file:///t/x.parquet`` as ``/t/x.parquet`` or ``file:/t/x.parquet`` (the same
    file, the same bytes) brought the deleted row back (measured with pyiceberg), and it was VERIFIED."""
    from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION

    before = _rows_read(catalog)
    index = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields].index("file_path")

    def respell(entry: Any) -> None:
        location = entry.data_file.file_path
        if int(entry.data_file.content.value) == 0:
            assert location.startswith("file:///"), location
            entry.data_file._data[index] = spelling.format(path=location[len("file:///"):])

    _rewrite_manifest_entries(with_deletes, respell)
    assert _rows_read(catalog) == before + 1  # the attack works on a real reader
    doc = assert_refused(REF, "reader_view_changed", "--level", "schema")
    assert "file view changed" in json.dumps(doc)


def _respell_locations(table: Table) -> None:
    """The manifests rewritten with every file's ``file:///t/x`` as ``/t/x``: the same files, bytes and rows."""
    from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION

    index = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields].index("file_path")

    def respell(entry: Any) -> None:
        location = entry.data_file.file_path
        entry.data_file._data[index] = location[len("file://"):] if location.startswith("file://") else location

    _rewrite_manifest_entries(table, respell)


def test_a_respelled_data_file_without_delete_files_changes_the_view(catalog: SqlCatalog, table: Table) -> None:
    """Without delete files the rows are the file's, but Spark's ``_file`` and ``input_file_name()`` return the location
    as written (test_spark_attacks pins it): a job tracking the files it has read by name reads them again. VERIFIED
    before; the locations are bound."""
    before = _rows_read(catalog)
    _respell_locations(table)
    assert _rows_read(catalog) == before
    doc = assert_refused(REF, "reader_view_changed", "--level", "schema")
    assert "file locations as written changed" in json.dumps(doc)


def test_an_attestation_made_before_the_locations_were_bound_says_so(catalog: SqlCatalog,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A view attested without ``locations`` is compared on what it bound, and the verdict says what it does not."""
    import carriers.iceberg.carrier as iceberg_carrier
    from attest.view import ReaderView

    def earlier(table: dict[str, Any], files: dict[str, str]) -> ReaderView:
        return ReaderView(table={k: v for k, v in table.items() if k != "locations"}, files=files)

    t = catalog.create_table("ns.t", schema=rows(0).schema)
    t.append(rows(0))
    with monkeypatch.context() as patch:
        patch.setattr(iceberg_carrier, "ReaderView", earlier)
        attest_after_write(t, model="orders", program_hash=PROGRAM)
    for _ in range(2):  # before and after the respelling
        rc, doc = verify(REF)
        assert rc == 0 and doc["passed"], doc
        assert any("file locations as written" in note and "re-attest" in note for note in doc["notes"]), doc
        assert "not bound: file locations as written" in doc["verdict"], doc
        _respell_locations(catalog.load_table("ns.t"))


def _set_split_offsets(table: Table, offsets: Any) -> None:
    from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION

    index = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields].index("split_offsets")

    def edit(entry: Any) -> None:
        if int(entry.data_file.content.value) == 0:
            entry.data_file._data[index] = offsets(entry.data_file)

    _rewrite_manifest_entries(table, edit)


@pytest.mark.parametrize("offsets", ["past every row group", "a second split inside the file"])
def test_split_offsets_rewritten_so_spark_reads_other_rows(table: Table, offsets: str) -> None:
    """Spark splits a data file at its split offsets and reads each row group in the split holding its midpoint:
    ``[size - 10]`` made it read none of the file's rows (measured, test_spark_attacks), with every byte and every
    other field unchanged: VERIFIED before."""
    assert {tuple(t.file.split_offsets or ()) for t in table.scan().plan_files()} == {(4,)}
    _set_split_offsets(table, lambda f: [f.file_size_in_bytes - 10] if offsets.startswith("past")
                       else [4, f.file_size_in_bytes // 2])
    doc = assert_refused(REF, "reader_view_changed", "--level", "schema")
    assert "file view changed" in json.dumps(doc)


def test_split_offsets_that_split_nothing_away_are_not_bound(table: Table) -> None:
    """No offsets, or ``[4]`` (the first row group, right after Parquet's magic): one split of the whole file for
    every reader. The view of such files is what it was before offsets were bound: attestations made then hold."""
    _set_split_offsets(table, lambda f: None)
    rc, doc = verify(REF)
    assert rc == 0 and doc["passed"], doc


def test_manifest_list_claims_a_minimum_sequence_number_its_manifest_does_not_hold(
        catalog: SqlCatalog, with_deletes: Table) -> None:
    """pyiceberg drops delete manifests listed below the smallest data sequence number the manifest list claims: a
    claim above the manifest's real minimum makes it read deleted rows, while Spark (Iceberg Java 1.12) still applies
    the deletes (measured, test_spark_iceberg_round14b)."""
    def claim(m: Any) -> None:
        if int(m.content.value) == 0:
            m.min_sequence_number = 10

    _rewrite_manifest_list(with_deletes, claim)
    assert_refused(REF, "table_inconsistent", "--level", "schema")


# ---- the manifest list's summaries: what readers plan with before they open a manifest ------------------------------
def test_manifest_list_says_a_manifest_holds_no_live_files(table: Table) -> None:
    """Java's scan planning skips a manifest whose added and existing file counts are zero: its rows vanish for Java
    readers while pyiceberg (and the files, bytes and entries) still have them."""

    def empty(m: Any) -> None:
        m._data[7] = m._data[8] = 0  # added_files_count, existing_files_count (pyiceberg has no setters)

    _rewrite_manifest_list(table, empty)
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert any("added file(s)" in e["message"] for e in doc["errors"]), doc


def test_manifest_list_narrows_a_partition_summary(catalog: SqlCatalog) -> None:
    """Forged partition bounds in the manifest list make a filtered query skip the manifest (pyiceberg and Java both
    prune with them): the rows of a partition vanish for that query, every file and byte intact."""
    from pyiceberg.conversions import to_bytes
    from pyiceberg.types import LongType

    t = catalog.create_table("ns.t", schema=rows(0).schema)
    with t.update_spec() as spec:
        spec.add_identity("id")
    t.append(rows(0))  # one manifest, one file per id: 0, 1, 2
    attest_after_write(t, model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF)
    assert rc == 0 and doc["level"] == "bytes", doc
    assert catalog.load_table("ns.t").scan(row_filter="id == 2").to_arrow().num_rows == 1

    def narrow(m: Any) -> None:
        if m.partitions:
            m.partitions[0]._data[3] = to_bytes(LongType(), 1)  # upper_bound (pyiceberg has no setter)

    _rewrite_manifest_list(t, narrow)
    assert catalog.load_table("ns.t").scan(row_filter="id == 2").to_arrow().num_rows == 0  # the attack works
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert any("partition values in" in e["message"] for e in doc["errors"]), doc

    def garble(m: Any) -> None:
        if m.partitions:
            m.partitions[0]._data[2] = b"\x01\x02\x03"  # not an 8-byte long: a hostile list never crashes a verify

    _rewrite_manifest_list(t, garble)
    doc = assert_refused(REF, "table_inconsistent", "--level", "schema")
    assert any("are not long values" in e["message"] for e in doc["errors"]), doc


def test_a_manifest_list_rewritten_in_place_is_read_again_by_a_long_lived_process(table: Table) -> None:
    """pyiceberg caches manifest-list records process-wide by manifest path: a notebook or an audit that verified the
    table once must still see the list as its file says after it is rewritten in place."""
    assert verify(REF)[0] == 0  # this process has now read (and pyiceberg cached) the list

    def empty(m: Any) -> None:
        m._data[7] = m._data[8] = 0  # added_files_count, existing_files_count

    _rewrite_manifest_list(table, empty, keep_cache=True)
    assert_refused(REF, "table_inconsistent", "--level", "schema")
