"""Round 20, held: what the two-readings refusal and the one-table-one-line dedupe leave alone.

- ``file://<x>/my%20lake`` with only ``<x>/my lake`` there, ``file://<x>/lake#frag`` with no ``lake#frag`` folder: one
  reading exists, no other reader finds a table at the other — walked as delta-rs opens it.
- ``..`` is never folded in the dedupe: ``/lake/link/../orders`` with ``link`` → ``/other/sub`` is ``/other/orders`` to
  the kernel, another table than ``/lake/orders``: two lines.
"""

from __future__ import annotations

from pathlib import Path

from tests.adversarial.test_audit_discovery_attacks import attested, audit, by_table, tamper


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
