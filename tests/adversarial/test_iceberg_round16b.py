"""Round 16, second part, Java's side: an Iceberg rewrite whose new manifest carries a uuid partition summary in
pyiceberg's (bytewise) order spanning ``0x80…``.

A table partitioned by ``identity(u)`` of a uuid column, Spark's own insert of ``10000000-…`` and ``90000000-…``
(Iceberg Java writes the manifest list's partition summary in its own order, two signed longs: lower ``90000000-…``,
upper ``10000000-…``), recorded. Then a ``replace`` written by pyiceberg with the same rows: its new manifest's
summary is bytewise, lower ``10000000-…``, upper ``90000000-…`` — an empty range in Java's order, so Java's
manifest-list pruning skips the manifest for ``u = <either value>``. The summary check (``_summary_problems``) passes
a value inside in either order (each engine's honest summary), and the rows are the same: the rewrite was carried
forward as compacted. Likewise a commit touching no file but the manifest list (now ``reader_view_changed``) and a
rewrite whose kept files pyiceberg's rewritten manifest summarises so (now ``content_changed``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.test_iceberg_round16 import HIGH, LOW, LOW2, found_by_uuid, uuid_partitioned
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _copied(table: Any, df: Any) -> Any:
    """A DataFile for a byte copy of data file ``df`` under a new name: its partition tuple and metrics as they were
    (pyiceberg's writer cannot write a table partitioned by a uuid — Arrow groups no uuid keys — but its manifest
    writer writes the manifest and the summary, bytewise)."""
    import shutil
    import uuid

    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    source = local(df.file_path)
    target = source.with_name(f"rewritten-{uuid.uuid4().hex}.parquet")
    shutil.copyfile(source, target)
    return DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{target}",
                              file_format=FileFormat.PARQUET,
                              partition=df.partition, record_count=df.record_count,
                              file_size_in_bytes=df.file_size_in_bytes, spec_id=df.spec_id,
                              column_sizes=df.column_sizes, value_counts=df.value_counts,
                              null_value_counts=df.null_value_counts, nan_value_counts=df.nan_value_counts,
                              lower_bounds=df.lower_bounds, upper_bounds=df.upper_bounds)


def copy_replace(catalog: Any, ident: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A ``replace`` committed by pyiceberg re-adding a byte copy of every live data file (:func:`_copied`); the
    table reloaded."""
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    from tests.iceberg.rewrites import live_data_files, replace

    table = catalog.load_table(ident)
    # pyiceberg finds the files it removes through the manifest list, pruning Java's summary bytewise (it finds none:
    # "Missing required files to delete"); the rewrite is committed without that pruning.
    monkeypatch.setattr(_OverwriteFiles, "_build_manifest_evaluator", lambda self, spec_id: lambda manifest: True)
    return replace(catalog, table, data_files=[_copied(table, df) for df in live_data_files(table)])


@pytest.mark.spark
def test_a_rewrite_whose_uuid_partition_summary_java_reads_as_empty(spark: SparkSession, spark_warehouse: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the rewrite Spark finds both rows by ``u = …``; after pyiceberg's ``replace`` of the same rows, none (a
    full read both). ``verify`` said VERIFIED (carried forward as compacted); now ``content_changed``."""
    import uuid

    catalog, ident, name, ref = uuid_partitioned(spark, spark_warehouse, [LOW, HIGH])
    before = found_by_uuid(spark, name, [LOW, HIGH])
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    table = copy_replace(catalog, ident, monkeypatch)
    summary = table.current_snapshot().manifests(table.io)[0].partitions[0]
    after = found_by_uuid(spark, name, [LOW, HIGH])
    full = sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert (summary.lower_bound, summary.upper_bound) == (uuid.UUID(LOW).bytes, uuid.UUID(HIGH).bytes)  # bytewise
    assert (before, after, full) == ([0, 1], [], [0, 1])  # the attack works on Java
    assert rc == 1 and codes(doc) == ["content_changed"], doc


@pytest.mark.spark
def test_a_manifest_only_commit_whose_uuid_summary_java_reads_as_empty(spark: SparkSession,
                                                                        spark_warehouse: Path) -> None:
    """The same table, recorded; then a commit touching no file (a ``replace`` as ``rewrite_manifests`` commits, its
    manifest list listing the same manifest) whose summary of ``u`` is pyiceberg's bytewise ``[10000000-…,
    90000000-…]``. Java skips the manifest for both values (measured: no row, a full read both). No file was added,
    so nothing was re-read: ``VERIFIED (bytes, …)``. Now the files a snapshot's summaries hide from Java are in its
    table view (when any is): ``reader_view_changed``."""
    import uuid

    from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_list
    from tests.iceberg.rewrites import replace_manifests

    catalog, ident, name, ref = uuid_partitioned(spark, spark_warehouse, [LOW, HIGH])
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    table = replace_manifests(catalog, catalog.load_table(ident), lambda m: True)

    def bytewise(m: Any) -> None:
        if m.partitions:
            m.partitions[0]._data[2], m.partitions[0]._data[3] = uuid.UUID(LOW).bytes, uuid.UUID(HIGH).bytes

    _rewrite_manifest_list(table, bytewise)
    after = found_by_uuid(spark, name, [LOW, HIGH])
    full = sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert (after, full) == ([], [0, 1])  # the attack works on Java
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc


@pytest.mark.spark
def test_a_rewrite_whose_kept_files_pyiceberg_summarises_bytewise(spark: SparkSession, spark_warehouse: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Three partitions (``10000000-…``, ``90000000-…``, ``20000000-…``) in Spark's one manifest, recorded; pyiceberg's
    ``replace`` of the third file alone rewrites that manifest, keeping the other two files with its own bytewise
    summary ``[10000000-…, 90000000-…]``: Java then finds only the rewritten file's row by ``u = …`` (measured). The
    kept files were not re-read: ``VERIFIED (content; compacted …)``. Now a kept file its new summary hides from Java
    is re-read as the rewrite's: ``content_changed``."""
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    from tests.iceberg.rewrites import live_data_files, replace

    values = [LOW, HIGH, LOW2]
    catalog, ident, name, ref = uuid_partitioned(spark, spark_warehouse, values)
    assert found_by_uuid(spark, name, values) == [0, 1, 2]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    table = catalog.load_table(ident)
    (third,) = [df for df in live_data_files(table) if "u=2" in df.file_path]
    monkeypatch.setattr(_OverwriteFiles, "_build_manifest_evaluator", lambda self, spec_id: lambda manifest: True)
    replace(catalog, table, remove=[third], data_files=[_copied(table, third)])
    after = found_by_uuid(spark, name, values)
    full = sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert (after, full) == ([2], [0, 1, 2])  # the attack works on Java
    assert rc == 1 and codes(doc) == ["content_changed"], doc
