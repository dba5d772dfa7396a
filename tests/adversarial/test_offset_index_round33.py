"""Round 33: a rewrite's added Parquet file whose offset index locates another column's page.

A Parquet page index has two parts: the column index (each page's bounds and null count, held to the rows since round
20) and the offset index — each page's location (offset, size) and first row. pyarrow reads a column chunk's pages
one after another and never the offset index; delta-rs (arrow-rs) and parquet-mr read the pages the offset index
locates when they skip pages by the page index. So an offset index whose last page of ``v`` is located at ``u``'s
last page (same rows, same size: the index keeps its length) is read as ``u``'s values by a filtered query. Measured
with delta-rs 1.6 and Spark (delta-spark 4.4): ``SELECT v … WHERE v >= 30`` returned 1030–1039 (the file stores 30–39
and ``u`` 1030–1039; a full read, the stored rows); delta-rs's ``WHERE w = 's033'`` returned ``v = 1033``; the verdict
was ``VERIFIED (content; …, same rows)``, exit 0 (the digest
reads through pyarrow, and no check held the offset index's locations to the chunk's pages). Now each data page's
location as its page headers place it must be the offset index's: ``content_changed``. Found by editing a compacted
table's files byte by byte (the round's data-file fuzzing).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from carriers.content_store import layout_problems, read_parquet_indexes
from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.parquet_thrift import read, write
from tests.adversarial.test_file_size_round33 import rewritten_as, written_as

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROWS = pa.table({"v": pa.array(range(40), pa.int64()), "u": pa.array(range(1000, 1040), pa.int64()),
                 "w": pa.array([f"s{i:03d}" for i in range(40)])})


def paged(rows: pa.Table) -> bytes:
    """``rows`` in pages of ten, with a page index."""
    out = io.BytesIO()
    pq.write_table(rows, out, use_dictionary=False, write_page_index=True, max_rows_per_page=10, compression="NONE")
    return out.getvalue()


def located_elsewhere(data: bytes) -> bytes:
    """``data`` with the offset index of its first column locating its last page at the second column's last page
    (its first row kept): the same length, so nothing else moves."""
    length = struct.unpack("<i", data[-8:-4])[0]
    meta, _ = read(data[-8 - length:-8], 0, 12)
    chunks = next(f for f in meta if f[0] == 4)[2][1][0]  # row group 0
    chunks = next(f for f in chunks if f[0] == 1)[2][1]

    def index_of(chunk: list[list[object]]) -> tuple[int, int]:
        fields = {f[0]: f[2] for f in chunk}
        return int(fields[4]), int(fields[5])  # type: ignore[call-overload]

    (at, size), (other_at, other_size) = index_of(chunks[0]), index_of(chunks[1])
    mine, _ = read(data[at:at + size], 0, 12)
    theirs, _ = read(data[other_at:other_at + other_size], 0, 12)
    last, their_last = mine[0][2][1][-1], theirs[0][2][1][-1]
    for field, their_field in zip(last, their_last, strict=True):
        if field[0] in (1, 2):  # offset, compressed size with the header; first row index (3) kept
            field[2] = their_field[2]
    edited = write(12, mine)
    assert len(edited) == size
    return data[:at] + edited + data[at + size:]


def rows_of(path: Path, query: str) -> list[dict[str, object]]:
    return pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute(query).read_all()).to_pylist()


def test_an_honest_paged_file_holds_its_offset_index() -> None:
    assert layout_problems(read_parquet_indexes(pa.BufferReader(paged(ROWS)))) == []  # type: ignore[arg-type]


def test_a_rewrite_whose_offset_index_locates_another_columns_page(tmp_path: Path) -> None:
    path = tmp_path / "t"
    added = rewritten_as(path, ROWS, lambda _: located_elsewhere(paged(ROWS)))
    assert pq.read_table(added).equals(ROWS)  # pyarrow: the stored rows
    assert [r["v"] for r in rows_of(path, "SELECT v FROM t WHERE v >= 30 ORDER BY v")] == list(range(1030, 1040))
    assert rows_of(path, "SELECT v FROM t WHERE w = 's033'") == [{"v": 1033}]
    for level in ("schema", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc == 1 and codes(doc) == ["content_changed"], doc  # VERIFIED (content; …, same rows) before
        assert "its offset index locates pages" in doc["errors"][0]["message"], doc


def test_a_file_recorded_with_such_an_offset_index_is_refused(tmp_path: Path) -> None:
    """The same file in the attested version itself: record refuses it (the check ``record`` makes of the files'
    page indexes)."""
    from attest.errors import AttestError

    path = tmp_path / "t"
    written_as(path, ROWS, located_elsewhere(paged(ROWS)))
    try:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    except AttestError as exc:
        assert "its offset index locates pages" in exc.message, exc.message
    else:
        raise AssertionError("recorded")


@pytest.mark.spark
def test_spark_reads_the_pages_the_offset_index_locates(spark: SparkSession, tmp_path: Path) -> None:
    from tests.adversarial.test_spark_rewrite_readers import spark_rows

    path = tmp_path / "t"
    written_as(path, ROWS, located_elsewhere(paged(ROWS)))
    assert sorted(r["v"] for r in spark_rows(spark, path)) == list(range(40))  # a full read: the stored rows
    filtered = spark.read.format("delta").load(str(path)).where("v >= 30").select("v").collect()
    assert sorted(r[0] for r in filtered) == list(range(1030, 1040))
