"""Round 18b attacks measured with Spark 4.1 / Iceberg 1.12: position delete files stored as ORC (or Avro).

pyiceberg 0.12 reads an ORC position delete file whole, its columns by name (``_read_deletes``), and the content
digest applied it as read. Iceberg Java reads it by its ``iceberg.id`` attributes and, with the executor cache off,
through the filter ``file_path = <data file>``, skipping stripes and row groups by the file's ORC statistics. An ORC
delete file of position 6 of a data file, its statistics forged (the minimum and maximum of ``file_path`` one
character above the data file's path, the rows unchanged): Spark with the cache off returned the deleted row (id 7),
the digest deleted it, and ``record`` attested it — VERIFIED (measured on the code before). None of the checks held
to Parquet delete files (field ids, footer statistics, types) read ORC. Now a delete file in another format than
Parquet (or Puffin) applied to a data file is ``table_inconsistent`` (``_check_delete_representation``); an Avro
position delete file (Spark writes one with ``write.delete.format.default=avro``), which pyiceberg cannot read, was an
``internal_error`` and is refused so too.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import commit_java_deletes, java_table, spark_ids
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

CACHE = "spark.sql.iceberg.executor-cache.enabled"


def _table(spark: SparkSession, delete_format: str = "parquet") -> tuple[str, str]:
    """A v2 table ``(id BIGINT)`` of ids 1..9 in one Parquet data file: its Spark name and ``iceberg://`` reference."""
    ns = f"orc18b{uuid.uuid4().hex[:8]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', "
        f"'write.delete.mode'='merge-on-read', 'write.delete.format.default'='{delete_format}')"
    )
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id FROM range(1, 10)")
    return name, f"iceberg://iceberg/{ns}.t"


def _forged_orc(path: Path, data: str) -> None:
    """An ORC position delete file (pyarrow's writer, uncompressed) of position 6 of ``data``, every statistic of
    ``file_path`` (row index, stripe, file) saying its one value is ``data`` with the last character raised by one:
    the stored value itself unchanged (read back below)."""
    import pyarrow.orc as orc

    orc.write_table(pa.table({"file_path": pa.array([data]), "pos": pa.array([6], pa.int64())}), str(path))
    raw = path.read_bytes()
    found = [m.start() for m in re.finditer(re.escape(data.encode()), raw)]
    forged = (data[:-1] + chr(ord(data[-1]) + 1)).encode()
    for keep in found:  # the occurrence that is the column's value: the others are its statistics
        edited = bytearray(raw)
        for at in found:
            if at != keep:
                edited[at : at + len(forged)] = forged
        path.write_bytes(bytes(edited))
        if orc.read_table(str(path)).column("file_path").to_pylist() == [data]:
            return
    raise AssertionError("no layout of the ORC file keeps the value and forges its statistics")


def _commit_orc_delete(spark: SparkSession, name: str, path: Path) -> None:
    jvm = spark._jvm  # type: ignore[attr-defined]
    metrics = jvm.org.apache.iceberg.Metrics(1, None, None, None, None)
    commit_java_deletes(spark, java_table(spark, name), path, metrics, file_format="ORC")


def _record_refused(warehouse: Path, ref: str) -> None:
    rc, doc = _cli(warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert "is not Parquet" in str(doc), doc


def test_an_orc_delete_file_whose_statistics_java_skips_is_not_attested(
    spark: SparkSession, spark_warehouse: Path
) -> None:
    name, ref = _table(spark)
    data = str(spark.sql(f"SELECT file_path FROM {name}.files").collect()[0][0])
    path = Path(data.removeprefix("file:")).parent / "forged-deletes.orc"
    _forged_orc(path, data)
    _commit_orc_delete(spark, name, path)
    assert spark_ids(spark, name) == [1, 2, 3, 4, 5, 6, 8, 9]  # cache on: the file read whole, position 6 deleted
    with session_conf(spark, CACHE, "false"):
        assert spark_ids(spark, name) == [1, 2, 3, 4, 5, 6, 7, 8, 9]  # measured: the delete skipped by statistics
    _record_refused(spark_warehouse, ref)


@pytest.mark.parametrize("delete_format", ["orc", "avro"])
def test_a_delete_file_spark_writes_in_another_format_is_not_attested(
    spark: SparkSession, spark_warehouse: Path, delete_format: str
) -> None:
    """Spark's own ORC or Avro position delete file: read alike by the readers that read it (the ORC one by
    pyiceberg too), but nothing here holds what Java reads it by; the Avro one was an internal error."""
    name, ref = _table(spark, delete_format)
    spark.sql(f"DELETE FROM {name} WHERE id = 7")
    formats = {str(r[0]) for r in spark.sql(f"SELECT file_format FROM {name}.delete_files").collect()}
    assert formats == {delete_format.upper()}
    assert spark_ids(spark, name) == [1, 2, 3, 4, 5, 6, 8, 9]
    _record_refused(spark_warehouse, ref)
