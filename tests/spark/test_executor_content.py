"""Content digests computed on Spark executors, in the task that hashes each file's bytes (issue 32 item 1,
docs/distributed.md "Content digests", docs/content-digest.md).

The hook (``executor_hash_bytes=1``: every write goes to the executors) attests Spark SQL writes, and
``attest.spark.verify`` checks a compaction, with no row read on the driver: ``attest.content.digest_table`` is
counted in this (the driver's) process, where the driver path calls it; the executors' Python workers are other
processes. What the executors recorded is then checked against the driver's own path on the same version
(tests/spark/content_check.py): each file's digest, the total and, for a first attestation, the companion file and
the sidecar's ``content`` object byte for byte. Delta with column mapping (physical names), partitions, deletion
vectors and an OPTIMIZE carried forward; Iceberg partitioned with position deletes (merge-on-read DELETE).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.spark.content_check import against_driver

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def hook(spark: SparkSession) -> Iterator[Hook]:
    from attest.spark import install

    h = install(spark, policy="required", executor_hash_bytes=1)
    yield h
    h.uninstall()


@pytest.fixture
def driver_digests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Row counts of every digest_table call in this process (the driver's path), while the test runs."""
    import attest.content

    calls: list[int] = []
    original = attest.content.digest_table

    def counted(rows: Any, *args: Any, **kwargs: Any) -> Any:
        digest = original(rows, *args, **kwargs)
        calls.append(digest.rows)
        return digest

    monkeypatch.setattr(attest.content, "digest_table", counted)
    return calls


def _settled(h: Hook) -> None:
    h.flush()
    assert h.failed == 0 and h.skipped == 0, h.errors


def _delta_path(spark: SparkSession, name: str) -> str:
    return str(spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]).removeprefix("file:")


def _data_files(carrier: Any) -> int:
    return sum(1 for f in carrier.state().live_files if f.kind == "data")


def test_delta_writes_are_digested_on_the_executors(spark: SparkSession, hook: Hook,
                                                    driver_digests: list[int]) -> None:
    from carriers.delta.carrier import DeltaCarrier

    name = f"exd_{uuid.uuid4().hex[:8]}"
    stats = hook.hashing
    before = stats.executor_content_files
    spark.sql(f"CREATE TABLE {name} USING delta PARTITIONED BY (p) TBLPROPERTIES ("
              "'delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name') AS "
              "SELECT id, CAST(id % 3 AS STRING) AS p, repeat('x', CAST(id % 40 AS INT)) AS s, "
              "CAST(id AS DOUBLE) / 7 AS d FROM range(3000)")
    _settled(hook)
    path = _delta_path(spark, name)
    files = _data_files(DeltaCarrier(path))
    assert files >= 3 and stats.executor_content_files - before == files
    assert driver_digests == [], "the driver read rows"
    first = against_driver(DeltaCarrier(path), first=True)
    assert first == {"files": files, "differ": [], "read": files, "total_same": True, "content_same": True}

    driver_digests.clear()
    before = stats.executor_content_files
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")  # deletion vectors on attested files: their rows read again
    _settled(hook)
    assert list(Path(path).rglob("deletion_vector_*.bin")), "Spark should have written deletion vectors"
    assert stats.executor_content_files - before >= 1 and driver_digests == []
    assert against_driver(DeltaCarrier(path)) == {"files": files, "differ": [], "read": files, "total_same": True}

    driver_digests.clear()
    carried, before = hook.carried, stats.executor_content_files
    spark.sql(f"OPTIMIZE {name}").collect()  # carried forward: the judge's digests of the new files, executors'
    _settled(hook)
    assert hook.carried == carried + 1 and stats.executor_content_files > before and driver_digests == []
    after = _data_files(DeltaCarrier(path))
    assert against_driver(DeltaCarrier(path)) == {"files": after, "differ": [], "read": after, "total_same": True}
    assert spark.table(name).count() == 3000 - 429  # 429 multiples of 7 below 3000


def test_iceberg_writes_with_position_deletes_are_digested_on_the_executors(
        spark: SparkSession, spark_warehouse: Path, hook: Hook, driver_digests: list[int]) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.spark.session import pyiceberg_catalog_properties

    ns = f"exd{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING, s STRING) USING iceberg PARTITIONED BY (p) "
              "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    stats = hook.hashing
    before = stats.executor_content_files
    spark.sql(f"INSERT INTO {name} SELECT id, CAST(id % 3 AS STRING), repeat('y', CAST(id % 30 AS INT)) "
              "FROM range(2000)")
    _settled(hook)

    def carrier() -> IcebergCarrier:
        catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
        return IcebergCarrier(catalog.load_table(f"{ns}.t"), catalog_name="iceberg")

    files = _data_files(carrier())
    assert files >= 3 and stats.executor_content_files - before == files and driver_digests == []
    first = against_driver(carrier(), first=True)
    assert first == {"files": files, "differ": [], "read": files, "total_same": True, "content_same": True}

    driver_digests.clear()
    before = stats.executor_content_files
    spark.sql(f"DELETE FROM {name} WHERE id % 5 = 0")  # position delete files: the data files' rows read again
    _settled(hook)
    kinds = {f.kind for f in carrier().state().live_files}
    assert kinds != {"data"}, kinds  # delete files are live
    assert stats.executor_content_files - before >= 1 and driver_digests == []
    assert against_driver(carrier()) == {"files": files, "differ": [], "read": files, "total_same": True}


def test_iceberg_equality_deletes_are_digested_on_the_executors(
        spark: SparkSession, spark_warehouse: Path, hook: Hook, driver_digests: list[int]) -> None:
    """An equality delete file (committed through Iceberg Java's RowDelta, outside the hook) applies to the attested
    data files; the next write's attestation digests their rows again, with the delete applied, on the executors —
    and the digests are the driver's, byte for byte (one read of each file there too)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.spark.session import pyiceberg_catalog_properties
    from carriers.storage.base import local_path_of

    ns = f"exq{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    spark.sql(f"INSERT INTO {name} SELECT id, CAST(id % 4 AS STRING) FROM range(300)")
    _settled(hook)

    def carrier() -> IcebergCarrier:
        catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
        return IcebergCarrier(catalog.load_table(f"{ns}.t"), catalog_name="iceberg")

    path = Path(local_path_of(carrier().table.location()) or "") / "data" / "eq.parquet"
    pq.write_table(pa.table({"s": pa.array(["1", None], pa.string())}, schema=pa.schema(
        [pa.field("s", pa.string(), metadata={b"PARQUET:field_id": b"2"})])), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)  # type: ignore[union-attr]
    ids[0] = 2
    delete = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(java_table.spec()).ofEqualityDeletes(ids) \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size).withRecordCount(2).build()
    java_table.newRowDelta().addDeletes(delete).commit()
    spark.sql(f"REFRESH TABLE {name}")
    assert spark.table(name).count() == 225  # measured: Spark applies it (s = '1': 75 rows)
    driver_digests.clear()
    before = hook.hashing.executor_content_files
    spark.sql(f"INSERT INTO {name} VALUES (1000, '1')")  # newer than the delete: read
    _settled(hook)
    assert hook.hashing.executor_content_files > before and driver_digests == []
    files = _data_files(carrier())
    assert against_driver(carrier()) == {"files": files, "differ": [], "read": files, "total_same": True}
    att = carrier().read(None)
    assert att is not None and att.content is not None and att.content["rows"] == 226


def test_spark_verify_digests_a_compactions_files_on_the_executors(spark: SparkSession, hook: Hook,
                                                                   driver_digests: list[int]) -> None:
    """A compaction nobody attested (delta-rs, outside the hook): ``attest.spark.verify`` checks it by content with
    the added files digested and hashed on the executors in one read, and says so as local verification does."""
    from deltalake import DeltaTable

    import attest.spark
    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier

    name = f"exv_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p STRING) USING delta PARTITIONED BY (p)")
    for start in (0, 100, 200):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id % 2 AS STRING) FROM range(50)")
    _settled(hook)
    path = _delta_path(spark, name)
    DeltaTable(path).optimize.compact()
    driver_digests.clear()
    distributed = attest.spark.verify(spark, DeltaCarrier(path), level="bytes")
    assert driver_digests == [], "the driver read rows"
    local = verify_table(DeltaCarrier(path), level="bytes")
    assert distributed.passed and local.passed, distributed.human()
    assert "compacted" in distributed.verdict() and distributed.verdict() == local.verdict()
    assert (distributed.files_checked, distributed.bytes_checked) == (local.files_checked, local.bytes_checked)
    assert any("bytes hashed on Spark executors" in n for n in distributed.notes), distributed.notes
    assert driver_digests, "local verification reads the added files' rows here"


def test_delta_row_tracking_ids_are_digested_on_the_executors(spark: SparkSession, hook: Hook,
                                                              driver_digests: list[int]) -> None:
    """With row tracking the executors fold each row's row_id and row_commit_version in as the driver does
    (docs/content-digest.md, "Row-tracking ids"): the same digests, the sidecar's ``row_ids`` the same, and Spark's
    OPTIMIZE (ids materialized in the new files) carried forward on the executors' digests."""
    from carriers.delta.carrier import DeltaCarrier
    from carriers.delta.content import ROW_IDS_MARKER

    name = f"exr_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING delta TBLPROPERTIES ("
              "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')")
    for start in (0, 1000):
        spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id AS STRING) FROM range(500)")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    _settled(hook)
    path = _delta_path(spark, name)
    state = DeltaCarrier(path).state()
    assert state.attestation is not None and state.attestation.content is not None
    assert state.attestation.content.get("row_ids") == ROW_IDS_MARKER
    assert driver_digests == [], "the driver read rows"
    files = _data_files(DeltaCarrier(path))
    assert against_driver(DeltaCarrier(path)) == {"files": files, "differ": [], "read": files, "total_same": True}

    ids = spark.sql(f"SELECT id, _metadata.row_id, _metadata.row_commit_version FROM {name}").collect()
    carried, before, fallbacks = hook.carried, hook.hashing.executor_content_files, hook.hashing.fallbacks
    # against_driver above digested every file on the driver (the test's own check, counted in driver_digests): what
    # an earlier version of this test saw after the OPTIMIZE and took for the hook digesting the new file there.
    driver_digests.clear()
    spark.sql(f"OPTIMIZE {name}").collect()
    _settled(hook)
    # Carried forward on the executors' digest of the new file (the judge's): no row read on the driver.
    assert hook.carried == carried + 1 and hook.hashing.fallbacks == fallbacks
    assert hook.hashing.executor_content_files > before and driver_digests == [], "the driver read rows"
    assert sorted(spark.sql(f"SELECT id, _metadata.row_id, _metadata.row_commit_version FROM {name}").collect()) \
        == sorted(ids)
    after = _data_files(DeltaCarrier(path))
    assert against_driver(DeltaCarrier(path)) == {"files": after, "differ": [], "read": after, "total_same": True}
