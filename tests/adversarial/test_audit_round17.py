"""Round 17: audits steered past a table's catalog, and past a table.

- A SQL catalog table whose location is spelt through a link (``location="/volume/current"`` with ``current`` →
  ``orders_v2``, a blue-green switch), found as its folder by
  ``attest audit <volume>`` or named by ``attest verify <folder>``: the catalog owning it was looked for by the
  folder's real name in the catalog's metadata locations (``/orders_v2/``), which the link's spelling does not hold —
  read statically, matched by its path only, and ``require_signed = ["iceberg://prod/*"]`` passed it unsigned,
  VERIFIED, exit 0 (round 13's attack, the location spelt otherwise).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, rows, verify
from tests.adversarial.test_audit_discovery_attacks import audit, by_table
from tests.adversarial.test_iceberg_attacks import CATALOG, catalog, iceberg_env  # noqa: F401  (fixtures)
from tests.adversarial.test_policy_names import _policy


def test_a_catalog_table_located_through_a_link_is_covered_by_the_catalogs_policy(
        catalog: SqlCatalog, tmp_path: Path) -> None:  # noqa: F811
    volume = tmp_path / "volume"
    real = volume / "orders_v2"
    real.mkdir(parents=True)
    (volume / "current").symlink_to(real, target_is_directory=True)
    location = str(volume / "current")
    table = catalog.create_table(("ns", "ext"), schema=rows().schema, location=location)
    table.append(rows())
    iceberg_attest_after_write(table, model="m", program_hash=PROGRAM)
    policy = _policy(tmp_path, [f"iceberg://{CATALOG}/*"])
    rc, doc = audit(f"iceberg://{CATALOG}", "--policy", policy)
    assert rc == 1 and doc["tables"][0]["code"] == "signature_missing", doc  # control
    rc, doc = audit(str(volume), "--policy", policy)
    found = by_table(doc)
    assert sorted(found) == [location, str(real)], doc  # the link and the folder it names
    for name, row in found.items():
        # Before: VERIFIED (unsigned, read without a catalog), exit 0.
        assert (row["outcome"], row["code"]) == ("NOT VERIFIED", "signature_missing"), (name, row)
        assert any(f"verified through catalog {CATALOG!r}, whose table ns.ext it is" in n for n in row["notes"]), row
    assert rc == 1
    for name in (str(real), location):
        rc, doc = verify(name, "--policy", policy)
        assert rc == 1 and "signature_missing" in codes(doc), (name, doc)
