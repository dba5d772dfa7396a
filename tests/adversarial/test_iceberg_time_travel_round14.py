"""Round 14 on Iceberg time travel: the numbers of the metadata that name and age snapshots and refs.

Iceberg Java 1.12 reads every id, sequence number, timestamp and ref retention value of the table metadata with
``JsonUtil.getInt`` / ``getLong``: a JSON integer within a Java int or long, nothing else. pyiceberg 0.12's pydantic
model coerces: a string ``"5"``, a float ``5.0`` and an integer beyond a long all read. Measured below: for each edit
Spark 4.1 refused the table ("Cannot parse to an integer value" / "Cannot parse to a long value"), pyiceberg read its
three rows, and ``attest verify`` said ``VERIFIED (bytes, …)`` (measured on the code before) — a ref ``audit`` whose
``min-snapshots-to-keep`` is 2147483648 / ``"5"`` / ``5.0``, whose ``max-ref-age-ms`` or ``max-snapshot-age-ms`` is
2**63 or a string, whose ``snapshot-id`` is a string; ``main``'s ``snapshot-id``, ``current-snapshot-id``, a
snapshot's ``parent-snapshot-id``, ``sequence-number``, ``timestamp-ms`` or ``schema-id`` as a string. Now each is
``table_inconsistent`` (carriers/iceberg/carrier.py ``_java_number_problems``), and so are the field ids of schemas,
partition specs and sort orders, which Java reads with the same ``JsonUtil.getInt`` (pyiceberg read a schema field id
``"1"`` or ``1.0`` and attest said VERIFIED before; not in the Spark measurement).

Not attacked here, because attest has nothing of the kind: time travel by timestamp (``verify`` resolves a snapshot id,
a tag or a branch; no ``--as-of``), so the snapshot log's disagreements with the snapshots' ``timestamp-ms`` only matter
where Java refuses the table (test_iceberg_metadata_java_refuses.py).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from carriers.iceberg.carrier import _java_number_problems
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_iceberg_metadata_java_refuses import _attested
from tests.iceberg.conftest import CATALOG, iceberg_env, local, ns_catalog  # noqa: F401
from tests.iceberg.rewrites import rewrite_metadata

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _ref(field: str, value: Any, kind: str = "branch") -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc["refs"]["audit"] = {"snapshot-id": doc["current-snapshot-id"], "type": kind, field: value}
    return edit


def _as_text(*path: Any) -> Any:
    """The number at ``path`` (a key, or -1 for the last snapshot) written as a JSON string."""
    def edit(doc: dict[str, Any]) -> None:
        *head, last = path
        at: Any = doc
        for key in head:
            at = at[key]
        at[last] = str(at[last])
    return edit


EDITS = {
    "ref_min_keep_beyond_int": _ref("min-snapshots-to-keep", 2**31),
    "ref_min_keep_text": _ref("min-snapshots-to-keep", "5"),
    "ref_min_keep_float": _ref("min-snapshots-to-keep", 5.0),
    "ref_max_ref_age_beyond_long": _ref("max-ref-age-ms", 2**63),
    "ref_max_ref_age_text": _ref("max-ref-age-ms", "5000"),
    "ref_max_snapshot_age_beyond_long": _ref("max-snapshot-age-ms", 2**63),
    "tag_max_ref_age_float": _ref("max-ref-age-ms", 5000.0, "tag"),
    "tag_snapshot_id_text": lambda doc: doc["refs"].__setitem__(
        "audit", {"snapshot-id": str(doc["current-snapshot-id"]), "type": "tag"}),
    "main_snapshot_id_text": _as_text("refs", "main", "snapshot-id"),
    "current_snapshot_id_text": _as_text("current-snapshot-id"),
    "parent_id_text": _as_text("snapshots", -1, "parent-snapshot-id"),
    "sequence_number_text": _as_text("snapshots", -1, "sequence-number"),
    "timestamp_text": _as_text("snapshots", -1, "timestamp-ms"),
    "schema_id_text": _as_text("snapshots", -1, "schema-id"),
}
# Read by the same JsonUtil.getInt in Java's SchemaParser / PartitionSpecParser (not among the edits measured with
# Spark); pyiceberg read each and attest said VERIFIED before
SAME_PARSER = {
    "schema_field_id_text": _as_text("schemas", -1, "fields", 0, "id"),
    "schema_field_id_float": lambda doc: doc["schemas"][-1]["fields"][0].__setitem__("id", 1.0),
    "last_column_id_text": _as_text("last-column-id"),
    "spec_id_text": _as_text("partition-specs", 0, "spec-id"),
}
# What Spark said of each (the test below measures it)
SPARK_SAYS = {kind: "Cannot parse to an integer value" if "min_keep" in kind or "schema_id" in kind
              else "Cannot parse to a long value" for kind in EDITS}
# The same places holding what Java reads: pinned VERIFIED
HELD = {
    "ref_retention_in_range": lambda doc: doc["refs"].__setitem__("audit", {
        "snapshot-id": doc["current-snapshot-id"], "type": "branch", "min-snapshots-to-keep": 2**31 - 1,
        "max-snapshot-age-ms": 2**63 - 1, "max-ref-age-ms": 2**63 - 1}),
    "tag_and_branch_differing_in_case": lambda doc: doc["refs"].update({
        "Audit": {"snapshot-id": doc["current-snapshot-id"], "type": "tag"},
        "audit": {"snapshot-id": doc["current-snapshot-id"], "type": "branch"}}),
}


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("kind", sorted({**EDITS, **SAME_PARSER}))
def test_a_number_java_cannot_parse_gets_no_verdict(kind: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = rewrite_metadata(catalog, _attested(catalog, "ns"), {**EDITS, **SAME_PARSER}[kind])
    assert table.scan().to_arrow().num_rows == 3  # pyiceberg coerces the number and reads main as before
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 1 and set(codes(doc)) == {"table_inconsistent"}, json.dumps(doc)
    assert "Iceberg Java refuses to read the table" in json.dumps(doc), json.dumps(doc)


@pytest.mark.parametrize(("edit", "found"), [
    (lambda d: d["schemas"][0]["fields"][0]["type"].__setitem__("element-id", "3"), "field 0's type's element-id"),
    (lambda d: d["schemas"][0]["fields"][0]["type"]["element"]["fields"][0].__setitem__("id", 2**31),
     "field 0's type's element field 0's id"),
    (lambda d: d["partition-specs"][0]["fields"][0].__setitem__("source-id", 1.0), "field 0's source-id"),
    (lambda d: d["sort-orders"][0]["fields"][0].__setitem__("source-id", "1"), "field 0's source-id"),
])
def test_nested_field_ids_are_read_as_java_reads_them(edit: Any, found: str) -> None:
    doc: dict[str, Any] = {
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "xs", "required": False, "type": {
            "type": "list", "element-id": 2, "element-required": False, "element": {
                "type": "struct", "fields": [{"id": 4, "name": "a", "required": False, "type": "long"}]}}}]}],
        "partition-specs": [{"spec-id": 0, "fields": [{"source-id": 1, "field-id": 1000, "name": "p",
                                                       "transform": "identity"}]}],
        "sort-orders": [{"order-id": 1, "fields": [{"source-id": 1, "transform": "identity", "direction": "asc",
                                                    "null-order": "nulls-first"}]}]}
    assert _java_number_problems(doc) == []
    edit(doc)
    problems = _java_number_problems(doc)
    assert len(problems) == 1 and found in problems[0].message, problems


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("kind", sorted(HELD))
def test_numbers_java_reads_are_held(kind: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    rewrite_metadata(catalog, _attested(catalog, "ns"), HELD[kind])
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)
    for ref in ("audit", "Audit") if kind.startswith("tag_and") else ():
        rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--snapshot-id", ref, "--level", "bytes")
        assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.spark
def test_what_spark_reads_of_each_number(spark: SparkSession, spark_warehouse: Path) -> None:
    """One attested table, each edit written as its own metadata file and read by path (no catalog refresh, whose
    retries of a metadata file that fails to parse last about a minute and a half)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    ns = f"rf{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    current = local(_attested(catalog, ns).metadata_location)
    base = json.loads(current.read_text())
    for kind, edit in sorted({**EDITS, **HELD}.items()):
        doc = json.loads(json.dumps(base))
        edit(doc)
        path = current.with_name(f"99999-{uuid.uuid4()}.metadata.json")
        path.write_text(json.dumps(doc))
        if kind in HELD:
            assert spark.read.format("iceberg").load(str(path)).count() == 3, kind
            for ref in ("audit", "Audit") if kind.startswith("tag_and") else ():
                read = spark.read.format("iceberg").option("versionAsOf", ref).load(str(path))
                assert read.count() == 3, (kind, ref)
            continue
        with pytest.raises(Exception) as refused:
            spark.read.format("iceberg").load(str(path)).count()
        assert SPARK_SAYS[kind] in str(refused.value), (kind, str(refused.value)[:300])
