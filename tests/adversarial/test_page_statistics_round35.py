"""Round 35: a data page header whose statistics hold a bound shorter than one value of its column's type.

A data page header may carry statistics of its page (``DataPageHeader.statistics``, ``DataPageHeaderV2.statistics``).
pyarrow and delta-rs ignore them; parquet-mr decodes them as it reads the page. Measured (delta-spark 4.4 on Spark
4.1): a rewrite's file whose first INT64 page states a maximum of 7 bytes (or a minimum of none) — ``VERIFIED
(content; compacted …, same rows)``, exit 0, while Spark failed every read of the table (ArrayIndexOutOfBoundsException,
with either of its Parquet readers); delta-rs read the rows. A bound longer than the value was read alike by all.
Found by a differential fuzzer of a rewrite's page headers with Spark as the oracle. Now each data page header of a
file the digest reads must hold bounds of at least one value's width (``content_store._page_bounds``, beside round
33's encodings rule): ``content_changed`` in a rewrite, ``table_inconsistent`` at record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.parquet_thrift import field, with_page_header
from tests.adversarial.test_file_size_round33 import rewritten_as, written_as
from tests.adversarial.test_footer_statistics_round35 import verified_by_content
from tests.conftest import run_cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROWS = pa.table({"l": pa.array(range(20), pa.int64()), "s": [str(i) for i in range(20)]})
MAX_VALUE, MIN_VALUE = 5, 6  # parquet.thrift Statistics


def page_bound(version: str, which: int, length: int) -> bytes:
    """ROWS (row groups of ten, no dictionary), the first page of ``l`` stating bound ``which`` of ``length`` bytes."""
    sink = pa.BufferOutputStream()
    pq.write_table(ROWS, sink, row_group_size=10, data_page_version=version, write_page_index=False,
                   use_dictionary=False)

    def edit(header: Any) -> None:
        page = field(header, 5 if version == "1.0" else 8)[2]  # type: ignore[index]  # the data page header
        field(field(page, 5 if version == "1.0" else 8)[2], which)[2] = b"\x01" * length  # type: ignore[index]

    return with_page_header(bytes(sink.getvalue().to_pybytes()), 0, 0, edit)


CASES = [("1.0", MAX_VALUE, 7), ("1.0", MIN_VALUE, 0), ("2.0", MAX_VALUE, 7), ("2.0", MIN_VALUE, 0)]


@pytest.mark.parametrize(("version", "which", "length"), CASES)
def test_a_rewrite_whose_page_bound_is_shorter_than_its_type(tmp_path: Path, version: str, which: int,
                                                            length: int) -> None:
    path = tmp_path / "t"
    data = page_bound(version, which, length)
    assert pq.ParquetFile(pa.BufferReader(data)).read().equals(ROWS)
    rewritten_as(path, ROWS, lambda _: data)
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # 0 (VERIFIED) before
    doc = json.loads(done.stdout)
    assert [e["code"] for e in doc["errors"]] == ["content_changed"], doc
    assert "a data page whose statistics hold a minimum or maximum of fewer bytes" in doc["errors"][0]["message"], doc


def test_a_longer_page_bound_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: page_bound("1.0", MAX_VALUE, 9))
    verified_by_content(path)


def test_record_of_such_a_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    written_as(path, ROWS, page_bound("2.0", MAX_VALUE, 7))
    done = run_cli("record", str(path), "--model", "m", "--sql", "select 1", "--json")
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # recorded before
    assert "table_inconsistent" in done.stdout and "fewer bytes than one INT64 value" in done.stdout, done.stdout


@pytest.mark.spark
def test_spark_fails_the_read_of_a_short_page_bound(spark: SparkSession, tmp_path: Path) -> None:
    """The measurement: Spark fails every read of the table with the short bound, reads the longer one's rows."""
    short, longer = tmp_path / "short", tmp_path / "longer"
    rewritten_as(short, ROWS, lambda _: page_bound("1.0", MAX_VALUE, 7))
    rewritten_as(longer, ROWS, lambda _: page_bound("1.0", MAX_VALUE, 9))
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
    for vectorized in ("true", "false"):
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        try:
            with pytest.raises(Exception, match="FAILED_READ_FILE"):
                spark.sql(f"SELECT sum(l) FROM delta.`{short}`").collect()
            assert spark.sql(f"SELECT sum(l) FROM delta.`{longer}`").collect()[0][0] == 190
        finally:
            spark.conf.set("spark.sql.parquet.enableVectorizedReader", "true")
