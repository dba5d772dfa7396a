"""A rewrite's added Parquet file whose columns readers identify differently: field ids, physical names, a name
mapping — measured with Spark (Iceberg 1.12, delta-spark 4.4), pyiceberg 0.12 and delta-rs 1.6.

Iceberg readers resolve a data file's columns by Parquet field id, or — for a file without ids — by the table's
name mapping (``schema.name-mapping.default``). They differ on a file where **some** fields carry an id: pyiceberg
takes ids only when every field has one and otherwise reads every column by the name mapping (the attested rows),
Iceberg Java takes the ids whenever any field has one and reads a field without one as missing (nulls, measured with
Spark). The digest is computed as pyiceberg reads: ``VERIFIED (content; …, same rows)`` before. Such a file is now
``table_inconsistent``; a file with no ids at all (both read it by the name mapping) still verifies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.field_ids import delta_struct_table, iceberg_table
from tests.adversarial.test_spark_attacks import _verify

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["a", "b", "c"]),
                 "w": pa.array([7, 8, 9], pa.int64())})


def _ids(table: pa.Table, ids: dict[str, int]) -> pa.Table:
    return table.cast(pa.schema([f.with_metadata({"PARQUET:field_id": str(ids[f.name])}) if f.name in ids
                                 else f.with_metadata(None) for f in table.schema]))


def _mapped(spark_warehouse: Path, namespace: str) -> tuple[Any, Any]:
    """An Iceberg table with a name mapping, two appends attested; its catalog and table (pyiceberg)."""
    return iceberg_table(spark_warehouse, namespace, ROWS)


def _spark_rows(spark: SparkSession, name: str) -> list[tuple[Any, ...]]:
    spark.sql(f"REFRESH TABLE iceberg.{name}")
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, v, w FROM iceberg.{name}").collect())


@pytest.mark.parametrize(("ids", "spark_reads_v"), [({"id": 1, "w": 3}, [None, None, None]),
                                                    ({}, ["a", "b", "c"])])
def test_a_rewrite_whose_file_has_field_ids_on_some_columns(spark: SparkSession, spark_warehouse: Path,
                                                            ids: dict[str, int], spark_reads_v: list[Any]) -> None:
    from tests.iceberg.rewrites import replace

    namespace = f"fid{len(ids)}"
    catalog, table = _mapped(spark_warehouse, namespace)
    name = f"{namespace}.t"
    assert _spark_rows(spark, name) == [(1, "a", 7), (2, "b", 8), (3, "c", 9)]
    table = replace(catalog, table, [_ids(ROWS, ids)])
    assert sorted(table.scan().to_arrow().column("v").to_pylist()) == ["a", "b", "c"]  # pyiceberg: by name
    assert [r[1] for r in _spark_rows(spark, name)] == spark_reads_v  # Spark: by the ids present
    rc, doc = _verify(f"iceberg://iceberg/{name}", spark_warehouse, "--level", "bytes")
    if ids:
        assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
        assert "name mapping" in json.dumps(doc), doc
    else:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc


# ---- Delta column mapping by id: nested fields ---------------------------------------------------------------------
def _field(name: str, t: pa.DataType, field_id: int | None) -> pa.Field:
    return pa.field(name, t, metadata={"PARQUET:field_id": str(field_id)} if field_id else None)


def _nested_rows(a: list[int], x: list[int], y: list[int], ids: tuple[int, int, int, int] = (1, 2, 3, 4)) -> pa.Table:
    """Rows of an id-mapped table ``a long, st struct<x long, y long>`` as Spark writes them: physical names, and
    field ids at every depth (``ids``: a, st, st.x, st.y)."""
    st = pa.struct([_field("col-xxxx", pa.int64(), ids[2]), _field("col-yyyy", pa.int64(), ids[3])])
    schema = pa.schema([_field("col-aaaa", pa.int64(), ids[0]), _field("col-ssss", st, ids[1])])
    return pa.table({"col-aaaa": pa.array(a, pa.int64()),
                     "col-ssss": pa.StructArray.from_arrays([pa.array(x, pa.int64()), pa.array(y, pa.int64())],
                                                            fields=list(st))}, schema=schema)


def _nested_table(path: Path) -> None:
    delta_struct_table(path, "id", _nested_rows)


@pytest.mark.parametrize("swapped", [True, False])
def test_a_delta_rewrite_whose_struct_fields_carry_each_others_ids(spark: SparkSession, tmp_path: Path,
                                                                   swapped: bool) -> None:
    """Column mapping by id: the rewrite's file holds st.x and st.y under their physical names with the right values,
    but with each other's field ids. delta-rs reads by physical name (the attested rows), Spark by field id at every
    depth: x and y swapped (measured). ``swapped`` False: the same rewrite with the right ids verifies."""
    from deltalake import DeltaTable, QueryBuilder

    from carriers.delta.carrier import attest_after_write
    from tests.adversarial.conftest import verify
    from tests.adversarial.test_content_rewrite_delta import _adds, rewrite

    path = tmp_path / "t"
    _nested_table(path)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)

    def spark_rows() -> list[tuple[int, int, int]]:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        return sorted((r[0], r[1], r[2]) for r in spark.sql(f"SELECT a, st.x, st.y FROM delta.`{path}`").collect())

    before = spark_rows()
    assert before == [(0, 100, 300), (1, 101, 301), (10, 200, 400), (11, 201, 401)]
    new = _nested_rows([0, 10, 1, 11], [100, 200, 101, 201], [300, 400, 301, 401],
                       ids=(1, 2, 4, 3) if swapped else (1, 2, 3, 4))
    rewrite(path, sorted(_adds(path)), [(new, {})])
    read = QueryBuilder().register("t", DeltaTable(str(path))).execute("select a, st['x'] as x, st['y'] as y from t")
    delta_rs = sorted((r["a"], r["x"], r["y"]) for r in pa.table(read.read_all()).to_pylist())
    assert delta_rs == before  # delta-rs: by physical name
    rc, doc = verify(str(path), "--level", "bytes")
    if swapped:
        assert spark_rows() == [(a, y, x) for a, x, y in before]  # Spark: by field id, x and y swapped
        assert rc == 1 and codes(doc) == ["unsupported_table"], doc
        assert "col-ssss." in doc["errors"][0]["message"], doc
    else:
        assert spark_rows() == before
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
