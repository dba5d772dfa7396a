"""Attacks on ``attest audit``'s scope tried in round 16 that held, pinned against the real REST catalog stub of
``test_audit_round16.py`` (serving an attested table of a SQL catalog) and the SQL catalog itself.

- a REST listing naming one table twice (on one page, or across two pages): one line for the table, and the second
  entry an ``ERROR`` line — the audit never passes on a listing it cannot read for certain;
- a single-level namespace spelt with a dot (``("a.b",)``) beside the nested ``a`` → ``b``: the two spell one
  ``iceberg://`` name; the nested table is audited, the other entry an ``ERROR`` line;
- a trust policy's ``require_signed`` glob naming the catalog table in another case, another Unicode form, with a
  trailing ``/`` or as the whole catalog: the unsigned table is ``signature_missing`` in the audit, of the namespace,
  of the table and of a snapshot of it (``ns.t@<id>``: the glob names the table without a version);
- a kept audit (``--to``) of an audit that found no table (only a table in ``_staging/``): its one row ``ERROR``,
  never an empty run that reads as passed; the JSON says ``passed: false``, exit 2.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_audit_round16 import Serving, audit, served, serving  # noqa: F401  (fixture)
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.adversarial.test_signing_attacks import KEY


@pytest.mark.parametrize("pages", [10, 1])
def test_a_listing_naming_a_table_twice_never_passes(serving: Any, table: Any, pages: int) -> None:  # noqa: F811
    stub = Serving([("ns",)], {("ns",): [(("ns",), "t"), (("ns",), "t")]}, page=pages, views=None,
                   tables={("ns", "t"): table.metadata_location})
    rc, doc = audit(serving(stub), "iceberg://stub/ns")
    lines = sorted((t["table"], t["outcome"], t["code"]) for t in doc["tables"])
    assert lines == [("iceberg://stub/ns.t", "ERROR", "table_not_audited"),
                     ("iceberg://stub/ns.t", "VERIFIED", None)], doc
    assert rc == 2 and not doc["passed"], doc


def test_a_namespace_spelt_with_a_dot_beside_the_nested_one(serving: Any, table: Any) -> None:  # noqa: F811
    """The single-level namespace ``a.b`` and the nested ``a`` → ``b`` each list a ``t``, the server serving the
    nested one: the name ``a.b.t`` opens the nested table, audited (VERIFIED); the other entry an ``ERROR`` line
    (held before round 16 as two entries spelling one name; now as an entry no name opens)."""
    stub = Serving([("a.b",), ("a",), ("a", "b")], {("a.b",): [(("a.b",), "t")], ("a", "b"): [(("a", "b"), "t")]},
                   page=10, views=None, tables={("a", "b", "t"): table.metadata_location})
    rc, doc = audit(serving(stub), "iceberg://stub")
    lines = sorted((t["table"], t["outcome"], t["code"]) for t in doc["tables"])
    assert lines == [("iceberg://stub/a.b.t", "ERROR", "table_not_audited"),
                     ("iceberg://stub/a.b.t", "VERIFIED", None)], doc
    assert rc == 2 and not doc["passed"], doc


@pytest.mark.parametrize("glob", ["iceberg://STUB/NS.*", "iceberg://stub/ns.T", "iceberg://stub/ns.t/",
                                  "iceberg://stub/*", "iceberg://stub/n\u0073.t", "nfd"])
def test_a_policy_glob_spelt_otherwise_still_requires_the_signature(serving: Any, table: Any, tmp_path: Path,  # noqa: F811
                                                                     glob: str) -> None:
    if glob == "nfd":  # a namespace in NFC, the glob typed in NFD
        glob = unicodedata.normalize("NFD", "iceberg://stub/ns.t")
    (tmp_path / "ci.pub").write_bytes(KEY.public_pem)
    (tmp_path / "policy.toml").write_text(f'require_signed = ["{glob}"]\n[[keys]]\npublic_key = "ci.pub"\n')
    uri = serving(served(table, None))
    snapshot = table.current_snapshot().snapshot_id
    for target in ("iceberg://stub/ns", "iceberg://stub/ns.t", f"iceberg://stub/ns.t@{snapshot}"):
        rc, doc = audit(uri, target, "--policy", str(tmp_path / "policy.toml"))
        assert [(t["table"].split("@")[0], t["code"]) for t in doc["tables"]] == [
            ("iceberg://stub/ns.t", "signature_missing")], doc
        assert rc == 1, doc


def test_a_kept_audit_of_no_table_is_an_error(tmp_path: Path) -> None:
    import deltalake
    import pyarrow as pa

    deltalake.write_deltalake(str(tmp_path / "lake" / "_staging" / "t"), pa.table({"x": [1]}))
    rc, doc = audit("", str(tmp_path / "lake"), "--to", str(tmp_path / "kept"))
    assert rc == 2 and not doc["passed"] and doc["counts"]["ERROR"] == 1, doc
    assert [s["path"] for s in doc["skipped"]] == [str(tmp_path / "lake" / "_staging" / "t")], doc
    kept = deltalake.DeltaTable(str(tmp_path / "kept")).to_pyarrow_table().to_pylist()
    assert [(r["outcome"], r["code"]) for r in kept] == [("ERROR", "table_not_found")], kept
