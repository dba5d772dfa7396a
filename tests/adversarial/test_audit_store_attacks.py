"""``attest audit`` of an object-store prefix, attacked as issue 29.5 attacked a local lake (docs/audit.md, What an
audit finds): a table moved into a hidden prefix (``_staging/``, ``.trash/``) was dropped from the store's walk without
a word, where the local walk lists it ``SKIPPED``; a prefix with more folders than one listing page holds."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import urllib.parse
import urllib.request

from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.seaweed import REGION
from tests.servers.stores import Bucket


def test_tables_in_hidden_prefixes_of_a_store_are_listed_skipped(bucket: Bucket) -> None:
    """``lake/_staging/orders`` (attested, then a byte of it flipped), ``lake/.trash/eu/orders`` and a table's own
    ``lake/orders/_scratch/t``: each reached by its name, none audited. Before, the store's walk dropped them silently
    (the JSON's ``skipped`` was empty); now each is listed as on a local lake, and the audit's verdict on what it
    checked is unchanged (a listed SKIPPED place does not change the exit code)."""
    opts = bucket.storage_options
    for key in ("lake/orders", "lake/_staging/orders", "lake/.trash/eu/orders", "lake/orders/_scratch/t"):
        write_deltalake(bucket.uri(key), special_table(), storage_options=opts)
    for key in ("lake/orders", "lake/_staging/orders"):
        attest_after_write(bucket.uri(key), model="orders", program_hash=PROGRAM, storage_options=opts)
    data = sorted(k for k in bucket.keys("lake/_staging/orders") if k.endswith(".parquet"))
    bucket.flip_byte(data[0])
    done = cli("audit", bucket.uri("lake") + "/", "--json", *options_args(bucket))
    report = json.loads(done.stdout)
    assert [(t["table"], t["outcome"]) for t in report["tables"]] == [(bucket.uri("lake/orders"), "VERIFIED")], \
        done.stdout
    skipped = {s["path"]: s for s in report["skipped"]}
    hidden = {bucket.uri(k) for k in ("lake/_staging/orders", "lake/.trash/eu/orders", "lake/orders/_scratch/t")}
    assert set(skipped) == hidden, report["skipped"]
    assert {s["code"] for s in skipped.values()} == {"table_not_audited"}
    assert "starts with '.'" in skipped[bucket.uri("lake/.trash/eu/orders")]["message"]
    assert done.returncode == 0, done.stderr
    text = cli("audit", bucket.uri("lake") + "/", *options_args(bucket))
    assert f"SKIPPED       none    {bucket.uri('lake/_staging/orders')} (table_not_audited)" in text.stdout, text.stdout
    assert "1 place(s) skipped" not in text.stdout and "3 place(s) skipped" in text.stdout, text.stdout


def test_a_delta_tables_own_folders_on_a_store_are_not_listed(s3: Bucket) -> None:
    """The walk lists hidden tables, not a table's own ``_delta_log`` nor its change-data folder (searched, they hold
    no table): an attested table with change data audits clean, nothing skipped."""
    table = s3.uri("lake/orders")
    write_deltalake(table, special_table(), storage_options=s3.storage_options,
                    configuration={"delta.enableChangeDataFeed": "true"})
    s3.put("lake/orders/_change_data/cdc-00000.parquet", b"x")
    attest_after_write(table, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    done = cli("audit", s3.uri("lake") + "/", "--json", *options_args(s3))
    report = json.loads(done.stdout)
    assert report["skipped"] == [] and [t["outcome"] for t in report["tables"]] == ["VERIFIED"], done.stdout
    assert done.returncode == 0


def test_a_prefix_with_more_folders_than_one_listing_page_is_walked_whole(s3: Bucket) -> None:
    """Held: 1,100 folders under one prefix (an S3 listing page holds 1,000 common prefixes: the listing is truncated
    and continued), with the tampered table sorted last. delta-rs's object store follows the continuation token: the
    table is audited (``artifact_hash_mismatch``), never left on the second page."""
    for i in range(1100):
        s3.put(f"lake/f{i:04d}/x.txt", b"x")
    first = _list_page(s3, "lake/")  # the server does truncate (else this test would prove nothing)
    assert "<IsTruncated>true</IsTruncated>" in first and first.count("<CommonPrefixes>") == 1000, first[:300]
    table = s3.uri("lake/zz_orders")
    write_deltalake(table, special_table(), storage_options=s3.storage_options)
    attest_after_write(table, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    s3.flip_byte(sorted(k for k in s3.keys("lake/zz_orders") if k.endswith(".parquet"))[0])
    done = cli("audit", s3.uri("lake") + "/", "--json", *options_args(s3))
    report = json.loads(done.stdout)
    assert [(t["table"], t["code"]) for t in report["tables"]] == [(table, "artifact_hash_mismatch")], done.stdout
    assert done.returncode == 1


def _list_page(s3: Bucket, prefix: str) -> str:
    """One ListObjectsV2 request with a delimiter, as the server answers it (signed with SigV4 by hand: no boto3)."""
    opts = s3.storage_options
    endpoint = urllib.parse.urlsplit(opts["AWS_ENDPOINT_URL"])
    now = dt.datetime.now(dt.UTC)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    query = urllib.parse.urlencode(sorted({"delimiter": "/", "list-type": "2", "prefix": prefix}.items()),
                                   quote_via=urllib.parse.quote)
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": endpoint.netloc, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(["GET", f"/{s3.name}", query, *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed,
                           payload])
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + opts["AWS_SECRET_ACCESS_KEY"]).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    auth = f"AWS4-HMAC-SHA256 Credential={opts['AWS_ACCESS_KEY_ID']}/{scope}, SignedHeaders={signed}, " \
           f"Signature={signature}"
    request = urllib.request.Request(f"{endpoint.scheme}://{endpoint.netloc}/{s3.name}?{query}",
                                     headers={**headers, "Authorization": auth})
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def test_a_table_copied_over_a_prefix_named_without_a_slash_no_longer_hides_the_one_below(bucket: Bucket) -> None:
    """Issue 29.5 on a store, by a target without its trailing ``/``: ``attest audit s3://b/lake/sales`` walked the
    prefix while ``sales`` was no table, and audited the tampered ``sales/orders``. Once an attested table is copied
    to ``lake/sales`` the target named a table, and that table alone was audited: ``1 verified``, exit 0. A local
    table folder given as a target was walked all the same (the nested table audited); the store's is now too, the
    outer table keeping the name as typed."""
    opts = bucket.storage_options
    outer, inner = bucket.uri("lake/sales"), bucket.uri("lake/sales/orders")
    for uri in (inner, outer):
        write_deltalake(uri, special_table(), storage_options=opts)
        attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=opts)
    bucket.flip_byte(sorted(k for k in bucket.keys("lake/sales/orders") if k.endswith(".parquet"))[0])
    done = cli("audit", outer, "--json", *options_args(bucket))
    rows = {t["table"]: t for t in json.loads(done.stdout)["tables"]}
    assert set(rows) == {outer, inner}, done.stdout
    assert rows[outer]["outcome"] == "VERIFIED" and rows[inner]["code"] == "artifact_hash_mismatch", rows
    assert any(n.startswith(f"nested inside table {outer}") for n in rows[inner]["notes"]), rows[inner]
    assert done.returncode == 1
    at_version = cli("audit", outer + "@1", "--json", *options_args(bucket))  # a version of the table: that table alone
    assert [t["table"] for t in json.loads(at_version.stdout)["tables"]] == [outer + "@1"], at_version.stdout


def test_tables_inside_a_tables_own_prefixes_on_a_store_are_listed(s3: Bucket) -> None:
    """``lake/orders/_change_data/x``, ``lake/orders/_recipe_attest/x`` (a table's own prefixes) and
    ``lake/_staging/t/metadata/z`` (inside a hidden table): before, the store's walk neither audited nor listed them
    (it did not search a table's own prefixes, nor enter a hidden table), while delta-rs opens each by its name. Now
    each is listed SKIPPED as a table in ``_staging/`` is (tests/adversarial/test_audit_table_internals.py, locally)."""
    opts = s3.storage_options
    planted = ("lake/orders/_change_data/x", "lake/orders/_recipe_attest/x", "lake/_staging/t/metadata/z")
    for key in ("lake/orders", "lake/_staging/t", *planted):
        write_deltalake(s3.uri(key), special_table(), storage_options=opts)
    attest_after_write(s3.uri("lake/orders"), model="orders", program_hash=PROGRAM, storage_options=opts)
    done = cli("audit", s3.uri("lake") + "/", "--json", *options_args(s3))
    report = json.loads(done.stdout)
    assert [(t["table"], t["outcome"]) for t in report["tables"]] == [(s3.uri("lake/orders"), "VERIFIED")], \
        done.stdout
    skipped = {s["path"]: s["code"] for s in report["skipped"]}
    assert skipped == {s3.uri(k): "table_not_audited" for k in ("lake/_staging/t", *planted)}, report["skipped"]
    assert done.returncode == 0
