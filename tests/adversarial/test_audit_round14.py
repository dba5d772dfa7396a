"""Attacks on what ``attest audit`` of an object-store prefix reads (round 14).

The store's walk named each table it found by its key: ``<root>/<prefix>``. delta-rs reads a table URI through a URL
parser (Rust's ``url``): a percent-escape is decoded, ``#`` and ``?`` end the path, a trailing space is trimmed. So a
tampered table copied to the literal key ``lake/%6Frders/`` (or ``lake/orders#x/``, ``lake/orders?x/``,
``lake/orders /``) was audited as ``s3://b/lake/%6Frders``, which opens ``lake/orders``: the genuine table verified
twice, the copy never read, exit 0 — while a reader of the literal key (Spark's ``s3a://`` path, which Hadoop does not
decode; a listing) gets the copy. Measured on S3 (SeaweedFS), GCS (fake-gcs-server) and Azure (Azurite) alike. Now a
prefix whose key the parser would alter is named percent-encoded (``lake/%256Frders``), which delta-rs opens as that
key, and its line says so.
"""

from __future__ import annotations

import json

from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.fixtures import (  # noqa: F401  (fixtures, registered by import)
    azure,
    azurite_server,
    bucket,
    gcs,
    gcs_server,
    s3,
    seaweed_server,
)
from tests.servers.stores import Bucket

# (the literal key of the copy, the name the audit gives it)
COPIES = {"%6Frders": "%256Frders", "orders#x": "orders%23x", "orders?x": "orders%3Fx", "orders ": "orders%20"}


def test_a_table_at_a_key_a_uri_would_decode_is_audited_as_itself(bucket: Bucket) -> None:  # noqa: F811
    opts = bucket.storage_options
    write_deltalake(bucket.uri("lake/orders"), special_table(), storage_options=opts)
    attest_after_write(bucket.uri("lake/orders"), model="orders", program_hash=PROGRAM, storage_options=opts)
    for key in [*COPIES, "a b"]:  # each a copy of the attested table, every one but "a b" tampered
        for name in bucket.keys("lake/orders/"):
            bucket.put(name.replace("lake/orders/", f"lake/{key}/", 1), bucket.get(name))
        if key != "a b":
            bucket.flip_byte(sorted(k for k in bucket.keys(f"lake/{key}/") if k.endswith(".parquet"))[0])
    done = cli("audit", bucket.uri("lake") + "/", "--json", *options_args(bucket))
    report = json.loads(done.stdout)
    got = {t["table"]: (t["outcome"], t["code"]) for t in report["tables"]}
    expected = {bucket.uri(f"lake/{named}"): ("NOT VERIFIED", "artifact_hash_mismatch") for named in COPIES.values()}
    expected |= {bucket.uri("lake/orders"): ("VERIFIED", None), bucket.uri("lake/a b"): ("VERIFIED", None)}
    # (the copies' mismatches say each was read: the genuine table at lake/orders is untouched)
    assert got == expected, done.stdout
    assert done.returncode == 1 and report["skipped"] == []
    notes = {t["table"]: t["notes"] for t in report["tables"]}
    assert any("percent-encoded" in n for n in notes[bucket.uri("lake/%256Frders")]), notes
    assert notes[bucket.uri("lake/a b")] == [] and notes[bucket.uri("lake/orders")] == []  # a space stays as it is
