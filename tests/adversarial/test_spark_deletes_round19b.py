"""Round 19b, Iceberg Java's side (Spark 4.1 / Iceberg 1.12): what Spark reads of a manifest whose partition tuple's
field types (tests/adversarial/test_deletes_round19b.py) or field ids (two fields' ids swapped) are not its spec's."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.test_deletes_round19 import delta  # noqa: F401
from tests.adversarial.test_deletes_round19b import retyped_partition, swapped
from tests.adversarial.test_spark_deletes_round19 import _catalog, _ids, _table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("content", [1, 0], ids=["delete manifest", "data manifest"])
@pytest.mark.parametrize("kind", ["string", "double"])
def test_spark_reads_a_retyped_partition_field(spark: SparkSession, spark_warehouse: Path, kind: str,
                                              content: int) -> None:
    """The delete (data) manifest's p = 2 stored as a string or a double: Spark's full read is pyiceberg's (the
    deleted id 3 back), its ``p = 2`` fails (``IllegalArgumentException``) where pyiceberg reads rows — or, for the
    string data manifest, none of the two rows of p = 2."""
    catalog, ident, name = _table(spark, spark_warehouse)
    retyped_partition(catalog.load_table(ident), kind, content=content)
    table = catalog.load_table(ident)
    py = {w: sorted(table.scan(row_filter=w).to_arrow().column("id").to_pylist()) for w in ("true", "p = 2")}
    got: dict[str, Any] = {}
    for where in ("true", "p = 2"):
        try:
            got[where] = _ids(spark, name, where)
        except Exception as exc:  # a read Spark fails
            got[where] = type(exc).__name__
    # Both engines' full reads alike (the delete no longer applied: id 3 back), a read filtered on the partition not:
    # pyiceberg compares the stored "2" / 2.0 with the literal (no row for the string data manifest), Java fails.
    assert py["true"] == got["true"] == [1, 2, 3, 4], (py, got)
    assert py["p = 2"] == ([] if (kind, content) == ("string", 0) else [3, 4]), py
    assert got["p = 2"] == "IllegalArgumentException", got


def test_spark_reads_swapped_partition_field_ids_by_id(spark: SparkSession, spark_warehouse: Path) -> None:
    """Java projects the tuple by field id: p reads q's values (10, 20) and ``p = 1`` prunes every file, while
    pyiceberg reads by position and returns id 1 — why the round-19 check refuses swapped ids."""
    ns = f"r19b{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    catalog = _catalog(spark_warehouse)
    swapped(catalog, f"{ns}.t")
    table = catalog.load_table(f"{ns}.t")
    assert table.scan(row_filter="p = 1").to_arrow().column("id").to_pylist() == [1]
    name = f"iceberg.{ns}.t"
    assert _ids(spark, name) == [1, 2]
    assert _ids(spark, name, "p = 1") == [] and _ids(spark, name, "p = 10") == []  # pruned; read, then filtered


def test_spark_widens_an_int_stored_for_a_long(spark: SparkSession, spark_warehouse: Path) -> None:
    """Held (test_deletes_held_round19b.py): the delete manifest's p stored as an Avro int, as a manifest written
    before the column's promotion to long keeps it — Spark and pyiceberg read the attested rows, filtered alike."""
    catalog, ident, name = _table(spark, spark_warehouse)
    retyped_partition(catalog.load_table(ident), "int")
    table = catalog.load_table(ident)
    assert sorted(table.scan(row_filter="p = 2").to_arrow().column("id").to_pylist()) == [4]
    assert _ids(spark, name) == [1, 2, 4] and _ids(spark, name, "p = 2") == [4]


def test_spark_reads_a_date_stored_as_an_int(spark: SparkSession, spark_warehouse: Path) -> None:
    """Held (test_deletes_held_round19b.py): a date partition stored as a plain Avro int reads as the date."""
    from tests.adversarial.test_deletes_held_round19b import dated

    ns = f"r19d{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    dated(_catalog(spark_warehouse), f"{ns}.d")
    name = f"iceberg.{ns}.d"
    assert _ids(spark, name) == [1, 2, 3] and _ids(spark, name, "d = DATE'2024-01-02'") == [3]


@pytest.mark.parametrize("short", [0, 2])
def test_spark_reads_a_checkpoint_vector_by_its_stated_size(spark: SparkSession, delta: Path, short: int) -> None:  # noqa: F811
    """Held (test_deletes_held_round19b.py): the inline vector in a classic checkpoint, the commits before it cleaned
    up — Spark reads delta-rs's rows, and fails the read with the checkpoint's ``sizeInBytes`` 2 bytes short (delta-rs
    still deletes row 1), as for the vector in a JSON commit (round 19)."""
    from tests.adversarial import test_delta_dv_cardinality as cardinality
    from tests.adversarial.test_deletes_held_round19b import checkpointed, clean_up, edit_checkpoint_vector

    before = cardinality._delta_rs(delta)
    checkpoint = checkpointed(delta)
    if short:
        edit_checkpoint_vector(checkpoint, lambda dv: dv.__setitem__("sizeInBytes", dv["sizeInBytes"] - short))
    clean_up(delta, checkpoint)
    assert cardinality._delta_rs(delta) == before
    try:
        got: Any = sorted(r["v"] for r in spark.read.format("delta").load(str(delta)).select("v").collect())
    except Exception as exc:  # the read Spark refuses
        got = type(exc).__name__
    assert got == before if not short else not isinstance(got, list), got


def test_spark_reads_an_int_partition_stored_as_a_long(spark: SparkSession, spark_warehouse: Path) -> None:
    """The data manifest of an ``int`` partition storing p as an Avro long: Spark's full read is pyiceberg's, its
    ``p = 2`` fails where pyiceberg reads ids 3, 4 — refused (test_deletes_round19b.py)."""
    from tests.adversarial.test_deletes_round19b import int_stored_as_long

    ns = f"r19i{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    int_stored_as_long(_catalog(spark_warehouse), f"{ns}.i")
    got: dict[str, Any] = {}
    for where in ("true", "p = 2"):
        try:
            got[where] = _ids(spark, f"iceberg.{ns}.i", where)
        except Exception as exc:  # a read Spark fails
            got[where] = type(exc).__name__
    assert got == {"true": [1, 2, 3, 4], "p = 2": "IllegalArgumentException"}, got  # pyiceberg's p = 2: ids 3, 4
