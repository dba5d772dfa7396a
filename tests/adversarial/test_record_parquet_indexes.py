"""Round 14k: a data file of the attested version itself (an append, not a rewrite) whose Parquet page index
(ColumnIndex / OffsetIndex) or bloom filter misstates its rows.

A rewrite's added files were held to their page indexes and bloom filters (test_rewrite_parquet_indexes.py), and
round 14i held every digested Iceberg file's manifest metrics and footer statistics to its rows at ``record``; a
file's page index and bloom filters were not held at ``record``. delta-rs (Delta) and parquet-mr (Spark: the Spark
module, test_spark_record_parquet_indexes.py) skip pages and row groups by them, pyarrow (pyiceberg, the digest) reads
every row: measured below, a filtered delta-rs read missed the row a full read returned, yet ``attest record``
attested the version and ``verify`` said VERIFIED. Now every digested file's page index and bloom filters are held to
its stored rows (``content_store.index_problems``): ``table_inconsistent``, nothing recorded. The same files written
honestly (pyarrow's page index and bloom filters) still record and verify.
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

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write as delta_record
from carriers.delta.log import commit_name
from carriers.iceberg.carrier import attest_after_write as iceberg_record
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_iceberg_round14 import HONEST, ID, ROWS, V, X
from tests.adversarial.test_rewrite_parquet_indexes import _forge_page_index, _zero_bloom
from tests.adversarial.test_rewrite_statistics import _sql
from tests.iceberg.conftest import CATALOG, iceberg_env, ns_catalog  # noqa: F401
from tests.iceberg.rewrites import replace, with_ids, write_file

PAGE_INDEX: dict[str, Any] = {"write_page_index": True}
BLOOM: dict[str, Any] = {"bloom_filter_options": {"v": {"ndv": 10}, "w": {"ndv": 10}}}


def _delta(tmp_path: Path, **options: Any) -> tuple[Path, Path]:
    """A Delta table of two delta-rs appends (v 0..29, w 'w000'..'w029'), the second's file rewritten in place by
    pyarrow with ``options`` (the same rows, so the log's statistics stay honest); the table and that file."""
    path = tmp_path / "t"
    rows = pa.table({"v": pa.array(range(30), pa.int64()), "w": [f"w{i:03d}" for i in range(30)]})
    write_deltalake(str(path), rows.slice(0, 10))
    write_deltalake(str(path), rows.slice(10), mode="append")
    commit = path / commit_name(1)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    (add,) = [a["add"] for a in actions if "add" in a]
    added = path / add["path"]
    pq.write_table(rows.slice(10), added, **options)
    add["size"] = added.stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path, added


def _delta_refused(path: Path, query: str) -> None:
    assert _sql(path, "select count(*) from t") == 30  # a full read returns every row ...
    assert _sql(path, query) == 0, query  # ... delta-rs's filtered read skips the page / row group (measured)
    with pytest.raises(AttestError) as refused:
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "misstate its rows" in refused.value.message
    assert not (path / "_recipe_attest").exists() or not any((path / "_recipe_attest").rglob("*.json"))


@pytest.mark.parametrize("options", [PAGE_INDEX, BLOOM, {**PAGE_INDEX, **BLOOM}], ids=["page_index", "bloom", "both"])
def test_delta_honest_page_index_and_bloom_filters_record(tmp_path: Path, options: dict[str, Any]) -> None:
    path, added = _delta(tmp_path, **options)
    meta = pq.ParquetFile(added).metadata.row_group(0)
    assert any(meta.column(i).has_column_index or meta.column(i).bloom_filter_offset for i in range(2))
    assert _sql(path, "select count(*) from t where v = 29") == 1
    delta_record(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


@pytest.mark.parametrize("options", [PAGE_INDEX, {"write_page_index": True, "bloom_filter_options": {"d": {"ndv": 4}}}],
                         ids=["page_index", "bloom"])
def test_delta_honest_wide_decimals_record(tmp_path: Path, options: dict[str, Any]) -> None:
    """A decimal(38, 18) value of 38 digits (and a decimal256 of 70) held to a page index and a bloom filter exactly:
    read through Python's default decimal context (28 digits) its maximum came out rounded, and an honest delta-rs
    table was refused (tests/adversarial/test_spark_attacks.py found it)."""
    import decimal

    path = tmp_path / "t"
    big = decimal.Decimal("12345678901234567890.123456789012345678")
    wide = decimal.Decimal("1" * 70 + ".123456")
    write_deltalake(str(path), pa.table({"d": pa.array([big, decimal.Decimal("-1.5")], pa.decimal128(38, 18))}))
    (add,) = [json.loads(line)["add"] for line in (path / commit_name(0)).read_text().splitlines() if '"add"' in line]
    rows = pa.table({"d": pa.array([big, decimal.Decimal("-1.5")], pa.decimal128(38, 18))})
    pq.write_table(rows, path / add["path"], **options)  # the same rows, with the structures asked for
    commit = path / commit_name(0)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["size"] = (path / add["path"]).stat().st_size
            # The log's maximum exact, as Spark writes it: delta-rs's own goes through a float and lands inside the
            # value, which Spark skips the file by (refused: tests/adversarial/test_delta_spark_only_bounds.py).
            stats = json.loads(action["add"]["stats"])
            stats["maxValues"]["d"] = "__MAX__"
            action["add"]["stats"] = json.dumps(stats).replace('"__MAX__"', str(big))
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    delta_record(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc
    from carriers.content_store import _physical

    ints, _ = _physical(pa.array([wide], pa.decimal256(76, 6)), "FIXED_LEN_BYTE_ARRAY", 32)
    assert ints == [int("1" * 70 + "123456")]


def test_delta_a_page_index_maximum_below_the_greatest_value(tmp_path: Path) -> None:
    path, added = _delta(tmp_path, **PAGE_INDEX)
    _forge_page_index(added, struct.pack("<q", 29), struct.pack("<q", 20))
    _delta_refused(path, "select count(*) from t where v = 29")


def test_delta_a_page_index_string_maximum_below_the_greatest_value(tmp_path: Path) -> None:
    path, added = _delta(tmp_path, **PAGE_INDEX)
    _forge_page_index(added, b"w029", b"w019")
    _delta_refused(path, "select count(*) from t where w = 'w029'")


@pytest.mark.parametrize(("column", "query"), [(0, "select count(*) from t where v = 25"),
                                               (1, "select count(*) from t where w = 'w025'")])
def test_delta_a_bloom_filter_that_leaves_out_a_stored_value(tmp_path: Path, column: int, query: str) -> None:
    path, added = _delta(tmp_path, **BLOOM)
    _zero_bloom(added, column)
    _delta_refused(path, query)


# ---- Iceberg: the same on a data file appended by hand (its manifest metrics and footer statistics honest) ----------

ICEBERG_BLOOM: dict[str, Any] = {"bloom_filter_options": {"id": {"ndv": 10}, "v": {"ndv": 10}}}


def _iceberg(tmp_path: Path, *, int32: bool = False, **options: Any) -> tuple[Any, Path]:
    """An Iceberg table (id long, x double, v string) with one pyiceberg append, then a data file of ROWS written by
    pyarrow with ``options`` (field ids kept; ``int32``: ``id`` stored as int32, read promoted to long) appended by
    hand with honest metrics; the table and that file."""
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    catalog = ns_catalog(tmp_path)
    schema = Schema(NestedField(ID, "id", LongType(), required=False),
                    NestedField(X, "x", DoubleType(), required=False),
                    NestedField(V, "v", StringType(), required=False))
    table = catalog.create_table("ns.t", schema=schema)
    arrow = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("v", pa.string())])
    table.append(pa.table({"id": [1, 2], "x": [0.5, 0.25], "v": ["a", "b"]}, schema=arrow))
    table = catalog.load_table("ns.t")
    written = write_file(table, with_ids(pa.table(ROWS, schema=arrow), [ID, X, V]))
    path = Path(str(written.file_path).removeprefix("file://"))
    stored = pq.read_table(path)
    if int32:
        stored = stored.cast(stored.schema.set(0, stored.schema.field(0).with_type(pa.int32())))
    pq.write_table(stored, path, **options)  # the field ids ride in the Arrow schema's metadata
    added = DataFile.from_args(content=written.content, file_path=written.file_path, file_format=written.file_format,
                               partition=written.partition, file_size_in_bytes=path.stat().st_size, spec_id=0,
                               **HONEST)
    return replace(catalog, table, remove=[], data_files=[added], operation="append"), path


def _iceberg_refused(table: Any, query: str) -> None:
    # pyarrow reads no page index nor bloom filter: pyiceberg's reads return the row (Spark's: the Spark module)
    assert table.scan().to_arrow().num_rows == 5
    assert table.scan(row_filter=query).to_arrow().num_rows == 1, query
    with pytest.raises(AttestError) as refused:
        iceberg_record(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "page index or bloom filters" in refused.value.message


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("options", [PAGE_INDEX, ICEBERG_BLOOM, {**PAGE_INDEX, **ICEBERG_BLOOM}],
                         ids=["page_index", "bloom", "both"])
def test_iceberg_honest_page_index_and_bloom_filters_record(tmp_path: Path, options: dict[str, Any]) -> None:
    table, path = _iceberg(tmp_path, **options)
    meta = pq.ParquetFile(path).metadata.row_group(0)
    assert any(meta.column(i).has_column_index or meta.column(i).bloom_filter_offset for i in range(3))
    iceberg_record(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.usefixtures("iceberg_env")
def test_iceberg_a_page_index_maximum_below_the_greatest_value(tmp_path: Path) -> None:
    table, path = _iceberg(tmp_path, **PAGE_INDEX)
    _forge_page_index(path, struct.pack("<q", 101), struct.pack("<q", 100))
    _iceberg_refused(table, "id = 101")


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize(("column", "query"), [(0, "id = 100"), (2, "v = 'abcdzz'")])
def test_iceberg_a_bloom_filter_that_leaves_out_a_stored_value(tmp_path: Path, column: int, query: str) -> None:
    table, path = _iceberg(tmp_path, **ICEBERG_BLOOM)
    _zero_bloom(path, column)
    _iceberg_refused(table, query)


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("forged", [False, True])
def test_iceberg_a_bloom_filter_of_a_promoted_column(tmp_path: Path, forged: bool) -> None:
    """``id`` stored as int32 and read as long (a promoted column): its bloom filter hashes the int32 values and is
    held to them all the same."""
    table, path = _iceberg(tmp_path, int32=True, **ICEBERG_BLOOM)
    assert pq.ParquetFile(path).schema_arrow.field("id").type == pa.int32()
    if not forged:
        iceberg_record(table, model="orders", program_hash=PROGRAM)
        return
    _zero_bloom(path, 0)
    _iceberg_refused(table, "id = 100")
