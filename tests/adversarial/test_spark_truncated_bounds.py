"""Truncated string bounds and page indexes of a Spark OPTIMIZE, measured with Spark (delta-spark 4.4).

Spark keeps a 32-character prefix of a string column's bounds in the Delta log (``dataSkippingStringPrefixLength``)
and appends a tie-breaker to a truncated maximum; parquet-mr writes a page index (ColumnIndex) into every file, its
string bounds truncated to 64 bytes (the maximum incremented). An honest OPTIMIZE of a table of long strings —
ASCII, accented, and characters outside the BMP — must verify by content; a maximum truncated without its
tie-breaker (in the log), or a page minimum written above the page's least value (in the file), makes Spark's
``s = '…'`` return no row and must be ``content_changed``. The first was held before; the second was VERIFIED
(pyarrow, whose footer statistics the check read, does not read page indexes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_rewrite_parquet_indexes import _forge_page_index

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

LONG = ["a" * 40 + "1", "é" * 36 + "x", "\U0001f600" * 34 + "y", "zz" * 30]
MAX = LONG[2]  # in UTF-8 byte order (Spark's): the characters outside the BMP sort last
MIN = "a" * 40  # LONG[0] less its last character: 40 bytes, kept whole in the page index


def _count(spark: SparkSession, path: Path, value: str) -> int:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
    return int(spark.read.format("delta").load(str(path)).where(f"s = '{value}'").count())


@pytest.fixture(scope="module")
def optimized(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("truncated") / "t"
    for i, s in enumerate(LONG):
        spark.createDataFrame([(i, s), (10 + i, s[:-1])], "id BIGINT, s STRING").write.format("delta") \
            .mode("append").save(str(path))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    spark.sql(f"OPTIMIZE delta.`{path}`")
    return path, latest(path)


def _no_crc(path: Path) -> None:
    """Hadoop's checksum of ``path`` removed (its writer would rewrite it; Spark refuses a file that fails it)."""
    (path.parent / f".{path.name}.crc").unlink(missing_ok=True)


def _add(path: Path, n: int) -> dict[str, object]:
    (add,) = [a["add"] for a in map(json.loads, (path / commit_name(n)).read_text().splitlines()) if "add" in a]
    return add


def test_spark_optimize_of_long_strings_verifies(spark: SparkSession, optimized: tuple[Path, int]) -> None:
    path, n = optimized
    stats = json.loads(str(_add(path, n)["stats"]))
    assert stats["maxValues"]["s"] == MAX[:16] + "\U0010ffff"  # 32 UTF-16 units, then the tie-breaker
    assert _count(spark, path, MAX) == 1
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_log_maximum_truncated_without_its_tie_breaker(spark: SparkSession, optimized: tuple[Path, int]) -> None:
    path, n = optimized
    commit = path / commit_name(n)
    honest = commit.read_text()
    try:
        actions = [json.loads(line) for line in honest.splitlines()]
        for a in actions:
            if "add" in a:
                stats = json.loads(a["add"]["stats"])
                stats["maxValues"]["s"] = MAX[:16]
                a["add"]["stats"] = json.dumps(stats)
        commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
        _no_crc(commit)
        assert _count(spark, path, MAX) == 0  # Spark skips the file (measured)
        rc, doc = verify(str(path), "--level", "bytes")
        assert rc == 1 and codes(doc) == ["content_changed"], doc
    finally:
        commit.write_text(honest)


def test_a_page_index_minimum_above_the_page(spark: SparkSession, optimized: tuple[Path, int]) -> None:
    path, n = optimized
    added = path / str(_add(path, n)["path"])
    honest = added.read_bytes()
    try:
        assert _count(spark, path, MIN) == 1
        _forge_page_index(added, MIN.encode(), ("b" * 40).encode())  # the page's minimum above its least value
        _no_crc(added)
        assert spark.read.format("delta").load(str(path)).count() == 8  # every row is read by a full scan ...
        assert _count(spark, path, MIN) == 0  # ... Spark skips the page for s = its least value (measured)
        rc, doc = verify(str(path), "--level", "bytes")
        assert rc == 1 and codes(doc) == ["content_changed"], doc
        assert "page index" in doc["errors"][0]["message"], doc
    finally:
        added.write_bytes(honest)


def test_spark_iceberg_rewrite_of_long_strings_verifies(spark: SparkSession, spark_warehouse: Path) -> None:
    """Iceberg's default metrics keep ``truncate(16)`` of a string's bounds (the upper one incremented), and
    parquet-mr writes page indexes: Spark's rewrite_data_files of such strings verifies by content."""
    from pyiceberg.expressions import EqualTo

    from carriers.iceberg.carrier import attest_after_write as iceberg_attest
    from tests.spark.test_maintenance_iceberg import _compacted, _pyiceberg

    name = "iceberg.truncated.t"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.truncated")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING iceberg")
    for i, s in enumerate(LONG):
        spark.createDataFrame([(i, s), (10 + i, s[:-1])], "id BIGINT, s STRING").writeTo(name).append()
    iceberg_attest(_pyiceberg(spark_warehouse, name), model="orders", program_hash=PROGRAM)
    spark.sql(f"REFRESH TABLE {name}")
    spark.sql("CALL iceberg.system.rewrite_data_files(table => 'truncated.t', options => map('min-input-files', '2'))"
              ).collect()
    table = _pyiceberg(spark_warehouse, name)
    (task,) = list(table.scan().plan_files())
    assert task.file.upper_bounds[2].decode() == MAX[:15] + "\U0001f601"  # 16 characters, the last incremented
    assert table.scan(row_filter=EqualTo("s", MAX)).to_arrow().num_rows == 1
    _compacted("iceberg://iceberg/truncated.t", spark_warehouse, 4)
