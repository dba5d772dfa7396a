"""Round 20b, Iceberg Java's side (Spark 4.1 / Iceberg 1.12): which metadata file a path reader reads
(tests/adversarial/test_iceberg_round20b.py).

``spark.read.format("iceberg").load(folder)`` (``HadoopTables``) with no ``version-hint.text`` lists the folder and
takes the highest ``N`` whose ``v<N>.metadata.json`` exists spelt as Java prints the int: the attested ``v2`` planted as
``v04`` or ``v2147483648`` is not read, the later ``v3`` (no row) is, whatever the static read (VERIFIED before) took.
A hint Java's ``parseInt`` cannot read (past 2^31-1) is passed over the same way. Each is now ``unsupported_table``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_iceberg_round20b import audited, hadoop_table_with_a_later_commit

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("planted", "hint"),
    [("v04.metadata.json", None), ("v2147483648.metadata.json", None), ("v2147483648.metadata.json", "2147483648\n")],
)
def test_spark_reads_the_later_commit_not_the_planted_copy(
    tmp_path: Path, spark: Any, planted: str, hint: str | None
) -> None:
    folder, files = hadoop_table_with_a_later_commit(tmp_path)
    meta = folder / "metadata"

    def read() -> int:
        return int(spark.read.format("iceberg").load(str(folder)).count())

    assert read() == 0  # control: the later v3, no row
    shutil.copy(files[2], meta / planted)
    if hint is not None:
        (meta / "version-hint.text").write_text(hint)
    assert read() == 0  # Spark still reads v3, not the attested copy (two rows)
    (meta / "v3.metadata.json").unlink()
    if hint is None:
        assert read() == 2  # with v3 gone, Java's listing reads the attested v2 itself: the planted name is no version
    row = audited(tmp_path)
    assert (row["rc"], row["code"]) == (2, "unsupported_table"), row


@pytest.mark.parametrize("kind", ["date", "timestamp", "decimal"])
def test_spark_reads_a_partition_value_stored_in_another_type(spark: Any, spark_warehouse: Path, kind: str) -> None:
    """Held (test_iceberg_held_round20b.py): the second append's ``d`` stored as ISO text or at scale 3. The strings:
    Spark fails every read that selects ``d`` (``ClassCastException``: the identity partition is a constant from
    the manifest) and its filter on ``d`` (``IllegalArgumentException``), where pyiceberg reads the rows and its
    filter prunes the file: the readers differ, record's refusal is right. The decimal ``2.500`` for ``2.50``: both
    read the same rows, filtered alike — record's refusal is an over-refusal, kept (Spark turns the manifest's
    decimal into the column's scale by rounding, so a value the spec's scale cannot hold would read otherwise)."""
    import uuid

    from tests.adversarial.test_iceberg_held_round20b import VALUES, pyiceberg_ids, retyped
    from tests.adversarial.test_spark_deletes_round19 import _catalog, _ids

    ns = f"r20b{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    table = retyped(_catalog(spark_warehouse), f"{ns}.t", kind)
    name = f"iceberg.{ns}.t"
    spark_where = {
        "date": "d = DATE'2024-01-02'",
        "timestamp": "d = TIMESTAMP_NTZ'2024-01-02 03:04:05'",
        "decimal": "d = 2.50",
    }[kind]

    def spark_read(query: str) -> Any:
        try:
            return sorted(tuple(str(v) for v in r) for r in spark.sql(query).collect())
        except Exception as exc:  # a read Spark fails
            return "ClassCastException" if "ClassCastException" in str(exc) else type(exc).__name__

    py_rows = sorted((str(i), str(d)) for i, d in zip(*table.scan().to_arrow().to_pydict().values(), strict=True))
    assert _ids(spark, name) == pyiceberg_ids(table) == [1, 2, 3]
    full = spark_read(f"SELECT id, d FROM {name}")
    filtered = spark_read(f"SELECT id FROM {name} WHERE {spark_where}")
    if kind == "decimal":
        assert full == py_rows and filtered == [("3",)] and pyiceberg_ids(table, VALUES[kind][3]) == [3], (
            full,
            filtered,
        )
    else:
        assert (full, filtered) == ("ClassCastException", "IllegalArgumentException"), (full, filtered)
        assert pyiceberg_ids(table, VALUES[kind][3]) == [] and len(py_rows) == 3


OUT_OF_RANGE = {  # column, a value past year 9999, one before year 1, partitioning
    "date": ("d DATE", "date_add(DATE'9999-12-31', 1000)", "date_add(DATE'0001-01-01', -1000)", ""),
    "years": (
        "d DATE",
        "date_add(DATE'9999-12-31', 1000)",
        "date_add(DATE'0001-01-01', -1000)",
        "PARTITIONED BY (years(d))",
    ),
    "timestamp": (
        "d TIMESTAMP",
        "timestamp_micros(300000000000000000)",
        "timestamp_micros(-70000000000000000)",
        "PARTITIONED BY (d)",
    ),
    "timestamp_ntz": (
        "d TIMESTAMP_NTZ",
        "CAST(timestamp_micros(300000000000000000) AS TIMESTAMP_NTZ)",
        "CAST(timestamp_micros(-70000000000000000) AS TIMESTAMP_NTZ)",
        "",
    ),
}


@pytest.mark.parametrize("kind", list(OUT_OF_RANGE))
def test_dates_outside_pythons_years_are_coded_or_verified(spark: Any, spark_warehouse: Path, kind: str) -> None:
    """Held (test_iceberg_held_round20b.py): Spark writes dates and timestamps past year 9999 and before year 1
    (``+10002-09-26``, ``-0002-04-07``; years 11476 and -249), which Python's ``date`` cannot hold. Never
    ``internal_error``: under a ``years`` partition ``record`` refuses with a coded ``table_inconsistent`` (the
    partition value "cannot be held to its rows") and ``verify`` says ``unattested``; otherwise the footer bounds are
    held as the integers Parquet stores (tests/test_extreme_values.py), so ``record`` attests the table and it verifies
    at every level (this pinned a refusal until that fallback landed; forged bounds and partition values of such a
    table stay refused: test_iceberg_held_round20b.py)."""
    import uuid

    from tests.adversarial.conftest import codes, warehouse_cli

    column, high, low, partitioning = OUT_OF_RANGE[kind]
    ns = f"r20b{uuid.uuid4().hex[:8]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, {column}) USING iceberg {partitioning}")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, {high}), (2, {low}) AS v(id, d)")
    years = [str(r[0])[:6] for r in spark.sql(f"SELECT CAST(d AS STRING) FROM {name} ORDER BY id").collect()]
    assert years[0].startswith("+1") and years[1].startswith("-0"), years  # what Spark reads: both outside 1-9999
    ref = f"iceberg://iceberg/{ns}.t"
    rc, doc = warehouse_cli(spark_warehouse, "record", ref, "--model", "m", "--program-hash", "1" * 64)
    if kind == "years":
        assert rc != 0 and codes(doc) == ["table_inconsistent"], doc
        assert "cannot be held to its rows (date value out of range)" in doc["errors"][0]["message"], doc
        for level in ("schema", "files", "bytes"):
            rc, doc = warehouse_cli(spark_warehouse, "verify", ref, "--level", level)
            assert rc == 1 and codes(doc) == ["unattested"], doc
        return
    assert rc == 0 and doc["recorded"], doc
    for level in ("schema", "files", "bytes"):
        rc, doc = warehouse_cli(spark_warehouse, "verify", ref, "--level", level)
        assert rc == 0 and doc["passed"] and doc["level"] == level, doc


def test_spark_reads_v2_of_a_catalog_folder_whose_current_file_is_v02(tmp_path: Path, spark: Any) -> None:
    """The catalog's table reads two rows (its ``v02.metadata.json``); a path reader of the folder reads ``v2``."""
    from tests.adversarial.test_iceberg_round20b import catalog_at_v02

    folder, _ = catalog_at_v02(tmp_path)
    assert spark.read.format("iceberg").load(str(folder)).count() == 0


def test_spark_climbs_past_a_hint_pyiceberg_reads_as_it_is(tmp_path: Path, spark: Any) -> None:
    """A Hadoop table's ``version-hint.text`` of ``0`` with ``v1``, ``v2`` present: Spark climbs to the attested
    ``v2`` (two rows), pyiceberg's folder reader reads ``v0`` (none) — two readings, now ``unsupported_table``."""
    from tests.adversarial.test_audit_discovery_attacks import _hadoop_folder
    from tests.adversarial.test_iceberg_round20b import audited, pyiceberg_folder_rows

    folder, _ = _hadoop_folder(tmp_path)
    (folder / "metadata" / "version-hint.text").write_text("0")
    assert spark.read.format("iceberg").load(str(folder)).count() == 2
    assert pyiceberg_folder_rows(folder) == 0
    assert audited(tmp_path)["code"] == "unsupported_table"
