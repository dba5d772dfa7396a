"""Round 33: a rewrite's added Parquet file whose data page header names an encoding no reader knows.

A v1 data page header names its values' encoding and its levels' (definition, repetition). pyarrow reads no
repetition levels for a column that is not repeated, whatever encoding the header names for them; delta-rs (arrow-rs)
refuses the page — measured: "Unexpected Encoding 11" (in the fuzzer's case on filtered reads only, which read pages
through the page index, its full read returning every row). ``VERIFIED (content; …, same rows)`` before, exit 0.
Found by the table fuzzer's data-file edits in CI (``tests/test_fuzz_tables.py``: a ``VERIFIED`` whose filtered reads
delta-rs refused). Now every data page header must name encodings parquet.thrift defines (levels: RLE or
BIT_PACKED): ``content_changed``.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.adversarial.conftest import codes, verify
from tests.adversarial.parquet_thrift import field, read, write
from tests.adversarial.test_file_size_round33 import rewritten_as

ROWS = pa.table({"id": pa.array(range(40), pa.int64()), "w": pa.array([f"s{i:03d}" for i in range(40)])})


def level_encoding(data: bytes, encoding: int) -> bytes:
    """``data`` (a paged file of ``ROWS``) with its first column's first data page header naming ``encoding`` for
    its repetition levels (DataPageHeader field 4; a column not repeated has none; the header keeps its length)."""
    length = struct.unpack("<i", data[-8:-4])[0]
    meta, _ = read(data[-8 - length:-8], 0, 12)
    chunk = field(field(meta, 4)[2][1][0], 1)[2][1][0]  # type: ignore[index]
    at = field(field(chunk, 3)[2], 9)[2]  # type: ignore[index]  # data_page_offset
    header, end = read(data, at, 12)
    field(field(header, 5)[2], 4)[2] = encoding  # type: ignore[index]
    edited = write(12, header)
    assert len(edited) == end - at
    return data[:at] + edited + data[end:]


def paged(rows: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(rows, out, use_dictionary=False, write_page_index=True, max_rows_per_page=10, compression="NONE")
    return out.getvalue()


def _rows(path: Path, query: str) -> int:
    return len(QueryBuilder().register("t", DeltaTable(str(path))).execute(query).read_all())


@pytest.mark.parametrize("encoding", [11, -4])
def test_a_rewrite_whose_page_header_names_an_unknown_level_encoding(tmp_path: Path, encoding: int) -> None:
    path = tmp_path / "t"
    added = rewritten_as(path, ROWS, lambda _: level_encoding(paged(ROWS), encoding))
    assert pq.read_table(added).equals(ROWS)  # pyarrow: no repetition levels to read
    with pytest.raises(Exception, match="Unexpected Encoding"):  # delta-rs refuses the page
        _rows(path, "SELECT id FROM t WHERE id < 5")
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc  # VERIFIED before
    assert "which readers refuse" in doc["errors"][0]["message"], doc


def test_the_honest_paged_file_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: level_encoding(paged(ROWS), 3))  # RLE: what was there
    assert _rows(path, "SELECT id FROM t WHERE id < 5") == 5
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), doc


def _chunk_type(meta: list[list[object]]) -> None:
    chunk = field(field(meta, 4)[2][1][0], 1)[2][1][1]  # type: ignore[index]  # row group 0, column w (BYTE_ARRAY)
    field(field(chunk, 3)[2], 1)[2] = 9  # type: ignore[index]  # no Type parquet.thrift defines


def _encoding_list(meta: list[list[object]]) -> None:
    chunk = field(field(meta, 4)[2][1][0], 1)[2][1][0]  # type: ignore[index]
    field(field(chunk, 3)[2], 2)[2][1][0] = 11  # type: ignore[index]  # ColumnMetaData.encodings


@pytest.mark.parametrize("edit", [_chunk_type, _encoding_list], ids=["chunk type", "encodings"])
def test_a_rewrite_whose_footer_names_an_enum_value_no_reader_knows(tmp_path: Path, edit: object) -> None:
    """A column chunk's type that is no Type (pyarrow read the file, then ended the process — a C++ exception no
    caller can catch — when the check asked for that chunk's statistics; measured, found by the fuzzer), or an
    encoding in its footer's list that is none (delta-rs refuses the file's metadata: "Unexpected Encoding 11").
    Run as a separate process: the verdict, never an ended process."""
    from tests.adversarial.parquet_thrift import with_footer
    from tests.conftest import run_cli

    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: with_footer(paged(ROWS), edit))
    if edit is _encoding_list:
        with pytest.raises(Exception, match="Unexpected Encoding"):
            _rows(path, "SELECT * FROM t")
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "content_changed" in done.stdout, done.stdout
    assert "readers refuse" in done.stdout or "its schema leaf" in done.stdout, done.stdout
