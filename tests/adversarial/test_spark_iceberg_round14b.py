"""Round 14, second part, Java's side: a manifest list rewritten in place (the same manifests, files and bytes) with
summaries of its manifests that say other than the manifests (tests/adversarial/test_iceberg_attacks.py has the
pyiceberg-made forgeries; tests/adversarial/test_iceberg_round14b.py the pins on pyiceberg's side).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.iceberg_lists import edit_manifest_list

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _catalog(warehouse: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'iceberg_catalog.db'}",
                      warehouse=(warehouse / "iceberg").as_uri())


def _rewrite_list(warehouse: Path, ident: str, edit: Any) -> None:
    """The current snapshot's manifest list rewritten in place with ``edit`` applied to each manifest's record (and
    the Hadoop checksum beside it dropped, as an attacker would)."""
    from carriers.storage.base import local_path_of

    snapshot = _catalog(warehouse).load_table(ident).current_snapshot()
    path = local_path_of(snapshot.manifest_list)
    assert path is not None

    def each(manifests: list[Any], names: list[str]) -> None:
        for m in manifests:
            edit(m, names)

    edit_manifest_list(path, 2, each)


def _set(content: int | None, **values: Any) -> Any:
    def edit(m: Any, names: list[str]) -> None:
        if content is None or int(m.content.value) == content:
            for field, value in values.items():
                m._data[names.index(field)] = value
    return edit


def _narrow_upper(m: Any, names: list[str]) -> None:
    if m.partitions:
        m.partitions[0]._data[3] = (1).to_bytes(8, "little", signed=True)  # upper_bound of p (no setter)


def _no_null(m: Any, names: list[str]) -> None:
    if m.partitions:
        m.partitions[0]._data[0] = False  # contains_null of p


def _ids(spark: SparkSession, name: str, where: str = "true") -> list[int]:
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name} WHERE {where}").collect())


def _py_ids(warehouse: Path, ident: str, where: str = "True") -> list[int]:
    return sorted(_catalog(warehouse).load_table(ident).scan(row_filter=where).to_arrow().column("id").to_pylist())


ALL, KEPT = [0, 1, 2, 3, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5, 6, 7, 8]  # id 4 deleted; KEPT: the delete not applied
# forgery: (the list's edit, a Spark filter, pyiceberg's, (Spark's rows, pyiceberg's) after the forgery, whether the
# next Java commit keeps the forged summary: attest record refuses that snapshot, else both readers agree on it)
FORGERIES: dict[str, tuple[Any, str, str, tuple[list[int], list[int]], bool]] = {
    "data_counts_zero": (_set(0, added_files_count=0, existing_files_count=0), "true", "True", ([], ALL), False),
    "delete_counts_zero": (_set(1, added_files_count=0, existing_files_count=0), "true", "True", (KEPT, ALL), False),
    "data_min_sequence_number": (_set(0, min_sequence_number=10), "true", "True", (ALL, KEPT), True),
    "partition_upper_bound": (_narrow_upper, "p = 2", "p == 2", ([], []), True),
    "partition_contains_null": (_no_null, "p IS NULL", "p IS NULL", ([], []), True),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_manifest_list_summary_forged_in_place(spark: SparkSession, spark_warehouse: Path, forgery: str) -> None:
    """A Spark-written table, attested; its current manifest list rewritten in place with a summary narrower than its
    manifest: the readers' rows measured, verify refuses; the next Spark INSERT carries the forged summary into its
    snapshot's list (attest record refuses it) or drops the manifest (both readers then agree, the record holds)."""
    edit, where, row_filter, forged, carried = FORGERIES[forgery]
    ns = f"l14{uuid.uuid4().hex[:8]}"
    name, ident, ref = f"iceberg.{ns}.t", f"{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p BIGINT) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
              "('format-version'='2', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT id, CASE WHEN id = 8 THEN NULL ELSE id % 3 END FROM range(0, 9)")
    spark.sql(f"DELETE FROM {name} WHERE id = 4")
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    honest = _ids(spark, name, where)
    answers = {"true": ALL, "p = 2": [2, 5], "p IS NULL": [8]}
    assert honest == _py_ids(spark_warehouse, ident, row_filter) == answers[where]
    _rewrite_list(spark_warehouse, ident, edit)
    assert (_ids(spark, name, where), _py_ids(spark_warehouse, ident, row_filter)) == forged  # the attack works
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    spark.sql(f"INSERT INTO {name} VALUES (100, 1)")  # a later honest writer, on top of the forged list
    later = (_ids(spark, name, where), _py_ids(spark_warehouse, ident, row_filter))
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    if carried:
        assert rc != 0 and "table_inconsistent" in codes(doc), doc
    else:
        assert later[0] == later[1] and rc == 0, (later, doc)


def test_row_counts_and_rewritten_manifests(spark: SparkSession, spark_warehouse: Path) -> None:
    """Added and existing row counts of 0 in the list change no reader's rows and are not judged; an honest table with
    deletes whose manifests Spark rewrote (``rewrite_manifests``) is attested, and verifies after another one."""
    ns = f"r14{uuid.uuid4().hex[:8]}"
    name, ident, ref = f"iceberg.{ns}.t", f"{ns}.t", f"iceberg://iceberg/{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, p BIGINT) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
              "('format-version'='2', 'write.delete.mode'='merge-on-read')")
    for lo in (0, 9):
        spark.sql(f"INSERT INTO {name} SELECT id, CASE WHEN id = 8 THEN NULL ELSE id % 3 END "
                  f"FROM range({lo}, {lo + 9})")
    spark.sql(f"DELETE FROM {name} WHERE id IN (4, 11)")
    spark.sql(f"CALL iceberg.system.rewrite_manifests(table => '{ns}.t')").collect()
    operation = spark.sql(f"SELECT operation FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()
    assert operation[0][0] == "replace"
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    spark.sql(f"CALL iceberg.system.rewrite_manifests(table => '{ns}.t')").collect()
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
    every = [i for i in range(18) if i not in (4, 11)]
    assert _ids(spark, name) == _py_ids(spark_warehouse, ident) == every
    _rewrite_list(spark_warehouse, ident, _set(None, added_rows_count=0, existing_rows_count=0))
    assert _ids(spark, name) == _py_ids(spark_warehouse, ident) == every
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc
