"""A trust policy follows a table on an object store under every name the store opens it by (round 14).

``require_signed = ["s3://b/lake/finance/*"]`` covered the table ``s3://b/lake/finance/orders`` named so, in
Hadoop's schemes (``s3a://``), in capitals or percent-encoded — but not named as the engines' URL parser (Rust's
``url``, as object_store and delta-rs parse a table URI) reads it:

- ``s3://b/lake/x/../finance/orders``, ``s3://b/lake/./finance/orders``, ``s3://b/lake/x/%2E%2E/finance/orders``: the
  parser removes dot segments (``%2e`` too), and delta-rs opens ``lake/finance/orders``;
- ``s3://u@b/lake/finance/orders``, ``s3://b:99/lake/finance/orders``: the bucket is the host alone;
- one Azure container under each scheme object_store reads it by — ``az://c/…``, ``azure://``, ``adl://``,
  ``abfs[s]://c/…`` and ``abfs[s]://c@<account>.dfs.core.windows.net/…`` — and ``gcs://`` for pyiceberg's ``gs://``.

Each of those names gave ``VERIFIED (bytes, unsigned)``, exit 0, for an unsigned table the policy requires signed
(measured on the test servers: delta-rs opens every name as the table), under ``attest verify`` and ``attest audit``
alike. A key allowed only for ``s3://b/lake/hr/*`` matched ``s3://b/lake/hr/../finance/orders`` (``*`` crosses ``/``):
a finance table signed by the HR key passed as signed. Now every name a store opens is matched
(``attest.signing.policy._opened``), and a key must be allowed for where a dotted name leads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deltalake import DeltaTable, write_deltalake

from attest.signing.attestation import sign_table_attestation
from attest.signing.keys import PublicKey, generate_keypair
from attest.signing.policy import TrustedKey, TrustPolicy, canonical_name
from attest.signing.statement import Target
from carriers.delta.carrier import attest_after_write
from tests.adversarial.test_policy_names import _policy
from tests.adversarial.test_signing_attacks import _signer
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket


def _unsigned_finance_table(bucket: Bucket) -> str:
    table = bucket.uri("lake/finance/orders")
    write_deltalake(table, special_table(), storage_options=bucket.storage_options)
    attest_after_write(table, model="orders", program_hash=PROGRAM, storage_options=bucket.storage_options)
    return table


def _verify(bucket: Bucket, name: str, policy: str) -> tuple[int, dict[str, Any]]:
    done = cli("verify", name, "--policy", policy, "--json", *options_args(bucket))
    return done.returncode, json.loads(done.stdout)


def _assert_required(bucket: Bucket, names: list[str], policy: str) -> None:
    for name in names:
        # The engine opens the finance table by this name (else the attack would prove nothing).
        assert DeltaTable(name, storage_options=bucket.storage_options).version() == 1, name
        rc, doc = _verify(bucket, name, policy)
        assert rc == 1 and [e["code"] for e in doc["errors"]] == ["signature_missing"], (name, doc)
        assert doc["signature"]["required"] is True, (name, doc)


def test_a_store_name_the_url_parser_folds_is_covered(s3: Bucket, tmp_path: Path) -> None:
    _unsigned_finance_table(s3)
    b = s3.name
    policy = _policy(tmp_path, [f"s3://{b}/lake/finance/*"])
    names = [f"s3://{b}/lake/x/../finance/orders", f"s3://{b}/lake/./finance/orders",
             f"s3://{b}/lake/x/%2E%2E/finance/orders", f"s3://u@{b}/lake/finance/orders",
             f"s3://{b}:99/lake/finance/orders"]
    _assert_required(s3, names, policy)
    # An audit of the lake by a dotted prefix judges each table under the name it walked.
    done = cli("audit", f"s3://{b}/lake/x/../", "--policy", policy, "--json", *options_args(s3))
    report = json.loads(done.stdout)
    assert [t["code"] for t in report["tables"]] == ["signature_missing"], done.stdout
    assert done.returncode == 1
    # Control: a table outside the glob passes unsigned by any of these spellings.
    write_deltalake(s3.uri("lake/hr/people"), special_table(), storage_options=s3.storage_options)
    attest_after_write(s3.uri("lake/hr/people"), model="people", program_hash=PROGRAM,
                       storage_options=s3.storage_options)
    rc, doc = _verify(s3, f"s3://{b}/lake/x/../hr/people", policy)
    assert rc == 0 and doc["signature"]["required"] is False, doc


def test_one_azure_container_under_every_scheme_is_covered(azure: Bucket, tmp_path: Path) -> None:
    _unsigned_finance_table(azure)
    c, account = azure.name, azure.storage_options["AZURE_STORAGE_ACCOUNT_NAME"]
    names = [f"azure://{c}/lake/finance/orders", f"adl://{c}/lake/finance/orders", f"abfs://{c}/lake/finance/orders",
             f"abfss://{c}@{account}.dfs.core.windows.net/lake/finance/orders"]
    _assert_required(azure, names, _policy(tmp_path, [f"az://{c}/lake/finance/*"]))
    # The glob in the Hadoop driver's spelling covers the table named as delta-rs's users name it.
    glob = f"abfss://{c}@{account}.dfs.core.windows.net/lake/finance/*"
    _assert_required(azure, [f"az://{c}/lake/finance/orders"], _policy(tmp_path, [glob]))


def test_store_spellings_on_the_names_alone() -> None:
    """``gcs://`` is pyiceberg's other name for ``gs://`` (an Iceberg table's storage location is one of its names);
    ``wasbs://c@acct.blob.core.windows.net`` is the container ``c``. Other buckets, containers and folders stay out."""
    cases = [("gs://b/wh/finance/*", "gcs://b/wh/finance/t", True),
             ("az://c/finance/*", "wasbs://c@acct.blob.core.windows.net/finance/t", True),
             ("s3://b/x/../finance/*", "s3://b/finance/t", True),
             ("s3://b/finance/*", "s3://b/x/../hr/t", False),
             ("s3://b/finance/*", "s3://finance/b/t", False),
             ("az://c/finance/*", "abfss://d@acct.dfs.core.windows.net/finance/t", False),
             ("az://c/finance/*", "az://c.other/finance/t", False)]
    for glob, name, covered in cases:
        policy = TrustPolicy(keys=(), require_signed=(glob,))
        target = Target.table(canonical_name(name), 1, {"subject": {"model": "orders"}}, None, names=(name,))
        assert policy.requires_signature(target) is covered, (glob, name)


def test_a_key_for_one_folder_is_not_allowed_a_dotted_name_leading_out_of_it() -> None:
    """The HR key signs the finance table's statement under ``s3://b/lake/hr/../finance/orders`` (recorded by that
    name: the statement names the table as it was reached); a verifier (or a lineage walk, whose input locations the
    tables record) reaching it by that name judged the key against the dotted name, which ``s3://b/lake/hr/*``
    covers."""
    hr = generate_keypair("ed25519")
    name = "s3://b/lake/hr/../finance/orders"
    doc = {"subject": {"model": "orders"}}
    envelope = sign_table_attestation(_signer(hr), name, 3, doc, None)
    policy = TrustPolicy(keys=(TrustedKey(public_key=PublicKey.load(hr.public_pem), tables=("s3://b/lake/hr/*",)),),
                         require_signed=("*",))
    result = policy.evaluate(envelope, Target.table(name, 3, doc, None, names=(name,)))
    assert not result.passed and result.code is not None and result.code.value == "signer_not_allowed", result
    assert "s3://b/lake/finance/orders" in result.message, result.message
    # Control: the HR table itself, by a dotted name staying in hr, is signed by the HR key.
    inside = "s3://b/lake/hr/x/../people"
    envelope = sign_table_attestation(_signer(hr), inside, 3, doc, None)
    assert policy.evaluate(envelope, Target.table(inside, 3, doc, None, names=(inside,))).passed
