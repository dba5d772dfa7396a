"""Round 17: audits steered past a table's catalog, and past a table.

- A SQL catalog table whose location is spelt through a link (``location="/volume/current"`` with ``current`` →
  ``orders_v2``, a blue-green switch), found as its folder by
  ``attest audit <volume>`` or named by ``attest verify <folder>``: the catalog owning it was looked for by the
  folder's real name in the catalog's metadata locations (``/orders_v2/``), which the link's spelling does not hold —
  read statically, matched by its path only, and ``require_signed = ["iceberg://prod/*"]`` passed it unsigned,
  VERIFIED, exit 0 (round 13's attack, the location spelt otherwise).
- The library's discovery lists (``carriers.discovery.expand``, ``tables_under``, ``delta_tables_under``,
  ``remote_tables_under``, ``iceberg_tables``) dropped every place ``attest audit`` makes an ERROR line — a view
  named as a table, a catalog entry no name opens, a folder that cannot be listed, a walk cut short: a notebook
  verifying each table listed saw all pass while a table under the target was never checked. Now they raise, coded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

import carriers.discovery as discovery
from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, rows, verify
from tests.adversarial.test_audit_discovery_attacks import audit, by_table
from tests.adversarial.test_iceberg_attacks import CATALOG, catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.adversarial.test_policy_names import _policy


def test_a_catalog_table_located_through_a_link_is_covered_by_the_catalogs_policy(
        catalog: SqlCatalog, tmp_path: Path) -> None:  # noqa: F811
    volume = tmp_path / "volume"
    real = volume / "orders_v2"
    real.mkdir(parents=True)
    (volume / "current").symlink_to(real, target_is_directory=True)
    location = str(volume / "current")
    ext = catalog.create_table(("ns", "ext"), schema=rows().schema, location=location)
    ext.append(rows())
    iceberg_attest_after_write(ext, model="m", program_hash=PROGRAM)
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


def test_the_library_lists_never_drop_a_view_named_as_a_table(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    from tests.adversarial.test_audit_round14 import _entry

    _entry(catalog, "ns", "T", "VIEW")  # iceberg-java's row of a view named as the table ns.t (by case)
    rc, doc = audit(f"iceberg://{CATALOG}/ns")
    assert rc == 2, doc  # control: the audit's ERROR line
    for call in (lambda: discovery.expand(f"iceberg://{CATALOG}/ns"),
                 lambda: list(discovery.iceberg_tables(CATALOG, "ns")),
                 lambda: list(discovery.iceberg_tables(CATALOG, None))):
        # Before: [ns.t], the twin dropped without a word.
        with pytest.raises(AttestError, match="named as a table") as raised:
            call()
        assert raised.value.code.value == "table_not_audited"
    assert [str(r) for r in discovery.discover(f"iceberg://{CATALOG}/ns").refs] == [f"iceberg://{CATALOG}/ns.t"]


def test_the_library_lists_never_drop_a_walk_cut_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalake import write_deltalake

    for name in ("a", "b/c", "d/e/f"):
        write_deltalake(str(tmp_path / "lake" / name), rows())
    monkeypatch.setattr(discovery, "MAX_LOCAL_FOLDERS", 3)
    lake = tmp_path / "lake"
    rc, doc = audit(str(lake))
    assert rc == 2, doc  # control
    for call in (lambda: discovery.expand(str(lake)), lambda: list(discovery.tables_under(lake)),
                 lambda: list(discovery.delta_tables_under(lake))):
        with pytest.raises(AttestError, match="the walk stopped") as raised:
            call()
        assert raised.value.code.value == "table_not_audited"
