"""What Spark (delta-spark 4.4) reads from a rewrite's added Parquet file that delta-rs and the digest do not.

The digest reads a rewritten file as delta-rs does (pyarrow, columns by exact name, every row group). Spark differs:

- it matches a file's columns to the table's **by name without case** (``spark.sql.caseSensitive`` false, its
  default): a file holding ``V`` where the table has ``v`` gives Spark its values and delta-rs (and the digest)
  nulls. Measured: the attested rows' ``v`` were null, Spark read 7 and 8 — VERIFIED before. A file holding both
  ``v`` and ``V`` makes Spark refuse the read. Both are ``unsupported_table`` now;
- it reads a row group in the split whose byte range holds the row group's **midpoint** (parquet-mr: the first
  column chunk's start plus half the group's ``total_compressed_size``, a footer field no other reader uses): a
  midpoint past the end of the file is in no split, and Spark read 15 of the 30 rows (delta-rs all) — VERIFIED
  before; ``content_changed`` now;
- it reads each column chunk as the column its footer entry names (``path_in_schema``), pyarrow and delta-rs as the
  schema's column at its place: two chunks naming each other read as two columns swapped in Spark only — VERIFIED
  before; ``content_changed`` now.

Tried and held (measured: Spark read the attested rows, as delta-rs and the digest): a file that also holds the
partition column with another value (Spark and delta-rs take partition values from the log), a ``timestamp_ntz``
column stored as INT96, a list whose element field is named like its struct's only field (parquet-mr's two-level
list rule could take the repeated group for the element; Spark 4.1 did not). Control: Spark's own OPTIMIZE of a
table of nested columns (lists of lists, maps, structs of lists), a ``timestamp_ntz`` and an upper-case column name
verifies by content (with a boolean column, which Spark bounds none of, and columns holding no value).
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from carriers.content_store import _struct
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, delta_stats, latest, verify
from tests.adversarial.test_content_rewrite_delta import _adds
from tests.adversarial.test_rewrite_parquet_layout import delta_rs_rows, forge_row_group, zigzag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def spark_rows(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
    return [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(path)).collect()]


def rewrite_with(path: Path, rows: pa.Table, stored_rows: int, *, stats_of: pa.Table | None = None,
                 **write: Any) -> Path:
    """A ``dataChange: false`` commit replacing every live file by one written from ``rows`` by pyarrow (``write``:
    its options), under the partition values of the first removed file, with delta-rs's statistics of ``rows`` (or
    of ``stats_of``: the rows as the table names its columns)."""
    adds = _adds(path)
    values = next(iter(adds.values())).get("partitionValues") or {}
    folder = "/".join(f"{k}={v}" for k, v in values.items())
    rel = (f"{folder}/" if folder else "") + f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(rows, path / rel, **write)
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    actions += [{"remove": {"path": r, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                            "partitionValues": a.get("partitionValues") or {}, "size": a["size"]}}
                for r, a in adds.items()]
    actions.append({"add": {"path": rel, "partitionValues": values, "size": (path / rel).stat().st_size,
                            "modificationTime": 2, "dataChange": False,
                            "stats": json.dumps({**json.loads(delta_stats(rows if stats_of is None else stats_of)),
                                                 "numRecords": stored_rows})}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path / rel


def _attested(path: Path, table: pa.Table, **kw: Any) -> None:
    write_deltalake(str(path), table, **kw)
    write_deltalake(str(path), table, mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)


NULLS = pa.array([None, None], pa.int64())


@pytest.mark.parametrize("stored", ["V", "v and V", "p"])
def test_a_column_in_another_case(spark: SparkSession, tmp_path: Path, stored: str) -> None:
    path = tmp_path / "t"
    _attested(path, pa.table({"p": ["a", "a"], "k": pa.array([1, 2], pa.int64()), "v": NULLS}), partition_by=["p"])
    k = pa.array([1, 2, 1, 2], pa.int64())
    columns = {"V": {"k": k, "V": pa.array([7, 8, 7, 8], pa.int64())},
               "v and V": {"k": k, "v": pa.nulls(4, pa.int64()), "V": pa.array([7, 8, 7, 8], pa.int64())},
               "p": {"k": k, "v": pa.nulls(4, pa.int64()), "p": ["z"] * 4}}[stored]
    # Statistics keyed as the table's columns (``v``, holding no value as read): the stored names are the lie here.
    rewrite_with(path, pa.table(columns), 4, stats_of=pa.table({"k": k, "v": pa.nulls(4, pa.int64())}))
    assert {r["v"] for r in delta_rs_rows(path)} == {None} and {r["p"] for r in delta_rs_rows(path)} == {"a"}
    rc, doc = verify(str(path), "--level", "bytes")
    if stored == "V":
        assert sorted(r["v"] for r in spark_rows(spark, path)) == [7, 7, 8, 8]  # Spark: the values; delta-rs: nulls
    if stored == "v and V":
        with pytest.raises(Exception, match=r"(?i)duplicate|ambiguous"):
            spark_rows(spark, path)
    if stored == "p":  # held: the partition value is the log's for Spark too
        assert [(r["p"], r["v"]) for r in spark_rows(spark, path)] == [("a", None)] * 4
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
    else:
        assert rc == 1 and codes(doc) == ["unsupported_table"], doc
        assert "in another case" in doc["errors"][0]["message"], doc


@pytest.mark.parametrize("forged", [False, True])
def test_a_row_group_whose_midpoint_is_past_the_file(spark: SparkSession, tmp_path: Path, forged: bool) -> None:
    path = tmp_path / "t"
    _attested(path, pa.table({"k": pa.array(range(15), pa.int64())}))
    added = rewrite_with(path, pa.table({"k": pa.array(list(range(15)) * 2, pa.int64())}), 30, row_group_size=15)
    if forged:  # total_compressed_size of row group 1: the largest value of the same encoded length
        data = added.read_bytes()
        footer = data[len(data) - 8 - int.from_bytes(data[-8:-4], "little"):-8]
        length = len(zigzag(_struct(footer)[0][4][1][6]))  # RowGroup.total_compressed_size
        forge_row_group(added, 1, total_compressed_size=(1 << (7 * length - 1)) - 1)
        assert (1 << (7 * length - 2)) > added.stat().st_size  # half of it is past the file's end
    assert len(delta_rs_rows(path)) == 30 and pq.read_table(added).num_rows == 30
    assert len(spark_rows(spark, path)) == (15 if forged else 30)
    rc, doc = verify(str(path), "--level", "bytes")
    if forged:
        assert rc == 1 and codes(doc) == ["content_changed"], doc
        assert "midpoint" in doc["errors"][0]["message"], doc
    else:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_column_chunks_naming_each_other(spark: SparkSession, tmp_path: Path) -> None:
    """The footer's ``path_in_schema`` of two column chunks swapped (one byte each, in place): parquet-mr reads a
    chunk as the column it names, pyarrow and delta-rs as the schema's column at its place."""
    path = tmp_path / "t"
    _attested(path, pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([10, 20], pa.int64())}))
    added = rewrite_with(path, pa.table({"a": pa.array([1, 2] * 2, pa.int64()), "b": pa.array([10, 20] * 2,
                                                                                              pa.int64())}), 4,
                         write_statistics=False)  # none: no footer statistic names a column to compare
    data = added.read_bytes()
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    # A list of one string, "a" or "b": the chunk's path_in_schema.
    footer, swaps = re.subn(rb"\x19\x18\x01([ab])", lambda m: m[0][:3] + (b"b" if m[1] == b"a" else b"a"),
                            data[start:-8])
    assert swaps == 2
    added.write_bytes(data[:start] + footer + data[-8:])
    assert sorted((r["a"], r["b"]) for r in delta_rs_rows(path)) == [(1, 10), (1, 10), (2, 20), (2, 20)]
    assert sorted((r["a"], r["b"]) for r in spark_rows(spark, path)) == [(10, 1), (10, 1), (20, 2), (20, 2)]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "the column it names" in doc["errors"][0]["message"], doc


def test_held_representations(spark: SparkSession, tmp_path: Path) -> None:
    """INT96 in a ``timestamp_ntz`` column; a three-level list whose element is a struct named like its only field
    (``list<x: struct<x: int>>``). Spark, delta-rs and the digest read the attested rows: VERIFIED."""
    ntz = tmp_path / "ntz"
    stamps = pa.array([1_700_000_000_000_000, 0], pa.timestamp("us"))
    _attested(ntz, pa.table({"ts": stamps}))
    rewrite_with(ntz, pa.table({"ts": pa.concat_arrays([stamps, stamps])}), 4, use_deprecated_int96_timestamps=True)
    lists = tmp_path / "lists"
    rows = [[{"x": 1}, {"x": 2}], [{"x": 3}], None, []]
    _attested(lists, pa.table({"a": pa.array(rows, pa.list_(pa.struct([("x", pa.int32())])))}))
    named = pa.list_(pa.field("x", pa.struct([("x", pa.int32())])))
    rewrite_with(lists, pa.table({"a": pa.array(rows * 2, named)}), 8, use_compliant_nested_type=False)
    for path in (ntz, lists):
        assert sorted(map(repr, spark_rows(spark, path))) == sorted(map(repr, delta_rs_rows(path)))
        rc, doc = verify(str(path), "--level", "bytes")
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_spark_optimize_of_nested_columns_verifies(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(3):
        spark.sql(f"""SELECT id + {100 * i} AS V, CAST(id AS STRING) AS w,
                      IF(id % 4 = 0, NULL, array(array_repeat(CAST(id AS INT), CAST(id % 3 AS INT)), array())) AS ll,
                      map_from_arrays(array_repeat(CAST(id AS STRING), CAST(id % 2 AS INT)),
                                      array_repeat(id, CAST(id % 2 AS INT))) AS m,
                      named_struct('a', array_repeat(CAST(id AS INT), CAST(id % 3 AS INT)), 'b', id) AS s,
                      CAST(timestamp_micros(id * 1000000) AS TIMESTAMP_NTZ) AS ts,
                      id % 2 = 0 AS b, CAST(NULL AS INT) AS n, IF({i} = 1, NULL, id) AS x
                      FROM range(40)""").write.format("delta").mode("append").save(str(path))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    # Spark bounds no boolean (b), nor a column without a value (n; x in the second file): the OPTIMIZE's file keeps
    # every statistic the removed files carried (test_delta_missing_bounds).
    stats = [json.loads(a["stats"]) for a in _adds(path).values()]
    assert all("b" not in s["minValues"] and "b" in s["nullCount"] for s in stats)
    assert {"x" in s["minValues"] for s in stats} == {False, True}
    spark.sql(f"OPTIMIZE delta.`{path}`")
    assert "b" not in json.loads(next(iter(_adds(path).values()))["stats"])["minValues"]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
