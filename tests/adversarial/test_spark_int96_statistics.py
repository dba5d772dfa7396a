"""Why INT96 footer bounds are not held to a rewrite's rows (carriers/content_store.py ``index_problems``): Spark
writes timestamps as INT96 — a partition column too, which it also stores in the data file — with footer minima and
maxima that pyarrow disregards (INT96's sort order is undefined), so they cannot be checked; refusing them refused
every Spark OPTIMIZE of a table with a timestamp column (tests/spark/test_timestamp_partition_maintenance.py).

Held (measured, delta-spark 4.4 and delta-rs 1.6): bounds forged 24 years away from every stored value, in the file
an honest OPTIMIZE added, change no answer of Spark (UTC and New York sessions, filter pushdown on) nor of delta-rs —
neither prunes by them — and the rewrite verifies. Should an engine start pruning by them, this test fails first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable, QueryBuilder

from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_rewrite_parquet_indexes import _forge_int96_bounds, _int96

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

QUERIES = ["t = TIMESTAMP'2024-01-05 10:00:00'", "t > TIMESTAMP'2020-01-01 00:00:00'",
           "p = TIMESTAMP'2024-01-05 10:00:00'", "p > TIMESTAMP'2020-01-01 00:00:00'"]


def _answers(spark: SparkSession, path: Path) -> list[Any]:
    out: list[Any] = []
    spark.conf.set("spark.sql.parquet.filterPushdown", "true")
    for zone in ("UTC", "America/New_York"):
        spark.conf.set("spark.sql.session.timeZone", zone)
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        out += [spark.sql(f"SELECT count(*) FROM delta.`{path}` WHERE {q}").collect()[0][0] for q in QUERIES]
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    engine = QueryBuilder().register("t", DeltaTable(str(path)))
    for q in QUERIES:  # delta-rs: the same literals, as UTC instants
        q = q.replace("TIMESTAMP'", "TIMESTAMP '").replace(":00'", ":00Z'")
        out.append(engine.execute(f"select count(*) from t where {q}").read_all().column(0)[0].as_py())
    return out


def test_forged_int96_footer_bounds_change_no_answer_and_verify(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.sql(f"CREATE TABLE delta.`{path}` (t TIMESTAMP, p TIMESTAMP, v INT) USING delta PARTITIONED BY (p)")
    for v in range(3):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (TIMESTAMP'2024-01-05 10:00:00' + INTERVAL {v} HOURS, "
                  f"TIMESTAMP'2024-01-05 10:00:00', {v})")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
    honest = _answers(spark, path)
    # UTC; New York (10:00 there is 15:00 UTC: no row equal); delta-rs (UTC)
    assert honest == [1, 3, 3, 3, 0, 3, 0, 3, 1, 3, 3, 3], honest
    (added,) = [Path(u.removeprefix("file://")) for u in DeltaTable(str(path)).file_uris()]  # decoded already
    far = _int96(946_684_800)  # 2000-01-01
    _forge_int96_bounds(added, "t", far, far)
    _forge_int96_bounds(added, "p", far, far)
    assert _answers(spark, path) == honest  # nobody pruned the file
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith(f"VERIFIED (content; compacted at version {latest(path)}"), doc


def test_an_int96_rewrite_with_another_timestamp_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    """The dishonest variant: Spark rewrites the files with one timestamp moved (as a dataChange: false commit would
    hold it) — the rows differ, whatever the footer says: content_changed."""
    import json

    from carriers.delta.log import commit_name

    path = tmp_path / "t"
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.sql(f"CREATE TABLE delta.`{path}` (t TIMESTAMP, v INT) USING delta")
    for v in range(2):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (TIMESTAMP'2024-01-05 10:00:00' + INTERVAL {v} HOURS, {v})")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    spark.sql(f"UPDATE delta.`{path}` SET t = t + INTERVAL 1 SECOND WHERE v = 1")
    commit = path / commit_name(latest(path))
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:  # the UPDATE's commit relabelled as a rewrite
        for kind in ("add", "remove"):
            if kind in action:
                action[kind]["dataChange"] = False
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    (path / "_delta_log" / f".{commit.name}.crc").unlink(missing_ok=True)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
