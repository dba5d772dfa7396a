"""Round 35: a Parquet column whose converted type says other than its logical type.

A Parquet schema element may carry two annotations: the logical type and, for older readers, the converted type
(``converted_type``). Every writer derives one from the other; readers take either. pyarrow (the digest, pyiceberg)
reads the logical type, parquet-mr (Spark, Iceberg Java) the converted type where the two disagree
(ParquetMetadataConverter: "Converted type and logical type metadata mismatch … Using value in converted type"), and
arrow-rs (delta-rs) refuses the file. Measured: a rewrite's file storing the attested microsecond timestamps under the
logical type ``TIMESTAMP(MICROS)`` and the converted type ``TIMESTAMP_MILLIS`` — ``VERIFIED (content; compacted …,
same rows)``, exit 0, while Spark read every instant a thousand times later (year 55840; with and without its
vectorized reader, tests/adversarial/test_spark_parquet_annotations_round35.py) and delta-rs refused the read. Found by
a differential fuzzer of a rewrite's footer with Spark as the oracle (other edits it made, a string's converted type
``MAP``, a decimal whose element's scale is not its logical type's, a date's converted type ``DECIMAL``: each a
``VERIFIED`` table Spark refused to read). Now every file a rewrite adds and every file ``attest record`` digests must
carry, wherever both are present, the converted type its logical type stands for, and a decimal's element scale and
precision its logical type's (``content_store._footer_annotations``): ``content_changed`` in a rewrite,
``table_inconsistent`` at record.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.adversarial.parquet_thrift import field, with_footer
from tests.adversarial.test_file_size_round33 import rewritten_as, written_as
from tests.adversarial.test_footer_statistics_round35 import verified_by_content
from tests.conftest import run_cli

UTC = pa.timestamp("us", tz="UTC")
ROWS = pa.table({
    "id": pa.array([1, 2], pa.int64()),
    "ts": pa.array([1_700_000_000_000_000, 1_700_000_000_123_456], UTC),
    "nz": pa.array([1_700_000_000_000_000, 1_600_000_000_000_000], pa.timestamp("us")),
    "n": pa.array([-1, 7], pa.int16()),
    "s": pa.array(["a", "b"], pa.string()),
    "dec": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50")], pa.decimal128(10, 2)),
    "dt": pa.array([19000, 19001], pa.int32()).cast(pa.date32()),
})
# Schema element of each column (element 0 is the root), and parquet.thrift's ConvertedType values used here.
ELEMENT = {name: i + 1 for i, name in enumerate(ROWS.column_names)}
UTF8, MAP, DECIMAL, DATE, TIME_MILLIS, TIMESTAMP_MILLIS, TIMESTAMP_MICROS, UINT_16, INT_16, ENUM = \
    0, 1, 5, 6, 7, 9, 10, 12, 16, 4


def honest_file() -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(ROWS, sink, store_schema=False)
    return bytes(sink.getvalue().to_pybytes())


def converted(column: str, value: int) -> Callable[[Any], None]:
    """A footer edit: ``column``'s schema element given the converted type ``value`` (its logical type kept)."""

    def edit(meta: Any) -> None:
        element = field(meta, 2)[2][1][ELEMENT[column]]  # type: ignore[index]
        entry = field(element, 6)
        if entry is None:
            element.append([6, 5, value])
            element.sort(key=lambda e: e[0])
        else:
            entry[2] = value

    return edit


def decimal_scale(scale: int) -> Callable[[Any], None]:
    def edit(meta: Any) -> None:
        field(field(meta, 2)[2][1][ELEMENT["dec"]], 7)[2] = scale  # type: ignore[index]  # SchemaElement.scale

    return edit


EDITS: dict[str, Callable[[Any], None]] = {
    "a UTC timestamp's converted type TIMESTAMP_MILLIS (logical MICROS)": converted("ts", TIMESTAMP_MILLIS),
    "a local timestamp given the converted type TIMESTAMP_MILLIS (logical MICROS)": converted("nz", TIMESTAMP_MILLIS),
    "a short's converted type UINT_16 (logical INTEGER(16, signed))": converted("n", UINT_16),
    "a string's converted type MAP (logical STRING)": converted("s", MAP),
    "a string's converted type ENUM (logical STRING)": converted("s", ENUM),
    "a date's converted type TIME_MILLIS (logical DATE)": converted("dt", TIME_MILLIS),
    "a decimal's element scale 4 (logical DECIMAL(10, 2))": decimal_scale(4),
}


def test_the_files_honest_annotations_agree() -> None:
    """What the edits start from: pyarrow writes each annotated column with both annotations, in agreement."""
    from carriers.content_store import _footer_annotations, _struct

    data = honest_file()
    length = int.from_bytes(data[-8:-4], "little")
    meta, _ = _struct(data[-8 - length:-8])
    _footer_annotations(meta)  # no error
    schema = meta[2]
    assert schema[ELEMENT["ts"]].get(6) == TIMESTAMP_MICROS and schema[ELEMENT["s"]].get(6) == UTF8
    assert schema[ELEMENT["n"]].get(6) == INT_16 and schema[ELEMENT["dt"]].get(6) == DATE
    assert schema[ELEMENT["dec"]].get(6) == DECIMAL and schema[ELEMENT["dec"]].get(7) == 2


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_rewrite_whose_converted_type_is_not_its_logical_types(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "t"
    data = with_footer(honest_file(), EDITS[edit])
    assert pq.ParquetFile(pa.BufferReader(data)).read().equals(ROWS)  # pyarrow: the logical types, the attested rows
    rewritten_as(path, ROWS, lambda _: data)
    with pytest.raises(Exception, match=r"incompatible|Parquet error"):  # arrow-rs refuses the file
        QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # 0 (VERIFIED) before
    doc = json.loads(done.stdout)
    assert [e["code"] for e in doc["errors"]] == ["content_changed"], doc
    assert "converted type" in doc["errors"][0]["message"] or "logical type says scale" in \
        doc["errors"][0]["message"], doc


def test_the_honest_rewrite_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: honest_file())
    verified_by_content(path)


def test_record_of_a_delta_file_whose_converted_type_is_not_its_logical_types(tmp_path: Path) -> None:
    """Another writer's file so annotated, then ``attest record``: ``table_inconsistent``, nothing written."""
    path = tmp_path / "t"
    written_as(path, ROWS, with_footer(honest_file(), EDITS[next(iter(EDITS))]))
    done = run_cli("record", str(path), "--model", "m", "--sql", "select 1", "--json")
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # recorded before
    assert "table_inconsistent" in done.stdout and "TIMESTAMP_MILLIS (converted type)" in done.stdout, done.stdout
    done = run_cli("verify", str(path), "--json")
    assert done.returncode == 1 and '"unattested"' in done.stdout, done.stdout


def test_an_iceberg_rewrite_whose_converted_type_is_not_its_logical_types(catalog: Any) -> None:
    """Held on Iceberg before this round: a rewrite's file must store each column as Iceberg's writers do (round
    20's representation rule), which reads both annotations — refused, as it was."""
    from tests.adversarial.test_footer_statistics_round35 import _iceberg_with
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import with_ids

    rows = with_ids(ROWS, range(1, ROWS.num_columns + 1))
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, store_schema=False)
    honest = bytes(sink.getvalue().to_pybytes())
    _iceberg_with(catalog, with_footer(honest, converted("ts", TIMESTAMP_MILLIS)), rewrite=True, rows=ROWS)
    done = run_cli("verify", f"iceberg://{CATALOG}/ns.t", "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "table_inconsistent" in done.stdout and "a converted type ('timestamp', 'MILLIS')" in done.stdout, \
        done.stdout
