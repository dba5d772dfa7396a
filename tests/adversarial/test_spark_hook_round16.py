"""Round 16 on what the Spark post-write hook records: a cache dropped before the listener looked at it, and
``VALUES`` rows written beside a table read (last test: in neither the program nor the inputs, recorded strong).

Spark reports a write to its query listeners on an asynchronous bus: the hook reads the write's plan — and asks
Spark's cache manager which of its relations the query answered from cached rows (round 14) — after the job's thread
has gone on. A job that wrote from a cached DataFrame and then ``unpersist()``-ed it (the usual clean-up) left the
hook an empty cache: the relation was taken as scanned, at the version its plan names, and recorded ``strong`` by
that version's content while the job had written the rows cached at an older version. Failed on the code before
this round (``inputs_proof_class: strong``, the appended version's content; the written rows were the old three).
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_spark_hook_round14 import _append_outside_spark, _inputs, _source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


def _cached_then_written(spark: SparkSession, hook: Hook, root: Path, name: str,
                         drop: Any, go: threading.Event, *, settle: bool = True) -> str:
    """Cache version 0 of a source, append outside Spark (version 1, attested), write the source to a new table
    (Spark answers from the cache: version 0's rows), then drop the cache with ``drop``, then let the listener run.

    ``settle``: Delta's own queries in reading version 1 (a ``collect``) reach the listener before the hold starts.
    Held too, they kept the write guard before the write waiting until the hold gave up (20 s, measured)."""
    from pyspark import StorageLevel

    from carriers.delta.carrier import DeltaCarrier

    src = _source(spark, hook, root, name)
    cached = spark.read.format("delta").load(src)
    cached.persist(StorageLevel.DISK_ONLY)
    assert cached.count() == 3
    _append_outside_spark(src, [7])
    DeltaCarrier(src).record(model="src", program_hash="0" * 64, inputs=[])  # the new version, attested
    dst = str(root / f"{name}_dst_{uuid.uuid4().hex[:6]}")
    if not settle:
        go.clear()
    read = spark.read.format("delta").load(src)  # analysed at version 1
    if settle:
        hook.flush()
        go.clear()
    read.write.format("delta").save(dst)
    threading.Timer(3.0, go.set).start()  # the listener is let go 3 s from now, unless something waits for it first
    drop(cached)
    go.set()
    hook.flush()
    assert hook.failed == 0, hook.errors
    # measured: the job wrote the cached rows (version 0's), not the version its plan names
    assert sorted(r[0] for r in spark.read.format("delta").load(dst).collect()) == [0, 1, 2]
    return dst


@pytest.mark.parametrize("how", ["unpersist", "clearCache", "uncache_sql"])
def test_a_cache_dropped_right_after_the_write_still_makes_the_read_heuristic(
        spark: SparkSession, hook: Hook, spark_warehouse: Path, slow_listener: threading.Event, how: str) -> None:
    drops = {"unpersist": lambda df: df.unpersist(blocking=True),
             "clearCache": lambda df: spark.catalog.clearCache(),
             "uncache_sql": lambda df: spark.sql("CLEAR CACHE")}
    dst = _cached_then_written(spark, hook, spark_warehouse, f"r16_{how}", drops[how], slow_listener)
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs  # was: strong, the content of version 1
    (read,) = inputs
    assert "content" not in read and "cache" in read["watermark"], read


def test_rows_the_plan_holds_beside_a_table_read_are_not_read_strongly(spark: SparkSession, hook: Hook,
                                                                       spark_warehouse: Path) -> None:
    """``SELECT … FROM src UNION ALL VALUES (99)``: the VALUES rows are a ``LocalRelation`` — in the program document
    by their schema only, and no input — so two jobs writing other rows beside the same read had one program and
    the same ``strong`` inputs. Failed before this round (``strong``, the source's content the only input)."""
    src = _source(spark, hook, spark_warehouse, "r16_values")
    dst = str(spark_warehouse / f"r16_values_dst_{uuid.uuid4().hex[:6]}")
    spark.sql(f"SELECT id FROM delta.`{src}` UNION ALL SELECT * FROM VALUES (99L) AS v(id)") \
        .write.format("delta").save(dst)
    hook.flush()
    assert hook.failed == 0, hook.errors
    assert sorted(r[0] for r in spark.read.format("delta").load(dst).collect()) == [0, 1, 2, 99]
    doc, inputs = _inputs(hook, dst)
    assert doc["inputs_proof_class"] == "heuristic", inputs
    assert [i for i in inputs if i["table"] == "data:LocalRelation" and "content" not in i], inputs
    assert [i for i in inputs if i["table"].startswith("delta:") and "content" in i], inputs  # the read: by content
