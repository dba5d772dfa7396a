"""Round 33: a rewrite's added Parquet file whose footer holds text that is not UTF-8.

parquet.thrift types a footer's names, key-value metadata, ``created_by`` and ``path_in_schema`` as ``string``.
delta-rs (arrow-rs) refuses a footer whose ``created_by`` or key-value metadata holds other bytes (measured: "invalid
utf-8 sequence", every read of the table fails), and parquet-mr reads a chunk as the column its ``path_in_schema``
names; pyarrow reads them all — and raised ``UnicodeDecodeError`` out of the digest when a column's name was such
bytes (an internal error), or read the file and said ``VERIFIED (content; …, same rows)`` when ``created_by`` or a
key-value entry was (delta-rs refusing every read). Found by the table fuzzer's edits of a compacted table's files
(``tests/test_fuzz_tables.py``). Now such a footer is one the content check cannot hold to its rows:
``content_changed`` for a rewrite's file (``table_inconsistent`` at ``record``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.adversarial.conftest import codes, verify
from tests.adversarial.parquet_thrift import field, with_footer
from tests.adversarial.test_file_size_round33 import rewritten_as

ROWS = pa.table({"v": pa.array(range(5), pa.int64()), "w": pa.array([f"s{i}" for i in range(5)])})


def _created_by(meta: list[list[Any]]) -> None:
    field(meta, 6)[2] = b"parquet-cpp-arrow version \xff"  # type: ignore[index]


def _key_value(meta: list[list[Any]]) -> None:
    entry = field(meta, 5)[2][1][0]  # type: ignore[index]  # the first key-value pair (ARROW:schema)
    field(entry, 1)[2] = b"ARROW:\xffschema"  # type: ignore[index]


def _column_name(meta: list[list[Any]]) -> None:
    chunk = field(field(meta, 4)[2][1][0], 1)[2][1][1]  # type: ignore[index]  # row group 0, column w
    column = field(chunk, 3)[2]  # type: ignore[index]
    field(column, 3)[2] = (8, [b"w\xc3"])  # type: ignore[index]  # path_in_schema: a cut two-byte sequence


@pytest.mark.parametrize("edit", [_created_by, _key_value, _column_name], ids=["created_by", "key-value", "name"])
def test_a_rewrite_whose_footer_text_is_not_utf8(tmp_path: Path, edit: Any) -> None:
    path = tmp_path / "t"
    added = rewritten_as(path, ROWS, lambda honest: with_footer(honest, edit))
    assert pq.read_table(added).num_rows == 5  # pyarrow reads it
    if edit is _column_name:  # delta-rs reads chunks by position; parquet-mr (Spark) by this name (layout_problems)
        assert len(QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()) == 5
    else:
        with pytest.raises(Exception, match=r"utf-8|utf8"):  # delta-rs refuses every read of the table
            QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
    for level in ("schema", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc == 1 and codes(doc) == ["content_changed"], doc  # VERIFIED or internal_error before
        assert "not UTF-8" in doc["errors"][0]["message"], doc
