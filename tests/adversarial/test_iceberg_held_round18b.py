"""Round 18b pins: ref names that differ only in spelling, and a tag named with a snapshot id's digits — held.

``verify --snapshot-id <name>`` resolves a tag or branch by its exact name (pyiceberg's ``snapshot_by_name``; Iceberg
Java keys ``refs`` by the exact string, read in its source): two tags whose names differ only in case, Unicode form
(NFC / NFD), a zero-width space, ``k`` / KELVIN SIGN, ``%41`` / ``A``, ``+`` / space, or with ``@`` / ``/`` inside,
on the attested snapshot S and an unattested head U, each verify the snapshot their exact name names: S VERIFIED,
U not. A tag (or branch) named with U's ASCII digits, placed on S, is snapshot U for ``--snapshot-id`` and for
``@<digits>`` as for Spark (``Longs.tryParse`` reads the digits as an id: test_time_travel_held_round13.py), and a tag
``-<U>`` is no snapshot (``Longs.tryParse`` reads a negative id, read in its source; none has it):
``version_not_found``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, verify
from tests.adversarial.test_iceberg_attacks import REF, catalog, iceberg_env  # noqa: F401 (fixtures)


def _ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _attested_then_appended(table: Table) -> tuple[int, int]:
    """(the attested snapshot S, the unattested head U)."""
    table.append(_ids(1))
    attested = int(str(attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version))
    table.append(_ids(666))
    head = table.current_snapshot()
    assert head is not None
    return attested, head.snapshot_id


@pytest.mark.parametrize(
    ("on_s", "on_u"),
    [
        ("Tag", "tag"),
        ("caf\u00e9", "cafe\u0301"),
        ("x", "x\u200b"),
        ("k", "\u212a"),
        ("a%41", "aA"),
        ("a+b", "a b"),
        ("a@b", "b"),
        ("a/b", "a"),
    ],
)
def test_refs_differing_only_in_spelling_resolve_by_exact_name(
    catalog: SqlCatalog,  # noqa: F811
    on_s: str,
    on_u: str,
) -> None:
    table = catalog.create_table("ns.t", schema=_ids().schema)
    s, u = _attested_then_appended(table)
    table.manage_snapshots().create_tag(snapshot_id=s, tag_name=on_s).commit()
    table.manage_snapshots().create_tag(snapshot_id=u, tag_name=on_u).commit()
    rc, doc = verify(REF, "--snapshot-id", on_s)
    assert rc == 0 and doc["passed"] and doc["version"] == str(s), doc
    rc, doc = verify(REF, "--snapshot-id", on_u)
    assert rc != 0 and not doc["passed"] and doc["version"] == str(u), doc


@pytest.mark.parametrize("kind", ["tag", "branch"])
def test_a_ref_named_with_another_snapshots_digits_is_that_snapshot(catalog: SqlCatalog, kind: str) -> None:  # noqa: F811
    table = catalog.create_table("ns.t", schema=_ids().schema)
    s, u = _attested_then_appended(table)
    if kind == "tag":
        table.manage_snapshots().create_tag(snapshot_id=s, tag_name=str(u)).commit()
    else:
        table.manage_snapshots().create_branch(snapshot_id=s, branch_name=str(u)).commit()
    for args in ((REF, "--snapshot-id", str(u)), (f"{REF}@{u}",)):
        rc, doc = verify(*args)
        assert rc != 0 and not doc["passed"] and doc["version"] == str(u), doc


def test_a_tag_named_with_a_negative_id_is_no_snapshot(catalog: SqlCatalog) -> None:  # noqa: F811
    table = catalog.create_table("ns.t", schema=_ids().schema)
    s, u = _attested_then_appended(table)
    table.manage_snapshots().create_tag(snapshot_id=s, tag_name=f"-{u}").commit()
    assert_refused(REF, "version_not_found", "--snapshot-id", f"-{u}")
