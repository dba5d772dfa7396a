"""Delta attacks of the thirteenth round measured as held, pinned so a change in delta-rs, Spark or attest shows
(redteam13d). Each is a hand-made ``dataChange: false`` rewrite adding the bytes of the attested file that has a
stored deletion vector (row 1 deleted) under a new name, with a new DV file made by hand:

- the vector followed, inside its ``sizeInBytes``, by 8 more bytes (the start of another bitmap), its size and CRC
  counting them: delta-rs (roaring-rs) and Spark (Java RoaringBitmap) stop at the bitmap's end — the attested rows;
- a DV file holding two vectors, the descriptor's ``offset`` at the second (row 1) past the first (row 2): both read
  at the offset — the attested rows;
- a folder prefix of two segments (``a/b``): both read ``a/b/deletion_vector_<uuid>.bin``;
- a run container whose runs are unsorted (``[5], [1]``) or overlap (``[1, 2], [2]``), which Java's binary search
  reads as other rows than their union: delta-rs refuses the bitmap (``table_unreadable``), never a verdict;
- a wrong CRC-32, a size prefix other than ``sizeInBytes``, a format version byte other than 1: delta-rs checks each
  and refuses (``table_unreadable``); Spark fails the read on a wrong CRC too (measured).
"""

from __future__ import annotations

import shutil
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_content_rewrite_delta import _attested
from tests.adversarial.test_delta_dv_cardinality import _delta_rs
from tests.adversarial.test_delta_dv_descriptors import stored_rewrite
from tests.delta.dv import MAGIC, bitmap

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _crc(data: bytes) -> bytes:
    return struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)


def _framed(data: bytes, *, size: int | None = None, crc: bytes | None = None) -> bytes:
    return struct.pack(">i", len(data) if size is None else size) + data + (_crc(data) if crc is None else crc)


def _runs(runs: list[tuple[int, int]]) -> bytes:
    """Magic + a 64-bit bitmap of one bucket holding one run container of ``runs`` (start, length - 1) as given."""
    container = struct.pack("<I", 12347) + b"\x01" + struct.pack("<HH", 0, sum(n + 1 for _, n in runs) - 1)
    container += struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", s, n) for s, n in runs)
    return struct.pack("<i", MAGIC) + struct.pack("<QI", 1, 0) + container


ONE, TWO = bitmap([1]), bitmap([2])
# name -> (DV file bytes, offset, sizeInBytes): each read by delta-rs as row 1 deleted, or refused.
CASES: dict[str, Callable[[], tuple[bytes, int, int]]] = {
    "trailing bytes": lambda: (b"\x01" + _framed(ONE + TWO[:8]), 1, len(ONE) + 8),
    "second vector": lambda: (b"\x01" + _framed(TWO) + _framed(ONE), 1 + len(_framed(TWO)), len(ONE)),
    "runs unsorted": lambda: (b"\x01" + _framed(_runs([(5, 0), (1, 0)])), 1, len(_runs([(5, 0), (1, 0)]))),
    "runs overlapping": lambda: (b"\x01" + _framed(_runs([(1, 1), (2, 0)])), 1, len(_runs([(1, 1), (2, 0)]))),
    "wrong crc": lambda: (b"\x01" + _framed(ONE, crc=b"\0\0\0\0"), 1, len(ONE)),
    "size prefix": lambda: (b"\x01" + _framed(ONE, size=len(ONE) + 4), 1, len(ONE)),
    "version 2": lambda: (b"\x02" + _framed(ONE), 1, len(ONE)),
}
READ_ALIKE = ("trailing bytes", "second vector")


def _forge(path: Path, case: str, prefix: str = "ab") -> None:
    data, offset, size = CASES[case]()
    stored_rewrite(path, {prefix: data}, {"pathOrInlineDv": prefix, "offset": offset, "sizeInBytes": size})


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    return path


@pytest.mark.parametrize("case", READ_ALIKE)
def test_vectors_read_alike_verify(table: Path, case: str) -> None:
    before = _delta_rs(table)
    _forge(table, case)
    assert _delta_rs(table) == before
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_prefix_of_two_segments_verifies(table: Path) -> None:
    (table / "a").mkdir()
    data, offset, size = CASES["second vector"]()
    stored_rewrite(table, {"a/b": data}, {"pathOrInlineDv": "a/b", "offset": offset, "sizeInBytes": size})
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


@pytest.mark.parametrize("case", sorted(set(CASES) - set(READ_ALIKE)))
def test_vectors_delta_rs_refuses_get_no_verdict(table: Path, case: str) -> None:
    _forge(table, case)
    with pytest.raises(Exception, match=r"(?i)deserialize|checksum|mismatch|version"):
        _delta_rs(table)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc


@pytest.mark.spark
def test_spark_reads_the_held_vectors_alike(spark: SparkSession, table: Path) -> None:
    before = _delta_rs(table)
    got: dict[str, Any] = {}
    for case in (*READ_ALIKE, "wrong crc"):
        path = table.parent / case.replace(" ", "-")
        shutil.copytree(table, path)
        _forge(path, case)
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
        try:
            got[case] = sorted(r["v"] for r in spark.read.format("delta").load(str(path)).select("v").collect())
        except Exception as exc:  # the read Spark refuses, named by its message
            got[case] = "CHECKSUM" if "DELETION_VECTOR_CHECKSUM_MISMATCH" in str(exc) else str(exc)[:300]
    nested = table.parent / "nested"
    shutil.copytree(table, nested)
    (nested / "a").mkdir()
    data, offset, size = CASES["second vector"]()
    stored_rewrite(nested, {"a/b": data}, {"pathOrInlineDv": "a/b", "offset": offset, "sizeInBytes": size})
    got["a/b"] = sorted(r["v"] for r in spark.read.format("delta").load(str(nested)).select("v").collect())
    assert got == {"trailing bytes": before, "second vector": before, "wrong crc": "CHECKSUM", "a/b": before}, got
