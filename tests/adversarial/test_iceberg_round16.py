"""Round 16, Java's side: Iceberg name mappings (``schema.name-mapping.default``) that Iceberg Java refuses as a whole
while every level of them is sound, for a table whose files have no field ids (``add_files``).

Java's ``NameMapping`` indexes the mapping twice over all its levels (``MappingUtil``): by every field's full dotted
name (``s.x`` for a struct ``s`` holding ``x``; a map that takes no key twice) and by id (``Invalid mapping: ID %s is
not unique``). pyiceberg 0.12 resolves a file's columns a level at a time and never builds either index. Measured
(Spark 4.1 / Iceberg 1.12): a top-level entry named ``s.x`` beside a struct ``s`` holding ``x``, or a field id given
at two levels (top-level ``a`` and ``s.x``), made Spark refuse every read of the table (``Multiple entries with same
key: s.x=…``, ``Invalid mapping: ID 1 is not unique``) while pyiceberg read the attested rows; ``record`` attested
them and ``verify`` said VERIFIED (only each level was checked: tests/adversarial/test_spark_name_mapping.py). Now
``table_inconsistent`` (carriers/iceberg/carrier.py ``_mapping_index_problem``), at ``record`` and at ``verify`` of a
snapshot recorded before a properties-only commit set such a mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.test_spark_name_mapping import _added

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOUND = [{"field-id": 1, "names": ["a"]}, {"field-id": 2, "names": ["b"]}]
MAPPINGS: dict[str, list[dict[str, Any]]] = {
    "a dotted name across levels": [*SOUND,
                                    {"field-id": 3, "names": ["s"], "fields": [{"field-id": 4, "names": ["x"]}]},
                                    {"field-id": 5, "names": ["s.x"]}],
    "a field id at two levels": [*SOUND, {"field-id": 3, "names": ["s"], "fields": [{"field-id": 1, "names": ["x"]}]}],
    "two fields without an id": [*SOUND, {"names": ["c"]}, {"names": ["d"]}],
}


def _spark_rows(spark: SparkSession, name: str) -> Any:
    spark.sql(f"REFRESH TABLE {name}")
    try:
        return sorted(tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}").collect())
    except Exception as exc:  # Spark refused the read
        text = str(exc)
        return "refused" if "Multiple entries with same key" in text or "is not unique" in text else text[:200]


@pytest.mark.spark
def test_spark_refuses_a_mapping_whose_whole_index_takes_a_key_twice(spark: SparkSession,
                                                                     spark_warehouse: Path) -> None:
    """Each mapping set on an ``add_files`` table: pyiceberg reads the rows, Spark refuses; ``record`` refuses."""
    seen: dict[str, Any] = {}
    for case, mapping in [("control", SOUND), *MAPPINGS.items()]:
        name, ref, table = _added(spark_warehouse, mapping)
        pyiceberg = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        seen[case] = (pyiceberg, _spark_rows(spark, name), rc, codes(doc) if rc else [])
    assert seen.pop("control") == ([(1, 10), (2, 20)], [(1, 10), (2, 20)], 0, []), seen
    for case, got in seen.items():
        assert got == ([(1, 10), (2, 20)], "refused", 2, ["table_inconsistent"]), (case, seen)


LOW, LOW2, HIGH = ("10000000-0000-0000-0000-000000000000", "20000000-0000-0000-0000-000000000000",
                   "90000000-0000-0000-0000-000000000000")


def uuid_table(spark: SparkSession, warehouse: Path, values: list[str], **properties: str) -> tuple[str, str]:
    """A v2 table ``(id long, u uuid)`` made by pyiceberg (Spark SQL has no uuid type) with ``properties``, one Spark
    insert (one file) of each uuid of ``values`` (id = its position): its Spark name and ``iceberg://`` reference."""
    import uuid

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, UUIDType

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
    ns = f"uu{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    catalog.create_table(f"{ns}.t", schema=Schema(NestedField(1, "id", LongType()), NestedField(2, "u", UUIDType())),
                         properties={"format-version": "2", **properties})
    for i, value in enumerate(values):
        spark.sql(f"INSERT INTO iceberg.{ns}.t SELECT /*+ REPARTITION(1) */ * FROM VALUES ({i}, '{value}') AS v(id, u)")
    return f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t"


def found_by_uuid(spark: SparkSession, name: str, values: list[str]) -> list[int]:
    """The ids Spark's ``WHERE u = <value>`` returns, over every value (each is in the table once)."""
    spark.sql(f"REFRESH TABLE {name}")
    return sorted(int(r[0]) for v in values for r in spark.sql(f"SELECT id FROM {name} WHERE u = '{v}'").collect())


@pytest.mark.spark
def test_a_rewrite_that_hides_uuids_from_javas_filters(spark: SparkSession, spark_warehouse: Path) -> None:
    """Two files, one uuid each, recorded; Spark's own ``rewrite_data_files`` merges them into one file whose bounds
    straddle 0x80…: Iceberg Java (comparing uuids as signed longs) then skips it for ``u = <either value>`` — both rows
    found before the rewrite, none after, a full read both. ``verify`` said VERIFIED (content; same rows); now
    ``content_changed``. Likewise with the column's manifest metrics off: Java's row-group filter skips the file by
    its Parquet footer's minimum and maximum. A rewrite of two uuids on one side of 0x80… (Java's order agrees)
    verifies."""
    seen = {}
    no_metrics = {"write.metadata.metrics.column.u": "none"}
    for case, values, props in (("straddling", [LOW, HIGH], {}), ("straddling, footer only", [LOW, HIGH], no_metrics),
                                ("one side", [LOW, LOW2], {})):
        name, ref = uuid_table(spark, spark_warehouse, values, **props)
        before = found_by_uuid(spark, name, values)
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        assert rc == 0, (case, doc)
        spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{name.removeprefix('iceberg.')}', "
                  "options => map('min-input-files', '2'))")
        after = found_by_uuid(spark, name, values)
        full = sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect())
        rc, doc = _cli(spark_warehouse, "verify", ref)
        seen[case] = (before, after, full, rc, codes(doc))
    assert seen["straddling"] == ([0, 1], [], [0, 1], 1, ["content_changed"]), seen
    assert seen["straddling, footer only"] == ([0, 1], [], [0, 1], 1, ["content_changed"]), seen
    assert seen["one side"] == ([0, 1], [0, 1], [0, 1], 0, []), seen


def uuid_partitioned(spark: SparkSession, warehouse: Path, values: list[str]) -> tuple[Any, str, str, str]:
    """A v2 table ``(id long, u uuid)`` partitioned by ``identity(u)``, made by pyiceberg; Spark's own insert of
    ``values`` (id = position): its pyiceberg catalog, identifier, Spark name and ``iceberg://`` reference."""
    import uuid

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, UUIDType

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
    ns = f"ur{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    catalog.create_table(f"{ns}.t", schema=Schema(NestedField(1, "id", LongType()), NestedField(2, "u", UUIDType())),
                         partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "u")),
                         properties={"format-version": "2"})
    name = f"iceberg.{ns}.t"
    rows = ", ".join(f"({i}, '{v}')" for i, v in enumerate(values))
    spark.sql(f"INSERT INTO {name} VALUES {rows}")
    return catalog, f"{ns}.t", name, f"iceberg://iceberg/{ns}.t"


@pytest.mark.spark
def test_a_uuid_partition_summary_narrowed_in_the_manifest_list(spark: SparkSession, spark_warehouse: Path) -> None:
    """A table partitioned by ``identity(u)`` of a uuid column, Spark's own insert of ``10000000-…`` and
    ``90000000-…`` (one manifest, two files): it attests and verifies — it was refused before (the identity check
    compared the tuple's ``UUID`` with the file's bytes: nothing equal). Then the manifest list's partition summary of
    ``u`` is narrowed to ``[90000000-…, 90000000-…]``: Java skips the manifest for ``u = '10000000-…'`` (measured:
    no row, a full read both), while the summary check passed uuid summaries over unjudged (``UUID`` bounds against
    the tuple's bytes: a TypeError). Now ``table_inconsistent``."""
    import uuid

    from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_list

    catalog, ident, name, ref = uuid_partitioned(spark, spark_warehouse, [LOW, HIGH])
    assert found_by_uuid(spark, name, [LOW, HIGH]) == [0, 1]
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc == 0 and doc["passed"], doc

    def narrow(m: Any) -> None:
        if m.partitions:
            m.partitions[0]._data[2] = m.partitions[0]._data[3] = uuid.UUID(HIGH).bytes  # lower, upper bound

    _rewrite_manifest_list(catalog.load_table(ident), narrow)
    assert found_by_uuid(spark, name, [LOW, HIGH]) == [1]  # the attack works on Java
    assert spark.sql(f"SELECT id FROM {name}").count() == 2
    rc, doc = _cli(spark_warehouse, "verify", ref)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert any("partition values in" in e["message"] for e in doc["errors"]), doc


@pytest.mark.spark
def test_an_equality_delete_of_a_uuid_java_does_not_apply(spark: SparkSession, spark_warehouse: Path) -> None:
    """One data file holding ``10000000-…`` (id 0) and ``90000000-…`` (id 1), Spark's own write (bounds bytewise);
    an equality delete of ``u = '10000000-…'`` committed through Java's ``RowDelta`` with Java's own metrics. Java
    skips an equality delete file for a data file whose bounds do not overlap its own
    (``DeleteFileIndex.canContainEqDeletesForFile``), comparing uuids as signed longs: the data file's upper bound
    ``90000000-…`` is below the delete's ``10000000-…`` to it, so Spark applied no delete and returned id 0 (measured)
    while the digest deleted it — ``record`` attested the rows without id 0, VERIFIED. Now ``table_inconsistent``:
    both files' bounds of the equality fields are held in Java's order too (``_hold_equality_metrics``), so that a
    delete file Java skips by them deletes no row."""
    import uuid

    import pyarrow as pa

    from tests.adversarial.spark_iceberg import equality_delete

    name, ref = uuid_table(spark, spark_warehouse, [], **{"write.delete.mode": "merge-on-read"})
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES (0, '{LOW}'), (1, '{HIGH}') AS v(id, u)")
    u = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuid.UUID(LOW).bytes], pa.binary(16)))
    rows = pa.table({"u": u}).cast(pa.schema([pa.field("u", pa.uuid(), metadata={b"PARQUET:field_id": b"2"})]))
    folder = spark_warehouse / "iceberg" / name.split(".")[1] / "t" / "data"
    equality_delete(spark, name, folder / "eq-delete.parquet", 2, rows)
    spark.sql(f"REFRESH TABLE {name}")
    assert sorted(int(r[0]) for r in spark.sql(f"SELECT id FROM {name}").collect()) == [0, 1]  # not applied by Java
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 2 and codes(doc) == ["table_inconsistent"], doc
    assert "signed longs" in doc["errors"][0]["message"] and "equality delete" in doc["errors"][0]["message"], doc
