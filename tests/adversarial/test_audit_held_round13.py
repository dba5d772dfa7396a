"""Variants of the sixth attack round on audits and policies that held (pinned): each was tried against the code as
it stood and gave the right verdict; these tests keep it so (docs/security.md, the sixth round's row).

- a REST catalog listing one table twice, or two tables whose names differ only by case: the duplicate is an ERROR
  ``table_not_audited`` line (only one entry can be opened by the name), the case twins two lines, each noted;
- an audited root given through a symlink, or as a relative path with a trailing ``/``: a tampered table is caught,
  and a ``require_signed`` glob naming the real, absolute path still requires the unsigned table's signature;
- a policy listing one ECDSA P-256 key twice, once in the compressed point encoding (a second entry escaping a
  revocation): refused as the same key listed twice; a policy file with a duplicate TOML key: refused.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from attest.signing.errors import PolicyInvalidError
from attest.signing.policy import TrustPolicy
from tests.adversarial.test_audit_discovery_attacks import assert_caught, attested, by_table, tamper
from tests.adversarial.test_audit_rest_listing import Catalog, rest  # noqa: F401  (fixture)
from tests.adversarial.test_audit_rest_listing import audit as rest_audit
from tests.adversarial.test_policy_names import _policy, _unsigned


def _cli(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "attest.cli", "audit", *args, "--json"], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)
    return done.returncode, json.loads(done.stdout)


def test_a_rest_listing_naming_one_table_twice_is_an_error(rest: Any) -> None:  # noqa: F811
    catalog = Catalog([("sales",)], {("sales",): [(("sales",), "orders"), (("sales",), "orders")]}, page=1)
    rc, doc = rest_audit(rest(catalog), "iceberg://stub/sales")
    lines = [(t["table"], t["code"]) for t in doc["tables"]]
    assert ("iceberg://stub/sales.orders", "table_not_audited") in lines, doc
    assert any("both spell iceberg://stub/sales.orders" in t["message"] for t in doc["tables"]), doc
    assert rc == 2


def test_a_rest_listing_of_case_twins_audits_both(rest: Any) -> None:  # noqa: F811
    catalog = Catalog([("sales",)], {("sales",): [(("sales",), "Orders"), (("sales",), "orders")]}, page=1)
    rc, doc = rest_audit(rest(catalog), "iceberg://stub/sales")
    tables = by_table(doc)
    assert sorted(tables) == ["iceberg://stub/sales.Orders", "iceberg://stub/sales.orders"], doc
    assert all(any("only by case or Unicode form" in n for n in t["notes"]) for t in tables.values()), doc
    assert rc == 2  # the stub serves no table: each line an ERROR, never a pass


@pytest.mark.parametrize("how", ["link", "relative"])
def test_an_audited_root_by_a_link_or_a_relative_path(tmp_path: Path, how: str) -> None:
    lake = tmp_path / "lake"
    attested(lake / "customers")
    tamper(attested(lake / "orders"))
    _unsigned(lake / "finance" / "ledger")
    os.symlink(lake, tmp_path / "link")
    root = str(tmp_path / "link") if how == "link" else "lake/"
    rc, doc = _cli(root, cwd=tmp_path)
    tables = {Path(t["table"]).name: t for t in doc["tables"]}
    assert sorted(tables) == ["customers", "ledger", "orders"], doc
    assert_caught(tables["orders"])
    assert rc == 1
    policy = _policy(tmp_path, [f"file://{lake}/finance/*"])
    rc, doc = _cli(root, "--policy", policy, cwd=tmp_path)
    ledger = {Path(t["table"]).name: t for t in doc["tables"]}["ledger"]
    assert (ledger["outcome"], ledger["code"]) == ("NOT VERIFIED", "signature_missing"), ledger


def test_one_p256_key_listed_twice_in_two_encodings_is_refused(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    plain = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    point = key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    # The same key as a SubjectPublicKeyInfo holding the compressed point (0x02/0x03 || x): another file, other bytes.
    der = bytes.fromhex("3039301306072a8648ce3d020106082a8648ce3d030107032200") + point
    (tmp_path / "a.pem").write_bytes(plain)
    (tmp_path / "b.pem").write_bytes(b"-----BEGIN PUBLIC KEY-----\n" + base64.encodebytes(der) +
                                     b"-----END PUBLIC KEY-----\n")
    assert (tmp_path / "a.pem").read_bytes() != (tmp_path / "b.pem").read_bytes()
    text = '[[keys]]\npublic_key = "a.pem"\nrevoked = true\n[[keys]]\npublic_key = "b.pem"\ntables = ["s3://b/*"]\n'
    with pytest.raises(PolicyInvalidError, match="listed twice"):
        TrustPolicy.from_toml(text, base_dir=tmp_path)


def test_a_policy_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyInvalidError, match="not valid TOML"):
        TrustPolicy.from_toml('require_signed = ["*"]\nrequire_signed = []\n[[keys]]\npublic_key = "x.pem"\n',
                              base_dir=tmp_path)
