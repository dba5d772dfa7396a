"""Iceberg reader disagreements on a table attested WITHOUT a content digest.

The digest's checks that Spark (Iceberg Java 1.12) and pyiceberg 0.12 read a snapshot alike — a position delete file
pyiceberg prunes by its own ``file_path`` bounds (test_spark_delete_metrics.py), one whose ``referenced_data_file``
names another data file than its rows (test_spark_referenced_data_file.py), an equality delete file whose metrics of
the equality field make Java skip it (test_spark_delete_metrics.py), a data file whose entry says ``record_count`` 0
(test_spark_data_file_record_count.py) — ran only when the digest was computed. A table whose digest is refused
(``unsupported_table``) for another reason — here an equality delete by a ``double`` column, which the digest does not
apply (-0.0 and NaN compare otherwise in Java than in Arrow) — was recorded at files level. Measured before this fix
(Spark 4.1 / Iceberg 1.12, pyiceberg 0.12): each condition below, then that equality delete; ``attest record``
succeeded and ``verify`` said VERIFIED while Spark and pyiceberg returned other rows. Now ``record`` runs the digest's
reader checks without the digest (carriers/iceberg/content.py ``readers_agree``): ``table_inconsistent``, nothing
recorded. The honest control — Spark's own position deletes and an honest equality delete by ``id`` besides the
``double`` one — is recorded without a digest and verifies, and its verdict is held: the same data file's entry
rewritten in place to ``record_count`` 0 is ``reader_view_changed``.

The files committed here are named to sort after Spark's (``data/zz-…``; the digest reads data files in path order
and stopped at the first refusal): the ``double`` delete makes the digest of Spark's first file ``unsupported_table``
before the old code reached the file the attack is in.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import equality_delete, java_table, merge_on_read_table, pyiceberg_ids, spark_ids
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PATH_ID, POS_ID = 2147483546, 2147483545


def _fid(name: str, t: pa.DataType, i: int, *, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable=nullable, metadata={b"PARQUET:field_id": str(i).encode()})


def _folder(spark: SparkSession, name: str) -> Path:
    return local(str(spark.sql(f"SELECT _file FROM {name} LIMIT 1").collect()[0][0])).parent


def _append(spark: SparkSession, name: str, ids: list[int], count: int | None = None) -> str:
    """Append (Iceberg Java's AppendFiles) a data file ``data/zz-held.parquet`` of ``ids``, its entry's record count
    ``count`` (default: its true one); its location as written."""
    path = _folder(spark, name) / "zz-held.parquet"
    schema = pa.schema([_fid("id", pa.int64(), 1), _fid("x", pa.float64(), 2)])
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array([float(i) for i in ids])},
                            schema=schema), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    data = jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"file://{path}") \
        .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET).withFileSizeInBytes(path.stat().st_size) \
        .withRecordCount(len(ids) if count is None else count).build()
    table.newAppend().appendFile(data).commit()
    return f"file://{path}"


def _position_delete(spark: SparkSession, name: str, target: str, *, bounds: tuple[str, str] | None = None,
                     referenced: str | None = None) -> None:
    """Commit (RowDelta) a position delete file ``data/zz-pos.parquet`` hiding position 0 of data file ``target``,
    with these ``file_path`` bounds, or this ``referenced_data_file``."""
    path = _folder(spark, name) / "zz-pos.parquet"
    schema = pa.schema([_fid("file_path", pa.string(), PATH_ID, nullable=False),
                        _fid("pos", pa.int64(), POS_ID, nullable=False)])
    pq.write_table(pa.table({"file_path": [target], "pos": pa.array([0], pa.int64())}, schema=schema), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    table = java_table(spark, name)
    builder: Any = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(table.spec()).ofPositionDeletes() \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size)
    if bounds is not None:
        lowers, uppers = jvm.java.util.HashMap(), jvm.java.util.HashMap()
        lowers.put(PATH_ID, jvm.java.nio.ByteBuffer.wrap(bytearray(bounds[0].encode())))
        uppers.put(PATH_ID, jvm.java.nio.ByteBuffer.wrap(bytearray(bounds[1].encode())))
        builder = builder.withMetrics(jvm.org.apache.iceberg.Metrics(1, None, None, None, None, lowers, uppers))
    else:
        builder = builder.withRecordCount(1).withReferencedDataFile(referenced)
    table.newRowDelta().addDeletes(builder.build()).commit()


def _undigestable(spark: SparkSession, name: str) -> None:
    """An honest equality delete by ``x`` (a double: the digest refuses it, ``unsupported_table``) of a value no row
    holds, committed last (it applies to every data file), named to sort before the attacks' ``zz-`` files."""
    rows = pa.table({"x": pa.array([-1.0])}, schema=pa.schema([_fid("x", pa.float64(), 2, nullable=False)]))
    equality_delete(spark, name, _folder(spark, name) / "eq-x.parquet", 2, rows)


def _refused(spark_warehouse: Path, ref: str) -> None:
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"], doc  # nothing recorded: unattested


@pytest.mark.parametrize("how", ["bounds_above", "referenced_elsewhere", "record_count_0"])
def test_position_and_count_disagreements_without_a_digest(spark: SparkSession, spark_warehouse: Path,
                                                           how: str) -> None:
    name, ident, ref = merge_on_read_table(spark, "ud", double=True)
    if how == "record_count_0":  # pyiceberg skips a file of no records, Java reads it
        _append(spark, name, [100, 101], count=0)
        java, mine = [*range(10), 100, 101], list(range(10))
    else:
        held = _append(spark, name, [100, 101])
        spark_file = next(str(r[0]) for r in spark.sql(f"SELECT DISTINCT _file FROM {name}").collect()
                          if "zz-held" not in str(r[0]))
        if how == "bounds_above":  # both bounds above every location: pyiceberg prunes it, Java applies it
            _position_delete(spark, name, held, bounds=("s3://zz/a", "s3://zz/b"))
            java, mine = [*range(10), 101], [*range(10), 100, 101]
        else:  # Java scopes it to the Spark file (no row of it: 100 kept), pyiceberg applies its rows to zz-held
            _position_delete(spark, name, held, referenced=spark_file)
            java, mine = [*range(10), 100, 101], [*range(10), 101]
    assert spark_ids(spark, name) == java
    assert pyiceberg_ids(spark_warehouse, ident) == mine  # the readers disagree (measured before the double delete)
    _undigestable(spark, name)
    assert spark_ids(spark, name) == java  # the double delete deletes nothing
    _refused(spark_warehouse, ref)


def test_an_equality_delete_java_skips_by_its_bounds_without_a_digest(spark: SparkSession,
                                                                      spark_warehouse: Path) -> None:
    name, _ident, ref = merge_on_read_table(spark, "ue", double=True)
    rows = pa.table({"id": pa.array([5], pa.int64())}, schema=pa.schema([_fid("id", pa.int64(), 1, nullable=False)]))
    _undigestable(spark, name)
    equality_delete(spark, name, _folder(spark, name) / "zz-eq-id.parquet", 1, rows,
                    bounds=((1000).to_bytes(8, "little"), (2000).to_bytes(8, "little")))
    assert spark_ids(spark, name) == list(range(10))  # Java skips the delete by its bounds: id 5 read
    _refused(spark_warehouse, ref)


def test_honest_deletes_without_a_digest_are_attested_and_held(spark: SparkSession, spark_warehouse: Path) -> None:
    """Spark's position deletes, an honest equality delete by ``id`` and the ``double`` one: recorded without a
    digest, VERIFIED; a data file's entry then rewritten in place to ``record_count`` 0 is ``reader_view_changed``
    (the view binds every entry's metrics and the delete plan: no verify-time gap)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.manifest import DATA_FILE_TYPE, write_manifest

    name, ident, ref = merge_on_read_table(spark, "uh", double=True)
    spark.sql(f"DELETE FROM {name} WHERE id IN (2, 7)")
    rows = pa.table({"id": pa.array([5], pa.int64())}, schema=pa.schema([_fid("id", pa.int64(), 1, nullable=False)]))
    equality_delete(spark, name, _folder(spark, name) / "zz-eq-id.parquet", 1, rows)
    _undigestable(spark, name)
    honest = [0, 1, 3, 4, 6, 8, 9]
    assert spark_ids(spark, name) == honest
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0 and doc.get("content") is None, doc  # files level: the double delete refuses the digest
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc

    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{spark_warehouse / 'iceberg_catalog.db'}",
                         warehouse=(spark_warehouse / "iceberg").as_uri())
    table = catalog.load_table(ident)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifest = next(m for m in snapshot.manifests(table.io) if int(getattr(m.content, "value", m.content)) == 0)
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    count = [f.name for f in DATA_FILE_TYPE[2].fields].index("record_count")
    entries[0].data_file._data[count] = 0
    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with write_manifest(format_version=2, spec=table.spec(), schema=table.schema(),
                        output_file=table.io.new_output(f"file://{tmp}"), snapshot_id=entries[0].snapshot_id,
                        avro_compression="null") as writer:
        for entry in entries:
            writer.add_entry(entry)
    shutil.move(tmp, path)
    path.with_name(f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop's local checksum: an attacker drops it too
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and not doc["passed"] and "reader_view_changed" in codes(doc), doc
