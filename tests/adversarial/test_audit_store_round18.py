"""Round 18 on an object store: a table in a hidden prefix (``lake/_staging/orders``) the trust policy requires signed
was only listed ``SKIPPED`` by the store's walk, and the audit passed, exit 0 (tests/adversarial/test_audit_round18.py
has the local lake; docs/audit.md, Hidden tables under a trust policy)."""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.test_signing_attacks import KEY
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket


def test_a_hidden_table_on_a_store_the_policy_requires_signed_fails_the_audit(s3: Bucket, tmp_path: Path) -> None:
    opts = s3.storage_options
    for key in ("lake/orders", "lake/_staging/orders"):
        write_deltalake(s3.uri(key), special_table(), storage_options=opts)
        attest_after_write(s3.uri(key), model="orders", program_hash=PROGRAM, storage_options=opts)
    (tmp_path / "ci.pub").write_bytes(KEY.public_pem)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'require_signed = ["{s3.uri("lake/_staging")}/*"]\n[[keys]]\npublic_key = "ci.pub"\n')
    done = cli("audit", s3.uri("lake") + "/", "--json", "--policy", str(policy), *options_args(s3))
    report = json.loads(done.stdout)
    rows = [(t["table"], t["outcome"], t["code"]) for t in report["tables"]]
    assert done.returncode == 2, done.stdout
    assert rows == [(s3.uri("lake/_staging/orders"), "ERROR", "table_not_audited"),
                    (s3.uri("lake/orders"), "VERIFIED", None)], rows
    # Control: a policy covering only the visible table leaves the hidden one listed, exit 0.
    policy.write_text(f'require_signed = ["{s3.uri("lake/orders")}"]\n[[keys]]\npublic_key = "ci.pub"\n')
    done = cli("audit", s3.uri("lake") + "/", "--json", "--policy", str(policy), *options_args(s3))
    report = json.loads(done.stdout)
    assert done.returncode == 1 and [s["path"] for s in report["skipped"]] == [s3.uri("lake/_staging/orders")], \
        done.stdout
