"""A FLOAT (float32) column's statistics as Spark writes them: the shortest text of the float32 (``6.3333335`` for
19/3), which Spark and delta-rs read back as that float32. The check of a rewrite's statistics compared that text as a
double (6.3333335 against the stored 6.333333492279053), so every Spark OPTIMIZE of a table with a FLOAT column
holding such a value was refused as ``content_changed`` (measured with delta-spark 4.4 while measuring type
widening: tests/spark/test_type_widening_delta.py). A bound whose float32 is not the stored extreme is still
refused."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, log_state, verify
from tests.adversarial.test_content_rewrite_delta import rewrite


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _text(x: float) -> str:
    """The shortest decimal text whose nearest float32 is ``x`` (Java's Float.toString, as Spark writes it)."""
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if _f32(float(text)) == x:
            return text
    raise AssertionError(x)


def _table(path: Path) -> list[float]:
    values = [_f32(i / 3) for i in range(1, 20)]
    for part in (values[:10], values[10:]):
        write_deltalake(str(path), pa.table({"f": pa.array(part, pa.float32())}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc
    return values


def _rewrite_with_bounds(path: Path, lo: str, hi: str) -> None:
    rels = sorted(log_state(path).adds)
    n = rewrite(path, rels, [(pa.concat_tables([pq.read_table(path / r) for r in rels]), {})])
    commit = path / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:  # the bounds as JSON numbers in Spark's text, not a double's repr
            action["add"]["stats"] = ('{"numRecords":19,"minValues":{"f":' + lo + '},"maxValues":{"f":' + hi
                                      + '},"nullCount":{"f":0}}')
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_spark_s_float32_bounds_verify(tmp_path: Path) -> None:
    path = tmp_path / "t"
    values = _table(path)
    hi = _text(max(values))
    assert float(hi) != max(values)  # the text is not the float32 as a double: the case that was refused
    _rewrite_with_bounds(path, _text(min(values)), hi)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_float32_maximum_below_the_stored_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    values = _table(path)
    below = struct.unpack("<f", (struct.unpack("<i", struct.pack("<f", max(values)))[0] - 1).to_bytes(4, "little",
                                                                                                         signed=True))
    _rewrite_with_bounds(path, _text(min(values)), _text(float(below[0])))
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == ["content_changed"], doc
    assert "f: a maximum of" in doc["errors"][0]["message"], doc
