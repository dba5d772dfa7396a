"""Delta type widening (the ``typeWidening`` table feature) then maintenance, measured with Spark (delta-spark 4.4)
and delta-rs 1.6 (docs/content-digest.md, "Delta type widening"; docs/maintenance.md). One table, one Spark session:
attest, widen (reader_view_changed), OPTIMIZE (table_unreadable: delta-rs cannot read the feature; the message names
the widened columns), DROP FEATURE (VERIFIED by content read as the wider types), re-attest."""

from __future__ import annotations

import io
import json
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from attest.cli import main
from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PROGRAM = "d" * 64


def _record(path: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["record", str(path), "--model", "m", "--program-hash", "e" * 64, "--detached", "--json"])
    return rc, json.loads(out.getvalue())


def _rows(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect())


def test_widening_then_optimize_and_drop_feature_is_never_verified(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / f"t{uuid.uuid4().hex[:6]}"
    name = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {name} (id INT, m DECIMAL(10,2), s STRING) USING delta")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id AS DECIMAL(10,2)) / 4, CAST(id AS STRING) "
                  "FROM range(20)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc
    before = _rows(spark, path)

    # The feature is enabled after the attestation: a table created with it is unreadable to delta-rs 1.6 at once.
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE {name} CHANGE COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE {name} CHANGE COLUMN m TYPE DECIMAL(12,2)")
    assert _rows(spark, path) == before  # Spark reads the old files' values as the wider types: equal values
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["reader_view_changed"], doc  # the schema changed without a data commit

    # OPTIMIZE with the feature on: the rewrite is judged by content (the files are read with pyarrow, widened as
    # Spark reads them), but the typeWidening reader feature was enabled since the attestation, which delta-rs's
    # query engine refuses outright: reader_view_changed, never VERIFIED (it was table_unreadable: the digest asked
    # delta-rs for deletion vectors, which it reads of no table with the feature).
    spark.sql(f"OPTIMIZE {name}").collect()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and not doc["verdict"].startswith("VERIFIED") and codes(doc) == ["reader_view_changed"], doc

    # DROP FEATURE removes the reader feature (delta-rs reads the table again; the OPTIMIZE already wrote every file
    # as the wider types, so it rewrites none): the OPTIMIZE is judged by content. The recorded digests (the narrower
    # types) differ from the added file's; the removed files, still in storage with their attested bytes, are read
    # again as the wider types and hold the same rows: VERIFIED, saying the types were widened.
    spark.sql(f"ALTER TABLE {name} DROP FEATURE typeWidening").collect()
    assert _rows(spark, path) == before
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 8: 6 files → 1, same rows "
                                                 "read as the types widened since the attestation (id: integer → "
                                                 "long, m: decimal(10,2) → decimal(12,2))"), doc

    # Re-attesting: no carry-forward (the version's digests are of the wider types), an ordinary attestation;
    # --detached, since DROP FEATURE adds the writer feature checkpointProtection, which an attestation commit cannot
    # honour.
    rc, doc = _record(path)
    assert rc == 0 and doc["recorded"] is True and not doc.get("continues"), doc
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc


def test_nested_and_partition_widenings_then_drop_feature_verify(spark: SparkSession, tmp_path: Path) -> None:
    """A struct's field, a list's element, a map's value and a partition column widened, then DROP FEATURE (which
    rewrites every file still stored as the narrower types): the removed files read again as the wider types — the
    partition values cast too — hold the rows Spark reads, so it verifies, naming each widened field."""
    path = tmp_path / f"t{uuid.uuid4().hex[:6]}"
    name = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {name} (id INT, p INT, st STRUCT<x: INT, y: STRING>, a ARRAY<INT>, "
              "mp MAP<STRING, INT>) USING delta PARTITIONED BY (p)")
    for start in (0, 100):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, id % 2, named_struct('x', CAST(id AS INT), 'y', "
                  "CAST(id AS STRING)), array(CAST(id AS INT), -1), map('k', CAST(id * 3 AS INT)) FROM range(6)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc
    before = [json.dumps(r, default=str) for r in sorted(str(x) for x in _rows(spark, path))]

    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    for column in ("st.x", "a.element", "mp.value", "p"):
        spark.sql(f"ALTER TABLE {name} CHANGE COLUMN {column} TYPE BIGINT")
    spark.sql(f"ALTER TABLE {name} DROP FEATURE typeWidening").collect()
    assert [json.dumps(r, default=str) for r in sorted(str(x) for x in _rows(spark, path))] == before
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version "), doc
    assert sorted(doc["content"]["widened"]) == ["a.element: integer → long", "mp.value: integer → long",
                                                 "p: integer → long", "st.x: integer → long"], doc


def test_a_table_attested_with_the_feature_on_then_widened_and_optimized(spark: SparkSession, tmp_path: Path) -> None:
    """Created with ``delta.enableTypeWidening`` (the reader feature on from the start): attested (it was
    table_unreadable: delta-rs reads no deletion vector of such a table, and the digest asked it for them), then
    ``CHANGE COLUMN id TYPE BIGINT`` (reader_view_changed: the schema), then OPTIMIZE with the feature still on: the
    removed files read again as longs hold the added file's rows — VERIFIED, naming the widening."""
    path = tmp_path / f"t{uuid.uuid4().hex[:6]}"
    name = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING delta TBLPROPERTIES ('delta.enableTypeWidening' = "
              "'true', 'delta.enableDeletionVectors' = 'false')")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id AS STRING) FROM range(20)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc
    before = _rows(spark, path)
    spark.sql(f"ALTER TABLE {name} CHANGE COLUMN id TYPE BIGINT")
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["reader_view_changed"], doc
    spark.sql(f"OPTIMIZE {name}").collect()
    assert _rows(spark, path) == before
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version "), doc
    assert doc["content"]["widened"] == ["id: integer → long"], doc


def test_date_to_timestamp_ntz_and_int_to_decimal_widenings(spark: SparkSession, tmp_path: Path) -> None:
    """Data and partition columns widened date → timestamp_ntz (Spark needs the timestampNtz feature for it) and
    int → decimal(12,2). While the feature is on, delta-rs 1.6 cannot open the table at all — it parses no partition
    value '2024-01-05' as a timestamp_ntz nor '-7' as a decimal(12,2), where Spark reads midnight and -7.00
    (table_unreadable, measured; nothing to verify with it) until a rewrite respells them ('2024-01-05 00:00:00',
    '-7.00': OPTIMIZE, or DROP FEATURE's own). After DROP FEATURE: VERIFIED by content naming the four widenings (it was
    reader_view_changed: the timestampNtz reader feature the widening needs), and `record` then writes an ordinary
    attestation (no carry-forward after a schema change) that verifies at bytes level."""
    path = tmp_path / f"t{uuid.uuid4().hex[:6]}"
    name = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {name} (id INT, d DATE, p DATE, q INT) USING delta PARTITIONED BY (p, q)")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, date_add(DATE'2024-01-05', CAST(id AS INT)), "
                  "DATE'2024-01-05', IF(id % 2 = 0, -7, 3) FROM range(4)")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    before = [tuple(r) for r in spark.sql(f"SELECT CAST(id AS STRING), CAST(d AS STRING), CAST(p AS STRING), "
                                        f"CAST(q AS INT) FROM {name} ORDER BY 1").collect()]
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true', "
              "'delta.feature.timestampNtz' = 'supported')")
    for change in ("id TYPE DECIMAL(12,2)", "d TYPE TIMESTAMP_NTZ", "p TYPE TIMESTAMP_NTZ", "q TYPE DECIMAL(12,2)"):
        spark.sql(f"ALTER TABLE {name} CHANGE COLUMN {change}")
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 2 and codes(doc) == ["table_unreadable"] and "Failed to parse value" in doc["errors"][0]["message"], \
        doc
    # OPTIMIZE rewrites every file (three to a partition) under respelled values: delta-rs opens the table again, and
    # the typeWidening reader feature enabled since the attestation is in the reader view.
    spark.sql(f"OPTIMIZE {name}").collect()
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc
    spark.sql(f"ALTER TABLE {name} DROP FEATURE typeWidening").collect()
    after = [tuple(r) for r in spark.sql(f"SELECT CAST(CAST(id AS INT) AS STRING), CAST(CAST(d AS DATE) AS STRING), "
                                       f"CAST(CAST(p AS DATE) AS STRING), CAST(q AS INT) FROM {name} ORDER BY 1")
             .collect()]
    assert after == before  # the same values, as the wider types (midnight, .00)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
    assert sorted(doc["content"]["widened"]) == ["d: date → timestamp_ntz", "id: integer → decimal(12,2)",
                                                 "p: date → timestamp_ntz", "q: integer → decimal(12,2)"], doc
    rc, doc = _record(path)
    assert rc == 0 and doc["recorded"] is True and not doc.get("continues"), doc
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc
