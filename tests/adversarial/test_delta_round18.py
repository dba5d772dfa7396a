"""Round 18 (Delta): statistics text that Python's JSON parser refuses, which delta-rs and Spark read differently.

``record`` and the log replay held a file's statistics to its rows, and to naming no key twice, as Python's ``json``
parses them — and passed over text it did not parse: "malformed, not ambiguous: the engine refuses it". Neither engine
does. delta-rs's JSON reader (delta-rs 1.6) reads leading zeros (``01``, ``-01``, ``00``), a trailing decimal point
(``1.``), an extra or trailing comma and a raw control character in a string, takes the last of a key named twice,
and skips files by what it reads; Spark (delta-spark 4.4) reads the text up to the error and keeps what it read
(test_spark_delta_round18.py). Measured:

- recorded as written: a maximum ``01`` over rows 1, 2 made delta-rs's filtered read of ``v = 2`` return no row while
  a full read returned both — recorded and VERIFIED (so were a ``numRecords`` of 5 over 2 rows and a key named twice
  behind a leading zero elsewhere in the text);
- rewritten in place after the attestation: ``{"numRecords":5, ..., "maxValues":{"v":02}, ..., "numRecords":2}`` —
  delta-rs reads 2 and the attested bounds (its typed reading, the view, unchanged: VERIFIED), Spark's ``COUNT(*)``
  is 5 over the 2 attested rows.

A statistics text that is not JSON (and not blank) is now ``table_inconsistent``, at record and at verify; text only
delta-rs reads is refused by ``record``'s check of the rows as well.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import add_action_rows, attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, edit_adds, verify

ROWS = pa.table({"v": pa.array([1, 2], pa.int64()), "s": ["a", "b"]})
_NULLS = '"nullCount":{"v":0,"s":0}'

# name: statistics text of the one file (rows v 1, 2 and s "a", "b"); each misstates the rows as delta-rs reads it
LENIENT = {
    "a leading zero in a maximum": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":01,"s":"b"},'
    + _NULLS
    + "}",
    "a negative leading zero": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":-01,"s":"b"},'
    + _NULLS
    + "}",
    "a trailing decimal point": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1.,"s":"b"},'
    + _NULLS
    + "}",
    "a doubled comma": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,,"s":"b"},' + _NULLS + "}",
    "a numRecords of 02 beside a forged maximum": '{"numRecords":02,"minValues":{"v":1,"s":"a"},'
    '"maxValues":{"v":1,"s":"b"},' + _NULLS + "}",
    "a count past the rows behind a leading zero": '{"numRecords":5,"minValues":{"v":1,"s":"a"},'
    '"maxValues":{"v":2,"s":"b"},"nullCount":{"v":00,"s":0}}',
    "a key twice behind a leading zero": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":2,"s":"b"},'
    '"maxValues":{"v":1,"s":"b"},' + _NULLS + ',"x":01}',
    "a raw tab in a string bound": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,"s":"b\tx"},'
    + _NULLS
    + "}",
}

# The attested values for delta-rs (numRecords 2: the last of the key), a count of 5 for Spark (read before the 02).
SPARK_COUNTS_FIVE = (
    '{"numRecords":5,"minValues":{"v":1,"s":"a"},"maxValues":{"v":02,"s":"b"},' + _NULLS + ',"numRecords":2}'
)

# Text delta-rs's reader refuses (the table is unreadable to it) and Spark reads whole or in part: never VERIFIED.
UNREAD = {
    "a plus sign": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":+1,"s":"b"},' + _NULLS + "}",
    "a leading decimal point": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":.5,"s":"b"},'
    + _NULLS
    + "}",
    "a hex number": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":0x1,"s":"b"},' + _NULLS + "}",
    "single quotes": "{'numRecords':2,'minValues':{'v':1,'s':'a'},'maxValues':{'v':1,'s':'b'},"
    "'nullCount':{'v':0,'s':0}}",
    "trailing text": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,"s":"b"},' + _NULLS + "} x",
    "an empty text": "",
}


def lenient_table(tmp_path: Path, stats: str | None) -> Path:
    """A one-file table of ROWS; its add's statistics text replaced by ``stats`` (None: as delta-rs wrote it)."""
    path = tmp_path / "t"
    write_deltalake(str(path), ROWS)
    if stats is not None:
        edit_adds(path / commit_name(0), lambda add: add.__setitem__("stats", stats))
    return path


@pytest.mark.parametrize("case", sorted(LENIENT))
def test_statistics_only_delta_rs_parses_are_refused(tmp_path: Path, case: str) -> None:
    """VERIFIED before: the text did not parse for the check, so nothing was held to the rows."""
    stats = LENIENT[case]
    with pytest.raises(ValueError):
        json.loads(stats)  # Python's parser refuses it ...
    path = lenient_table(tmp_path, stats)
    read = add_action_rows(DeltaTable(str(path)))[0]
    assert read["num_records"] is not None and read["max"] is not None, read  # ... delta-rs reads it
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "not JSON" in str(caught.value) and "delta-rs reads" in str(caught.value), caught.value


def test_delta_rs_skips_by_a_leading_zero_bound(tmp_path: Path) -> None:
    """The measurement behind the class: delta-rs's filtered read skips the file by the lenient maximum."""
    table = DeltaTable(str(lenient_table(tmp_path, LENIENT["a leading zero in a maximum"])))
    assert table.to_pyarrow_table().num_rows == 2
    assert table.to_pyarrow_table(filters=[("v", "=", 2)]).num_rows == 0


@pytest.mark.parametrize("level", ["schema", "bytes"])
def test_statistics_respelled_after_the_attestation_fail_verify(tmp_path: Path, level: str) -> None:
    """VERIFIED before at every level: delta-rs reads the attested values from the respelled text (the view is
    unchanged), Spark a count of 5 (test_spark_delta_round18.py)."""
    path = lenient_table(tmp_path, None)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    before = add_action_rows(DeltaTable(str(path)))[0]
    edit_adds(path / commit_name(0), lambda add: add.__setitem__("stats", SPARK_COUNTS_FIVE))
    after = add_action_rows(DeltaTable(str(path)))[0]
    assert (after["num_records"], after["max"]["v"]) == (before["num_records"], before["max"]["v"]) == (2, 2)
    rc, doc = verify(str(path), "--level", level)
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


@pytest.mark.parametrize("case", sorted(UNREAD))
def test_statistics_delta_rs_refuses_are_never_verified(tmp_path: Path, case: str) -> None:
    path = lenient_table(tmp_path, UNREAD[case])
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value in ("table_inconsistent", "table_unreadable"), caught.value
