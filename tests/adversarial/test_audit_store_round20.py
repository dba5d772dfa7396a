"""Round 20 on an object store: a typed URI delta-rs reads as another key than Spark does.

``s3://b/lake/%6frders``, ``s3://b/lake/orders#x`` and ``s3://b/lake/orders?x``: delta-rs (object_store, Rust's
``url``) opens the key ``lake/orders`` (the escape decoded, the fragment or query dropped), and so did ``attest
verify`` and ``attest audit``: VERIFIED, exit 0, over the attested ``lake/orders``, while Spark's ``s3a://`` of the
same string (Hadoop's ``Path``: the path as typed) reads the tampered copy at the literal key (measured below). Round
19 refused this for ``file:`` URIs only. Both readings holding folders is now refused, exit 2 ``invalid_argument``;
the store's walk names the literal prefix percent-encoded (``lake/orders%23x``), which delta-rs opens as that key.

Also: a table on a store audited by its name without a trailing ``/`` carried the note "named with its prefix ''
percent-encoded: … opens another prefix", which was false (the table is named as typed).
"""

# ruff: noqa: F811  (fixtures, imported)
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_spark_s3 import s3_spark  # noqa: F401  (a fixture)
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket

ALIASES = ["lake/%6frders", "lake/orders#x", "lake/orders?x"]


def _genuine_and_copies(s3: Bucket) -> None:
    """``lake/orders`` attested; at each literal key of ``ALIASES`` a copy of it whose data file holds other rows."""
    opts = s3.storage_options
    write_deltalake(s3.uri("lake/orders"), special_table(), storage_options=opts)
    attest_after_write(s3.uri("lake/orders"), model="orders", program_hash=PROGRAM, storage_options=opts)
    for alias in ALIASES:
        for key in s3.keys("lake/orders/"):
            data = s3.get(key)
            if key.endswith(".parquet"):
                table = pq.read_table(io.BytesIO(data))
                out = io.BytesIO()
                pq.write_table(table.slice(1), out)  # a row fewer
                data = out.getvalue()
            s3.put(key.replace("lake/orders", alias, 1), data)


def _report(done: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_a_store_uri_naming_two_keys_is_refused(s3: Bucket) -> None:
    _genuine_and_copies(s3)
    for alias in ALIASES:
        uri = s3.uri(alias)
        done = cli("verify", uri, "--json", *options_args(s3))
        doc = _report(done)
        assert done.returncode == 2, done.stdout
        assert [e["code"] for e in doc["errors"]] == ["invalid_argument"], doc
        assert "ambiguous" in doc["errors"][0]["message"], doc
        for target in (uri, uri + "/"):
            done = cli("audit", target, "--json", *options_args(s3))
            doc = _report(done)
            assert done.returncode == 2, (target, done.stdout)
            assert [e["code"] for e in doc["errors"]] == ["invalid_argument"], doc
            assert [t["outcome"] for t in doc["tables"]] == ["ERROR"], doc
    # The walk of the prefix above names each literal key so that delta-rs opens it: the copies fail.
    done = cli("audit", s3.uri("lake") + "/", "--json", *options_args(s3))
    rows = {t["table"]: (t["outcome"], t["code"]) for t in _report(done)["tables"]}
    assert done.returncode == 1, done.stdout
    assert rows == {
        s3.uri("lake/orders"): ("VERIFIED", None),
        s3.uri("lake/%256frders"): ("NOT VERIFIED", rows[s3.uri("lake/%256frders")][1]),
        s3.uri("lake/orders%23x"): ("NOT VERIFIED", rows[s3.uri("lake/orders%23x")][1]),
        s3.uri("lake/orders%3Fx"): ("NOT VERIFIED", rows[s3.uri("lake/orders%3Fx")][1]),
    }, rows


def test_a_store_table_named_as_typed_has_no_encoding_note(s3: Bucket) -> None:
    opts = s3.storage_options
    write_deltalake(s3.uri("lake/orders"), special_table(), storage_options=opts)
    attest_after_write(s3.uri("lake/orders"), model="orders", program_hash=PROGRAM, storage_options=opts)
    done = cli("audit", s3.uri("lake/orders"), "--json", *options_args(s3))
    doc = _report(done)
    assert done.returncode == 0, done.stdout
    assert [(t["table"], t["notes"]) for t in doc["tables"]] == [(s3.uri("lake/orders"), [])], doc


@pytest.mark.spark
def test_spark_reads_the_literal_key_of_a_store_uri(s3_spark: Any, s3: Bucket, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    opts = s3.storage_options
    write_deltalake(s3.uri("lake/orders"), pa.table({"a": [1, 2]}), storage_options=opts)
    for alias in ALIASES:
        for key in s3.keys("lake/orders/"):
            data = s3.get(key)
            if key.endswith(".parquet"):
                out = io.BytesIO()
                pq.write_table(pa.table({"a": [7, 9]}), out)
                data = out.getvalue()
            s3.put(key.replace("lake/orders", alias, 1), data)
    for alias in ALIASES:
        read = sorted(r[0] for r in s3_spark.read.format("delta").load(f"s3a://{s3.name}/{alias}").collect())
        assert read == [7, 9], alias  # the literal key
        engine = DeltaTable(s3.uri(alias), storage_options=opts).to_pyarrow_table()
        assert sorted(engine["a"].to_pylist()) == [1, 2], alias  # delta-rs: lake/orders
