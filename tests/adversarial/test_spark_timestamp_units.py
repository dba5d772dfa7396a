"""A Delta rewrite whose added file stores a timestamp column in nanoseconds (redteam13d).

The digest reads a timestamp stored in another unit with the same zone-ness as the table's type (pyarrow casts it
exactly to microseconds, as delta-rs reads it). Spark (delta-spark 4.4) converts milliseconds, but no
``TIMESTAMP(NANOS, *)`` column to a Delta ``timestamp`` or ``timestamp_ntz``: it fails the read
(``SchemaColumnConvertNotSupportedException``). Measured: a hand-made ``dataChange: false`` rewrite whose file holds
the attested instants as nanoseconds was ``VERIFIED (content; compacted …, same rows)`` while Spark could not read the
table. Now ``unsupported_table`` (readers disagree), at ``record`` too. Milliseconds (both read the attested instants)
still verify.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_rewrite_parquet_layout import delta_rs_rows
from tests.adversarial.test_spark_rewrite_readers import _attested, rewrite_with, spark_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MICROS = [1_700_000_000_123_000, 0]  # whole milliseconds: exact in every unit


def _rewritten(path: Path, zone: str | None, unit: str) -> None:
    """Two appends of ``MICROS`` (a ``timestamp`` column with ``zone``, ``timestamp_ntz`` without), attested, then
    a rewrite of both files into one storing them in ``unit``."""
    t = pa.timestamp("us", zone)
    _attested(path, pa.table({"ts": pa.array(MICROS, t)}))
    rewrite_with(path, pa.table({"ts": pa.array(MICROS * 2, t).cast(pa.timestamp(unit, zone))}), 4)


@pytest.mark.parametrize("zone", ["UTC", None], ids=["timestamp", "timestamp_ntz"])
def test_a_rewrite_storing_nanoseconds_is_unsupported(tmp_path: Path, zone: str | None) -> None:
    path = tmp_path / "t"
    _rewritten(path, zone, "ns")
    assert len(delta_rs_rows(path)) == 4  # delta-rs reads the attested instants
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["unsupported_table"], doc
    assert "nanoseconds" in doc["errors"][0]["message"], doc


@pytest.mark.parametrize("zone", ["UTC", None], ids=["timestamp", "timestamp_ntz"])
def test_a_rewrite_storing_milliseconds_verifies(tmp_path: Path, zone: str | None) -> None:
    path = tmp_path / "t"
    _rewritten(path, zone, "ms")
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_record_binds_no_content_of_a_file_storing_nanoseconds(tmp_path: Path) -> None:
    """Not only a rewrite: an append of such a file, then ``record``. As for every file whose rows readers disagree
    on (carriers/content_store.record_content), the attestation binds its files and bytes and no content digest, so
    no later rewrite verifies by content."""
    path = tmp_path / "t"
    _attested(path, pa.table({"ts": pa.array(MICROS, pa.timestamp("us", "UTC"))}))
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"ts": pa.array(MICROS, pa.timestamp("ns", "UTC"))}), path / rel)
    add = {"path": rel, "partitionValues": {}, "size": (path / rel).stat().st_size, "modificationTime": 2,
           "dataChange": True, "stats": json.dumps({"numRecords": 2})}
    (path / commit_name(latest(path) + 1)).write_text(
        json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n" + json.dumps({"add": add}) + "\n")
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is False, doc


@pytest.mark.spark
def test_spark_reads_milliseconds_and_refuses_nanoseconds(spark: SparkSession, tmp_path: Path) -> None:
    for zone in ("UTC", None):
        millis, nanos = tmp_path / f"ms-{zone}", tmp_path / f"ns-{zone}"
        _rewritten(millis, zone, "ms")
        _rewritten(nanos, zone, "ns")
        spark_rows(spark, millis)  # a fresh snapshot of each
        # The instants (a timestamp_ntz's wall-clock time as UTC: the session's zone, carriers.spark.session).
        read = spark.read.format("delta").load(str(millis)).selectExpr("unix_micros(cast(ts as timestamp)) AS us")
        assert sorted(r["us"] for r in read.collect()) == sorted(MICROS * 2), zone  # the attested instants
        with pytest.raises(Exception, match="SchemaColumnConvertNotSupportedException"):
            spark_rows(spark, nanos)
