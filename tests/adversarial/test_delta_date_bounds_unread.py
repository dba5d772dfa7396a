"""A date column's log bounds when delta-rs reads none of the file's statistics (another column's bound past its type
voids them all): held to the rows as Spark parses them (``content._spark_reads``). Before, reading a date bound there
looked up a time zone the date type does not have: ``attest record`` ended in ``internal_error`` (found by walk16's
comparison of the statistics walkers)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_delta_round15 import forge_stats

# An INT column's maximum past the type: Spark reads it as null (skips nothing by it), delta-rs reads none of the
# file's statistics (rt15b, measured).
VOIDING = {"i": 2**40}


def dated(path: Path, dates: dict[str, Any]) -> None:
    write_deltalake(str(path), pa.table({"d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2)]),
                                         "i": pa.array([1, 2], pa.int32())}))
    forge_stats(path / commit_name(0), {"maxValues": {**VOIDING, **dates.get("maxValues", {})},
                                        **({"minValues": dates["minValues"]} if "minValues" in dates else {})})


def test_honest_date_bounds_beside_a_voiding_bound_record_and_verify(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dated(path, {})
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["verdict"].startswith("VERIFIED") and doc["level"] == "bytes", doc


@pytest.mark.parametrize("dates", [{"maxValues": {"d": "2024-01-01"}}, {"minValues": {"d": "2024-01-02"}}],
                         ids=["maximum inside the rows", "minimum inside the rows"])
def test_a_date_bound_inside_the_rows_beside_a_voiding_bound_is_refused(tmp_path: Path, dates: dict[str, Any]) -> None:
    path = tmp_path / "t"
    dated(path, dates)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
