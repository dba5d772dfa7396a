"""An attested Iceberg table whose metadata is edited so that Iceberg Java refuses to parse it while pyiceberg reads it.

Iceberg Java validates metadata when it parses it (``TableMetadata``) and refuses the whole table; Spark 4.1 /
Iceberg 1.12 could not even refresh it (measured below), while pyiceberg 0.12 read ``main``'s rows as before
(measured), and ``attest verify`` said ``VERIFIED (bytes, …)`` for a table Spark does not read at all (measured on the
code before) — for each of:

- a branch or tag naming a snapshot the metadata does not list ("Snapshot for reference … does not exist in the
  existing snapshots list");
- snapshot-log entries out of order by more than a minute ("[BUG] Expected sorted snapshot log entries."), and so the
  metadata log ("… previous metadata log entries.");
- ``last-updated-ms`` before the last snapshot-log entry ("Invalid update timestamp …");
- a snapshot's sequence number above ``last-sequence-number`` ("Invalid snapshot with sequence number 1 greater than
  last sequence number 0").

Now each is ``table_inconsistent`` (carriers/iceberg/carrier.py ``_metadata_problems``), as for the spec's other
invariants Java's parser enforces (ids given twice, ``main`` elsewhere than the current snapshot). Held, and pinned:
a snapshot-log entry naming a snapshot the metadata does not list, and a snapshot's ``timestamp-ms`` out of order
(Spark read both tables).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.iceberg.conftest import CATALOG, iceberg_env, ns_catalog  # noqa: F401
from tests.iceberg.rewrites import rewrite_metadata

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64())])
MISSING = 4242424242


H = 3_600_000
REFUSED = {"branch": "does not exist in the existing snapshots list", "tag": "does not exist in the existing "
           "snapshots list", "log_order": "Expected sorted snapshot log entries",
           "metadata_log_order": "Expected sorted previous metadata log entries",
           "updated_before_log": "Invalid update timestamp", "sequence_above_last": "",
           "v1_snapshot_sequence": "Invalid snapshot with sequence number 1 greater than last sequence number 0",
           "snapshot_schema_missing": "Cannot find schema with schema id 99",
           "sort_order_twice": "Multiple entries with same key"}
HELD = ("log_missing_snapshot", "snapshot_time_order", "v1_last_sequence", "partition_id_above_last",
        "column_id_above_last")
# pyiceberg refuses these itself (its metadata validators): no rows are read, so no verdict
PYICEBERG_REFUSES = ("current-schema-id", "default-spec-id", "default-sort-order-id")


def _dangle(kind: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        if kind == "log_missing_snapshot":
            last = doc["snapshot-log"][-1]["timestamp-ms"]
            doc["snapshot-log"].append({"snapshot-id": MISSING, "timestamp-ms": last + 1})
        elif kind in ("branch", "tag"):
            doc["refs"]["x"] = {"snapshot-id": MISSING, "type": kind}
        elif kind == "log_order":
            doc["snapshot-log"][0]["timestamp-ms"] += 10 * H  # the first entry after the later ones
        elif kind == "metadata_log_order":
            doc["metadata-log"][0]["timestamp-ms"] += 10 * H
        elif kind == "updated_before_log":
            doc["last-updated-ms"] = doc["snapshot-log"][-1]["timestamp-ms"] - 10 * H
        elif kind == "sequence_above_last":
            doc["last-sequence-number"] = 0
        elif kind == "v1_snapshot_sequence":  # a v1 table: Java takes its last-sequence-number as 0
            doc["snapshots"][-1]["sequence-number"] = 1
        elif kind == "v1_last_sequence":
            doc["last-sequence-number"] = 5
        elif kind == "snapshot_schema_missing":
            for snapshot in doc["snapshots"]:
                snapshot["schema-id"] = 99
        elif kind == "sort_order_twice":
            doc["sort-orders"] = doc["sort-orders"] * 2
        elif kind == "partition_id_above_last":
            assert doc["partition-specs"][-1]["fields"][0]["field-id"] == 1000
            doc["last-partition-id"] = 999
        elif kind == "column_id_above_last":
            doc["last-column-id"] = 0
        else:
            assert kind == "snapshot_time_order"
            doc["snapshots"][0]["timestamp-ms"] += 10 * H
    return edit


def _attested(catalog: SqlCatalog, ns: str, kind: str = "") -> Any:
    table = catalog.create_table(f"{ns}.t", schema=SCHEMA,
                                 properties={"format-version": "1" if kind.startswith("v1_") else "2"})
    if kind == "partition_id_above_last":  # partitioned: a spec field whose id the edit puts above the last
        with table.update_spec() as spec:
            spec.add_identity("id")
        table = catalog.load_table(f"{ns}.t")
    table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    catalog.load_table(f"{ns}.t").append(pa.table({"id": [3]}, schema=SCHEMA))
    attest_after_write(catalog.load_table(f"{ns}.t"), model="orders", program_hash=PROGRAM)
    return catalog.load_table(f"{ns}.t")


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_metadata_java_refuses_gets_no_verdict(kind: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = rewrite_metadata(catalog, _attested(catalog, "ns", kind), _dangle(kind))
    assert table.scan().to_arrow().num_rows == 3  # pyiceberg reads main as before
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 1 and set(codes(doc)) == {"table_inconsistent"}, json.dumps(doc)
    assert "Iceberg Java refuses to read the table" in json.dumps(doc), json.dumps(doc)


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("kind", HELD)
def test_metadata_java_reads_is_held(kind: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    rewrite_metadata(catalog, _attested(catalog, "ns", kind), _dangle(kind))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("field", PYICEBERG_REFUSES)
def test_metadata_pyiceberg_refuses_is_unreadable(field: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = _attested(catalog, "ns")
    with pytest.raises(Exception, match="can't be found"):  # pyiceberg's ValidationError, when the catalog loads it
        rewrite_metadata(catalog, table, lambda doc: doc.__setitem__(field, 99))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc != 0 and set(codes(doc)) == {"table_unreadable"}, json.dumps(doc)


@pytest.mark.spark
@pytest.mark.parametrize("kind", [*sorted(REFUSED), *HELD])
def test_what_spark_reads_of_the_edited_metadata(kind: str, spark: SparkSession, spark_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    ns = f"rf{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    rewrite_metadata(catalog, _attested(catalog, ns, kind), _dangle(kind))
    name = f"iceberg.{ns}.t"
    if kind in HELD:
        spark.sql(f"REFRESH TABLE {name}")
        assert spark.sql(f"SELECT * FROM {name}").count() == 3
    else:
        # Java's reading of the metadata file itself: through the catalog, a refresh that fails to parse is retried
        # for about a minute and a half (Iceberg's metadata refresh backoff) before it gives up with the same error.
        location = catalog.load_table(f"{ns}.t").metadata_location
        with pytest.raises(Exception) as refused:
            spark.read.format("iceberg").load(location).collect()
        assert REFUSED[kind] in str(refused.value), str(refused.value)[:500]
    rc, doc = _cli(spark_warehouse, "verify", f"iceberg://iceberg/{ns}.t")
    if kind in HELD:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
    else:
        assert rc == 1 and set(codes(doc)) == {"table_inconsistent"}, doc
