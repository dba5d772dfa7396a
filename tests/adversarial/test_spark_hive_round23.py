"""Round 23: a Hive-format table (read by Hive's SerDe, ``HiveTableRelation``) over a Delta table's folder.

With ``spark.sql.hive.convertMetastoreParquet`` off (or a SerDe Spark does not convert), a Hive table's read stays a
``HiveTableRelation``: its files are read from its location and each partition's own, past any table's log. Measured
(tests/adversarial/hive_job.py, a Hive-enabled session in its own process): a partition added at an attested
one-row Delta table's folder read as 5 rows, let through by the read gate (the relation was "memory" to it: never
looked at); and the hook recorded no input at all for the Hive table, so a job reading it beside an attested table
was recorded ``strong`` — its only recorded input by content, the Hive table's rows unnamed. Now the relation is a
file read at its location: the gate looks at the location and at every partition's (``_partition_tables``), and
the hook records it as a ``path:`` input, heuristic."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.spark.side_by_side import run_side_by_side

pytestmark = pytest.mark.spark


def test_a_hive_format_table_over_a_delta_folder(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="needs the `spark` extra")
    result = tmp_path / "result.json"
    run_side_by_side({"hive": [sys.executable, "-m", "tests.adversarial.hive_job", str(tmp_path / "w"),
                               str(result)]}, tmp_path / "logs", timeout_s=900)
    out = json.loads(result.read_text())
    assert "HiveTableRelation" in out["plan"]  # the read Spark runs is Hive's, not a converted file source
    assert out["spark_rows"] == {"parts": 5, "flat": 5, "plain": 1}  # the Delta folder's five files, removed too
    assert out["delta_rows"] == 1  # the Delta table itself: attested, one row, verifies
    for table in ("parts", "flat"):  # was: let through, 5 rows
        outcome, code, message = out["gate"][table]
        assert (outcome, code) == ("refused", "unattested") and "Delta table" in message, out["gate"]
    assert out["gate"]["plain"] == ["let through", 1]  # the control: a Hive table of its own files
    assert out["hook_failed"] == 0
    assert out["proof_class"] == "heuristic", out["inputs"]  # was: strong, the Hive table's rows not named
    assert {i["proof_class"] for i in out["inputs"] if i["table"].startswith("path:")} == {"heuristic"}
    assert any(i["table"].startswith("path:") and i["table"].endswith("/parts") for i in out["inputs"]), out["inputs"]
