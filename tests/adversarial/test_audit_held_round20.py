"""Round 20, held: what the two-readings refusal and the one-table-one-line dedupe leave alone.

- ``file://<x>/my%20lake`` with only ``<x>/my lake`` there, ``file://<x>/lake#frag`` with no ``lake#frag`` folder: one
  reading exists, no other reader finds a table at the other — walked as delta-rs opens it. The same on a store
  (``s3://b/lake/my%20lake``, ``s3://b/lake/orders#frag``): verified, one listing more.
- ``..`` is never folded in the dedupe: ``/lake/link/../orders`` with ``link`` → ``/other/sub`` is ``/other/orders`` to
  the kernel, another table than ``/lake/orders``: two lines.
"""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.test_audit_discovery_attacks import attested, audit, by_table, tamper
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket


def test_a_fragment_naming_no_other_folder_walks_the_one_delta_rs_opens(tmp_path: Path) -> None:
    lake = tmp_path / "x"
    attested(lake / "lake")
    rc, doc = audit(f"file://{lake}/lake#frag")
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc
    attested(lake / "my lake")
    rc, doc = audit(f"file://{lake}/my%20lake")
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc


def test_a_dotdot_spelling_through_a_link_is_never_merged(tmp_path: Path) -> None:
    orders = attested(tmp_path / "lake" / "orders")
    other = attested(tmp_path / "other" / "orders")
    tamper(other)
    (tmp_path / "other" / "sub").mkdir()
    (tmp_path / "lake" / "link").symlink_to(tmp_path / "other" / "sub")
    dotdot = f"{tmp_path}/lake/link/../orders"
    rc, doc = audit(str(orders), dotdot)
    assert sorted(by_table(doc)) == sorted([str(orders), dotdot]), doc
    assert by_table(doc)[str(orders)]["outcome"] == "VERIFIED", doc
    assert by_table(doc)[dotdot]["outcome"] != "VERIFIED" and rc != 0, doc


def test_a_store_uri_with_one_reading_there_verifies(s3: Bucket) -> None:
    opts = s3.storage_options
    for key in ("lake/my lake", "lake/orders"):
        write_deltalake(s3.uri(key), special_table(), storage_options=opts)
        attest_after_write(s3.uri(key), model="m", program_hash=PROGRAM, storage_options=opts)
    for uri in (s3.uri("lake/my%20lake"), s3.uri("lake/orders#frag")):
        done = cli("verify", uri, "--json", *options_args(s3))
        assert done.returncode == 0, done.stdout
        done = cli("audit", uri, "--json", *options_args(s3))
        assert done.returncode == 0 and [t["outcome"] for t in json.loads(done.stdout)["tables"]] == ["VERIFIED"], (
            done.stdout
        )
