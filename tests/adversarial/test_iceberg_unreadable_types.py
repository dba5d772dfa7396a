"""An attested Iceberg table whose metadata is changed to hold a column type pyiceberg 0.12 does not read.

Spark (Iceberg 1.12) writes v3 tables with a ``variant`` column; pyiceberg refuses such metadata with its own
``ValidationError`` ("Unsupported field type: 'variant'"), which escaped as ``internal_error`` (measured). Its rows
are not read here, so nothing can be claimed of them: ``unsupported_table``, a coded refusal, never VERIFIED (a type
string pyiceberg cannot parse at all: ``table_unreadable``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog, iceberg_env, local, rows  # noqa: F401


@pytest.mark.parametrize(("type_", "code"), [("variant", "unsupported_table"),
                                            ("geography(srid:4326)", "table_unreadable")])  # unparsable
def test_a_column_of_a_type_pyiceberg_does_not_read_is_refused(catalog: SqlCatalog, iceberg_env: str,  # noqa: F811
                                                               type_: str, code: str) -> None:
    table = catalog.create_table("ns.t", schema=rows(0).schema)
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0, doc
    current = Path(local(catalog.load_table("ns.t").metadata_location))
    metadata = json.loads(current.read_text())
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    schema["fields"].append({"id": 99, "name": "x", "required": False, "type": type_})
    current.write_text(json.dumps(metadata))  # rewritten in place: someone with write access to the storage
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "schema")
    assert rc != 0 and codes(doc) == [code], doc
    assert not doc["passed"], doc
