"""Round 21 on an object store: one Delta table named twice, once with percent-escapes of unreserved characters.

``attest audit s3://b/lake/%6frders s3://b/lake/orders`` audited ``lake/orders`` twice, two lines ("2 verified"): the
one-table check (``carriers.refs.table_key``) compared the names as typed, while delta-rs (the audit's reading) opens
both as the key ``lake/orders`` (``%6f`` is ``o``: RFC 3986's unreserved characters, whose escapes every URL parser
decodes). Spark's ``s3a://`` reads the first as the literal key ``lake/%6frders`` (measured in
tests/adversarial/test_audit_store_round20.py); when that key holds a table too the first name is refused as ambiguous
(``refuse_two_readings``), so merging the two lines never hides a table another engine reads. Now one line.
"""

from __future__ import annotations

import json
from typing import Any

from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket


def _attested(s3: Bucket, key: str) -> None:
    opts = s3.storage_options
    write_deltalake(s3.uri(key), special_table(), storage_options=opts)
    attest_after_write(s3.uri(key), model="orders", program_hash=PROGRAM, storage_options=opts)


def _audit(s3: Bucket, *targets: str) -> tuple[int, list[tuple[str, str, Any]]]:
    done = cli("audit", *targets, "--json", *options_args(s3))
    doc: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, [(t["table"], t["outcome"], t["code"]) for t in doc["tables"]]


def test_a_store_table_spelled_with_unreserved_escapes_is_one_line(s3: Bucket) -> None:
    _attested(s3, "lake/orders")
    escaped, plain = s3.uri("lake/%6frders"), s3.uri("lake/orders")
    for targets in ((escaped, plain), (plain, escaped), (s3.uri("l%61ke/%6F%72ders"), plain)):
        rc, rows = _audit(s3, *targets)
        assert rc == 0, rows
        assert rows == [(targets[0], "VERIFIED", None)], rows  # was: two lines, one per spelling
    # Tables under the escaped name, found by its walk, are the ones under the plain name: each one line.
    _attested(s3, "lake/orders/sub")
    rc, rows = _audit(s3, escaped, plain)
    assert rc == 0 and sorted(r[0] for r in rows) == [escaped, escaped + "/sub"], rows


def test_an_escaped_name_another_engine_reads_as_another_table_is_never_merged(s3: Bucket) -> None:
    """The literal key ``lake/%6frders`` holds a table too (the one Spark's ``s3a://`` reads by that name): the
    escaped name is refused as ambiguous, its own ERROR line beside the plain table's, and the prefix walk names the
    literal key percent-encoded (``%256frders``), a line of its own."""
    _attested(s3, "lake/orders")
    for key in s3.keys("lake/orders/"):
        s3.put(key.replace("lake/orders", "lake/%6frders", 1), s3.get(key))
    escaped, plain = s3.uri("lake/%6frders"), s3.uri("lake/orders")
    rc, rows = _audit(s3, escaped, plain)
    assert rc == 2, rows
    assert rows == [(escaped, "ERROR", "invalid_argument"), (plain, "VERIFIED", None)], rows
    rc, rows = _audit(s3, s3.uri("lake") + "/", plain)
    assert sorted(r[0] for r in rows) == [s3.uri("lake/%256frders"), plain], rows


def test_the_one_table_key_decodes_unreserved_escapes_only() -> None:
    from carriers.refs import TableRef, table_key

    def key(location: str, fmt: Any = "delta") -> Any:
        return table_key(TableRef.discovered(fmt, location))

    assert key("s3://b/lake/%6frders") == key("s3://b/lake/orders") == key("s3://b/l%61ke/%6F%72ders")
    assert key("s3://b/lake/a%2Db%5Fc%7Ed%2Ee") == key("s3://b/lake/a-b_c~d.e")
    # The literal key ``lake/%6frders`` (named percent-encoded by the walk), a '/' escaped, a '#': other keys.
    assert len({key("s3://b/lake/%256frders"), key("s3://b/lake/%6frders")}) == 2
    assert key("s3://b/lake/a%2Fb") != key("s3://b/lake/a/b")
    assert key("s3://b/lake/orders%23x") != key("s3://b/lake/orders")
    # An Iceberg folder on a store is read by pyiceberg's file IO, not delta-rs: kept as named.
    assert key("s3://b/lake/%6frders", "iceberg") != key("s3://b/lake/orders", "iceberg")
