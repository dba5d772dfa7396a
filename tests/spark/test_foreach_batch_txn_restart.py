"""A ``foreachBatch`` function writing with Delta's idempotent writes (``txnAppId`` / ``txnVersion``), its driver
killed (SIGKILL) after the batch's commits and before Spark logged the batch as done, then restarted from the
checkpoint: Spark runs the batch again and Delta skips both writes (their txn is in the log), so no commit follows the
replayed writes. What the hook makes of them, measured (docs/streaming.md, "foreachBatch"):

- a path write (``DataFrameWriter.save``; its plan names no version read) is matched, unstamped, to the newest
  unclaimed ``WRITE`` commit of the table — the commit the killed run made of that batch — and attested then;
- a SQL write (``INSERT INTO delta.`path```, the txn in the session confs; its plan names the version it read) has no
  commit after the version it read; the hook saw the txn the session confs declared while the statement ran, finds
  the commit carrying it (the killed run's commit of the batch, the reason Delta skipped the write) and attests it
  with the batch's source range, as the killed run would have.

Every committed batch version of both tables ends with exactly one attestation, verified at the bytes level."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.side_by_side import ROOT

pytestmark = pytest.mark.spark

FILES = 4
KILL_AT = 1  # batch 0 is attested in the first run; batch 1 commits, is not attested, and the driver dies
APP_ID = "recipe-attest-foreach-batch-test"  # tests/spark/foreach_batch_txn_job.py
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _txns(table: Path) -> dict[int, int]:
    """{batch id: version} of the commits carrying the job's txn."""
    out: dict[int, int] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            txn = json.loads(line).get("txn")
            if txn is not None and txn["appId"] == APP_ID:
                assert int(txn["version"]) not in out, "a batch committed twice"
                out[int(txn["version"])] = int(commit.stem)
    return out


def _pointers(table: Path) -> set[int]:
    return {int(p.stem) for p in (table / "_recipe_attest" / "versions").glob("*.json")}


def _verify(table: Path, version: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", "verify", str(table), "--version", str(version),
                           "--level", "bytes"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


def _job(tmp: Path, run: str, *extra: str) -> int:
    with (tmp / f"{run}.log").open("wb") as out:
        return subprocess.run([sys.executable, "-m", "tests.spark.foreach_batch_txn_job", str(tmp / f"w{run}"),
                               str(tmp / "in"), str(tmp / "path_table"), str(tmp / "sql_table"), str(tmp / "ck"),
                               str(tmp / f"{run}.json"), *extra], cwd=ROOT, env=ENV, stdout=out,
                              stderr=subprocess.STDOUT, timeout=900).returncode


def test_a_foreach_batch_idempotent_write_replayed_after_a_kill(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for i in range(FILES):
        rows = [json.dumps({"id": i * 10 + j, "s": f"r{i}"}) for j in range(2)]
        (source / f"part-{i}.json").write_text("\n".join(rows) + "\n")
    path_table, sql_table = tmp_path / "path_table", tmp_path / "sql_table"

    assert _job(tmp_path, "r1", "--kill-at", str(KILL_AT)) == -9, (tmp_path / "r1.log").read_text()[-3000:]
    for table in (path_table, sql_table):
        txns = _txns(table)
        assert sorted(txns) == [0, KILL_AT], txns  # batch KILL_AT committed before the kill
        assert txns[KILL_AT] not in _pointers(table)  # and is not attested
    assert not (tmp_path / "ck" / "commits" / str(KILL_AT)).exists()  # Spark runs it again on restart

    assert _job(tmp_path, "r2") == 0, (tmp_path / "r2.log").read_text()[-3000:]
    report = json.loads((tmp_path / "r2.json").read_text())
    assert (report["failed"], report["refused"]) == (0, None), report

    import deltalake

    expected = sorted(i * 10 + j for i in range(FILES) for j in range(2))
    for table in (path_table, sql_table):
        assert sorted(_txns(table)) == list(range(FILES))  # Delta skipped the replayed writes: one commit a batch
        ids = deltalake.DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        assert sorted(ids) == expected  # each row once

    # The path write: the replayed batch's write is matched to the killed run's commit; every batch attested once.
    path_txns = _txns(path_table)
    assert set(path_txns.values()) <= _pointers(path_table)
    for version in path_txns.values():
        out = _verify(path_table, version)
        assert out.returncode == 0 and f"attestation for version {version}" in out.stdout, (version, out.stdout)

    # The SQL write: the killed run's commit of batch KILL_AT is attested in the restarted run, as the path write's
    # is, with the same source range (the batch's offsets) as its inputs.
    sql_txns = _txns(sql_table)
    assert set(sql_txns.values()) <= _pointers(sql_table)
    for version in sql_txns.values():
        ok = _verify(sql_table, version)
        assert ok.returncode == 0 and f"attestation for version {version}" in ok.stdout, (version, ok.stdout)
    # ... and with the program the table's other batches carry (the same foreachBatch write, batch after batch).
    assert len({_program(sql_table, version) for version in sql_txns.values()}) == 1
    path_offsets = _offsets(path_txns, path_table)
    assert len(set(map(tuple, path_offsets.values()))) == FILES  # one distinct range a batch
    assert _offsets(sql_txns, sql_table) == path_offsets


def _program(table: Path, version: int) -> str:
    shown = subprocess.run([sys.executable, "-m", "attest.cli", "show", str(table), "--version", str(version),
                            "--json"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    return str(json.loads(shown.stdout)["program_hash"])


def _offsets(txns: dict[int, int], table: Path) -> dict[int, list[str]]:
    """{batch id: the source offset ranges its attestation names as inputs}."""
    out: dict[int, list[str]] = {}
    for batch, version in txns.items():
        shown = subprocess.run([sys.executable, "-m", "attest.cli", "show", str(table), "--version", str(version),
                                "--inputs", "--json"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
        assert shown.returncode == 0, shown.stderr
        out[batch] = sorted(str(i.get("watermark")) for i in json.loads(shown.stdout)["inputs"]
                            if str(i.get("watermark")).startswith("offsets "))
        assert out[batch], (batch, shown.stdout)  # the batch's source range is among its inputs
    return out
