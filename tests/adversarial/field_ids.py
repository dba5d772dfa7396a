"""Tables the field-id attacks rewrite (tests/adversarial/test_spark_field_ids.py, test_spark_nested_field_ids.py):
an attested Iceberg table in the Spark warehouse's SQL catalog, and a column-mapped Delta table of ``a long,
st struct<x long, y long>`` written by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.adversarial.conftest import PROGRAM


def iceberg_table(spark_warehouse: Path, namespace: str, rows: pa.Table, mapped: bool = True) -> tuple[Any, Any]:
    """An Iceberg table of ``rows`` (with a name mapping when ``mapped``), two appends attested; its catalog and
    table (pyiceberg)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import attest_after_write
    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.t", schema=rows.schema)
    if mapped:
        mapping = table.metadata.schema().name_mapping.model_dump_json()
        table.transaction().set_properties({"schema.name-mapping.default": mapping}).commit_transaction()
        table = catalog.load_table(f"{namespace}.t")
    table.append(rows.slice(0, 1))
    table.append(rows.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog, catalog.load_table(f"{namespace}.t")


def delta_struct_table(path: Path, mode: str, rows: Callable[[list[int], list[int], list[int]], pa.Table]) -> None:
    """A Delta table ``a long, st struct<x long, y long>`` with column mapping ``mode`` (physical names col-aaaa,
    col-ssss, col-xxxx, col-yyyy; ids 1 to 4), two files of ``rows(a, x, y)`` added in version 0."""
    import uuid

    import pyarrow.parquet as pq

    from carriers.delta.log import commit_name

    path.mkdir(parents=True)
    (path / "_delta_log").mkdir()

    def mapping(i: int, physical: str) -> dict[str, Any]:
        return {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": physical}

    children = [{"name": "x", "type": "long", "nullable": True, "metadata": mapping(3, "col-xxxx")},
                {"name": "y", "type": "long", "nullable": True, "metadata": mapping(4, "col-yyyy")}]
    fields = [{"name": "a", "type": "long", "nullable": True, "metadata": mapping(1, "col-aaaa")},
              {"name": "st", "nullable": True, "metadata": mapping(2, "col-ssss"),
               "type": {"type": "struct", "fields": children}}]
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps({"type": "struct", "fields": fields}), "partitionColumns": [],
                      "configuration": {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "4"},
                      "createdTime": 1}}]
    for i in range(2):
        rel = f"part-{i}.parquet"
        pq.write_table(rows([i, i + 10], [100 + i, 200 + i], [300 + i, 400 + i]), path / rel)
        actions.append({"add": {"path": rel, "partitionValues": {}, "size": (path / rel).stat().st_size,
                                "modificationTime": 1, "dataChange": True, "stats": json.dumps({"numRecords": 2})}})
    (path / commit_name(0)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
