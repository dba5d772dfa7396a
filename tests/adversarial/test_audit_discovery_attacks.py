"""Attacks on what ``attest audit`` finds (issue 29.5): someone who can write the lake's storage hides a tampered table
from an audit by changing the folders around it, never the table itself.

Before: copying another attested table into a parent folder (``lake/sales/`` above ``lake/sales/orders``) made the
parent a table, and the walk never entered it: ``1 verified``, exit 0, the tampered ``orders`` never checked. A table
folder replaced by a symlink was skipped without a word. Now every table a reader can reach by a name under the
audited folder is audited (nested ones noted as nested, ones reached through a link noted with the link) or listed
with the reason it was not; the audit of a tampered table exits non-zero whatever is put around it.

A reader reaches these tables: delta-rs opens ``lake/sales/orders`` inside another table's folder and through any
link (measured in each test), and so does any engine given the path.
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from attest.cli import main
from carriers.delta.carrier import attest_after_write
from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write
from tests.adversarial.conftest import PROGRAM, rows
from tests.adversarial.test_iceberg_attacks import CATALOG, catalog, iceberg_env  # noqa: F401  (fixtures)


def audit(*targets: str) -> tuple[int, dict[str, Any]]:
    out = StringIO()
    with redirect_stdout(out):
        rc = main(["audit", *targets, "--json"])
    return rc, json.loads(out.getvalue())


def by_table(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["table"]: t for t in doc["tables"]}


def attested(path: Path) -> Path:
    write_deltalake(str(path), rows(), partition_by=["p"])
    attest_after_write(str(path), model=path.name, program_hash=PROGRAM)
    return path


def tamper(table: Path) -> None:
    """Flip one byte in the middle of one data file, as a storage writer can."""
    data = sorted(table.rglob("*.parquet"))[0]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))


def assert_caught(row: dict[str, Any]) -> None:
    assert row["outcome"] == "NOT VERIFIED" and row["code"] == "artifact_hash_mismatch", row


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    root = tmp_path / "lake"
    attested(root / "sales" / "orders")
    attested(root / "customers")
    rc, doc = audit(str(root))
    assert rc == 0 and doc["counts"]["VERIFIED"] == 2, doc
    return root


def test_a_table_copied_into_the_parent_folder_no_longer_hides_the_one_below(lake: Path) -> None:
    """The issue's attack: the whole of ``customers`` (log, sidecars, data) copied into ``lake/sales`` — a genuine,
    verifying table — and ``orders`` below it tampered."""
    for item in (lake / "customers").iterdir():
        (shutil.copytree if item.is_dir() else shutil.copy2)(item, lake / "sales" / item.name)
    tamper(lake / "sales" / "orders")
    assert DeltaTable(str(lake / "sales" / "orders")).version() == 1  # a reader still opens orders as its own table
    rc, doc = audit(str(lake))
    found = by_table(doc)
    assert rc == 1, doc
    assert found[str(lake / "sales")]["outcome"] == "VERIFIED"
    orders = found[str(lake / "sales" / "orders")]
    assert_caught(orders)
    assert any(n.startswith(f"nested inside table {lake / 'sales'}") for n in orders["notes"]), orders
    rc, doc = audit(str(lake / "sales"))  # the outer table named as the target: its folder is walked all the same
    assert rc == 1 and set(by_table(doc)) == {str(lake / "sales"), str(lake / "sales" / "orders")}, doc
    assert_caught(by_table(doc)[str(lake / "sales" / "orders")])


def test_only_a_copied_log_in_the_parent(lake: Path) -> None:
    """Only ``_delta_log`` copied: the parent is a table whose files are missing; ``orders`` is still audited."""
    shutil.copytree(lake / "customers" / "_delta_log", lake / "sales" / "_delta_log")
    tamper(lake / "sales" / "orders")
    rc, doc = audit(str(lake))
    assert rc != 0 and doc["passed"] is False, doc
    assert_caught(by_table(doc)[str(lake / "sales" / "orders")])


@pytest.mark.parametrize("where", ["inside the audited folder", "outside the audited folder"])
def test_a_table_folder_replaced_by_a_link_to_a_tampered_table(lake: Path, where: str) -> None:
    base = lake / "team" if where.startswith("inside") else lake.parent / "elsewhere"
    other = attested(base / "orders_copy")
    tamper(other)
    shutil.rmtree(lake / "sales" / "orders")
    (lake / "sales" / "orders").symlink_to(other, target_is_directory=True)
    assert DeltaTable(str(lake / "sales" / "orders")).version() == 1
    rc, doc = audit(str(lake))
    assert rc == 1, doc
    row = by_table(doc)[str(lake / "sales" / "orders")]
    assert_caught(row)
    assert any(n.startswith(f"reached through the link {lake / 'sales' / 'orders'} -> ") for n in row["notes"]), row
    assert any(where in n for n in row["notes"]) == where.startswith("outside"), row


def test_a_parent_folder_replaced_by_a_link_outside_and_a_link_cycle(lake: Path) -> None:
    """``lake/sales`` a link to a folder outside holding a tampered ``orders``, and a loop back to the lake: the
    tampered table is audited under its name, the loop is listed and not followed."""
    outside = lake.parent / "outside"
    attested(outside / "orders")
    tamper(outside / "orders")
    shutil.rmtree(lake / "sales")
    (lake / "sales").symlink_to(outside, target_is_directory=True)
    (outside / "loop").symlink_to(lake, target_is_directory=True)
    rc, doc = audit(str(lake))
    assert rc == 1, doc
    assert_caught(by_table(doc)[str(lake / "sales" / "orders")])
    skipped = {s["path"]: s for s in doc["skipped"]}
    loop = skipped[str(lake / "sales" / "loop")]
    assert loop["code"] == "table_not_audited" and "cycle" in loop["message"], doc
    assert len(doc["tables"]) == 2, doc  # the loop did not repeat the lake


def test_a_link_into_a_hidden_folder(lake: Path) -> None:
    """``lake/sales`` a link to ``lake/_s`` (hidden: not walked by its own name) holding a tampered ``orders``."""
    shutil.move(lake / "sales", lake / "_s")
    tamper(lake / "_s" / "orders")
    (lake / "sales").symlink_to(lake / "_s", target_is_directory=True)
    rc, doc = audit(str(lake))
    assert rc == 1, doc
    assert_caught(by_table(doc)[str(lake / "sales" / "orders")])


def test_a_hidden_table_is_listed_with_its_reason(lake: Path) -> None:
    attested(lake / "_staging")
    rc, doc = audit(str(lake))
    assert rc == 0, doc  # readers of lake/ do not see it: listed, the exit code stays the tables'
    entry = {s["path"]: s for s in doc["skipped"]}[str(lake / "_staging")]
    assert entry["code"] == "table_not_audited" and "hidden" in entry["message"], doc
    out = StringIO()
    with redirect_stdout(out):
        main(["audit", str(lake)])
    assert f"SKIPPED       none    {lake / '_staging'} (table_not_audited): a delta table" in out.getvalue()


def test_a_table_below_a_hidden_folder_is_listed_too(lake: Path) -> None:
    """``lake/_staging/eu/orders``, tampered: a reader opens it by its name, and the audit said nothing of it (only a
    hidden folder that is itself a table was listed). Every table under a hidden folder is listed now."""
    tamper(attested(lake / "_staging" / "eu" / "orders"))
    attested(lake / ".snapshots" / "customers")
    assert DeltaTable(str(lake / "_staging" / "eu" / "orders")).version() == 1  # a reader reaches it by its name
    rc, doc = audit(str(lake))
    skipped = {s["path"]: s for s in doc["skipped"]}
    for hidden, table in (("_staging", "_staging/eu/orders"), (".snapshots", ".snapshots/customers")):
        entry = skipped[str(lake / table)]
        assert entry["code"] == "table_not_audited" and f"under {lake / hidden}" in entry["message"], doc
    assert rc == 0 and len(doc["tables"]) == 2, doc  # listed, not audited: the exit code stays the tables'


def test_names_differing_only_by_case_are_both_audited_and_noted(lake: Path) -> None:
    tamper(attested(lake / "Customers"))
    rc, doc = audit(str(lake))
    found = by_table(doc)
    assert rc == 1, doc
    assert_caught(found[str(lake / "Customers")])
    for name in ("Customers", "customers"):
        row = found[str(lake / name)]
        assert any("only by case or Unicode form" in n for n in row["notes"]), row


def test_two_catalog_entries_spelling_one_name(catalog: SqlCatalog) -> None:  # noqa: F811
    """Namespace ``a.b`` table ``c`` and namespace ``a`` table ``b.c`` are both ``iceberg://<cat>/a.b.c``: only one can
    be opened by that name, so the other is an ERROR row (never silently audited twice as the same table)."""
    schema = pa.schema([("x", pa.int64())])
    catalog.create_namespace("a")
    catalog.create_namespace(("a", "b"))
    for ident in (("a", "b", "c"), ("a", "b.c")):
        table = catalog.create_table(ident, schema=schema)
        table.append(pa.table({"x": [1]}))
        iceberg_attest_after_write(table, model="m", program_hash=PROGRAM)
    assert sorted(catalog.list_tables("a")) == [("a", "b.c")] and catalog.list_tables(("a", "b")) == [("a", "b", "c")]
    rc, doc = audit(f"iceberg://{CATALOG}/a.b")
    assert rc == 0 and len(doc["tables"]) == 1, doc  # namespace a.b alone: one entry, no collision
    name = f"iceberg://{CATALOG}/a.b.c"
    for target in (f"iceberg://{CATALOG}", f"iceberg://{CATALOG}/a"):  # namespace a holds a.b: both entries
        rc, doc = audit(target)
        rows_ = [t for t in doc["tables"] if t["table"] == name]
        assert rc == 2 and len(rows_) == 2, doc
        assert sorted(r["outcome"] for r in rows_) == ["ERROR", "VERIFIED"], rows_
        error = next(r for r in rows_ if r["outcome"] == "ERROR")
        # (round 16: the entry whose level holds a '.' is the one no name opens, whatever else the listing holds)
        assert error["code"] == "table_not_audited" and "no iceberg:// name opens it" in error["message"], error


def _iceberg_attested(cat: SqlCatalog, ident: tuple[str, ...], *, tampered: bool = False) -> None:
    table = cat.create_table(ident, schema=rows().schema)
    table.append(rows())
    iceberg_attest_after_write(table, model="m", program_hash=PROGRAM)
    if tampered:  # one byte of its data file flipped, as a storage writer can
        from carriers.iceberg.carrier import IcebergCarrier
        from tests.iceberg.conftest import local

        victim = local(IcebergCarrier(cat.load_table(ident), catalog_name=CATALOG).list_files()[0].location)
        raw = bytearray(victim.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        victim.write_bytes(bytes(raw))


def test_a_namespace_is_audited_with_the_namespaces_nested_in_it(catalog: SqlCatalog) -> None:  # noqa: F811
    """``iceberg://<cat>/finance`` audited the tables of ``finance`` only: a tampered table in ``finance.eu`` was never
    checked, ``1 verified``, exit 0. A namespace is audited with the namespaces below it, as a folder with its
    subfolders (pyiceberg's ``load_table(("finance", "eu", "orders"))`` reads the tampered table)."""
    catalog.create_namespace("finance")
    catalog.create_namespace(("finance", "eu"))
    catalog.create_namespace("finance_other")  # a LIKE 'finance%' sibling: not below finance
    _iceberg_attested(catalog, ("finance", "ledger"))
    _iceberg_attested(catalog, ("finance", "eu", "orders"), tampered=True)
    _iceberg_attested(catalog, ("finance_other", "x"))
    rc, doc = audit(f"iceberg://{CATALOG}/finance")
    tables = by_table(doc)
    assert sorted(tables) == [f"iceberg://{CATALOG}/finance.eu.orders", f"iceberg://{CATALOG}/finance.ledger"], doc
    assert rc == 1 and tables[f"iceberg://{CATALOG}/finance.ledger"]["outcome"] == "VERIFIED", doc
    assert_caught(tables[f"iceberg://{CATALOG}/finance.eu.orders"])


def test_a_catalog_listing_nested_namespaces_relatively_is_an_error(catalog: SqlCatalog,  # noqa: F811
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog that answers "the namespaces in finance" with ``("eu",)`` instead of ``("finance", "eu")`` (a REST
    server off the spec): the tables below cannot be found for certain. An ERROR line, never a silent skip."""
    catalog.create_namespace("finance")
    catalog.create_namespace(("finance", "eu"))
    _iceberg_attested(catalog, ("finance", "ledger"))
    _iceberg_attested(catalog, ("finance", "eu", "orders"), tampered=True)
    listed = SqlCatalog.list_namespaces

    def relative(self: SqlCatalog, namespace: Any = ()) -> list[tuple[str, ...]]:
        found = listed(self, namespace)
        return [tuple(ns[len(namespace):]) for ns in found] if namespace else found

    monkeypatch.setattr(SqlCatalog, "list_namespaces", relative)
    for target in (f"iceberg://{CATALOG}/finance", f"iceberg://{CATALOG}"):
        rc, doc = audit(target)
        assert rc == 2 and any(t["code"] == "table_not_audited" and "which it is not" in t["message"]
                               for t in doc["tables"]), doc


def test_a_dotted_name_that_is_a_table_and_a_namespace_audits_both(catalog: SqlCatalog) -> None:  # noqa: F811
    """``iceberg://<cat>/finance.eu`` named table ``eu`` of ``finance`` and was audited as that table alone, while
    namespace ``finance.eu`` held a tampered table: exit 0. Now a nested namespace can be audited by its name, and a
    name that is both gets both audited (the table's row says so)."""
    catalog.create_namespace("finance")
    catalog.create_namespace(("finance", "eu"))
    _iceberg_attested(catalog, ("finance", "eu"))
    _iceberg_attested(catalog, ("finance", "eu", "orders"), tampered=True)
    rc, doc = audit(f"iceberg://{CATALOG}/finance.eu")
    tables = by_table(doc)
    assert sorted(tables) == [f"iceberg://{CATALOG}/finance.eu", f"iceberg://{CATALOG}/finance.eu.orders"], doc
    assert rc == 1, doc
    table = tables[f"iceberg://{CATALOG}/finance.eu"]
    assert table["outcome"] == "VERIFIED" and any("a table and a namespace" in n for n in table["notes"]), table
    assert_caught(tables[f"iceberg://{CATALOG}/finance.eu.orders"])
    catalog.drop_table(("finance", "eu"))  # the namespace alone, by its dotted name
    rc, doc = audit(f"iceberg://{CATALOG}/finance.eu")
    assert rc == 1 and [t["table"] for t in doc["tables"]] == [f"iceberg://{CATALOG}/finance.eu.orders"], doc


def test_a_walk_is_bounded(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Links can make a tree look huge (each name of a diamond is walked): the walk stops at its budget and says what
    was not walked, as an ERROR row (the audit cannot pass)."""
    import carriers.discovery as discovery

    monkeypatch.setattr(discovery, "MAX_LOCAL_FOLDERS", 3)
    rc, doc = audit(str(lake))
    assert rc == 2 and any(t["code"] == "table_not_audited" and "the walk stopped" in t["message"]
                           for t in doc["tables"]), doc


@pytest.mark.parametrize("fmt", ["text", "table"])
def test_a_folder_name_with_a_line_break_cannot_forge_an_audit_line(lake: Path, fmt: str) -> None:
    """A table folder renamed ``x\\nVERIFIED      bytes   fake``: the old text output printed the break, and the
    forged second line read as a verified table; ``--format table`` printed it until this round. Names, messages and
    notes stay on their own line."""
    tamper(lake / "customers")
    os.rename(lake / "customers", lake / "x\nVERIFIED      bytes   fake")
    out = StringIO()
    with redirect_stdout(out):
        rc = main(["audit", str(lake), "--format", fmt])
    lines = out.getvalue().splitlines()
    assert rc != 0 and not any(line.startswith("VERIFIED") and "fake" in line for line in lines), lines
    assert any("x\ufffdVERIFIED" in line for line in lines), lines


def test_iceberg_metadata_put_into_a_delta_table_folder_is_audited_too(lake: Path, tmp_path: Path) -> None:
    """An Iceberg table created at ``lake/customers`` (its ``metadata/`` and ``data/`` beside the attested Delta log):
    a path-based Iceberg reader (pyiceberg's ``StaticTable``, a Hadoop catalog) of that folder reads the planted rows,
    while the audit checked the Delta log alone — ``2 verified``, exit 0. Both readings are audited now, each noted."""
    import glob

    from pyiceberg.table import StaticTable

    folder = lake / "customers"
    planted = SqlCatalog("planted", uri=f"sqlite:///{tmp_path}/planted.db", warehouse=f"file://{tmp_path}/wh")
    planted.create_namespace("ns")
    table = planted.create_table("ns.t", schema=pa.schema([("id", pa.int64())]), location=folder.as_uri())
    table.append(pa.table({"id": pa.array([666], pa.int64())}))
    metadata = sorted(glob.glob(str(folder / "metadata" / "*.metadata.json")))[-1]
    assert StaticTable.from_metadata(metadata).scan().to_arrow().to_pylist() == [{"id": 666}]  # what a reader gets
    assert DeltaTable(str(folder)).to_pyarrow_table().num_rows == rows().num_rows  # Delta readers: as before
    rc, doc = audit(str(lake))
    rows_ = [t for t in doc["tables"] if t["table"] == str(folder)]
    assert rc == 1 and sorted((r["table_format"], r["outcome"]) for r in rows_) == [
        ("delta", "VERIFIED"), ("iceberg", "UNATTESTED")], doc
    assert all(any("an Iceberg table folder" in n for n in r["notes"]) for r in rows_), rows_
    rc, doc = audit(str(folder))  # the folder itself as the target: both readings too
    assert rc == 1 and len(doc["tables"]) == 2, doc
    out = StringIO()
    with redirect_stdout(out):  # verify reads the Delta table, and says what it did not check
        rc = main(["verify", str(folder), "--json"])
    report = json.loads(out.getvalue())
    assert rc == 0 and report["table_format"] == "delta", report
    assert any("also holds Iceberg metadata" in n for n in report["notes"]), report


def test_folder_names_a_uri_would_decode_are_audited_as_themselves(lake: Path) -> None:
    """Held (pinned): a tampered copy of ``a b`` named ``a%20b`` (and ``x#y`` / ``x%23y``, ``q`` / ``q?v=1``) is never
    read through its decoded twin: each folder is its own line, the copies caught."""
    for good, twin in (("a b", "a%20b"), ("x#y", "x%23y"), ("q", "q?v=1")):
        attested(lake / good)
        shutil.copytree(lake / good, lake / twin)
        tamper(lake / twin)
    rc, doc = audit(str(lake))
    tables = by_table(doc)
    assert rc == 1, doc
    for good, twin in (("a b", "a%20b"), ("x#y", "x%23y"), ("q", "q?v=1")):
        assert tables[str(lake / good)]["outcome"] == "VERIFIED", doc
        assert_caught(tables[str(lake / twin)])


def test_iceberg_metadata_in_the_old_compressed_name_is_not_passed_over(tmp_path: Path) -> None:
    """``v<N>.metadata.json.gz``: the name Iceberg's Hadoop tables wrote before ``.gz.metadata.json``, which Iceberg
    Java's ``HadoopTableOperations`` still reads ("backward-compatible with .metadata.json.gz files"). A storage
    writer put the table's next metadata there: the folder read without a catalog took the highest version among the
    other names and verified as of the older file (VERIFIED), while a Hadoop reader reads the newer. And a folder
    holding only such files was no table to the walk: not audited, not listed. Now the first is refused
    (``unsupported_table``: pyiceberg does not read that name) and the second is found, and refused likewise."""
    import gzip

    from tests.test_audit_warehouse import audit_json, warehouse
    from tests.test_audit_warehouse import rows as by_name

    wh = warehouse(tmp_path)
    metadata = wh["iceberg"] / "metadata"
    newest = max(metadata.glob("*.metadata.json"))
    rc, doc = audit_json("W", cwd=tmp_path)
    assert rc == 0 and by_name(doc)["W/iceberg/ns/t"]["outcome"] == "VERIFIED", doc  # control
    planted = metadata / f"v{int(newest.name[:5]) + 1}.metadata.json.gz"
    planted.write_bytes(gzip.compress(newest.read_bytes()))
    rc, doc = audit_json("W", cwd=tmp_path)
    row = by_name(doc)["W/iceberg/ns/t"]
    assert (rc, row["outcome"], row["code"]) == (2, "ERROR", "unsupported_table"), doc
    assert planted.name in row["message"], row
    planted.unlink()
    old = tmp_path / "W" / "old"
    shutil.copytree(wh["iceberg"], old)
    for name in (old / "metadata").glob("*.metadata.json"):
        name.unlink()
    (old / "metadata" / "v1.metadata.json.gz").write_bytes(gzip.compress(newest.read_bytes()))
    rc, doc = audit_json("W", cwd=tmp_path)
    assert by_name(doc)["W/old"]["code"] == "unsupported_table" and rc == 2, doc
    assert by_name(doc)["W/iceberg/ns/t"]["outcome"] == "VERIFIED", doc


def _hadoop_folder(tmp_path: Path) -> tuple[Path, list[Path]]:
    """The warehouse's Iceberg table with its metadata files named as Hadoop tables name them (``v<N>.metadata.json``:
    pyiceberg's ``0000N-<uuid>`` renamed in place, the table location unchanged), and those files in order."""
    from tests.test_audit_warehouse import warehouse

    folder = warehouse(tmp_path)["iceberg"]
    renamed = []
    for name in sorted((folder / "metadata").glob("*.metadata.json")):
        renamed.append(name.rename(name.with_name(f"v{int(name.name[:5])}.metadata.json")))
    return folder, renamed


def test_a_version_hint_older_than_a_gap_is_not_passed_over(tmp_path: Path) -> None:
    """A Hadoop table (``v0``, ``v1``, ``v2``: created, appended, attested). Iceberg Java's ``HadoopTableOperations``
    reads from ``version-hint.text`` up while ``v<N+1>`` exists. A storage writer deleted ``v1`` and wrote ``0`` in the
    hint: Hadoop readers read ``v0`` (the empty table), the folder read without a catalog took ``v2`` and VERIFIED.
    Now, when the Hadoop choice is not the file read, the folder is ``unsupported_table``; a hint that agrees, and
    none at all, verify as before; a hint that is a FIFO is refused, never opened."""
    from tests.test_audit_warehouse import audit_json
    from tests.test_audit_warehouse import rows as by_name

    folder, files = _hadoop_folder(tmp_path)
    assert [f.name for f in files] == ["v0.metadata.json", "v1.metadata.json", "v2.metadata.json"]
    hint = folder / "metadata" / "version-hint.text"
    for text in (None, "2\n", "2"):  # controls: no hint, the hint Hadoop writes (with and without a line break)
        if text is not None:
            hint.write_text(text)
        rc, doc = audit_json("W", cwd=tmp_path)
        assert rc == 0 and by_name(doc)["W/iceberg/ns/t"]["outcome"] == "VERIFIED", (text, doc)
    # An older hint with no gap above it verified here until round 20b: Java climbs to v2, but pyiceberg's reader of
    # the folder (StaticTable.from_metadata) reads the file the hint names, v1, without climbing — two readings.
    hint.write_text("1")
    rc, doc = audit_json("W", cwd=tmp_path)
    row = by_name(doc)["W/iceberg/ns/t"]
    assert (rc, row["code"]) == (2, "unsupported_table") and "reads metadata/v1.metadata.json" in row["message"], doc
    files[1].unlink()
    hint.write_text("0\n")
    rc, doc = audit_json("W", cwd=tmp_path)
    row = by_name(doc)["W/iceberg/ns/t"]
    assert (rc, row["code"]) == (2, "unsupported_table") and "read version 0" in row["message"], doc
    hint.unlink()
    os.mkfifo(hint)
    rc, doc = audit_json("W", cwd=tmp_path)
    row = by_name(doc)["W/iceberg/ns/t"]
    assert (rc, row["code"]) == (2, "unsupported_table") and "not a regular file" in row["message"], doc


@pytest.mark.spark
def test_spark_reads_the_hadoop_choice_the_static_read_used_to_pass_over(tmp_path: Path, spark: Any) -> None:
    """What Spark (Iceberg 1.12, ``spark.read.format("iceberg").load(folder)``: HadoopTables) reads in the two
    attacks above, where the folder read without a catalog verified ``v2`` (2 rows): a hint of ``0`` with ``v1``
    deleted reads the empty ``v0``; a ``v3.metadata.json.gz`` (here a copy of the empty ``v0``) is read, with the hint
    at 2 or without one. Each time the audit is now ``unsupported_table``, never VERIFIED."""
    import gzip

    from tests.test_audit_warehouse import audit_json
    from tests.test_audit_warehouse import rows as by_name

    def read() -> int:
        return int(spark.read.format("iceberg").load(str(folder)).count())

    def audited() -> str | None:
        return by_name(audit_json("W", cwd=tmp_path)[1])["W/iceberg/ns/t"]["code"]  # type: ignore[no-any-return]

    folder, files = _hadoop_folder(tmp_path)
    meta = folder / "metadata"
    (meta / "version-hint.text").write_text("2\n")
    assert (read(), audited()) == (2, None)  # control: the attested v2, VERIFIED
    (meta / "v3.metadata.json.gz").write_bytes(gzip.compress(files[0].read_bytes()))
    assert (read(), audited()) == (0, "unsupported_table")
    (meta / "v3.metadata.json.gz").unlink()
    files[1].unlink()
    (meta / "version-hint.text").write_text("0\n")
    assert (read(), audited()) == (0, "unsupported_table")
