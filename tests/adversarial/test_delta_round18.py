"""Round 18 (Delta): statistics text that Python's JSON parser refuses and delta-rs's reads.

``record`` held a recorded file's statistics to its rows as the log writes them (Python's ``json``) and as delta-rs
reads them — unless the text did not parse: "malformed, no engine reads statistics of it". But delta-rs's JSON reader
(delta-rs 1.6) is lenient where Python's and Jackson's (as Spark configures it) are strict: it reads leading zeros
(``01``, ``-01``, ``00``), a trailing decimal point (``1.``), an extra or trailing comma, a raw control character in a
string — and skips files by what it reads. Measured here: a maximum ``01`` over rows 1, 2 made delta-rs's filtered
read of ``v = 2`` return no row while a full read returned both, and the table was recorded and VERIFIED (so were a
``numRecords`` of 5 over 2 rows and a key named twice, behind a leading zero elsewhere in the text). Such statistics
are now ``table_inconsistent``; malformed text delta-rs reads nothing of stays as before (bound as written).
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
from tests.adversarial.conftest import PROGRAM, edit_adds

ROWS = pa.table({"v": pa.array([1, 2], pa.int64()), "s": ["a", "b"]})

# name: statistics text of the one file (rows v 1, 2 and s "a", "b"); each misstates the rows as delta-rs reads it
LENIENT = {
    "a leading zero in a maximum": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":01,"s":"b"},'
                                   '"nullCount":{"v":0,"s":0}}',
    "a negative leading zero": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":-01,"s":"b"},'
                               '"nullCount":{"v":0,"s":0}}',
    "a trailing decimal point": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1.,"s":"b"},'
                                '"nullCount":{"v":0,"s":0}}',
    "a doubled comma": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,,"s":"b"},'
                       '"nullCount":{"v":0,"s":0}}',
    "a numRecords of 02 over true bounds elsewhere forged": '{"numRecords":02,"minValues":{"v":1,"s":"a"},'
                                                            '"maxValues":{"v":1,"s":"b"},"nullCount":{"v":0,"s":0}}',
    "a count past the rows behind a leading zero": '{"numRecords":5,"minValues":{"v":1,"s":"a"},'
                                                   '"maxValues":{"v":2,"s":"b"},"nullCount":{"v":00,"s":0}}',
    "a key twice behind a leading zero": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,"s":"b"},'
                                         '"maxValues":{"v":2,"s":"b"},"nullCount":{"v":0,"s":0},"x":01}',
    "a raw tab in a string bound": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,"s":"b\tx"},'
                                   '"nullCount":{"v":0,"s":0}}',
}


def _table(tmp_path: Path, stats: str) -> Path:
    path = tmp_path / "t"
    write_deltalake(str(path), ROWS)
    edit_adds(path / commit_name(0), lambda add: add.__setitem__("stats", stats))
    return path


@pytest.mark.parametrize("case", sorted(LENIENT))
def test_statistics_only_delta_rs_parses_are_refused(tmp_path: Path, case: str) -> None:
    """VERIFIED before: the text did not parse for the check, so nothing was held to the rows."""
    stats = LENIENT[case]
    with pytest.raises(ValueError):
        json.loads(stats)  # Python's parser refuses it ...
    path = _table(tmp_path, stats)
    read = add_action_rows(DeltaTable(str(path)))[0]
    assert read["num_records"] is not None and read["max"] is not None, read  # ... delta-rs reads it
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "not JSON" in str(caught.value) and "delta-rs reads" in str(caught.value), caught.value


def test_delta_rs_skips_by_a_leading_zero_bound(tmp_path: Path) -> None:
    """The measurement behind the class: delta-rs's filtered read skips the file by the lenient maximum."""
    table = DeltaTable(str(_table(tmp_path, LENIENT["a leading zero in a maximum"])))
    assert table.to_pyarrow_table().num_rows == 2
    assert table.to_pyarrow_table(filters=[("v", "=", 2)]).num_rows == 0


# Text delta-rs's reader refuses too: the table is unreadable, as before (never VERIFIED).
UNREAD = {
    "a plus sign": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":+1,"s":"b"},'
                   '"nullCount":{"v":0,"s":0}}',
    "a leading decimal point": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":.5,"s":"b"},'
                               '"nullCount":{"v":0,"s":0}}',
    "a hex number": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":0x1,"s":"b"},'
                    '"nullCount":{"v":0,"s":0}}',
    "single quotes": "{'numRecords':2,'minValues':{'v':1,'s':'a'},'maxValues':{'v':1,'s':'b'},"
                     "'nullCount':{'v':0,'s':0}}",
    "trailing text": '{"numRecords":2,"minValues":{"v":1,"s":"a"},"maxValues":{"v":1,"s":"b"},'
                     '"nullCount":{"v":0,"s":0}} x',
}


@pytest.mark.parametrize("case", sorted(UNREAD))
def test_statistics_delta_rs_refuses_stay_unreadable(tmp_path: Path, case: str) -> None:
    path = _table(tmp_path, UNREAD[case])
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_unreadable", caught.value
