"""Spark's column-default metadata in a Delta schema: ``EXISTS_DEFAULT``.

Spark's readers — delta-spark's included — fill a column a data file lacks with the schema field's
``EXISTS_DEFAULT`` (Spark's ResolveDefaultColumns metadata); delta-rs reads nulls (measured: 7 against null). Delta's
own DDL never writes it (``CREATE TABLE ... DEFAULT`` keeps only ``CURRENT_DEFAULT``, which affects writes, and
``ADD COLUMN ... DEFAULT`` is refused), but a hand-written ``metaData`` can, before the producer's attested write. The
content digest is delta-rs's reading, so a ``dataChange: false`` rewrite whose new file holds the column's values
(all null) *without the column* kept the digest while Spark's rows changed from null to the default:
``VERIFIED (content; compacted ..., same rows)`` before (main's code). Now a file lacking a column that has an
``EXISTS_DEFAULT`` gets no digest (``unsupported_table``): the rewrite is not VERIFIED.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, log_state, metadata_commit, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _with_exists_default(meta: dict[str, Any]) -> None:
    schema = json.loads(meta["schemaString"])
    for field in schema["fields"]:
        if field["name"] == "c":
            field["metadata"] = {**field.get("metadata", {}), "CURRENT_DEFAULT": "7", "EXISTS_DEFAULT": "7"}
    meta["schemaString"] = json.dumps(schema)


def _spark_rows(spark: SparkSession, path: Path) -> list[tuple[int, int | None]]:
    return sorted((int(r["id"]), r["c"]) for r in spark.read.format("delta").load(str(path)).collect())


def _rewrite_without_c(path: Path) -> None:
    """A ``dataChange: false`` commit removing every live file and adding one file of the same ids without column c
    (whose every value was null)."""
    state = log_state(path)
    ids = sorted(DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist())
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path / rel)
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    for raw, add in state.adds.items():
        actions.append({"remove": {"path": raw, "dataChange": False, "deletionTimestamp": 1,
                                   "extendedFileMetadata": True, "partitionValues": {}, "size": add["size"]}})
    # c's null count stated (every row: the file holds none of it), as the replaced files did: a rewrite leaving
    # out statistics they carried is refused first (tests/adversarial/test_delta_missing_bounds.py)
    stats = {"numRecords": len(ids), "minValues": {"id": ids[0]}, "maxValues": {"id": ids[-1]},
             "nullCount": {"id": 0, "c": len(ids)}}
    actions.append({"add": {"path": rel, "partitionValues": {}, "size": (path / rel).stat().st_size,
                            "modificationTime": 2, "dataChange": False, "stats": json.dumps(stats)}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_a_rewrite_dropping_a_column_with_an_exists_default_is_not_verified(spark: SparkSession,
                                                                            tmp_path: Path) -> None:
    path = tmp_path / "t"
    rows = pa.table({"id": pa.array([0, 1], pa.int64()), "c": pa.array([None, None], pa.int32())})
    write_deltalake(str(path), rows)
    metadata_commit(path, _with_exists_default)  # before the producer's write: in the attested schema
    write_deltalake(str(path), pa.table({"id": pa.array([2], pa.int64()), "c": pa.array([None], pa.int32())}),
                    mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    assert _spark_rows(spark, path) == [(0, None), (1, None), (2, None)]
    _rewrite_without_c(path)
    assert DeltaTable(str(path)).to_pyarrow_table().column("c").to_pylist() == [None, None, None]  # delta-rs
    assert _spark_rows(spark, path) == [(0, 7), (1, 7), (2, 7)]  # Spark: the default, in every row
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["unsupported_table"], doc
    assert not doc["verdict"].startswith("VERIFIED"), doc


def test_an_exists_default_added_after_the_attestation_is_reader_view_changed(tmp_path: Path) -> None:
    """Held before: field metadata is in the reader view."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": pa.array([0, 1], pa.int64()), "c": pa.array([None, None], pa.int32())}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    metadata_commit(path, _with_exists_default)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc
