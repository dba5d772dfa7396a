"""Round 19, held: a ``file:`` URI with a percent-escape naming one folder is walked as delta-rs opens it (the folder
with a space, ``Path.as_uri``'s ``%20``), and a lake holding a folder literally named ``%6cake`` audits that copy by
its path; a catalog view no require_signed glob covers is listed, as before."""

# ruff: noqa: F811  (the catalog and table fixtures, imported)
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.adversarial.test_audit_discovery_attacks import attested, audit, by_table
from tests.adversarial.test_audit_round14 import _entry
from tests.adversarial.test_audit_round19 import _signed_policy
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.objectstore.test_stores import cli


def test_a_percent_escaped_file_uri_walks_the_folder_delta_rs_opens(tmp_path: Path) -> None:
    lake = tmp_path / "x"
    attested(lake / "lake")
    rc, doc = audit(f"file://{lake}/%6cake")  # only /x/lake there: walked, named as typed
    assert rc == 0 and [(t["table"], t["outcome"]) for t in doc["tables"]] == [(f"file://{lake}/%6cake", "VERIFIED")], (
        doc
    )
    shutil.copytree(lake / "lake", lake / "%6cake")  # a copy in a folder literally so named, tampered
    victim = sorted((lake / "%6cake").rglob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 1
    victim.write_bytes(bytes(data))
    rc, doc = audit(str(lake))  # the literal folder, named by its path, is the tampered copy
    assert rc == 1 and by_table(doc)[str(lake / "%6cake")]["outcome"] == "NOT VERIFIED", doc
    rc, doc = audit(f"file://{lake}/my%20lake")
    assert rc == 2 and doc["errors"][0]["code"] == "table_not_found", doc
    attested(lake / "my lake")
    rc, doc = audit(f"file://{lake}/my%20lake")
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc


def test_a_view_no_glob_covers_is_listed(catalog: Any, table: Any, tmp_path: Path) -> None:
    name = catalog.name
    _entry(catalog, "reports", "daily", "VIEW")
    policy = _signed_policy(tmp_path, [f"iceberg://{name}/ns/*"])
    done = cli("audit", f"iceberg://{name}", "--policy", policy, "--json")
    report = json.loads(done.stdout)
    assert f"iceberg://{name}/reports.daily" in {s["path"] for s in report["skipped"]}, done.stdout
    assert f"iceberg://{name}/reports.daily" not in {t["table"] for t in report["tables"]}, done.stdout
