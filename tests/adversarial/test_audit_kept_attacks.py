"""``attest audit … --to PATH`` (a kept audit) attacked by someone who can write the audited lake.

The run does not audit the audit table it appends to. That table was recognised by where a found table *resolves*:
``lake/orders`` replaced by a symlink to the audit table — its readers get the audit's rows, not orders — was left
out of the audit without a word, and the audit passed (exit 0). Now only the audit table's own name (``--to`` as
given, or where that resolves) is left out, and it is listed ``SKIPPED``; reached by another name, it is audited as
any table."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from attest.cli import main
from tests.adversarial.test_audit_discovery_attacks import attested


def audit_to(lake: Path, to: Path) -> tuple[int, dict[str, Any]]:
    out = StringIO()
    with redirect_stdout(out):
        rc = main(["audit", str(lake), "--json", "--to", str(to)])
    return rc, json.loads(out.getvalue())


def test_a_table_replaced_by_a_link_to_the_audit_table_is_audited(tmp_path: Path) -> None:
    lake, audits = tmp_path / "lake", tmp_path / "audits"
    attested(lake / "customers")
    attested(lake / "orders")
    assert audit_to(lake, audits)[0] == 0
    shutil.rmtree(lake / "orders")
    os.symlink(audits, lake / "orders")
    assert DeltaTable(str(lake / "orders")).to_pyarrow_table().num_rows == 2  # readers of orders get audit rows
    rc, doc = audit_to(lake, audits)
    outcomes = {t["table"]: t["outcome"] for t in doc["tables"]}
    assert outcomes == {str(lake / "customers"): "VERIFIED", str(lake / "orders"): "UNATTESTED"}, doc
    assert rc == 1


def test_the_audit_table_under_the_lake_is_listed_not_audited(tmp_path: Path) -> None:
    """Held, and now said: the audit table kept inside the audited folder is left out by its own name (given, or
    through a link to it as ``--to``), and listed ``SKIPPED`` — before, left out without a word."""
    lake = tmp_path / "lake"
    attested(lake / "orders")
    os.symlink(lake / "audits", tmp_path / "to-audits")
    assert audit_to(lake, lake / "audits")[0] == 0  # the first run creates it
    for to in (lake / "audits", tmp_path / "to-audits"):
        rc, doc = audit_to(lake, to)
        assert [t["table"] for t in doc["tables"]] == [str(lake / "orders")] and rc == 0, doc
        assert [(s["path"], s["code"]) for s in doc["skipped"]] == [(str(lake / "audits"), "table_not_audited")], doc
