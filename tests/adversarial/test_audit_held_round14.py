"""Variants of the seventh attack round on audits and policies that held (pinned): each was tried against the code as
it stood and gave the right verdict; these tests keep it so.

- a tampered table in a partition-looking folder (``x=1/orders``), in a table's partition folder
  (``good/x=1/inner``), in folders named with ``*``, ``?``, ``[``, a trailing space or in Unicode NFD, and one whose
  log was cleaned to a checkpoint and its own commit: each is found, audited under its own name, not verified;
- a versioned name (``orders@1``, ``--version 1``, ``file://…@1``, ``orders/@1``) is covered by a ``require_signed``
  glob naming the table exactly, as a bare path or a ``file://`` URI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.test_policy_names import _policy
from tests.delta.conftest import PROGRAM, special_table


def _cli(*args: str) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "attest.cli", *args, "--json"], capture_output=True, text=True,
                          timeout=300, env=env)
    return done.returncode, json.loads(done.stdout)


def _attested(path: Path) -> Path:
    write_deltalake(str(path), special_table())
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    return path


def _tampered_copy(template: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template, path)
    data = sorted(p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)[0]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 1
    data.write_bytes(bytes(raw))


NAMES = ["x=1/orders", "good/x=1/inner", "star*name", "q?name", "br[a]name", "trail ",
         unicodedata.normalize("NFD", "café")]


def test_tables_in_odd_folders_are_each_audited(tmp_path: Path) -> None:
    template = _attested(tmp_path / "template")
    lake = tmp_path / "lake"
    _attested(lake / "good")
    for name in NAMES:
        _tampered_copy(template, lake / name)
    # A log cleaned to its checkpoint: the commits before it deleted, the checkpoint's own commit kept.
    _tampered_copy(template, lake / "ckpt")
    DeltaTable(str(lake / "ckpt")).create_checkpoint()
    for commit in sorted((lake / "ckpt" / "_delta_log").glob("*.json"))[:-1]:
        commit.unlink()
    rc, report = _cli("audit", str(lake))
    got = {t["table"]: t["outcome"] for t in report["tables"]}
    assert got.pop(str(lake / "good")) == "VERIFIED", report
    assert set(got) == {str(lake / n) for n in [*NAMES, "ckpt"]}, sorted(got)
    assert "VERIFIED" not in got.values(), got
    assert rc != 0 and report["skipped"] == []


def test_a_versioned_name_is_covered_by_a_glob_naming_the_table(tmp_path: Path) -> None:
    table = _attested(tmp_path / "finance" / "orders")
    write_deltalake(str(table), special_table(), mode="append")
    for glob in (str(table), f"file://{table}"):
        policy = _policy(tmp_path, [glob])
        for name, extra in ((f"{table}@1", ()), (str(table), ("--version", "1")), (f"file://{table}@1", ()),
                            (f"{table}/@1", ())):
            rc, doc = _cli("verify", name, *extra, "--policy", policy)
            assert rc == 1 and [e["code"] for e in doc["errors"]] == ["signature_missing"], (glob, name, doc)
