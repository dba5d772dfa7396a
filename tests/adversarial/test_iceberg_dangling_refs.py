"""An attested Iceberg table whose metadata gains a branch or tag naming a snapshot the metadata does not list.

Iceberg Java validates every ref when it parses table metadata (``TableMetadata``: "Snapshot for reference … does not
exist in the existing snapshots list") and refuses the whole table: Spark 4.1 / Iceberg 1.12 could not even refresh
it (measured below). pyiceberg 0.12 reads ``main``'s rows as before (measured: both rows), and ``attest verify`` said
``VERIFIED (bytes, …)`` for a table Spark does not read at all (measured on the code before). Now
``table_inconsistent`` (carriers/iceberg/carrier.py ``_metadata_problems``), as for the spec's other invariants Java's
parser enforces (ids given twice, ``main`` elsewhere than the current snapshot). A snapshot-log entry naming a
snapshot the metadata does not list is read by both (measured: Spark returned both rows): held, and pinned.
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


def _dangle(kind: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        if kind == "log":
            last = doc["snapshot-log"][-1]["timestamp-ms"]
            doc["snapshot-log"].append({"snapshot-id": MISSING, "timestamp-ms": last + 1})
        else:
            doc["refs"]["x"] = {"snapshot-id": MISSING, "type": kind}
    return edit


def _attested(catalog: SqlCatalog, ns: str) -> Any:
    table = catalog.create_table(f"{ns}.t", schema=SCHEMA)
    table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    attest_after_write(catalog.load_table(f"{ns}.t"), model="orders", program_hash=PROGRAM)
    return catalog.load_table(f"{ns}.t")


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("kind", ["branch", "tag"])
def test_a_ref_to_a_snapshot_the_metadata_does_not_list_gets_no_verdict(kind: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = rewrite_metadata(catalog, _attested(catalog, "ns"), _dangle(kind))
    assert table.scan().to_arrow().num_rows == 2  # pyiceberg reads main as before
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], json.dumps(doc)
    assert str(MISSING) in json.dumps(doc), json.dumps(doc)


@pytest.mark.usefixtures("iceberg_env")
def test_a_snapshot_log_entry_the_metadata_does_not_list_is_held(tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    rewrite_metadata(catalog, _attested(catalog, "ns"), _dangle("log"))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["branch", "tag", "log"])
def test_spark_refuses_a_table_with_a_dangling_ref(kind: str, spark: SparkSession, spark_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    ns = f"rf{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    rewrite_metadata(catalog, _attested(catalog, ns), _dangle(kind))
    name = f"iceberg.{ns}.t"
    if kind == "log":
        spark.sql(f"REFRESH TABLE {name}")
        assert spark.sql(f"SELECT * FROM {name}").count() == 2
    else:
        with pytest.raises(Exception, match="does not exist in the existing snapshots list"):
            spark.sql(f"REFRESH TABLE {name}")
            spark.sql(f"SELECT * FROM {name}").collect()
    rc, doc = _cli(spark_warehouse, "verify", f"iceberg://iceberg/{ns}.t")
    if kind == "log":
        assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
    else:
        assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
