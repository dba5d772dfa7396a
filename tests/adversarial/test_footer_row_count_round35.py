"""Round 35: a Parquet footer whose row count is not its row groups' together.

A footer states the file's rows twice: ``FileMetaData.num_rows`` and each row group's ``num_rows``. pyarrow (the
digest, pyiceberg) and parquet-mr (Spark) read the row groups; arrow-rs (delta-rs) reads a file stating no rows as
empty. Measured (delta-rs 1.6, delta-spark 4.4): a rewrite's file of the 30 attested rows whose footer states 0 —
``VERIFIED (content; compacted …, same rows)``, exit 0, while delta-rs's ``SELECT *`` and filtered reads returned no
row (its ``COUNT(*)``, answered from the log, 30) and Spark read all 30. Found by tests/test_fuzz_tables.py's
structure-aware footer edits. Every writer states the sum, so any other count is refused
(``content_store._footer_row_count``): ``content_changed`` in a rewrite, ``table_inconsistent`` at record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.adversarial.parquet_thrift import field, with_footer
from tests.adversarial.test_file_size_round33 import rewritten_as, written_as
from tests.adversarial.test_footer_statistics_round35 import verified_by_content
from tests.conftest import run_cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROWS = pa.table({"id": pa.array(range(30), pa.int64()), "p": ["a", "b"] * 15})


def stating(rows: int) -> bytes:
    """ROWS in row groups of ten, the footer stating ``rows`` rows."""
    sink = pa.BufferOutputStream()
    pq.write_table(ROWS, sink, row_group_size=10)

    def edit(meta: Any) -> None:
        field(meta, 3)[2] = rows  # type: ignore[index]  # FileMetaData.num_rows

    return with_footer(bytes(sink.getvalue().to_pybytes()), edit)


def delta_rs(path: Path, query: str) -> int:
    return int(QueryBuilder().register("t", DeltaTable(str(path))).execute(query).read_all().num_rows)


@pytest.mark.parametrize("stated", [0, 5, 31])
def test_a_rewrite_whose_footer_misstates_its_row_count(tmp_path: Path, stated: int) -> None:
    path = tmp_path / "t"
    data = stating(stated)
    assert pq.ParquetFile(pa.BufferReader(data)).read().equals(ROWS)  # pyarrow: the row groups, the attested rows
    rewritten_as(path, ROWS, lambda _: data)
    if stated == 0:  # delta-rs: the file is empty
        assert delta_rs(path, "select * from t") == 0 and delta_rs(path, "select id from t where id >= 17") == 0
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # 0 (VERIFIED) before
    doc = json.loads(done.stdout)
    assert [e["code"] for e in doc["errors"]] == ["content_changed"], doc
    assert f"its footer states {stated} rows where its row groups hold 30" in doc["errors"][0]["message"], doc


def test_the_honest_count_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: stating(30))
    assert delta_rs(path, "select * from t") == 30
    verified_by_content(path)


def test_record_of_a_file_stating_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    written_as(path, ROWS, stating(0))
    done = run_cli("record", str(path), "--model", "m", "--sql", "select 1", "--json")
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # recorded before
    assert "table_inconsistent" in done.stdout and "states 0 rows" in done.stdout, done.stdout


def test_an_iceberg_rewrite_of_such_a_file(catalog: Any) -> None:
    from tests.adversarial.test_footer_statistics_round35 import _iceberg_with
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import with_ids

    sink = pa.BufferOutputStream()
    pq.write_table(with_ids(ROWS, [1, 2]), sink, row_group_size=10)

    def edit(meta: Any) -> None:
        field(meta, 3)[2] = 0  # type: ignore[index]

    _iceberg_with(catalog, with_footer(bytes(sink.getvalue().to_pybytes()), edit), rewrite=True, rows=ROWS)
    done = run_cli("verify", f"iceberg://{CATALOG}/ns.t", "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "states 0 rows" in done.stdout, done.stdout


@pytest.mark.spark
def test_spark_reads_the_row_groups(spark: SparkSession, tmp_path: Path) -> None:
    """The measurement: Spark reads all 30 rows of the file stating 0, with either Parquet reader."""
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: stating(0))
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
    for vectorized in ("true", "false"):
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        try:
            got = spark.sql(f"SELECT sum(id), count(CASE WHEN id >= 17 THEN 1 END) FROM delta.`{path}`").collect()
        finally:
            spark.conf.set("spark.sql.parquet.enableVectorizedReader", "true")
        assert tuple(got[0]) == (435, 13), got
