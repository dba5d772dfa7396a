"""Round 17 of the Delta attacks (rt17d): which columns' statistics a reader takes from the log.

``delta.dataSkippingStatsColumns`` names the columns whose statistics readers use. Spark (delta-spark 4.4) resolves
those names without case, delta-rs matches them exactly (measured: ``a,B`` over columns ``a``, ``b`` — delta-rs kept
no statistics of ``b`` and read none from the log, Spark read the log's bounds of ``b``). The check of a file's
statistics against its rows and the reader view take delta-rs's reading, and a column it leaves out altogether was
taken to be one Spark leaves out too (``test_delta_held_round13.py``). So a forged bound of ``b`` was neither checked
nor bound, and Spark skipped the file by it (``WHERE b = 5``: no row) and answered ``MAX(b)`` from it (200 for 6):

- the property spelled so at the attested version, the forged bound in the attested commit: recorded, VERIFIED;
- the attested version keeping ``b`` out (``a``), the forged bound there unread by either engine, then a metadata-only
  commit setting ``a,B``: delta-rs's reading (the view) unchanged, VERIFIED at the latest version.

Now such a version is ``table_inconsistent`` (``carriers.delta.view.statistics_columns_read_otherwise``): record
refuses it, and verify of an attestation whose latest version is one fails. What Spark reads of both is in
``test_spark_delta_round17.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, verify


def forged_unindexed(path: Path, columns: str) -> None:
    """One file (a: 1, 2; b: 5, 6) written by delta-rs with ``delta.dataSkippingStatsColumns`` ``columns``, which
    keeps b's statistics out of delta-rs's reading; b's bounds in the commit forged to 100..200."""
    write_deltalake(
        str(path),
        pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([5, 6], pa.int64())}),
        configuration={"delta.dataSkippingStatsColumns": columns},
    )
    commit = path / commit_name(0)
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            stats["minValues"]["b"], stats["maxValues"]["b"], stats["nullCount"]["b"] = 100, 200, 0
            action["add"]["stats"] = json.dumps(stats)
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def made_live_later(path: Path) -> None:
    """Attested with b kept out (``a``: neither engine reads b's forged bounds), then a metadata-only commit naming
    ``a,B``."""
    forged_unindexed(path, "a")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc
    DeltaTable(str(path)).alter.set_table_properties({"delta.dataSkippingStatsColumns": "a,B"})


@pytest.mark.parametrize("columns", ["a,B", "a, `B`"])
def test_record_refuses_statistics_columns_named_in_another_case(tmp_path: Path, columns: str) -> None:
    path = tmp_path / "t"
    forged_unindexed(path, columns)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value


def test_statistics_columns_named_in_another_case_after_the_attestation(tmp_path: Path) -> None:
    path = tmp_path / "t"
    made_live_later(path)
    for level in ("schema", "files", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc != 0 and "table_inconsistent" in codes(doc), (level, doc)
