"""An Iceberg name mapping (``schema.name-mapping.default``) that maps one name to two fields, or lists a field id
twice, for a table whose files have no field ids (``add_files``).

Iceberg Java indexes each level of the mapping by name and by id into maps that take no key twice
(``MappedFields.indexIds``) and refuses to read the table; pyiceberg 0.12 chains the fields (the first naming a name
wins) and reads the files by it. Measured (Spark 4.1 / Iceberg 1.12): with ``b`` mapped to field ids 1 and 2 Spark
refused the read (``Multiple entries with same key: b=2 and b=1``) while pyiceberg read the file's ``b`` values as
``a`` and ``b`` as nulls, and ``attest record`` attested those rows (VERIFIED). Now ``table_inconsistent``
(carriers/iceberg/carrier.py ``_name_mapping_problem``): ``record`` refuses, nothing committed.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.iceberg.conftest import local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MAPPINGS: dict[str, list[dict[str, Any]]] = {
    "a name mapped to two fields": [{"field-id": 1, "names": ["a", "b"]}, {"field-id": 2, "names": ["b"]}],
    "a field id listed twice": [{"field-id": 1, "names": ["a"]}, {"field-id": 1, "names": ["b"]}],
}


def _added(warehouse: Path, mapping: list[dict[str, Any]] | None) -> tuple[str, str, Any]:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
    ns = f"nm{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    table = catalog.create_table(f"{ns}.t", schema=pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    folder = local(table.location()) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"a": [1, 2], "b": [10, 20]}), folder / "x.parquet")  # no field ids
    table.add_files([f"file://{folder}/x.parquet"])
    if mapping is not None:
        table = catalog.load_table(f"{ns}.t")
        with table.transaction() as tx:
            tx.set_properties(**{"schema.name-mapping.default": json.dumps(mapping)})
    return f"iceberg.{ns}.t", f"iceberg://iceberg/{ns}.t", catalog.load_table(f"{ns}.t")


@pytest.mark.spark
def test_spark_refuses_a_name_mapping_with_a_key_twice(spark: SparkSession, spark_warehouse: Path) -> None:
    seen: dict[str, Any] = {}
    for case, mapping in [("control", None), *MAPPINGS.items()]:
        name, ref, table = _added(spark_warehouse, mapping)
        pyiceberg = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
        spark.sql(f"REFRESH TABLE {name}")
        try:
            read: Any = sorted(tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}").collect())
        except Exception as exc:  # Spark refused the read
            read = "refused" if "Multiple entries with same key" in str(exc) else str(exc)[:200]
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        seen[case] = (pyiceberg, read, rc, codes(doc) if rc else [])
    assert seen["control"] == ([(1, 10), (2, 20)], [(1, 10), (2, 20)], 0, []), seen
    assert seen["a name mapped to two fields"] == ([(10, None), (20, None)], "refused", 2, ["table_inconsistent"]), \
        seen
    assert seen["a field id listed twice"][1:] == ("refused", 2, ["table_inconsistent"]), seen
