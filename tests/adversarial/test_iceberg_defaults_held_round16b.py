"""Round 16, second part, tried and held (pyiceberg 0.12): Iceberg v3 column defaults changed by a metadata-only
commit after ``record``.

A v3 table of one file (``a`` = 1, 2), then a column ``b`` added with ``initial-default`` 5 (both readers fill a
file without the column with it: tests/adversarial/test_iceberg_default_values.py measured Spark), recorded. A later
commit adding a schema (new ``schema-id``, made current, no new snapshot) whose ``b`` has another ``initial-default``
makes readers of the head read other values: ``verify`` says ``reader_view_changed`` (defaults are in the schema's
view). One changing only ``write-default`` (what a writer fills in, never read back from files already written)
changes no row read and is ``reader_view_changed`` too: conservative, never VERIFIED over other rows. (pyiceberg 0.12
writes no v3 data: the table is written as v2 and upgraded by a metadata edit, ``b`` added with its defaults.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli


def _defaulted(tmp_path: Path) -> tuple[Any, Any, str, str]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import LongType

    from carriers.spark.session import pyiceberg_catalog_properties

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([pa.field("a", pa.int64())]),
                                 properties={"format-version": "2"})
    table.append(pa.table({"a": pa.array([1, 2], pa.int64())}))
    with table.update_schema() as update:
        update.add_column("b", LongType())

    def upgrade(doc: dict[str, Any]) -> None:  # pyiceberg 0.12 writes no v3 data: the table upgraded after its write
        doc["format-version"] = 3
        doc["next-row-id"] = 0
        for schema in doc["schemas"]:
            for f in schema["fields"]:
                if f["name"] == "b":
                    f.update({"initial-default": 5, "write-default": 5})

    from tests.iceberg.rewrites import rewrite_metadata

    return catalog, rewrite_metadata(catalog, catalog.load_table("ns.t"), upgrade), "ns.t", "iceberg://iceberg/ns.t"


def _new_schema(catalog: Any, table: Any, **default: int) -> Any:
    """A commit adding a copy of the current schema, ``b``'s defaults set to ``default``, made current."""
    import copy

    from tests.iceberg.rewrites import rewrite_metadata

    def edit(doc: dict[str, Any]) -> None:
        current = next(s for s in doc["schemas"] if s["schema-id"] == doc["current-schema-id"])
        new = copy.deepcopy(current)
        new["schema-id"] = max(s["schema-id"] for s in doc["schemas"]) + 1
        for f in new["fields"]:
            if f["name"] == "b":
                f.update({k.replace("_", "-"): v for k, v in default.items()})
        doc["schemas"].append(new)
        doc["current-schema-id"] = new["schema-id"]

    return rewrite_metadata(catalog, table, edit)


def test_a_default_changed_by_a_metadata_only_commit(tmp_path: Path) -> None:
    catalog, table, _ident, ref = _defaulted(tmp_path)
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["a"]) == [{"a": 1, "b": 5}, {"a": 2, "b": 5}]
    rc, doc = _cli(tmp_path, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    rc, doc = _cli(tmp_path, "verify", ref)
    assert rc == 0, doc
    table = _new_schema(catalog, table, write_default=6)
    rc, doc = _cli(tmp_path, "verify", ref)
    written = (rc, codes(doc), sorted(r["b"] for r in table.scan().to_arrow().to_pylist()))
    table = _new_schema(catalog, table, initial_default=6)
    rc, doc = _cli(tmp_path, "verify", ref)
    initial = (rc, codes(doc), sorted(r["b"] for r in table.scan().to_arrow().to_pylist()))
    # Readers of the head fill the file's missing b with the new initial default; the view says so.
    assert initial == (1, ["reader_view_changed"], [6, 6]), initial
    # No row read changes (write-default fills only new writes), yet the schema's view holds it: conservative.
    assert written == (1, ["reader_view_changed"], [5, 5]), written
