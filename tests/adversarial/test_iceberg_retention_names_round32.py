"""Round 32: a tag that only borrows the retention tag's name.

recipe-attest moves its retention tags (``recipe-attest``, ``recipe-attest@<branch>``) to the snapshot carrying each
attestation, so an audit gives them no line and a policy's ``tag_*`` does not name them (round 31). That was decided
by the name alone: anyone may create a tag so named, or move ours, onto rows no attestation binds. Spark reads
``t.`tag_recipe-attest@x``` (and ``VERSION AS OF 'recipe-attest@x'``) as that snapshot — its unattested rows — while
the audit printed main's line alone, exit 0. A tag of such a name is now left out (of the audit's lines and of a
policy's tag names) only when it is recipe-attest's: on a snapshot carrying an attestation of ours (``our_tag``, the
test the record already made before moving it); any other is a reader's tag like any other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import IcebergCarrier, attest_after_write, tags_off
from tests.adversarial.test_iceberg_branch_names_round30 import TABLE, _flags, _json
from tests.iceberg.conftest import PROGRAM, rows


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    return catalog.create_table("ns.t", schema=rows(0).schema)


def _unattested_then_attested(catalog: SqlCatalog, table: Table) -> int:
    """A snapshot of a row (666) no attestation binds, then main's own rows attested over it; returns the former."""
    table.append(rows(666, 1))
    stray = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table = catalog.load_table("ns.t")
    table.overwrite(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return stray


def _retag(catalog: SqlCatalog, name: str, at: int) -> None:
    table = catalog.load_table("ns.t")
    manage = table.manage_snapshots()
    if name in table.metadata.refs:
        manage = manage.remove_tag(name)
    manage.create_tag(at, name).commit()


@pytest.mark.parametrize("name", ["recipe-attest", "recipe-attest@audit", "recipe-attest@main"])
def test_a_tag_named_as_ours_at_unattested_rows_is_a_line(catalog: SqlCatalog, table: Table, tmp_path: Path,
                                                          name: str) -> None:
    stray = _unattested_then_attested(catalog, table)
    _retag(catalog, name, stray)  # ours moved, or a new tag borrowing the name
    read = catalog.load_table("ns.t").scan().use_ref(name).to_arrow().column("id").to_pylist()
    assert read == [666]  # what readers of the tag get
    code, out = _json("audit", f"iceberg://{CATALOG_NS}", *_flags(tmp_path))
    lines = {row["table"]: (row["outcome"], row["version"]) for row in out["tables"]}
    # was: exit 0, main's line alone
    assert (code, lines) == (1, {TABLE: ("VERIFIED", lines[TABLE][1]),
                                 f"{TABLE}.tag_{name}": ("UNATTESTED", str(stray))}), out


def test_recipe_attest_s_own_retention_tag_still_has_no_line(catalog: SqlCatalog, table: Table,
                                                             tmp_path: Path) -> None:
    """The tag the record moved (on the snapshot carrying the attestation) stays bookkeeping: main gone stale past
    it, the audit has main's STALE line alone (round 31's ``test_a_retention_tag_has_no_line``), and the carrier's
    choice says the same."""
    _unattested_then_attested(catalog, table)
    catalog.load_table("ns.t").append(rows(1, 1))  # no attestation
    loaded = catalog.load_table("ns.t")
    heads = {loaded.metadata.refs["main"].snapshot_id}
    assert loaded.metadata.refs["recipe-attest"].snapshot_id not in heads
    assert tags_off(IcebergCarrier(loaded), heads) == []
    code, out = _json("audit", f"iceberg://{CATALOG_NS}", *_flags(tmp_path))
    assert (code, [(r["table"], r["outcome"]) for r in out["tables"]]) == (1, [(TABLE, "STALE")]), out


def test_a_tag_at_main_s_head_read_under_another_schema_is_not_verified(catalog: SqlCatalog, tmp_path: Path) -> None:
    """Held: Spark and pyiceberg read a tag under its snapshot's own schema, main under the table's current one. A
    tag at main's head has no line of its own (it reads what main's line checked) — so main's head snapshot, its
    ``schema-id`` pointed at an older schema (``a`` and ``b`` swapped back) by a hand-made metadata commit, must not
    verify: the tag's readers would read ``a`` holding the values attested as ``b``."""
    import pyarrow as pa

    from tests.iceberg.conftest import rewrite_metadata

    catalog.create_table("ns.t", schema=pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    for old, new in (("a", "tmp"), ("b", "a"), ("tmp", "b")):
        with catalog.load_table("ns.t").update_schema() as update:
            update.rename_column(old, new)
    catalog.load_table("ns.t").append(pa.table({"b": pa.array([1], pa.int64()), "a": pa.array([10], pa.int64())}))
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    head = table.metadata.refs["main"].snapshot_id
    table.manage_snapshots().create_tag(head, "x").commit()

    def first_schema(doc: dict[str, Any]) -> None:
        [snap] = [s for s in doc["snapshots"] if s["snapshot-id"] == head]
        snap["schema-id"] = 0

    table = rewrite_metadata(catalog, catalog.load_table("ns.t"), first_schema)
    assert table.scan().use_ref("x").to_arrow().to_pydict() == {"a": [1], "b": [10]}  # the tag's readers
    assert table.scan().to_arrow().to_pydict() == {"b": [1], "a": [10]}  # main's
    code, out = _json("audit", f"iceberg://{CATALOG_NS}", *_flags(tmp_path))
    assert code == 1 and [(r["table"], r["outcome"]) for r in out["tables"]] == [(TABLE, "NOT VERIFIED")], out
    for name in (TABLE, f"{TABLE}.tag_x"):
        code, out = _json("verify", name, *_flags(tmp_path))
        assert code == 1 and [e["code"] for e in out["errors"]] == ["reader_view_changed"], (name, out)


CATALOG_NS = TABLE.removeprefix("iceberg://").rsplit(".", 1)[0]
