"""A rewrite's added Parquet file whose footer says every data page is dictionary-encoded when some are not: Spark
(parquet-mr's dictionary filter) then skips a row group whose dictionary lacks the constant of ``w = '…'``, though a
PLAIN page of it holds the value. pyarrow and delta-rs read the pages as stored (the same rows), so the digest and
every other statistic were honest: VERIFIED before. The footer's ``encoding_stats`` (and ``encodings``) are now held
to the page headers: ``content_changed``. The same file with its true encoding statistics verifies.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.test_content_rewrite_delta import _adds, _merged, rewrite

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PLAIN_DATA_PAGES = b"\x15\x00\x15\x00\x15"  # PageEncodingStats: page type DATA_PAGE, encoding PLAIN, count ...
AS_DICTIONARY = b"\x15\x00\x15\x10\x15"  # ... said to be RLE_DICTIONARY (same length)


@pytest.mark.parametrize("forged", [False, True])
def test_encoding_statistics_that_hide_plain_pages(spark: SparkSession, tmp_path: Path, forged: bool) -> None:
    path = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(path), pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64()),
                                             "w": [f"value-{i * 100 + j:05d}" for j in range(100)]}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rels = sorted(_adds(path))
    rows = _merged(path, rels)
    n = rewrite(path, rels, [(rows, {})])
    commit = path / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    (add,) = [a["add"] for a in actions if "add" in a]
    added = path / add["path"]
    # A small dictionary: the writer falls back to PLAIN pages for the later values (as every writer does).
    pq.write_table(rows, added, dictionary_pagesize_limit=256, data_page_size=512, write_batch_size=16)
    if forged:
        data = bytearray(added.read_bytes())
        start = len(data) - 8 - struct.unpack("<i", bytes(data[-8:-4]))[0]
        footer = bytes(data[start:-8])
        assert footer.count(PLAIN_DATA_PAGES) >= 1
        data[start:-8] = footer.replace(PLAIN_DATA_PAGES, AS_DICTIONARY)
        added.write_bytes(bytes(data))
    add["size"] = added.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert pq.read_table(added).num_rows == 300  # pyarrow reads every stored row

    def spark_count(query: str) -> int:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
        return int(spark.read.format("delta").load(str(path)).where(query).count())

    assert spark_count("true") == 300
    rc, doc = verify(str(path), "--level", "bytes")
    if forged:
        assert spark_count("w = 'value-00299'") == 0  # parquet-mr's dictionary filter skips the row group
        assert rc == 1 and codes(doc) == ["content_changed"], doc
        assert "encoding statistics" in doc["errors"][0]["message"], doc
    else:
        assert spark_count("w = 'value-00299'") == 1
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
