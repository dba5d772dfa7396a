"""Round 20 (Delta): ``dataChange: false`` rewrites that respell a ``timestamp`` partition value across zones in
spellings the zone check did not read.

A rewrite must keep each timestamp partition value's zone as written (``_check_partition_zones``,
test_delta_partition_spellings): delta-rs reads a value without a zone as UTC, Spark in its session time zone. The
check took a value for zoneless only when spelled as delta-rs writes it (``2024-01-05 10:00:00.000000``: padded,
nothing before it), and found the instant of a value only where Python's ``fromisoformat`` parsed it. delta-rs 1.6
reads more (measured):

- zoneless spellings unpadded (``2024-1-5 10:00:00``, ``2024-01-05 10:0:0``) or led by a blank or a ``+``
  (`` 2024-01-05 10:00:00``, ``+2024-01-05 10:00:00``): the attested instant, read as UTC. A rewrite moving a file
  from Spark's zoned spelling to one of them was VERIFIED; Spark in a New York session reads 15:00 UTC where it read
  10:00 (``test_spark_delta_round20.py``);
- zoned spellings with the zone as a word (``2024-01-05 10:00:00 UTC``, ``…10:00:00UTC``): UTC, an instant the check
  never compared (it did not parse them). A rewrite moving a file from delta-rs's zoneless spelling to one of them was
  VERIFIED; Spark in New York reads 10:00 UTC where it read 15:00.

Both are ``content_changed`` now. Held: the same spellings on both sides of a rewrite (with a zone, or without) verify.

A ``float`` / ``double`` partition value spelled as a **signed NaN** other than ``+NaN`` / ``-NaN`` (``+nan``,
``-nan``, ``+NAN``): delta-rs (Rust's parser) reads NaN in any case, Spark (Java's parser, then its lower-case literals
``nan``, ``inf``, ``infinity`` ...) null. A rewrite moving a NaN partition's file to ``+nan`` was VERIFIED (delta-rs:
the attested NaN; Spark: null); a table spelled so was recorded. ``table_inconsistent`` now, wherever such a value is
live (``carriers/delta/spellings.py``). Held (test_delta_held_round20.py): the unsigned spellings and every infinity
both engines read alike.

A ``timestamp`` partition value outside Python's years 1 to 9999 (``-0001-01-05T10:00:00.000000Z``,
``+10000-01-05T…Z``, ``0000-…``), which delta-rs reads (and Spark: ``test_spark_delta_round20.py``), in the recorded
version or written by a rewrite: reading delta-rs's add actions as Python values raised a bare ``ValueError`` (``year
-1 is out of range``), reported as ``internal_error``. ``unsupported_table`` now, saying why.
"""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, edit_adds, verify
from tests.adversarial.test_delta_partition_spellings import STAMP, attested, delta_rs, rewrite

TEN = datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC)
# Zoneless to Spark and delta-rs, not to the check before
MISSED_ZONELESS = ["2024-1-5 10:00:00", " 2024-01-05 10:00:00", "+2024-01-05 10:00:00", "2024-01-05 10:0:0"]
# Zoned (UTC) to Spark and delta-rs, an instant the check did not parse
MISSED_ZONED = ["2024-01-05 10:00:00 UTC", "2024-01-05 10:00:00UTC"]


@pytest.mark.parametrize("respelled", MISSED_ZONELESS)
def test_a_rewrite_to_an_unpadded_zoneless_spelling_is_refused(tmp_path: Path, respelled: str) -> None:
    path = attested(tmp_path / "t", STAMP, "2024-01-05T10:00:00.000000Z")
    rewrite(path, [respelled])
    assert delta_rs(path) == [TEN]  # delta-rs: the attested rows (Spark in New York: not)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "time zone" in json.dumps(doc), doc


@pytest.mark.parametrize("respelled", MISSED_ZONED)
def test_a_rewrite_to_a_zone_spelled_as_a_word_is_refused(tmp_path: Path, respelled: str) -> None:
    path = attested(tmp_path / "t", STAMP)  # delta-rs's zoneless spelling
    rewrite(path, [respelled])
    assert delta_rs(path) == [TEN]
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "time zone" in json.dumps(doc), doc


@pytest.mark.parametrize(
    ("written", "respelled"),
    [
        (None, "2024-1-5 10:00:00"),  # zoneless both
        ("2024-01-05 10:00:00.000000", " 2024-01-05 10:0:0"),
        ("2024-01-05T10:00:00.000000Z", "2024-01-05 10:00:00 UTC"),  # zoned both
        ("2024-01-05 10:00:00UTC", "2024-01-05T15:00:00+05:00"),
    ],
)
def test_a_rewrite_keeping_the_zone_in_other_spellings_verifies(
    tmp_path: Path, written: str | None, respelled: str
) -> None:
    """Held: one wall-clock time for every Spark session (both zoneless), or one instant for every reader (both
    zoned)."""
    path = attested(tmp_path / "t", STAMP, written)
    rewrite(path, [respelled])
    assert delta_rs(path) == [TEN]
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"] and "same rows" in json.dumps(doc), doc


NAN = pa.array([float("nan")])
SIGNED_NANS = ["+nan", "-nan", "+NAN", "-Nan"]  # Spark: null, delta-rs: NaN


@pytest.mark.parametrize("respelled", SIGNED_NANS)
def test_a_rewrite_to_a_signed_nan_spelling_is_refused(tmp_path: Path, respelled: str) -> None:
    path = attested(tmp_path / "t", NAN)
    rewrite(path, [respelled])
    (value,) = delta_rs(path)
    assert math.isnan(value)  # delta-rs: NaN (Spark: null)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "signed NaN" in json.dumps(doc), doc


@pytest.mark.parametrize("kind", [pa.float64(), pa.float32()])
def test_a_table_spelling_a_signed_nan_is_not_recorded(tmp_path: Path, kind: pa.DataType) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"p": pa.array([float("nan"), 1.0], kind), "v": [0, 1]}), partition_by=["p"])
    edit_adds(
        path / commit_name(0),
        lambda add: add["partitionValues"].update(
            p="+nan" if add["partitionValues"]["p"].lower() == "nan" else add["partitionValues"]["p"]
        ),
    )
    with pytest.raises(AttestError) as err:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "table_inconsistent" and "signed NaN" in err.value.message, err.value


FAR_YEARS = ["-0001-01-05T10:00:00.000000Z", "+10000-01-05T10:00:00.000000Z", "0000-01-05T10:00:00.000000Z"]


@pytest.mark.parametrize("spelling", FAR_YEARS)
def test_a_timestamp_partition_value_past_pythons_years_is_unsupported(tmp_path: Path, spelling: str) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"p": STAMP, "v": [0]}), partition_by=["p"])
    edit_adds(path / commit_name(0), lambda add: add["partitionValues"].update(p=spelling))
    with pytest.raises(AttestError) as err:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "unsupported_table" and "years 1 to 9999" in err.value.message, err.value
    rc, doc = verify(str(path))
    assert rc == 2 and codes(doc) == ["unsupported_table"], doc


@pytest.mark.parametrize("spelling", FAR_YEARS)
def test_a_rewrite_to_a_year_past_pythons_is_unsupported(tmp_path: Path, spelling: str) -> None:
    path = attested(tmp_path / "t", STAMP)
    rewrite(path, [spelling])
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 2 and codes(doc) == ["unsupported_table"], doc
