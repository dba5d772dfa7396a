"""Program identities are deterministic across processes: the same job on fresh warehouses, in two separate
processes, gives the same program_hash for every write command; a logic change (run in a third process) still
changes it.

(A ``spark.newSession()`` shares the JVM and the catalog, so it cannot see process-level volatility such as a
catalog entry's createTime: hence real subprocesses, tests/spark/program_identity_job.py.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.spark.side_by_side import run_side_by_side

pytestmark = [pytest.mark.spark, pytest.mark.slow]
COMMANDS = {f"{fmt}_{op}" for fmt in ("d", "i") for op in ("ctas", "rtas", "insert", "overwrite", "merge",
                                                           "update", "delete", "save_as_table", "insert_into",
                                                           "write_to")} \
    | {f"path_{op}" for op in ("save", "ctas", "insert", "merge", "update", "delete")}


def test_every_command_has_one_identity_across_processes_and_a_logic_change_another(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="needs the `spark` extra")
    # Three JVMs side by side, each on its own fresh warehouse, 26 commands each: the same work split evenly (two
    # processes of 26 and 52 commands left one core idle for half the test).
    runs = {"first": ["base"], "second": ["base"], "third": ["changed"]}
    run_side_by_side({name: [sys.executable, "-m", "tests.spark.program_identity_job", str(tmp_path / f"w_{name}"),
                             str(tmp_path / f"{name}.json"), "--variants", ",".join(variants)]
                      for name, variants in runs.items()}, tmp_path / "logs", timeout_s=1800)
    first = json.loads((tmp_path / "first.json").read_text())
    second = json.loads((tmp_path / "second.json").read_text())
    third = json.loads((tmp_path / "third.json").read_text())
    assert first["errors"] == second["errors"] == third["errors"] == []
    base1, base2, changed = first["hashes"]["base"], second["hashes"]["base"], third["hashes"]["changed"]
    assert set(base1) == set(base2) == set(changed) == COMMANDS
    unattested = {(run, c) for run, hashes in (("base", base1), ("base", base2), ("changed", changed))
                  for c in COMMANDS if not hashes[c]}
    assert unattested == set()  # every command committed and was attested exactly once
    assert {c for c in COMMANDS if base1[c] != base2[c]} == set()
    assert {c for c in COMMANDS if changed[c] == base1[c]} == set()
