"""Round 14: an Iceberg data file of the attested snapshot itself (an append, not a rewrite) whose metrics in its
manifest entry misstate its rows (the Spark measurement: tests/adversarial/test_spark_iceberg_round14.py).

Readers prune files by a data file's metrics — lower / upper bounds, null, NaN and value counts, the record count —
and Iceberg Java (Spark) answers ``COUNT(*)``, ``COUNT(col)``, ``MIN`` and ``MAX`` from them without reading the file.
The metrics of a rewrite's added files were held to their rows (``content_changed``,
tests/adversarial/test_rewrite_statistics.py) and a transform's partition tuple at record time
(test_iceberg_transform_partitions.py), but not the attested snapshot's own files' metrics: ``attest record`` attested
the rows of a full scan while a filtered read (pyiceberg 0.12, measured below; Spark too) returned other rows, and
``verify`` said VERIFIED. Now every digested file's metrics are held to its stored rows (carriers/iceberg/content.py
``_check_recorded_statistics``): ``table_inconsistent``, nothing recorded. A pyiceberg-written table with NaN, nulls,
long strings and every type it writes still attests and verifies.
"""

from __future__ import annotations

import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, verify
from tests.iceberg.conftest import CATALOG, iceberg_env, ns_catalog  # noqa: F401
from tests.iceberg.rewrites import replace, with_ids, write_file

ID, X, V = 1, 2, 3


def _long(v: int) -> bytes:
    return struct.pack("<q", v)


def _double(v: float) -> bytes:
    return struct.pack("<d", v)


# Each forgery of the appended file's metrics (its rows: id 100, 101, null; x 1.5, NaN, 2.5; v 'abcdef' ...), and a
# pyiceberg filtered read it makes miss a row that a full read returns (None: an answer Spark takes from the metrics,
# the Spark module measures it).
ROWS = {"id": [100, 101, None], "x": [1.5, float("nan"), 2.5], "v": ["abcdef", "abcdef", "abcdzz"]}
HONEST: dict[str, Any] = {
    "record_count": 3,
    "value_counts": {ID: 3, X: 3, V: 3}, "null_value_counts": {ID: 1, X: 0, V: 0}, "nan_value_counts": {X: 1},
    "lower_bounds": {ID: _long(100), X: _double(1.5), V: b"abcdef"},
    "upper_bounds": {ID: _long(101), X: _double(2.5), V: b"abcdzz"},
}
FORGERIES: dict[str, tuple[dict[str, Any], str | None]] = {
    "upper_bound_below_the_greatest": ({"upper_bounds": {ID: _long(50), X: _double(2.5), V: b"abcdzz"}}, "id = 101"),
    "lower_bound_above_the_least": ({"lower_bounds": {ID: _long(101), X: _double(1.5), V: b"abcdef"}}, "id = 100"),
    "no_null_counted_over_a_null": ({"null_value_counts": {ID: 0, X: 0, V: 0}}, "id IS NULL"),
    "only_nulls_counted": ({"null_value_counts": {ID: 3, X: 0, V: 0}}, "id = 100"),
    "no_nan_counted_over_a_nan": ({"nan_value_counts": {X: 0}}, "x IS NAN"),
    "a_string_maximum_cut_without_increment": ({"upper_bounds": {ID: _long(101), X: _double(2.5), V: b"abcd"}},
                                               "v = 'abcdzz'"),
    "lower_bound_below_the_least": ({"lower_bounds": {ID: _long(-1000), X: _double(1.5), V: b"abcdef"}}, None),
    "record_count_above_the_rows": ({"record_count": 4}, None),
    "value_count_above_the_rows": ({"value_counts": {ID: 4, X: 3, V: 3}}, None),
}


def _appended(catalog: Any, metrics: dict[str, Any], *, footer_statistics: bool = True, field_ids: bool = True
              ) -> Any:
    """A table (id long, x double, v string) with one pyiceberg append, then a data file appended by hand with
    ``metrics`` in its manifest entry (``footer_statistics``: the file written with Parquet footer statistics;
    ``field_ids``: with Parquet field ids, else read through the table's name mapping)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    schema = Schema(NestedField(ID, "id", LongType(), required=False),
                    NestedField(X, "x", DoubleType(), required=False),
                    NestedField(V, "v", StringType(), required=False))
    table = catalog.create_table("ns.t", schema=schema)
    arrow = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("v", pa.string())])
    table.append(pa.table({"id": [1, 2], "x": [0.5, 0.25], "v": ["a", "b"]}, schema=arrow))
    table = catalog.load_table("ns.t")
    from pyiceberg.manifest import DataFile

    if not field_ids:
        from pyiceberg.table.name_mapping import create_mapping_from_schema

        with table.transaction() as tx:
            tx.set_properties({"schema.name-mapping.default": create_mapping_from_schema(schema).model_dump_json()})
        table = catalog.load_table("ns.t")
    rows = pa.table(ROWS, schema=arrow)
    written = write_file(table, with_ids(rows, [ID, X, V]) if field_ids else rows)
    if not footer_statistics:
        import pyarrow.parquet as pq

        path = Path(str(written.file_path).removeprefix("file://"))
        pq.write_table(pq.read_table(path), path, write_statistics=False)
        written = DataFile.from_args(content=written.content, file_path=written.file_path,
                                     file_format=written.file_format, partition=written.partition,
                                     file_size_in_bytes=path.stat().st_size, record_count=3, spec_id=0)
    added = DataFile.from_args(content=written.content, file_path=written.file_path, file_format=written.file_format,
                               partition=written.partition, file_size_in_bytes=written.file_size_in_bytes,
                               spec_id=0, **{**HONEST, **metrics})
    return replace(catalog, table, remove=[], data_files=[added], operation="append")


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_an_appended_file_whose_metrics_misstate_its_rows_is_not_attested(forgery: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    metrics, query = FORGERIES[forgery]
    table = _appended(catalog, metrics)
    assert table.scan().to_arrow().num_rows == 5  # a full read returns every row ...
    if query is not None:  # ... a filtered one skips the appended file by its metrics
        assert table.scan(row_filter=query).to_arrow().num_rows == 0, query
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "misstate its rows" in refused.value.message


@pytest.mark.usefixtures("iceberg_env")
def test_the_same_file_with_true_metrics_is_attested(tmp_path: Path) -> None:
    """The control: the appended file's true metrics (NaN left out of the bounds as the spec says, the string bounds
    a prefix of 4 with the maximum incremented, as a truncating writer keeps them) — filtered reads find every row."""
    catalog = ns_catalog(tmp_path)
    table = _appended(catalog, {"lower_bounds": {ID: _long(100), X: _double(1.5), V: b"abcd"},
                                "upper_bounds": {ID: _long(101), X: _double(2.5), V: b"abce"}})
    for query in ("id = 101", "id = 100", "id IS NULL", "x IS NAN", "v = 'abcdzz'"):
        assert table.scan(row_filter=query).to_arrow().num_rows >= 1, query
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.usefixtures("iceberg_env")
def test_pyiceberg_writes_of_every_type_are_attested(tmp_path: Path) -> None:
    """Honest metrics of pyiceberg's own writer — NaN beside numbers, nulls, all-null and all-NaN columns, strings
    past its 16-character prefix, decimals, timestamps, dates, booleans, binary — attest and verify."""
    from datetime import UTC, date, datetime

    catalog = ns_catalog(tmp_path)
    long_text = "é" * 20 + "𝄞" * 20
    data = pa.table({
        "id": pa.array([1, None, 3], pa.int64()),
        "f": pa.array([float("nan"), 1.0, -0.0], pa.float32()),
        "d": pa.array([float("nan")] * 3, pa.float64()),
        "n": pa.array([None, None, None], pa.int32()),
        "s": pa.array([long_text, long_text + "z", None], pa.string()),
        "b": pa.array([b"\xff" * 40, b"\x00", None], pa.binary()),
        "dec": pa.array([Decimal("1.25"), Decimal("-3.50"), None], pa.decimal128(10, 2)),
        "ts": pa.array([datetime(2024, 1, 1, tzinfo=UTC), None, datetime(1960, 5, 5, tzinfo=UTC)],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([date(2024, 1, 1), date(1900, 1, 1), None], pa.date32()),
        "ok": pa.array([True, None, False], pa.bool_()),
    })
    table = catalog.create_table("ns.t", schema=data.schema)
    table.append(data)
    table.append(data.slice(0, 1))
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


def _forge_footer(path: Path, true: bytes, forged: bytes) -> None:
    """Every occurrence of ``true`` in the Parquet footer of ``path`` written as ``forged`` (same length), in place."""
    data = bytearray(path.read_bytes())
    length = struct.unpack("<i", bytes(data[-8:-4]))[0]
    start, end = len(data) - 8 - length, len(data) - 8
    footer = bytes(data[start:end])
    assert true in footer
    data[start:end] = footer.replace(true, forged)
    path.write_bytes(bytes(data))


# The appended file's footer statistics forged (manifest metrics honest), and the filtered read that then skips its row
# group in pyiceberg (pyarrow prunes row groups by the footer; Spark too, measured in the Spark module).
FOOTERS: dict[str, tuple[bytes, bytes, str, bool]] = {
    "a_maximum_below_the_greatest": (_long(101), _long(100), "id = 101", True),  # min <= max: pyarrow trusts it
    "a_string_minimum_above_the_least": (b"abcdef", b"abcdzz", "v = 'abcdef'", True),
    "a_maximum_below_the_greatest_in_a_file_without_field_ids": (_long(101), _long(100), "id = 101", False),
}


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("forgery", sorted(FOOTERS))
def test_an_appended_file_whose_parquet_footer_misstates_its_rows_is_not_attested(forgery: str,
                                                                                   tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    true, forged, query, field_ids = FOOTERS[forgery]
    catalog = ns_catalog(tmp_path)
    table = _appended(catalog, {}, field_ids=field_ids)
    added = [f for f in table.inspect.files().column("file_path").to_pylist() if "rewritten-" in f]
    path = Path(added[0].removeprefix("file://"))
    _forge_footer(path, true, forged)
    assert pq.ParquetFile(path).metadata.num_rows == 3
    assert table.scan().to_arrow().num_rows == 5  # a full read returns every row ...
    assert table.scan(row_filter=query).to_arrow().num_rows == 0, query  # ... a filtered one skips the row group
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "Parquet footer statistics" in refused.value.message
