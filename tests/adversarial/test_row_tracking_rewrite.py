"""Row-tracking ids and rewrites of an attested Delta table (issue 32).

With ``delta.enableRowTracking`` Spark readers get every row's ``_metadata.row_id`` and
``_metadata.row_commit_version``: the materialized column's value when the file holds one (OPTIMIZE writes them so ids
survive compaction), else the add's ``baseRowId`` plus the row's physical index (before the deletion vector) / its
``defaultRowCommitVersion``. Before the ids were folded into the content digest, a ``dataChange: false`` rewrite that
kept every row but gave them other ids verified ``VERIFIED (content; compacted ..., same rows)`` exactly as an honest
OPTIMIZE did. Each attack here is checked against what Spark then reads (the rows the same, the ids changed).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, delta_stats, latest, log_state, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def source(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Spark-written row-tracking table with a deletion vector: two inserts (ids from commits 1 and 2), then a
    DELETE of one row of the first file (a deletion vector: the file's later rows keep their physical index)."""
    path = tmp_path_factory.mktemp("rowtrack") / "src"
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, s STRING) USING delta TBLPROPERTIES ("
              "'delta.enableRowTracking'='true', 'delta.enableDeletionVectors'='true')")
    spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(0, 6)")
    spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(6, 10)")
    spark.sql(f"DELETE FROM {t} WHERE id = 1")
    return path


@pytest.fixture
def table(source: Path, tmp_path: Path) -> Path:
    path = tmp_path / "t"
    shutil.copytree(source, path)
    return path


def _ids(spark: SparkSession, path: Path) -> dict[int, tuple[int, int]]:
    """id -> (_metadata.row_id, _metadata.row_commit_version), as Spark reads them."""
    rows = spark.sql(f"SELECT id, _metadata.row_id AS r, _metadata.row_commit_version AS c FROM delta.`{path}`")
    return {int(x["id"]): (int(x["r"]), int(x["c"])) for x in rows.collect()}


def _config(path: Path) -> dict[str, str]:
    return dict(log_state(path).metadata.get("configuration") or {})


def _record(path: Path) -> None:
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc


def _forge(path: Path, ids: dict[int, tuple[int, int]], *, materialize: bool, base_row_id: int) -> int:
    """A ``dataChange: false`` commit removing every live file and adding one Parquet file of the same rows (id, s),
    in id order; ``materialize``: with the materialized row-tracking columns holding ``ids``."""
    state = log_state(path)
    config = _config(path)
    order = sorted(ids)
    columns: dict[str, Any] = {"id": pa.array(order, pa.int64()), "s": pa.array([str(i) for i in order])}
    if materialize:
        columns[config["delta.rowTracking.materializedRowIdColumnName"]] = pa.array([ids[i][0] for i in order],
                                                                                   pa.int64())
        columns[config["delta.rowTracking.materializedRowCommitVersionColumnName"]] = pa.array(
            [ids[i][1] for i in order], pa.int64())
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table(columns), path / rel)
    n = latest(path) + 1
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    for raw, add in state.adds.items():
        remove = {"path": raw, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                  "partitionValues": {}, "size": add["size"], "baseRowId": add.get("baseRowId"),
                  "defaultRowCommitVersion": add.get("defaultRowCommitVersion")}
        if add.get("deletionVector"):
            remove["deletionVector"] = add["deletionVector"]
        actions.append({"remove": remove})
    actions.append({"add": {"path": rel, "partitionValues": {}, "size": (path / rel).stat().st_size,
                            "modificationTime": 2, "dataChange": False, "baseRowId": base_row_id,
                            "defaultRowCommitVersion": n,
                            # the table's columns' statistics, as the replaced files carry them (a rewrite leaving
                            # them out is refused first: tests/adversarial/test_delta_missing_bounds.py)
                            "stats": delta_stats(pa.table({"id": columns["id"], "s": columns["s"]}))}})
    (path / commit_name(n)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return n


def _high_water(path: Path) -> int:
    return max(int(a.get("baseRowId") or 0) + 100 for a in log_state(path).adds.values())


def test_spark_reads_ids_as_the_digest_takes_them(spark: SparkSession, table: Path) -> None:
    """The measurement the digest follows: before OPTIMIZE no file holds materialized ids (baseRowId + the physical
    index, the deleted row's index skipped, not reused); after it the new file holds them and Spark reads the same ids
    and commit versions from it."""
    before = _ids(spark, table)
    adds = log_state(table).adds
    assert not any(config in pq.read_schema(table / raw).names for raw in adds
                   for config in _config(table).values())
    assert before[2] == (2, 1) and before[6][1] == 2  # id 2 keeps physical index 2 after id 1's deletion
    spark.sql(f"OPTIMIZE delta.`{table}`")
    assert _ids(spark, table) == before
    (new,) = log_state(table).adds
    assert _config(table)["delta.rowTracking.materializedRowIdColumnName"] in pq.read_schema(table / new).names


def test_honest_spark_optimize_verifies_by_content(spark: SparkSession, table: Path) -> None:
    _record(table)
    before = _ids(spark, table)
    spark.sql(f"OPTIMIZE delta.`{table}`")
    assert _ids(spark, table) == before
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), doc
    assert doc["content"]["passed"] is True, doc


def test_honest_forged_rewrite_with_materialized_ids_verifies(spark: SparkSession, table: Path) -> None:
    """The control for the forgeries below: the same hand-written commit, the ids materialized as they were."""
    _record(table)
    before = _ids(spark, table)
    _forge(table, before, materialize=True, base_row_id=_high_water(table))
    assert _ids(spark, table) == before
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), doc


def _attacked(ids: dict[int, tuple[int, int]], attack: str) -> dict[int, tuple[int, int]]:
    out = dict(ids)
    if attack == "ids_shifted":
        out = {k: (r + 1000, c) for k, (r, c) in ids.items()}
    elif attack == "ids_swapped":
        out[0], out[9] = (ids[9][0], ids[0][1]), (ids[0][0], ids[9][1])
    elif attack == "commit_versions_changed":
        out = {k: (r, 7) for k, (r, c) in ids.items()}
    elif attack == "one_commit_version_changed":
        out[3] = (ids[3][0], ids[3][1] + 1)
    return out


@pytest.mark.parametrize("attack", ["ids_shifted", "ids_swapped", "commit_versions_changed",
                                    "one_commit_version_changed", "not_materialized"])
def test_a_rewrite_that_changes_row_ids_is_content_changed(spark: SparkSession, table: Path, attack: str) -> None:
    """The rows kept, the ids a Spark reader of _metadata.row_id / row_commit_version gets changed: materialized with
    other values, or not materialized at all (baseRowId + index of the new file: every id new)."""
    _record(table)
    before = _ids(spark, table)
    if attack == "not_materialized":
        _forge(table, before, materialize=False, base_row_id=_high_water(table))
    else:
        _forge(table, _attacked(before, attack), materialize=True, base_row_id=_high_water(table))
    after = _ids(spark, table)
    assert sorted(after) == sorted(before) and after != before  # same rows, other ids: the attack works on Spark
    if attack != "not_materialized":
        assert after == _attacked(before, attack)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert doc["verdict"].startswith("NOT VERIFIED"), doc


def test_an_attestation_without_row_ids_is_not_carried_over(spark: SparkSession, table: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded before the ids were bound (no ``row_ids`` in its content object): it verifies as before with a note,
    and a rewrite — honest or not, its digests cannot tell — stays compacted (before the ids were bound: VERIFIED)."""
    with monkeypatch.context() as m:
        m.setattr(DeltaCarrier, "content_row_ids", lambda self, version: None)
        attest_after_write(str(table), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and any("row-tracking ids" in n for n in doc["notes"]), doc
    before = _ids(spark, table)
    _forge(table, _attacked(before, "ids_shifted"), materialize=True, base_row_id=_high_water(table))
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["compacted"], doc
    assert "row-tracking ids" in json.dumps(doc), doc


def test_the_docs_row_tracking_vector_is_a_spark_written_file(table: Path) -> None:
    """docs/content-digest.md's row-tracking vector is the digest of the first file Spark wrote here (ids 0-5,
    baseRowId 0, defaultRowCommitVersion 1, id 1 deleted by a deletion vector): the carrier's reader of a real file
    gives the specified digest."""
    from attest.content import ContentDigest
    from tests.content.vectors import vectors

    (vector,) = [v for v in vectors() if v["name"].startswith("Delta row tracking")]
    carrier = DeltaCarrier(str(table))
    v = carrier._resolve(None)
    first = [f for f in carrier._live(v).files if f.kind == "data" and log_state(table).adds[f.path].get("baseRowId")
             == 0]
    assert len(first) == 1
    digest = carrier.file_content_digests(v, first)[first[0].path]
    assert digest.rows == vector["digest"]["rows"] and digest.short_id() == vector["digest"]["short_id"]
    assert isinstance(digest, ContentDigest)


def test_delta_rs_does_not_write_row_tracking_tables(table: Path) -> None:
    """Measured (delta-rs 1.6): no optimize or append of a row-tracking table, so no delta-rs rewrite to check."""
    from deltalake import DeltaTable, write_deltalake

    with pytest.raises(Exception, match="RowTracking"):
        DeltaTable(str(table)).optimize.compact()
    with pytest.raises(Exception, match="RowTracking"):
        write_deltalake(str(table), pa.table({"id": pa.array([99], pa.int64()), "s": ["x"]}), mode="append")

