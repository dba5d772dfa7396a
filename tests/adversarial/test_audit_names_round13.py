"""Attacks on how ``attest audit`` names its tables (round 13).

A table found by a walk whose name reads as a version of another table — a prefix literally named
``lake/orders@0`` — was the same table, to the audit, as version 0 of ``lake/orders`` named by another target:
``attest audit s3://b/lake/orders@0 s3://b/lake/`` (the release version and the whole lake) checked version 0 of
``orders`` and dropped the prefix as already audited, a tampered table that delta-rs opens by its path never checked,
exit 0. Now tables are told apart by what they are (format, catalog, location, version), never by how their names
print, and a table whose name reads as a version says so.

A folder whose name is not UTF-8 (``bad\\xff``, which no engine opens: delta-rs refuses the path) replaced the
``--json`` and ``--format csv`` documents, every other table's verdict with them, by one ``internal_error``, and the
kept audit (``--to``) kept nothing. Now its line is an ERROR like any unreadable table's, the others as ever; so is
a Rust engine's panic on one table (a BaseException: it ended the audit, ``--json`` printed no table).

A table folder the auditor may list but not enter was no table to the walk (exit 0); an ``iceberg://`` target holding an
``@`` was one table, never looked up as a namespace; a catalog table stored outside the warehouse layout, found as its
folder, was outside a policy on the catalog's names. Each is in its test below."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from carriers.delta.carrier import attest_after_write
from carriers.iceberg.carrier import attest_after_write as iceberg_attest_after_write
from tests.adversarial.conftest import codes, rows, verify
from tests.adversarial.test_audit_discovery_attacks import _iceberg_attested, attested, audit, by_table
from tests.adversarial.test_iceberg_attacks import CATALOG, catalog, iceberg_env  # noqa: F401  (fixtures)
from tests.adversarial.test_policy_names import _policy
from tests.delta.conftest import PROGRAM, special_table
from tests.objectstore.test_stores import cli, options_args
from tests.servers.stores import Bucket


def test_a_prefix_named_like_a_version_is_audited_beside_that_version(s3: Bucket) -> None:
    opts = s3.storage_options
    orders, twin = s3.uri("lake/orders"), s3.uri("lake/orders@0")
    for uri in (orders, twin):
        write_deltalake(uri, special_table(), storage_options=opts)
        attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=opts)
    s3.flip_byte(sorted(k for k in s3.keys("lake/orders@0") if k.endswith(".parquet"))[0])
    assert DeltaTable(twin, storage_options=opts).version() == 1  # a reader opens the tampered prefix by that name
    done = cli("audit", orders + "@0", s3.uri("lake") + "/", "--json", *options_args(s3))
    rows = [(t["table"], t["version"], t["outcome"], t["code"]) for t in json.loads(done.stdout)["tables"]]
    # Before: [(orders@0, "0", VERIFIED), (orders, "1", VERIFIED)] and exit 0, the tampered prefix never checked.
    # The versioned target is refused as ambiguous, as a local folder of that name is: readers of the path read the
    # prefix's table (before, `attest verify s3://b/lake/orders@0` said VERIFIED of version 0 of orders).
    assert rows == [(twin, None, "ERROR", "invalid_argument"), (orders, "1", "VERIFIED", None),
                    (twin, "1", "NOT VERIFIED", "artifact_hash_mismatch")], done.stdout
    assert done.returncode == 2, done.stderr
    alone = cli("verify", orders + "@0", *options_args(s3))
    assert alone.returncode == 2 and "ambiguous" in alone.stderr + alone.stdout, alone
    assert cli("verify", orders, "--version", "0", *options_args(s3)).returncode == 0  # the version, unambiguous
    text = cli("audit", orders + "@0", s3.uri("lake") + "/", *options_args(s3)).stdout
    assert f"note: a table literally named {twin}, not version 0 of {orders}" in text, text
    assert text.count("note: a table literally named") == 1, text  # the version itself is not noted


def test_a_folder_name_that_is_not_utf8_keeps_every_line(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    attested(lake / "good")
    bad = os.fsdecode(os.fsencode(str(lake)) + b"/bad\xff")  # '/bad\udcff' to Python
    shutil.copytree(lake / "good", bad)
    rc, doc = audit(str(lake))  # before: {"verdict": "ERROR", "errors": [internal_error UnicodeEncodeError]}, no table
    rows = {t["table"]: (t["outcome"], t["code"]) for t in doc["tables"]}
    assert rows == {bad: ("ERROR", "table_unreadable"), str(lake / "good"): ("VERIFIED", None)}, doc
    assert rc == 2
    done = cli("audit", str(lake), "--format", "csv")
    assert done.returncode == 2 and f"{lake}/bad\\udcff,,,ERROR,table_unreadable" in done.stdout, done
    assert f"{lake / 'good'},delta," in done.stdout, done.stdout
    kept = tmp_path / "kept"
    done = cli("audit", str(lake), "--to", str(kept))
    assert done.returncode == 2 and "audit appended to" in done.stderr, done  # before: internal_error, nothing kept
    tables = sorted(DeltaTable(str(kept)).to_pyarrow_table().column("table").to_pylist())
    assert tables == [f"{lake}/bad\\udcff", str(lake / "good")], tables


def test_a_table_folder_the_auditor_may_list_but_not_enter_is_an_error(tmp_path: Path, monkeypatch: Any) -> None:
    """A table folder whose mode lets the auditor list it but not enter it (``r--`` for the auditor's user: a lake
    owned by the writing service, group-readable). The walk saw the name ``_delta_log`` but could not look at it
    (``stat`` denied, ``os.path.isdir`` False): the folder was no table, its ``_delta_log`` a hidden folder listed as
    unlistable, exit 0 with the table never audited — while the service's Spark and delta-rs read it as ever. Now it
    is an ERROR (``table_unreadable``), as a folder the walk cannot list is. Permissions are simulated: the tests run
    as root, whom modes do not stop (listing works, ``stat`` and entering below it are denied, as the kernel does)."""
    lake = tmp_path / "lake"
    attested(lake / "customers")
    write_deltalake(str(lake / "orders"), rows())  # unpartitioned: no folder below it for the walk to fail on
    attest_after_write(str(lake / "orders"), model="orders", program_hash=PROGRAM)
    assert DeltaTable(str(lake / "orders")).version() == 1  # the service's reader (here root) opens it
    shut = str(lake / "orders") + "/"
    real_stat, real_scandir = os.stat, os.scandir

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path).startswith(shut):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path).startswith(shut):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "scandir", scandir)
    rc, doc = audit(str(lake))
    lines = {t["table"]: (t["outcome"], t["code"]) for t in doc["tables"]}
    # Before: {customers: VERIFIED}, exit 0; orders/_delta_log only listed SKIPPED as a hidden folder.
    assert lines == {str(lake / "customers"): ("VERIFIED", None), str(lake / "orders"): ("ERROR", "table_unreadable")}
    assert "may not look at" in by_table(doc)[str(lake / "orders")]["message"], doc
    assert rc == 2


def test_a_dotted_name_holding_an_at_that_is_a_table_and_a_namespace_audits_both(catalog: SqlCatalog) -> None:  # noqa: F811
    """The closed ``finance.eu`` case (a name that is a table and a namespace audits both), with an ``@`` in it:
    ``iceberg://<cat>/team@eu.sales`` — any ``@`` made the target one table reference, never looked up as a
    namespace, so table ``sales`` of ``team@eu`` was audited alone while namespace ``team@eu.sales`` held a tampered
    table: exit 0. Only a trailing ``@<digits>`` is a snapshot; the name is looked up as any dotted name."""
    catalog.create_namespace("team@eu")
    catalog.create_namespace(("team@eu", "sales"))
    _iceberg_attested(catalog, ("team@eu", "sales"))
    _iceberg_attested(catalog, ("team@eu", "sales", "orders"), tampered=True)
    rc, doc = audit(f"iceberg://{CATALOG}/team@eu.sales")
    tables = by_table(doc)
    assert sorted(tables) == [f"iceberg://{CATALOG}/team@eu.sales", f"iceberg://{CATALOG}/team@eu.sales.orders"], doc
    assert rc == 1, doc
    assert tables[f"iceberg://{CATALOG}/team@eu.sales.orders"]["code"] == "artifact_hash_mismatch", doc


def test_a_snapshot_reference_that_is_also_a_namespace_audits_both(catalog: SqlCatalog) -> None:  # noqa: F811
    """``iceberg://<cat>/ns.t@<snapshot>`` (an auditor pinning the released snapshot of ``ns.t``) while a namespace
    ``ns."t@<snapshot>"`` holds a tampered table: the target was the snapshot alone, exit 0. Now a name that spells a
    snapshot and is a namespace gets both audited, the snapshot's line noted so."""
    _iceberg_attested(catalog, ("ns", "t"))
    snapshot = catalog.load_table(("ns", "t")).current_snapshot()
    assert snapshot is not None
    name = f"t@{snapshot.snapshot_id}"
    catalog.create_namespace(("ns", name))
    _iceberg_attested(catalog, ("ns", name, "orders"), tampered=True)
    rc, doc = audit(f"iceberg://{CATALOG}/ns.{name}")
    tables = by_table(doc)
    assert sorted(tables) == [f"iceberg://{CATALOG}/ns.{name}", f"iceberg://{CATALOG}/ns.{name}.orders"], doc
    assert tables[f"iceberg://{CATALOG}/ns.{name}.orders"]["code"] == "artifact_hash_mismatch", doc
    pinned = tables[f"iceberg://{CATALOG}/ns.{name}"]
    assert pinned["outcome"] == "VERIFIED" and any("a snapshot of table ns.t and a namespace" in n
                                                   for n in pinned["notes"]), pinned
    assert rc == 1


def test_a_catalog_table_stored_outside_the_warehouse_is_covered_by_the_catalogs_policy(
        catalog: SqlCatalog, tmp_path: Path) -> None:  # noqa: F811
    """``require_signed = ["iceberg://<cat>/*"]`` and table ``ns.ext`` created with its location outside the
    catalog's warehouse (``location=``, as a team keeping a table on another volume does), attested unsigned. Through
    the catalog: ``signature_missing``. Found as its folder (``attest audit <volume>``, ``attest verify <folder>``),
    the catalog that owns it was looked for by the warehouse layout only: read statically, matched by its path, which
    the policy does not name — VERIFIED unsigned, exit 0. Now a SQL catalog is asked which of its tables is stored
    there: the folder is verified through it, under its catalog names."""
    where = tmp_path / "volume" / "ext"
    table = catalog.create_table(("ns", "ext"), schema=rows().schema, location=str(where))
    table.append(rows())
    iceberg_attest_after_write(table, model="m", program_hash=PROGRAM)
    policy = _policy(tmp_path, [f"iceberg://{CATALOG}/*"])
    rc, doc = audit(f"iceberg://{CATALOG}", "--policy", policy)
    assert rc == 1 and doc["tables"][0]["code"] == "signature_missing", doc  # control
    rc, doc = audit(str(tmp_path / "volume"), "--policy", policy)
    row = by_table(doc)[str(where)]
    # Before: VERIFIED (unsigned, read without a catalog), exit 0.
    assert (row["outcome"], row["code"]) == ("NOT VERIFIED", "signature_missing"), row
    assert any(f"verified through catalog {CATALOG!r}, whose table ns.ext it is" in n for n in row["notes"]), row
    assert rc == 1
    rc, doc = verify(str(where), "--policy", policy)
    assert rc == 1 and "signature_missing" in codes(doc), doc


class PanicException(BaseException):
    """What pyo3 raises for a Rust panic (a BaseException, told by its name: carriers/storage/errors.py)."""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_panic_on_one_table_is_its_line_not_the_audits_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             jobs: str) -> None:
    """A table whose files make an engine panic (simulated: a panic is no Exception, and ``check`` caught only
    Exceptions): the panic ended the audit, and ``--json`` printed one error and no table — the verified and the
    unverified alike. Now it is that table's ERROR line, the others audited as ever, serially and in threads."""
    import carriers.refs

    lake = tmp_path / "lake"
    for name in ("a", "b", "c"):
        attested(lake / name)
    real = carriers.refs.open_table

    def open_table(ref: Any, **kwargs: Any) -> Any:
        if str(ref).endswith("/b"):
            raise PanicException("called `Option::unwrap()` on a `None` value")
        return real(ref, **kwargs)

    monkeypatch.setattr(carriers.refs, "open_table", open_table)
    rc, doc = audit(str(lake), "--jobs", jobs)
    lines = {Path(t["table"]).name: (t["outcome"], t["code"]) for t in doc["tables"]}
    assert lines == {"a": ("VERIFIED", None), "b": ("ERROR", "table_unreadable"), "c": ("VERIFIED", None)}, doc
    assert "Rust panic" in by_table(doc)[str(lake / "b")]["message"]
    assert rc == 2
