"""Delta attack round 16, second part (rt16e): timestamp partition values delta-rs reads as an instant and Spark
(delta-spark 4.4) as null, in any session time zone. Measured (test_spark_delta_round16b.py pins Spark's side):

- a lower-case letter in a ``timestamp`` partition value delta-rs parses: the separator ``t``
  (``2024-01-05t10:00:00Z``), the zone ``z`` (``…10:00:00z``, ``…10:00:00.5z``) or ``utc`` / ``Utc``
  (``…10:00:00utc``, ``… utc``) — delta-rs reads each as the instant its upper-case spelling names, Spark as null
  (Spark takes ``T``, ``Z`` and ``UTC`` upper-case only). A rewrite (``dataChange: false``) moving a file's rows to
  such a spelling kept delta-rs's rows and the digest: ``VERIFIED (content; …, same rows)`` while every Spark reader
  got null partition values; a table recorded so verified too. ``table_inconsistent`` now, as a leap second is;
- the same with a ``timestamp_ntz`` column's leap second (``2024-01-05 10:00:60``): delta-rs reads the next second,
  Spark null; the leap-second check was skipped for a table whose only such column is ``timestamp_ntz``.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, edit_adds, verify
from tests.adversarial.test_delta_partition_spellings import attested, delta_rs, rewrite

TEN = datetime.datetime(2024, 1, 5, 10)

# (written by the attested commit, respelled by the rewrite, what delta-rs reads of both)
LOWER_CASE = {
    "z": ("2024-01-05T10:00:00.000000Z", "2024-01-05T10:00:00z", TEN),
    "fraction z": ("2024-01-05T10:00:00.500000Z", "2024-01-05T10:00:00.5z", TEN.replace(microsecond=500000)),
    "t": ("2024-01-05T10:00:00.000000Z", "2024-01-05t10:00:00Z", TEN),
    "t offset": ("2024-01-05T05:00:00.000000Z", "2024-01-05t10:00:00+05:00", TEN.replace(hour=5)),
    "space z": ("2024-01-05T10:00:00.000000Z", "2024-01-05 10:00:00z", TEN),
    "utc": ("2024-01-05T10:00:00.000000Z", "2024-01-05T10:00:00utc", TEN),
    "Utc": ("2024-01-05T10:00:00.000000Z", "2024-01-05T10:00:00 Utc", TEN),
}
# A timestamp_ntz leap second: (written, respelled, what delta-rs reads of both).
NTZ_LEAP = ("2024-01-05 10:01:00.000000", "2024-01-05 10:00:60", TEN.replace(minute=1))


def forged(path: Path, values: pa.Array, spelling: str) -> Path:
    """A table of ``values`` partitioned by ``p``, every file's partition value spelled ``spelling`` in commit 0."""
    write_deltalake(str(path), pa.table({"p": values, "v": list(range(len(values)))}), partition_by=["p"])
    edit_adds(path / commit_name(0), lambda add: add["partitionValues"].update(p=spelling))
    return path


@pytest.mark.parametrize("case", sorted(LOWER_CASE))
def test_a_lower_case_timestamp_partition_value_is_inconsistent(tmp_path: Path, case: str) -> None:
    written, respelled, when = LOWER_CASE[case]
    stamp = pa.array([when], pa.timestamp("us", "UTC"))
    path = attested(tmp_path / "t", stamp, written)
    rewrite(path, [respelled])
    assert delta_rs(path) == [when.replace(tzinfo=datetime.UTC)]  # the attested instant, for delta-rs
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and "table_inconsistent" in codes(doc) and "lower-case" in json.dumps(doc), doc
    # Recorded so: refused at record time too.
    fresh = forged(tmp_path / "fresh", stamp, respelled)
    assert delta_rs(fresh) == [when.replace(tzinfo=datetime.UTC)]
    with pytest.raises(Exception, match="lower-case"):
        attest_after_write(str(fresh), model="orders", program_hash=PROGRAM)


def test_a_timestamp_ntz_leap_second_partition_value_is_inconsistent(tmp_path: Path) -> None:
    written, respelled, when = NTZ_LEAP
    stamp = pa.array([when], pa.timestamp("us"))
    path = attested(tmp_path / "t", stamp, written)
    rewrite(path, [respelled])
    assert delta_rs(path) == [when]  # the attested value, for delta-rs
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and "table_inconsistent" in codes(doc) and "leap second" in json.dumps(doc), doc
    fresh = forged(tmp_path / "fresh", stamp, respelled)
    with pytest.raises(Exception, match="leap second"):
        attest_after_write(str(fresh), model="orders", program_hash=PROGRAM)
