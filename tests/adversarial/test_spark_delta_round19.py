"""What Spark (delta-spark 4.4 on Spark 4.1) reads of the nineteenth round's Delta tables: a file storing a column as
another type than the schema's (``test_delta_round19.py``) — an int32 past a short or byte column's width read
wrapped, the other lossy conversions a failed read, the kept ones as stored — and the held variants of
``test_delta_held_round19.py`` (checksum files, v2 sidecars holding actions other than files, domain metadata,
column mapping), each read as the attestation says."""

from __future__ import annotations

import io
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from attest.cli import main
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_delta_held_round19 import (
    MAPPINGS_READ_ALIKE,
    MAPPINGS_REFUSED,
    PARTITION_KEYS,
    checksum_forged,
    domains_committed,
    mapped,
    partition_keyed,
    sidecar_holding,
)
from tests.adversarial.test_delta_round19 import KEPT, LOSSY, stored_as

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _column(spark: SparkSession, path: Path) -> list[Any]:
    return [r[0] for r in spark.read.format("delta").load(str(path)).collect()]


def test_spark_wraps_an_integer_stored_past_the_columns_width(spark: SparkSession, tmp_path: Path) -> None:
    """The digest (and pyarrow) held 70000 and 300; Spark returned 4464 and 44: VERIFIED before."""
    wrapped = {
        "an int32 past 16 bits in a short column": [2, 4464],
        "an int32 past 8 bits in a byte column": [2, 44],
        "an int32 past 16 bits in a struct's short field": [2, 4464],
    }
    for i, (case, read) in enumerate(wrapped.items()):
        path = stored_as(tmp_path / str(i), *LOSSY[case])
        got = [r.x if hasattr(r, "x") else r for r in _column(spark, path)]
        assert sorted(got) == read, (case, got)


def test_spark_fails_the_other_lossy_reads(spark: SparkSession, tmp_path: Path) -> None:
    """Where delta-rs rounds (test_delta_round19.py), Spark fails the read: no two readers agree on such a file."""
    from pyspark.errors import PySparkException

    failing = sorted(c for c in LOSSY if "past 16 bits" not in c and "past 8 bits" not in c)
    assert len(failing) == len(LOSSY) - 3
    for i, case in enumerate(failing):
        path = stored_as(tmp_path / str(i), *LOSSY[case])
        with pytest.raises((PySparkException, Exception)) as caught:
            _column(spark, path)
        assert "FAILED_READ_FILE" in str(caught.value) or "Job aborted" in str(caught.value), case


def test_spark_reads_the_kept_conversions_as_stored(spark: SparkSession, tmp_path: Path) -> None:
    """Every stored value read as stored, or (an int64 in a double column, which no Delta writer stores) a failed read:
    never other values."""
    for i, (case, (kind, column)) in enumerate(sorted(KEPT.items())):
        path = stored_as(tmp_path / str(i), kind, column)
        if case == "an int64 below 2**53 in a double column":
            with pytest.raises(Exception, match="PARQUET_COLUMN_DATA_TYPE_MISMATCH"):
                _column(spark, path)
            continue
        got = _column(spark, path)
        stored = column.to_pylist()
        if case == "bytes in a string column":
            stored = [b.decode("utf-8", "replace") for b in stored]
        if case == "text in a binary column":
            stored = [s.encode() for s in stored]
        if case == "a float in a double column":
            stored = [pa.scalar(v, pa.float32()).as_py() for v in stored]
        assert sorted(got) == sorted(stored), (case, got)


def test_spark_reads_no_table_state_from_a_forged_checksum_file(spark: SparkSession, tmp_path: Path) -> None:
    """A Spark table, attested; a checksum file of the latest version (the attestation commit, which has none) whose
    ``allFiles`` lacks a file, or whose ``numFiles`` / ``tableSizeBytes`` say 1: Spark reads every row, VERIFIED."""
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c')")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["record", str(path), "--model", "m", "--program-hash", PROGRAM]) == 0, out.getvalue()
    for change in ("allFiles", "counts"):
        forged = checksum_forged(shutil.copytree(path, tmp_path / change), change)
        assert sorted(_column(spark, forged)) == [1, 2, 3], change
        assert spark.sql(f"SELECT count(*), max(id) FROM delta.`{forged}`").collect()[0][:] == (3, 3)
        rc, doc = verify(str(forged))
        assert rc == 0 and doc["level"] == "bytes", doc


def test_spark_reads_the_rows_of_a_v2_checkpoint_whose_sidecar_holds_other_actions(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, s STRING) USING delta "
        "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')"
    )
    for values in ("(1, 'a'), (2, 'b')", "(3, 'c')"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {values}")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["record", str(path), "--model", "m", "--program-hash", PROGRAM]) == 0, out.getvalue()
    for kind in ("txn", "domainMetadata", "commitInfo"):
        forged = sidecar_holding(shutil.copytree(path, tmp_path / kind), kind)
        assert sorted(_column(spark, forged)) == [1, 2, 3], kind
        rc, doc = verify(str(forged))
        assert rc == 0 and doc["level"] == "bytes", doc


def test_spark_reads_the_same_row_ids_after_a_domain_metadata_commit(spark: SparkSession, tmp_path: Path) -> None:
    """A row-tracking table, attested; a commit of domain metadata only (the row-id high-water mark set to 0, a
    clustering domain): Spark's rows, row ids and commit versions unchanged, VERIFIED."""
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1), (2)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3)")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["record", str(path), "--model", "m", "--program-hash", PROGRAM]) == 0, out.getvalue()
    query = "SELECT id, _metadata.row_id, _metadata.row_commit_version FROM delta.`{}`"
    before = sorted(tuple(r) for r in spark.sql(query.format(path)).collect())
    forged = domains_committed(shutil.copytree(path, tmp_path / "f"))
    assert (
        sorted(tuple(r) for r in spark.sql(query.format(forged)).collect())
        == before
        == [
            (1, 0, 1),
            (2, 1, 1),
            (3, 2, 2),
        ]
    )
    rc, doc = verify(str(forged))
    assert rc == 0 and doc["level"] == "bytes", doc


def test_spark_reads_the_held_column_mappings_as_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    for i, (case, (mode, fields, read)) in enumerate(sorted(MAPPINGS_READ_ALIKE.items())):
        path = mapped(tmp_path / str(i), mode, fields)
        got = [tuple(r) for r in spark.sql(f"SELECT a, b FROM delta.`{path}` ORDER BY a").collect()]
        assert got == read, (case, got)


# What Spark read of each table delta-rs refuses (test_delta_held_round19.MAPPINGS_REFUSED): "fails" for a failed read.
SPARK_READS_REFUSED: dict[str, Any] = {
    "an id that is not a number": "fails",
    "one id for two columns": "fails",
    "one physical name for two columns": "fails",
    "one physical name for two columns by id": [(1, None), (2, None)],  # b: id 2, which the file lacks
    "physical names differing in case": "fails",
}


def test_spark_reads_duplicate_mappings_otherwise_or_fails(spark: SparkSession, tmp_path: Path) -> None:
    """Tables delta-rs refuses (never a verdict): Spark fails the read of most, and reads the other by field id."""
    for i, (case, (mode, fields)) in enumerate(sorted(MAPPINGS_REFUSED.items())):
        path = mapped(tmp_path / str(i), mode, fields)
        try:
            got: Any = [tuple(r) for r in spark.sql(f"SELECT a, b FROM delta.`{path}` ORDER BY a").collect()]
        except Exception:  # a failed read, whatever Spark raised
            got = "fails"
        assert got == SPARK_READS_REFUSED[case], (case, got)


# What Spark read of a mapped table's partition values keyed otherwise (delta-rs refuses each table).
SPARK_READS_PARTITION_KEYS = [None, "x", None, "x"]


def test_spark_reads_mapped_partition_values_under_other_keys(spark: SparkSession, tmp_path: Path) -> None:
    for i, keys in enumerate(PARTITION_KEYS):
        path = partition_keyed(tmp_path / str(i), keys)
        got = {r[0] for r in spark.sql(f"SELECT p FROM delta.`{path}`").collect()}
        assert got == {SPARK_READS_PARTITION_KEYS[i]}, (keys, got)
