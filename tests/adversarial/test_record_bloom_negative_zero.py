"""A bloom filter that holds 0.0 but leaves out -0.0, in a file holding both.

The record-time bloom filter check (round 14k, ``content_store.index_problems``) took a column's distinct values as
Python took them: a set, where ``0.0 == -0.0``, so of the two only the first stored was checked. They hash apart
(XXH64 of their plain encodings), and readers hash the literal they are asked for: measured with delta-rs 1.6 and
Spark 4.1 / delta-spark 4.4, a file holding 0.0 and -0.0 whose filter holds only 0.0 returned no row for ``v = -0.0``
(both rows equal it; a full read returns them) — and ``record`` attested it, ``verify`` said VERIFIED. Values are
now distinct by plain encoding (the Python path), and the native kernel checks every value: ``table_inconsistent`` on
both paths.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

import carriers.content_store as store
from attest.content import native
from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write as delta_record
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_rewrite_statistics import _sql

_SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)


def _insert(bitset: bytearray, h: int) -> None:
    block = ((h >> 32) * (len(bitset) // 32)) >> 32
    key = h & 0xFFFFFFFF
    for i, salt in enumerate(_SALT):
        at = block * 32 + 4 * i
        word = int.from_bytes(bitset[at:at + 4], "little") | (1 << (((key * salt) & 0xFFFFFFFF) >> 27))
        bitset[at:at + 4] = word.to_bytes(4, "little")


def _table(tmp_path: Path, held: tuple[float, ...]) -> Path:
    """A delta-rs table of one file holding 0.0, -0.0, 1.5, 2.5 (0.0 first), rewritten in place by pyarrow with a
    bloom filter on ``v`` whose bits are then those of ``held`` alone (the log's statistics honest)."""
    path = tmp_path / "t"
    rows = pa.table({"v": pa.array([0.0, -0.0, 1.5, 2.5], pa.float64())})
    write_deltalake(str(path), rows)
    commit = path / commit_name(0)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    (add,) = [a["add"] for a in actions if "add" in a]
    added = path / add["path"]
    pq.write_table(rows, added, bloom_filter_options={"v": {"ndv": 10}})
    with open(added, "rb") as handle:
        indexes = store.read_parquet_indexes(handle)
    assert not isinstance(indexes, str) and indexes[0].bloom is not None
    bits = indexes[0].bloom
    meta = pq.ParquetFile(added).metadata.row_group(0).column(0)
    at = meta.bloom_filter_offset + meta.bloom_filter_length - len(bits)
    forged = bytearray(len(bits))
    for v in held:
        _insert(forged, store.xxh64(struct.pack("<d", v)))
    data = bytearray(added.read_bytes())
    assert data[at:at + len(bits)] == bits
    data[at:at + len(bits)] = forged
    added.write_bytes(bytes(data))
    add["size"] = added.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path


@pytest.fixture(params=["native", "python"])
def path_taken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The bloom filter check on the kernel (skipped without it, as tests/content/test_native.py says) or in Python."""
    if request.param == "native":
        from tests.content.test_native import _require_kernel

        _require_kernel()
    else:
        monkeypatch.setenv(native.ENV, "0")
    return str(request.param)


def test_honest_filter_with_both_zeros_records(tmp_path: Path, path_taken: str) -> None:
    path = _table(tmp_path, (0.0, -0.0, 1.5, 2.5))
    assert _sql(path, "select count(*) from t where v = -0.0") == 2
    delta_record(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


def test_a_filter_leaving_out_negative_zero_is_refused(tmp_path: Path, path_taken: str) -> None:
    path = _table(tmp_path, (0.0, 1.5, 2.5))
    assert _sql(path, "select count(*) from t") == 4  # a full read returns every row ...
    assert _sql(path, "select count(*) from t where v = 0.0") == 2
    assert _sql(path, "select count(*) from t where v = -0.0") == 0  # ... delta-rs skips the row group (measured)
    with pytest.raises(AttestError) as refused:
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "leaves out the stored value -0.0" in refused.value.message
    assert not (path / "_recipe_attest").exists() or not any((path / "_recipe_attest").rglob("*.json"))


@pytest.mark.spark
def test_spark_filtered_reads_of_the_forged_file(spark: Any, tmp_path: Path) -> None:
    """Spark 4.1 / delta-spark 4.4 (parquet-mr) too, measured: the full read 4 rows, ``v = 0.0D`` 2, ``v = -0.0D`` none
    (the row group skipped by the filter); ``v = -0.0`` (a decimal literal, 0.0 as a double) 2. Refused all the same."""
    path = _table(tmp_path, (0.0, 1.5, 2.5))
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    df = spark.read.format("delta").load(str(path))
    seen = (df.count(), df.where("v = 0.0D").count(), df.where("v = -0.0D").count(), df.where("v = -0.0").count())
    assert seen == (4, 2, 0, 2)
    with pytest.raises(AttestError) as refused:
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
