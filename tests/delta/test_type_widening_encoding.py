"""Delta type widening and the content digest (docs/content-digest.md, "Delta type widening"; issue 32).

Delta's typeWidening feature (``ALTER TABLE t CHANGE COLUMN c TYPE BIGINT`` for an INT column, float → double,
decimal precision up, date → timestamp_ntz) makes readers get the old files' values as the wider type. The canonical
row encoding carries each value's type tag, so the same numbers read as another type are other rows to the digest:
a rewrite after a widening (OPTIMIZE, or the rewrite ``DROP FEATURE typeWidening`` makes) is never VERIFIED by
content. These tests pin that (the encodings, then a hand-made widening and rewrite of a delta-rs table) and that the
refusal names the widened columns. tests/spark/test_type_widening_delta.py measures the same with Spark.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from attest.content import ColumnSpec, digest_table, encode_rows, type_tag
from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, log_state, metadata_commit, verify
from tests.adversarial.test_content_rewrite_delta import rewrite

# (before, after, values): the widenings Delta allows, each with values the wider type holds exactly.
WIDENINGS = [
    (pa.int8(), pa.int16(), [-128, 0, 127, None]),
    (pa.int16(), pa.int32(), [-32768, 1, 32767, None]),
    (pa.int32(), pa.int64(), [-2147483648, 7, 2147483647, None]),
    (pa.int32(), pa.float64(), [-2147483648, 7, 2147483647, None]),
    (pa.int32(), pa.decimal128(10, 0), [-2147483648, 7, 2147483647, None]),
    (pa.float32(), pa.float64(), [0.5, -0.0, 3.4028234663852886e38, None]),
    (pa.decimal128(10, 2), pa.decimal128(12, 2), [decimal.Decimal("1.25"), decimal.Decimal("-99999999.99"), None]),
    (pa.decimal128(10, 2), pa.decimal128(12, 4), [decimal.Decimal("1.25"), decimal.Decimal("-99999999.99"), None]),
    (pa.date32(), pa.timestamp("us"), [dt.date(1970, 1, 1), dt.date(2026, 12, 4), dt.date(1, 1, 1), None]),
]


def _ids(case: tuple[pa.DataType, pa.DataType, list[Any]]) -> str:
    return f"{case[0]}->{case[1]}"


@pytest.mark.parametrize("case", WIDENINGS, ids=_ids)
def test_a_widened_column_has_another_digest_though_its_values_are_equal(
        case: tuple[pa.DataType, pa.DataType, list[Any]]) -> None:
    before, after, values = case
    old = pa.table({"c": pa.array(values, before)})
    new = old.cast(pa.schema([pa.field("c", after)]))
    # What a widening reader gets: the same values (exact casts; a date as its midnight).
    expected = [dt.datetime.combine(v, dt.time()) if isinstance(v, dt.date) else v for v in values]
    assert new.column("c").to_pylist() == expected
    spec_old, spec_new = [ColumnSpec("c", pa.field("c", before))], [ColumnSpec("c", pa.field("c", after))]
    a, b = digest_table(old, spec_old), digest_table(new, spec_new)
    assert a.rows == b.rows == len(values)
    assert a.state != b.state  # the digest encodes the type: widened rows are other rows to it
    assert digest_table(old, spec_old).state == a.state  # deterministic: only the type made the difference
    # Row by row: the encodings differ (a null too: its tag differs), each naming its own type.
    for x, y in zip(encode_rows(old, spec_old), encode_rows(new, spec_new), strict=True):
        assert x != y and type_tag(before) in x and type_tag(after) in y


def _ints_table(path: Path) -> None:
    for start in (0, 10):
        write_deltalake(str(path), pa.table({
            "id": pa.array(range(start, start + 5), pa.int32()),
            "m": pa.array([decimal.Decimal(i) / 4 for i in range(start, start + 5)], pa.decimal128(10, 2)),
            "s": [f"s{i}" for i in range(start, start + 5)],
        }), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc


def _widen(meta: dict[str, Any]) -> None:
    """The metaData Spark's ``ALTER TABLE … CHANGE COLUMN … TYPE`` writes with typeWidening (measured, delta-spark
    4.4): the new type, the change in the field's ``delta.typeChanges``."""
    schema = json.loads(meta["schemaString"])
    for field in schema["fields"]:
        if field["name"] == "id":
            field["type"], field["metadata"] = "long", {"delta.typeChanges": [{"toType": "long",
                                                                              "fromType": "integer"}]}
        if field["name"] == "m":
            field["type"] = "decimal(12,2)"
            field["metadata"] = {"delta.typeChanges": [{"toType": "decimal(12,2)", "fromType": "decimal(10,2)"}]}
    meta["schemaString"] = json.dumps(schema)


def _compacted(path: Path, schema: pa.Schema) -> pa.Table:
    rels = sorted(log_state(path).adds)
    rows = pa.concat_tables([pq.read_table(path / r) for r in rels])
    return rows.cast(schema)


def test_a_rewrite_after_a_widening_is_refused_naming_the_widened_columns(tmp_path: Path) -> None:
    """The OPTIMIZE Spark runs after ``CHANGE COLUMN id TYPE BIGINT`` writes the old rows as longs: the same values,
    read by every reader as they were read before the rewrite — yet not VERIFIED (over-cautious, never a false
    VERIFIED), and the message names the widened columns instead of leaving the rows suspect."""
    path = tmp_path / "t"
    _ints_table(path)
    metadata_commit(path, _widen)  # the widening (delta-rs can still read the table: no reader feature is set)
    wide = pa.schema([("id", pa.int64()), ("m", pa.decimal128(12, 2)), ("s", pa.string())])
    rewrite(path, sorted(log_state(path).adds), [(_compacted(path, wide), {})])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and not doc["verdict"].startswith("VERIFIED") and codes(doc) == ["content_changed"], doc
    message = doc["errors"][0]["message"]
    assert "as many as the attested files they removed, but not the same rows" in message, message
    assert "id: integer → long (widened)" in message and "m: decimal(10,2) → decimal(12,2) (widened)" in message
    assert "s:" not in message and "Delta type widening" in message, message


def test_a_rewrite_that_changed_rows_names_no_type_change(tmp_path: Path) -> None:
    """The note is for type changes only: a dishonest rewrite of an unwidened table says nothing of types."""
    path = tmp_path / "t"
    _ints_table(path)
    rows = _compacted(path, pa.schema([("id", pa.int32()), ("m", pa.decimal128(10, 2)), ("s", pa.string())]))
    rows = rows.set_column(2, "s", pa.array(["changed", *rows.column("s").to_pylist()[1:]]))
    rewrite(path, sorted(log_state(path).adds), [(rows, {})])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["content_changed"], doc
    assert "column types changed" not in doc["errors"][0]["message"], doc
