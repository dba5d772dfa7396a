"""Attacks on ``attest audit``'s scope and a policy's tried in round 17 that held, pinned:

- a table named with ``..`` after a link (``lake/link/../finance/orders``, which the kernel and delta-rs resolve to
  where the link leads, not lexically): a policy on the real folder requires the signature (the table's signed URI
  is its real path), in ``verify`` and ``audit`` alike;
- a local table named by ``file:`` URIs delta-rs opens as it while Python's path does not (``lake\\finance\\orders``,
  ``fin%61nce``, ``%2E``, ``%2e%2e``): never VERIFIED (the carrier's files are looked for by the path as written);
- a glob with three leading slashes (``///lake/finance/*``): ``normpath`` folds it;
- a walk past odd entries: a table in a partition folder of another, a ``_delta_log`` that is a link to another
  table's log, a ``_delta_log`` that is a file or a FIFO (no table to delta-rs either), a link looping on itself, a
  FIFO among the folders, a link back to its own path, a table inside another's ``_delta_log``: each audited, or
  listed with its reason; a FIFO in an Iceberg folder's ``metadata/`` is an ERROR line, never a hang.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import audit
from tests.adversarial.test_policy_names import _policy, _unsigned


def test_a_name_with_dotdot_after_a_link_is_judged_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "lake").mkdir()
    (tmp_path / "other" / "dir").mkdir(parents=True)
    (tmp_path / "lake" / "link").symlink_to(tmp_path / "other" / "dir", target_is_directory=True)
    _unsigned(tmp_path / "other" / "finance" / "orders")
    policy = _policy(tmp_path, [f"file://{tmp_path}/other/finance/*"])
    name = f"{tmp_path}/lake/link/../finance/orders"
    assert DeltaTable(name).version() == 1  # delta-rs opens the linked side's table
    rc, doc = verify(name, "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(f"{tmp_path}/lake/link/../finance", "--policy", policy)
    assert rc == 1 and [t["code"] for t in doc["tables"]] == ["signature_missing"], doc


@pytest.mark.parametrize("spelling", ["/lake\\finance\\orders", "/lake/fin%61nce/orders", "/lake/finance/%2E/orders",
                                      "/lake/x/%2e%2e/finance/orders"])
def test_file_uris_delta_rs_folds_never_pass(tmp_path: Path, spelling: str) -> None:
    _unsigned(tmp_path / "lake" / "finance" / "orders")
    policy = _policy(tmp_path, [f"{tmp_path}/lake/finance/*"])
    rc, doc = verify(f"file://{tmp_path}{spelling}", "--policy", policy)
    assert rc != 0, doc


def test_a_glob_with_three_leading_slashes(tmp_path: Path) -> None:
    _unsigned(tmp_path / "lake" / "finance" / "orders")
    policy = _policy(tmp_path, [f"//{tmp_path}/lake/finance/*"])  # ///tmp/…
    rc, doc = verify(str(tmp_path / "lake" / "finance" / "orders"), "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc


@pytest.mark.timeout(120)
def test_a_walk_past_odd_entries(tmp_path: Path) -> None:
    lake, out = tmp_path / "lake", tmp_path / "out"

    def table(p: Path) -> None:
        write_deltalake(str(p), pa.table({"v": [1]}))

    table(lake / "a")
    table(lake / "a" / "p=1" / "nested")
    table(out / "b0")
    table(out / "b1")
    shutil.move(str(out / "b1"), str(out / "b0" / "_delta_log" / "inner"))
    shutil.move(str(out / "b0"), str(lake / "b"))
    (lake / "c").mkdir()
    table(out / "c2")
    os.symlink(out / "c2" / "_delta_log", lake / "c" / "_delta_log")
    (lake / "d").mkdir()
    (lake / "d" / "_delta_log").write_text("x")
    (lake / "e").mkdir()
    os.symlink(lake / "e" / "loop", lake / "e" / "loop")
    os.mkfifo(lake / "fifo")
    (lake / "g").mkdir()
    os.mkfifo(lake / "g" / "_delta_log")
    (lake / "i").mkdir()
    os.symlink(lake / "i", lake / "i" / "again")
    (lake / "t" / "metadata").mkdir(parents=True)
    os.mkfifo(lake / "t" / "metadata" / "v1.metadata.json")
    rc, doc = audit(str(lake))
    lines = {t["table"][len(str(lake)) + 1:]: (t["outcome"], t["code"]) for t in doc["tables"]}
    assert lines == {"a": ("UNATTESTED", "unattested"), "a/p=1/nested": ("UNATTESTED", "unattested"),
                     "b": ("UNATTESTED", "unattested"), "c": ("UNATTESTED", "unattested"),
                     "t": ("ERROR", "unsupported_table")}, doc
    skipped = {s["path"][len(str(lake)) + 1:]: s["code"] for s in doc["skipped"]}
    assert skipped == {"b/_delta_log/inner": "table_not_audited", "e/loop": "table_not_found",
                       "i/again": "table_not_audited"}, doc
    assert rc == 2
