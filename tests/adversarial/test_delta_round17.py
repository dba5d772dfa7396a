"""Round 17 of the Delta attacks (rt17d): which columns' statistics a reader takes from the log.

``delta.dataSkippingStatsColumns`` names the columns whose statistics readers use. Spark (delta-spark 4.4) resolves
those names without case, delta-rs matches them exactly (measured: ``a,B`` over columns ``a``, ``b`` — delta-rs kept
no statistics of ``b`` and read none from the log, Spark read the log's bounds of ``b``). The check of a file's
statistics against its rows and the reader view take delta-rs's reading, and a column it leaves out altogether was
taken to be one Spark leaves out too (``test_delta_held_round13.py``). So a forged bound of ``b`` was neither checked
nor bound, and Spark skipped the file by it (``WHERE b = 5``: no row) and answered ``MAX(b)`` from it (200 for 6):

- the property spelled so at the attested version, the forged bound in the attested commit: recorded, VERIFIED;
- the attested version keeping ``b`` out (``a``), the forged bound there unread by either engine, then a metadata-only
  commit setting ``a,B``: delta-rs's reading (the view) unchanged, VERIFIED at the latest version.

Now such a version is ``table_inconsistent`` (``carriers.delta.view.statistics_columns_read_otherwise``): record
refuses it, and verify of an attestation whose latest version is one fails. What Spark reads of both is in
``test_spark_delta_round17.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, edit_adds, verify
from tests.adversarial.delta_commits import first_commit


def forge_unkept_bounds(add: dict[str, Any]) -> None:
    """An add's statistics given bounds 100..200 and no null for ``b``, of which delta-rs kept none (edit_adds)."""
    stats = json.loads(add["stats"])
    assert "b" not in stats["maxValues"]  # delta-rs kept none for b
    stats["minValues"]["b"], stats["maxValues"]["b"], stats["nullCount"]["b"] = 100, 200, 0
    add["stats"] = json.dumps(stats)


def forged_unindexed(path: Path, columns: str, configuration: dict[str, str] | None = None) -> None:
    """One file (a: 1, 2; b: 5, 6) written by delta-rs with ``delta.dataSkippingStatsColumns`` ``columns`` (or the
    properties ``configuration``), which keeps b's statistics out of delta-rs's reading; b's bounds in the commit
    forged to 100..200."""
    write_deltalake(
        str(path),
        pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([5, 6], pa.int64())}),
        configuration=configuration or {"delta.dataSkippingStatsColumns": columns},
    )
    edit_adds(path / commit_name(0), forge_unkept_bounds)


def made_live_later(path: Path) -> None:
    """Attested with b kept out (``a``: neither engine reads b's forged bounds), then a metadata-only commit naming
    ``a,B``."""
    forged_unindexed(path, "a")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    DeltaTable(str(path)).alter.set_table_properties({"delta.dataSkippingStatsColumns": "a,B"})


@pytest.mark.parametrize("columns", ["a,B", "a, `B`"])
def test_record_refuses_statistics_columns_named_in_another_case(tmp_path: Path, columns: str) -> None:
    path = tmp_path / "t"
    forged_unindexed(path, columns)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value


def test_statistics_columns_named_in_another_case_after_the_attestation(tmp_path: Path) -> None:
    path = tmp_path / "t"
    made_live_later(path)
    for level in ("schema", "files", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc != 0 and "table_inconsistent" in codes(doc), (level, doc)


# ---- a rewrite's materialized row-tracking column in another case ---------------------------------------------------
# With delta.enableRowTracking readers get each row's _metadata.row_id: the materialized column's value where a file
# holds that column (delta.rowTracking.materializedRowIdColumnName), else baseRowId + the row's index. Spark finds the
# column by name without case (measured: a file holding `_ROW-ID-COL-…` gave Spark its values), the digest by the
# exact name (it took baseRowId + index): a dataChange: false rewrite whose file keeps every row and baseRowId but
# holds other ids under the upper-cased name was `VERIFIED (content; compacted …, same rows)`.

ROW_ID_COLUMN = "_row-id-col-3f1c"
COMMIT_VERSION_COLUMN = "_row-commit-version-col-3f1c"


def row_tracked(path: Path, extra: dict[str, pa.Array] | None = None) -> None:
    """A row-tracking table as delta-spark 4.4 writes one (its log's shape, copied): ids 0..5 in one file, row ids
    0..5 (baseRowId 0, none materialized), commit version 1; ``extra`` columns in that file."""
    path.mkdir(parents=True)
    log = path / "_delta_log"
    log.mkdir()
    config = {
        "delta.enableRowTracking": "true",
        "delta.rowTracking.materializedRowIdColumnName": ROW_ID_COLUMN,
        "delta.rowTracking.materializedRowCommitVersionColumnName": COMMIT_VERSION_COLUMN,
    }
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    (log / "00000000000000000000.json").write_text(
        "\n".join(
            json.dumps(a)
            for a in [
                {"commitInfo": {"operation": "CREATE TABLE"}},
                {
                    "metaData": {
                        "id": "6b0e2c55-5d1e-4a7e-9d0c-0c6a3c1f2e11",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(schema),
                        "partitionColumns": [],
                        "configuration": config,
                        "createdTime": 1,
                    }
                },
                {
                    "protocol": {
                        "minReaderVersion": 1,
                        "minWriterVersion": 7,
                        "writerFeatures": ["domainMetadata", "rowTracking", "invariants", "appendOnly"],
                    }
                },
            ]
        )
        + "\n"
    )
    _row_file(path, 1, "part-00000-a.snappy.parquet", extra or {}, base_row_id=0, commit_version=1, data_change=True)


def _row_file(
    path: Path,
    n: int,
    rel: str,
    extra: dict[str, pa.Array],
    *,
    base_row_id: int,
    commit_version: int,
    data_change: bool,
) -> None:
    """Commit ``n``: one file of ids 0..5 (plus ``extra`` columns), replacing every live file when not a data
    change (a rewrite, as OPTIMIZE commits one)."""
    import pyarrow.parquet as pq

    from tests.adversarial.conftest import delta_stats, log_state

    ids = pa.array(range(6), pa.int64())
    pq.write_table(pa.table({"id": ids, **extra}), path / rel)
    actions: list[dict[str, object]] = [{"commitInfo": {"operation": "WRITE" if data_change else "OPTIMIZE"}}]
    if not data_change:
        actions += [
            {
                "remove": {
                    "path": raw,
                    "dataChange": False,
                    "deletionTimestamp": 1,
                    "size": add["size"],
                    "extendedFileMetadata": True,
                    "partitionValues": {},
                    "baseRowId": add.get("baseRowId"),
                    "defaultRowCommitVersion": add.get("defaultRowCommitVersion"),
                }
            }
            for raw, add in log_state(path).adds.items()
        ]
    actions.append(
        {
            "add": {
                "path": rel,
                "partitionValues": {},
                "size": (path / rel).stat().st_size,
                "modificationTime": 1,
                "dataChange": data_change,
                "baseRowId": base_row_id,
                "defaultRowCommitVersion": commit_version,
                "stats": delta_stats(pa.table({"id": ids})),
            }
        }
    )
    (path / commit_name(n)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def rewritten_ids(path: Path, name: str) -> None:
    """Recorded, then a rewrite of the one file: the same rows, baseRowId 0 and commit version 1 (so baseRowId + index
    gives the attested ids), its materialized row-id column named ``name`` holding ids 1000..1005."""
    row_tracked(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc
    n = int(DeltaTable(str(path)).version()) + 1
    _row_file(
        path,
        n,
        "part-00000-b.snappy.parquet",
        {name: pa.array(range(1000, 1006), pa.int64())},
        base_row_id=0,
        commit_version=1,
        data_change=False,
    )


def test_a_rewrite_holding_row_ids_under_another_case_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rewritten_ids(path, ROW_ID_COLUMN.upper())
    for level in ("schema", "files", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc != 0 and codes(doc) == ["unsupported_table"], (level, doc)


def test_a_rewrite_holding_commit_versions_under_another_case_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    row_tracked(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    n = int(DeltaTable(str(path)).version()) + 1
    _row_file(
        path,
        n,
        "part-00000-b.snappy.parquet",
        {COMMIT_VERSION_COLUMN.upper(): pa.array([7] * 6, pa.int64())},
        base_row_id=0,
        commit_version=1,
        data_change=False,
    )
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["unsupported_table"], doc


def test_record_binds_no_digest_of_row_ids_under_another_case(tmp_path: Path) -> None:
    # The recorded version's own file so (written there before the record): the digest took baseRowId + index for
    # ids Spark reads as 1000..1005 (a content digest bound for rows no reader gets). Now no digest is bound: the
    # files and bytes are attested, as for any table whose rows have no one content.
    path = tmp_path / "t"
    row_tracked(path, {ROW_ID_COLUMN.upper(): pa.array(range(1000, 1006), pa.int64())})
    written = attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert written.content is None, written.content
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is False, doc


# ---- integers stored past their Parquet annotation's width ---------------------------------------------------------
# A Parquet INT32 column annotated INT(8) holds 32-bit values: a file may store 300 there. pyarrow (the digest) and
# delta-rs read it truncated (44), Spark reads the stored 300 into a Delta `integer` column (measured). A table whose
# file was written so before `attest record` was recorded with the digest of 44, VERIFIED, while Spark returned 300.


def narrow_file(path: Path, values: list[int]) -> str:
    """A Parquet file of one column ``v``, INT32 annotated INT(8), storing ``values`` as int32 (plain, uncompressed:
    each value's four bytes written over the ones pyarrow wrote for its low 7 bits)."""
    import struct

    import pyarrow.parquet as pq

    rel = "part-00000-narrow.parquet"
    low = [v & 0x7F for v in values]
    pq.write_table(
        pa.table({"v": pa.array(low, pa.int8())}),
        path / rel,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
    )
    data = (path / rel).read_bytes()
    at = data.index(b"".join(struct.pack("<i", v) for v in low))
    data = data[:at] + b"".join(struct.pack("<i", v) for v in values) + data[at + 4 * len(values) :]
    (path / rel).write_bytes(data)
    return rel


def narrow_table(path: Path) -> None:
    """A delta-rs table of an `integer` column v (44, 1) whose one file is replaced, in its commit, by a file storing
    300 and 1 under an INT(8) annotation."""
    write_deltalake(str(path), pa.table({"v": pa.array([44, 1], pa.int32())}))
    for old in path.glob("*.parquet"):
        old.unlink()
    rel = narrow_file(path, [300, 1])
    commit = path / commit_name(0)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            action["add"]["path"], action["add"]["size"] = rel, (path / rel).stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def test_record_refuses_integers_past_their_annotation(tmp_path: Path) -> None:
    path = tmp_path / "t"
    narrow_table(path)
    assert DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist() == [44, 1]  # delta-rs truncates
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value


NARROW_WIDENINGS = ("the feature on", "a column widened")


def narrow_rewrite(path: Path, how: str) -> None:
    """A type-widening table (``test_delta_round16.WIDENINGS``: the feature on, or v widened to long) of v = 44, 1,
    recorded; then a ``dataChange: false`` rewrite into a file storing 300 and 1 under an INT(8) annotation, which
    the digest read as the wider type, 44 and 1: `VERIFIED (content; compacted …, same rows)` before."""
    from tests.adversarial.conftest import delta_stats, log_state, write_commit
    from tests.adversarial.test_delta_round16 import _change, protocol

    write_deltalake(str(path), pa.table({"v": pa.array([44, 1], pa.int32())}))
    features = ["typeWidening"]
    if how == "the feature on":
        write_commit(path, [protocol(3, 7, features, features)])
    else:
        meta = json.loads(json.dumps(log_state(path).metadata))
        schema = json.loads(meta["schemaString"])
        schema["fields"][0]["type"] = "long"
        _change(schema["fields"][0], "integer", "long")
        meta["schemaString"] = json.dumps(schema)
        meta["configuration"] = {**(meta.get("configuration") or {}), "delta.enableTypeWidening": "true"}
        write_commit(path, [protocol(3, 7, features, features), {"metaData": meta}])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    rel = narrow_file(path, [300, 1])
    actions: list[dict[str, object]] = [{"commitInfo": {"operation": "OPTIMIZE"}}]
    for raw, add in log_state(path).adds.items():
        actions.append(
            {
                "remove": {
                    "path": raw,
                    "dataChange": False,
                    "deletionTimestamp": 1,
                    "size": add["size"],
                    "extendedFileMetadata": True,
                    "partitionValues": {},
                }
            }
        )
    actions.append(
        {
            "add": {
                "path": rel,
                "partitionValues": {},
                "size": (path / rel).stat().st_size,
                "modificationTime": 1,
                "dataChange": False,
                "stats": delta_stats(pa.table({"v": pa.array([44, 1], pa.int32())})),
            }
        }
    )
    write_commit(path, actions)


@pytest.mark.parametrize("how", NARROW_WIDENINGS)
def test_a_rewrite_storing_integers_past_their_annotation_is_content_changed(tmp_path: Path, how: str) -> None:
    path = tmp_path / "t"
    narrow_rewrite(path, how)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "past the width" in json.dumps(doc), doc


# ---- a struct's field stored under another case ---------------------------------------------------------------------
# Spark resolves a file's nested struct fields by name without case (as its top-level columns: ``_check_case``),
# delta-rs by the exact name: a file holding ``s.X`` for the schema's ``s.x`` read 50, 60 in Spark and nulls in
# delta-rs (measured). Only top-level columns were held so: `record` bound a digest of the file, VERIFIED.


def nested_case_table(path: Path) -> None:
    """A delta-rs table (id, s: struct<x>) whose one file is rewritten in place, before any record, to hold ``s.X``
    (50, 60); its statistics say so too (Spark's reading)."""
    import pyarrow.parquet as pq

    write_deltalake(
        str(path),
        pa.table(
            {"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"x": 5}, {"x": 6}], pa.struct([("x", pa.int64())]))}
        ),
    )
    (data,) = path.glob("*.parquet")
    pq.write_table(
        pa.table(
            {"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"X": 50}, {"X": 60}], pa.struct([("X", pa.int64())]))}
        ),
        data,
    )
    commit = path / commit_name(0)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            stats["minValues"]["s"], stats["maxValues"]["s"] = {"x": 50}, {"x": 60}
            action["add"]["stats"], action["add"]["size"] = json.dumps(stats), data.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def test_record_binds_no_digest_of_a_struct_field_under_another_case(tmp_path: Path) -> None:
    path = tmp_path / "t"
    nested_case_table(path)
    assert DeltaTable(str(path)).to_pyarrow_table().column("s").to_pylist() == [{"x": None}, {"x": None}]
    written = attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert written.content is None, written.content
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is False, doc


# ---- delta.columnMapping.mode spelled in another case ---------------------------------------------------------------
# Spark parses the mode without case (`NAME` is name mapping: columns by physical name), delta-rs takes only the exact
# spelling (it read every column of such a table as nulls, measured with a table Spark wrote, its mode respelled in
# each metaData). The content digest followed Spark (it lowers the mode): recorded, VERIFIED, while delta-rs readers
# got nulls.


def mapped_table(path: Path, mode: str) -> None:
    """A name-mapped table as Spark writes one (reader 2, writer 5): columns id, s stored under physical names
    ``col-1``, ``col-2``; its mode spelled ``mode``."""
    import pyarrow.parquet as pq

    (path / "_delta_log").mkdir(parents=True)
    fields = [
        {
            "name": name,
            "type": kind,
            "nullable": True,
            "metadata": {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f"col-{i}"},
        }
        for i, (name, kind) in enumerate((("id", "long"), ("s", "string")), start=1)
    ]
    rel = "part-00000-mapped.parquet"
    schema = pa.schema(
        [
            pa.field("col-1", pa.int64(), metadata={"PARQUET:field_id": "1"}),
            pa.field("col-2", pa.string(), metadata={"PARQUET:field_id": "2"}),
        ]
    )
    pq.write_table(pa.table([pa.array([1, 2], pa.int64()), pa.array(["a", "b"])], schema=schema), path / rel)
    first_commit(path, rel, fields, num_records=2, reader=2, writer=5,
                 configuration={"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "2"})


def _query_engine(path: Path) -> list[object]:
    """Column s as delta-rs's query engine reads it (its pyarrow dataset reads no column mapping at all)."""
    from deltalake import QueryBuilder

    return (
        pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT s FROM t").read_all())
        .column("s")
        .to_pylist()
    )


@pytest.mark.parametrize("mode", ["NAME", "Name", "ID"])
def test_record_refuses_a_mapping_mode_in_another_case(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "t"
    mapped_table(path, mode)
    if mode != "ID":
        assert _query_engine(path) == [None, None]  # by logical name
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value


def test_a_mapping_mode_as_spark_writes_it_records(tmp_path: Path) -> None:
    # The control: the same table with the mode spelled `name` reads the stored values in delta-rs, and records.
    path = tmp_path / "t"
    mapped_table(path, "name")
    assert _query_engine(path) == ["a", "b"]
    written = attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert written.content is not None
