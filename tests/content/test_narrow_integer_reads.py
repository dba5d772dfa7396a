"""``content_store.narrow_integer_problems`` reads a file's INT(8) / INT(16) columns again as stored without holding
the file: only the footer is read whole (and patched in memory), the narrow columns' chunks row group by row group,
the other columns not at all. It read the whole file into memory twice before (``bytearray(handle.read())``, then
``bytes(...)``), for every file holding such a column — every file of a Spark table with a tinyint or smallint column.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carriers.content_store import narrow_integer_columns, narrow_integer_problems

GROUPS, ROWS = 40, 500
FORGED = list(range(101, 111))  # the last row group's first values, stored as 300 + each


class Counting(io.RawIOBase):
    """A read-only file that counts the bytes read through it."""

    def __init__(self, path: Path) -> None:
        self.inner, self.read_bytes = path.open("rb"), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.inner.seek(offset, whence)

    def tell(self) -> int:
        return self.inner.tell()

    def readinto(self, buffer: Any) -> int:
        n = self.inner.readinto(buffer)
        self.read_bytes += n or 0
        return n or 0

    def close(self) -> None:
        self.inner.close()
        super().close()


def large_file(path: Path, *, forge: bool) -> Path:
    """``GROUPS`` row groups of ``ROWS`` rows: ``v`` (INT(8)) and a wide ``pad`` column; with ``forge``, the last row
    group's first values of ``v`` stored as int32 300 + each (past INT(8): pyarrow reads them truncated)."""
    n = GROUPS * ROWS
    v = [5] * n
    v[(GROUPS - 1) * ROWS : (GROUPS - 1) * ROWS + len(FORGED)] = FORGED
    pq.write_table(
        pa.table({"v": pa.array(v, pa.int8()), "pad": pa.array([b"x" * 400] * n, pa.binary())}),
        path,
        row_group_size=ROWS,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
    )
    if forge:
        data = path.read_bytes()
        low = b"".join(struct.pack("<i", x) for x in FORGED)
        at = data.index(low)
        assert data.count(low) == 1
        path.write_bytes(data[:at] + b"".join(struct.pack("<i", 300 + x) for x in FORGED) + data[at + len(low) :])
    return path


@pytest.mark.parametrize("forge", [True, False])
@pytest.mark.parametrize("given", [True, False], ids=["table given", "read here"])
def test_narrow_columns_are_checked_without_reading_the_file_whole(tmp_path: Path, forge: bool, given: bool) -> None:
    path = large_file(tmp_path / "big.parquet", forge=forge)
    size = path.stat().st_size
    assert size > 8_000_000
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_row_groups == GROUPS
    narrow = narrow_integer_columns(parquet.schema)
    assert narrow == ["v"]
    table = pq.read_table(path) if given else None
    handle = Counting(path)
    try:
        problems = narrow_integer_problems(handle, table, narrow)
    finally:
        handle.close()
    assert bool(problems) is forge, problems
    if forge:
        assert "column 'v' stores integers past the width" in problems[0], problems
    # the footer (twice when read here) and v's chunks (about 2 KB each, twice when read here): not the pad column
    assert handle.read_bytes < size // 20, (handle.read_bytes, size)


def test_a_file_that_is_not_parquet_is_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 64)
    with path.open("rb") as handle:
        problems = narrow_integer_problems(handle, None, ["v"])
    assert problems and "cannot be read as stored" in problems[0], problems
