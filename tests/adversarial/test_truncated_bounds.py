"""Truncated string bounds of rewritten files (delta-rs, pyiceberg; Spark in test_spark_truncated_bounds.py).

Writers keep a prefix of a long string's bounds: a lower bound is cut short (still below every value), an upper
bound cut short and incremented (Iceberg's ``truncate(16)``; Spark's Delta statistics append a tie-breaker; Parquet
page indexes of parquet-mr and arrow-rs, 64 bytes). Such bounds are sound in UTF-8 byte order — Spark's, delta-rs's
and pyiceberg's — and must verify; one cut short without the increment, a lower bound longer than the least value,
or an upper bound that is no UTF-8 makes a filtered read skip rows (or fail) and must not. These were held before
(the check compares strings by UTF-8 bytes); the honest files here also exercise the page-index and bloom-filter
checks (test_rewrite_parquet_indexes.py) on delta-rs's own files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write as delta_attest
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.iceberg.conftest import iceberg_env  # noqa: F401  (the fixture)

LONG = ["a" * 80 + "1", "é" * 70 + "x", "\U0001f600" * 40 + "y", "\U0010ffff" * 20 + "z", "zz" * 50]


def test_delta_rs_optimize_of_long_strings_verifies(tmp_path: Path) -> None:
    """delta-rs's own compaction: page indexes with truncated string bounds, a maximum of U+10FFFF characters."""
    path = tmp_path / "t"
    for i, s in enumerate(LONG):
        write_deltalake(str(path), pa.table({"id": pa.array([i, 10 + i], pa.int64()), "s": [s, s[:-1]]}),
                        mode="append")
    delta_attest(str(path), model="orders", program_hash=PROGRAM)
    DeltaTable(str(path)).optimize.compact()
    (uri,) = DeltaTable(str(path)).file_uris()
    assert pq.ParquetFile(uri).metadata.row_group(0).column(1).has_column_index
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                 "s": pa.array(["a" * 20 + "1", "é" * 18 + "x", "\U0001f600" * 17 + "y"])})
EMOJI = "\U0001f600".encode()
FORGED: dict[str, dict[str, Any]] = {  # name: (bounds of s, field id 2, in place of pyiceberg's)
    "an upper bound truncated without its increment": {"upper_bounds": EMOJI * 16},
    "a lower bound longer than the least value": {"lower_bounds": b"a" * 20 + b"1x"},
    "an upper bound that is not UTF-8": {"upper_bounds": b"\xff"},
}


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("forged", [None, *FORGED])
def test_iceberg_rewrite_with_truncated_bounds(tmp_path: Path, forged: str | None) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo
    from pyiceberg.manifest import DataFile

    from carriers.iceberg.carrier import attest_after_write
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import replace, with_ids, write_file

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table.append(ROWS.slice(0, 1))
    table.append(ROWS.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    scratch = catalog.create_table("ns.scratch", schema=ROWS.schema)  # pyiceberg's metrics of the rewritten rows
    scratch.append(ROWS)
    metrics = next(iter(scratch.scan().plan_files())).file
    assert metrics.upper_bounds[2] == EMOJI * 15 + "\U0001f601".encode()  # truncate(16), incremented
    table = catalog.load_table("ns.t")
    honest = write_file(table, with_ids(ROWS, [1, 2]))
    bounds = {k: dict(getattr(metrics, k)) for k in ("lower_bounds", "upper_bounds")}
    for key, value in (FORGED[forged] if forged else {}).items():
        bounds[key][2] = value
    table = replace(catalog, table, data_files=[DataFile.from_args(
        content=honest.content, file_path=honest.file_path, file_format=honest.file_format,
        partition=honest.partition, record_count=3, file_size_in_bytes=honest.file_size_in_bytes, spec_id=0,
        value_counts=dict(metrics.value_counts), null_value_counts=dict(metrics.null_value_counts), **bounds)])
    assert table.scan().to_arrow().num_rows == 3
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    if forged is None:
        assert all(table.scan(row_filter=EqualTo("s", s)).to_arrow().num_rows == 1 for s in ROWS["s"].to_pylist())
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
        return
    if forged.endswith("UTF-8"):
        with pytest.raises(UnicodeDecodeError):  # pyiceberg's filtered scans fail
            table.scan(row_filter=EqualTo("s", "x")).to_arrow()
    else:
        row = ROWS["s"][2 if forged.startswith("an upper") else 0].as_py()
        assert table.scan(row_filter=EqualTo("s", row)).to_arrow().num_rows == 0  # the file skipped
    assert rc == 1 and codes(doc) == ["content_changed"], doc
