"""A Delta ``variant`` column (Spark 4's ``variantType`` reader feature) rewritten by hand with a shredded file.

Measured (delta-spark 4.4 on Spark 4.1, delta-rs 1.6): a rewrite's added file storing the variant as the group
``{metadata, value, typed_value}`` — ``metadata`` and ``value`` byte for byte the attested ones, ``typed_value`` other
integers — is read by Spark from ``typed_value`` (100 and 200 where the attested rows hold 1 and 2), although the
table has no ``variantShredding`` feature, while delta-rs reads ``metadata`` / ``value`` (the attested rows) and drops
``typed_value``; with ``value`` null, delta-rs refuses the file and Spark reads ``typed_value``. Held: the digest reads
the column as stored (a struct with ``typed_value``, which no cast to the table's two-field struct drops): both are
``content_changed``. Control: Spark's own OPTIMIZE of the table verifies by content.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_content_rewrite_delta import _adds

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def spark_rows(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, to_json(v) FROM delta.`{path}`").collect())


def variant_table(spark: SparkSession, path: Path) -> None:
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v VARIANT) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT 1, parse_json('1')")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT 2, parse_json('2')")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path), "--level", "schema")[0] == 0
    assert spark_rows(spark, path) == [(1, "1"), (2, "2")]


@pytest.mark.parametrize("value_kept", [True, False])
def test_a_shredded_typed_value_spark_reads_is_not_the_same_rows(spark: SparkSession, tmp_path: Path,
                                                                  value_kept: bool) -> None:
    path = tmp_path / "t"
    variant_table(spark, path)
    rows = DeltaTable(str(path)).to_pyarrow_table().sort_by("id")
    v = rows.column("v").combine_chunks()
    value = v.field("value") if value_kept else pa.nulls(len(v), pa.binary())
    shredded = pa.StructArray.from_arrays([v.field("metadata"), value, pa.array([100, 200], pa.int64())],
                                          names=["metadata", "value", "typed_value"])
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"id": rows.column("id").combine_chunks(), "v": shredded}), path / rel)
    adds = _adds(path)
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE"}}]
    actions += [{"remove": {"path": r, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                            "partitionValues": {}, "size": a["size"]}} for r, a in adds.items()]
    actions.append({"add": {"path": rel, "partitionValues": {}, "size": (path / rel).stat().st_size,
                            "modificationTime": 2, "dataChange": False,
                            "stats": json.dumps({"numRecords": 2, "minValues": {"id": 1}, "maxValues": {"id": 2},
                                                 "nullCount": {"id": 0, "v": 0}})}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert spark_rows(spark, path) == [(1, "100"), (2, "200")]  # Spark: typed_value
    if value_kept:  # delta-rs: the attested metadata / value
        assert [r["v"]["value"] for r in DeltaTable(str(path)).to_pyarrow_table().sort_by("id").to_pylist()] == \
            v.field("value").to_pylist()
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc


def test_spark_optimize_of_a_variant_table_verifies(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    variant_table(spark, path)
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
    assert spark_rows(spark, path) == [(1, "1"), (2, "2")]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and "same rows" in doc["verdict"], doc
