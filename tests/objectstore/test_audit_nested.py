"""Issue 29.5 on an object store: a table copied into a parent prefix (``wh/sales`` above ``wh/sales/orders``) no
longer hides the table below from ``attest audit s3://bucket/wh/``: the walk enters tables, and the inner one is
audited and noted as nested."""

from __future__ import annotations

import json

from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket


def test_a_table_inside_a_table_on_a_store_is_audited(s3: Bucket) -> None:
    outer, inner = s3.uri("wh/sales"), s3.uri("wh/sales/orders")
    for uri in (inner, outer):
        write_deltalake(uri, special_table(), storage_options=s3.storage_options)
    attest_after_write(inner, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    assert DeltaTable(inner, storage_options=s3.storage_options).version() == 1  # a reader opens the inner table
    done = cli("audit", s3.uri("wh") + "/", "--json", *options_args(s3))
    rows = {t["table"]: t for t in json.loads(done.stdout)["tables"]}
    assert set(rows) == {outer, inner}, done.stdout
    assert rows[outer]["outcome"] == "UNATTESTED" and rows[inner]["outcome"] == "VERIFIED", rows
    assert any(n.startswith(f"nested inside table {outer}") for n in rows[inner]["notes"]), rows[inner]
    assert done.returncode == 1


def test_iceberg_metadata_in_a_delta_table_on_a_store_is_not_passed(s3: Bucket) -> None:
    """Iceberg metadata put beside a Delta table's log (``wh/orders/metadata/*.metadata.json``): Iceberg readers of
    the prefix read that metadata. The audit used to check the Delta log alone and pass; the Iceberg side is now its
    own line (on a store: ``unsupported_table``, audit it through its catalog), so the audit cannot pass."""
    table = s3.uri("wh/orders")
    write_deltalake(table, special_table(), storage_options=s3.storage_options)
    attest_after_write(table, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    s3.put("wh/orders/metadata/00000-planted.metadata.json", b"{}")
    done = cli("audit", s3.uri("wh") + "/", "--json", *options_args(s3))
    rows = sorted((t["outcome"], t["code"] or "-") for t in json.loads(done.stdout)["tables"])
    assert rows == [("ERROR", "unsupported_table"), ("VERIFIED", "-")], done.stdout
    assert done.returncode == 2
