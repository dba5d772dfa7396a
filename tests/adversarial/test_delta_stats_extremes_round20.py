"""Round 20 (Delta), an extreme-value sweep of hand-edited log statistics: an add's ``stats`` JSON whose
``minValues`` / ``maxValues`` / ``nullCount`` of a column (of each type: long, double, string, date, timestamp,
decimal, boolean, a struct's field) — or whose ``numRecords`` — is a number no double holds (``1e400``,
``1e999999999``), ``-0``, an integer past int64 (``2**70``), a subnormal or one that rounds to zero, a 5,000-digit
number, a 1 MiB string, an object or an array where a scalar is expected, ``null``, ``true``, or 3,000 nested arrays.

Forged before ``attest record``: record either refuses with a code (``table_inconsistent`` for statistics that
misstate the rows, ``table_unreadable`` for ones no reader parses) or records them as the existing rules say (bound as
written, with a note, where no reader prunes by them), and the table then verifies. Forged after: verify never passes.
Never ``internal_error``, a traceback or an exception out of ``main``. Held (no change was needed): this pins it.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.cli import main
from carriers.delta.log import commit_name
from tests.adversarial.conftest import edit_adds

ROWS = pa.table(
    {
        "i": pa.array([1, 2, 3], pa.int64()),
        "f": [1.5, 2.5, -1.0],
        "s": ["a", "b", "c"],
        "d": pa.array([dt.date(2024, 1, 1)] * 3),
        "t": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC)] * 3),
        "dec": pa.array([Decimal("1.25")] * 3, pa.decimal128(10, 2)),
        "b": [True, False, True],
        "st": pa.array([{"x": 1}] * 3, pa.struct([("x", pa.int32())])),
    }
)
# JSON text, written into the statistics as it is (Python's json cannot write most of these)
VALUES = {
    "1e400": "1e400",
    "-1e400": "-1e400",
    "1e999999999": "1e999999999",
    "-0": "-0",
    "-0.0": "-0.0",
    "2**70": str(2**70),
    "-2**70": str(-(2**70)),
    "2**63": str(2**63),
    "5e-324": "5e-324",
    "1e-400": "1e-400",
    "5000 digits": "1" * 5000,
    "1 MiB string": json.dumps("x" * (1 << 20)),
    "object": '{"a": 1}',
    "empty object": "{}",
    "array": "[1, 2]",
    "null": "null",
    "true": "true",
    "string": '"zz"',
    "3000 arrays": "[" * 3000 + "]" * 3000,
}
COLUMNS = ["i", "f", "s", "d", "t", "dec", "b", "st"]
CASES = [(c, w, k) for c in COLUMNS for w in ("minValues", "maxValues", "nullCount") for k in VALUES] + [
    ("numRecords", "", k) for k in VALUES
]
RECORD_CODES = {"table_inconsistent", "table_unreadable"}


def attest(*args: str) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([*args, "--json"])
    assert "Traceback" not in out.getvalue() + err.getvalue()
    doc = json.loads(out.getvalue())
    assert "internal_error" not in codes(doc), doc
    return rc, doc


def codes(doc: dict[str, Any]) -> list[str]:
    return [e["code"] for e in doc.get("errors", [])]


def stats_text(column: str, where: str, value: str) -> str:
    """An add's ``stats`` as JSON text, ``value`` written in place for ``column`` under ``where``."""
    if column == "numRecords":
        return '{"numRecords":' + value + ',"minValues":{},"maxValues":{},"nullCount":{}}'
    if column == "st":
        value = '{"x":' + value + "}"
    parts = {w: (f'{{"{column}":{value}}}' if w == where else "{}") for w in ("minValues", "maxValues", "nullCount")}
    return '{"numRecords":3,' + ",".join(f'"{w}":{p}' for w, p in parts.items()) + "}"


def forge(path: Path, text: str) -> None:
    def edit(add: dict[str, Any]) -> None:
        add["stats"] = text

    edit_adds(path / commit_name(0), edit)


@pytest.mark.parametrize(("column", "where", "value"), CASES)
def test_statistics_forged_before_record_are_refused_with_a_code_or_recorded_and_verified(
    tmp_path: Path, column: str, where: str, value: str
) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), ROWS)
    forge(path, stats_text(column, where, VALUES[value]))
    rc, doc = attest("record", str(path), "--model", "m", "--sql", "select 1")
    if rc != 0:
        assert rc == 2 and set(codes(doc)) <= RECORD_CODES and codes(doc), doc
        return
    for level in ("files", "bytes"):
        rc, doc = attest("verify", str(path), "--level", level)
        assert rc == 0 and doc["passed"], (level, doc)


@pytest.mark.parametrize(("column", "where", "value"), CASES)
def test_statistics_forged_after_record_never_verify(tmp_path: Path, column: str, where: str, value: str) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), ROWS)
    rc, doc = attest("record", str(path), "--model", "m", "--sql", "select 1")
    assert rc == 0, doc
    forge(path, stats_text(column, where, VALUES[value]))
    for level in ("files", "bytes"):
        rc, doc = attest("verify", str(path), "--level", level)
        assert rc != 0 and not doc["passed"] and codes(doc), (level, doc)
