"""The Spark hook after OPTIMIZE, holding the trusted key, over a table whose attestation nobody trusted signed
(round 13c; the carrier-level attack is tests/adversarial/test_carry_forward_signature.py).

Before: the hook's carry-forward signed the unsigned attestation's program — ``VERIFIED (bytes, signed by <trusted
key>)`` for a claim no trusted key made. Now the hook writes nothing (a failure, ``carry_forward_unverified``, the Spark
job unaffected) and the table stays unverified under the policy, while Spark reads the same rows as before OPTIMIZE.
One table; about a minute on 2 cores."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from attest.signing.keys import PemSigner, generate_keypair
from tests.spark.test_hook import _attest, _delta_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

TRUSTED = generate_keypair("ed25519")


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def test_the_hook_does_not_sign_an_unsigned_attestation_after_optimize(spark: SparkSession, scratch: Path) -> None:
    from attest.spark import install

    name = f"cfs_{uuid.uuid4().hex[:8]}"
    unsigned = install(spark, policy="required")  # the producer (or someone with write access): no key
    try:
        spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING delta")
        for start in (0, 100):
            spark.sql(f"INSERT INTO {name} SELECT id + {start}, CAST(id AS STRING) FROM range(5)")
        unsigned.flush()
        assert unsigned.failed == 0 and unsigned.attested >= 1, unsigned.errors
    finally:
        unsigned.uninstall()
    rows_before = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect())
    # "optional": the refusal is counted and logged; "required" would raise it at flush() (measured)
    maintenance = install(spark, policy="optional", signer=PemSigner.load(TRUSTED.private_pem))
    try:
        spark.sql(f"OPTIMIZE {name}")
        maintenance.flush()
        assert maintenance.carried == 0 and maintenance.failed == 1, (maintenance.carried, maintenance.errors)
        assert "not carried forward signed" in maintenance.errors[-1], maintenance.errors
    finally:
        maintenance.uninstall()
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect()) == rows_before
    key = scratch / "trusted.pub"
    key.write_bytes(TRUSTED.public_pem)
    proc = _attest("verify", _delta_path(spark, name), "--level", "bytes", "--key", str(key), "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and not doc["verdict"].startswith("VERIFIED"), doc
    assert "signature_missing" in [e["code"] for e in doc["errors"]], doc
