"""The check behind test_spark_generated_partitions.py, on hand-built logs (no Spark): a Delta partition column whose
``delta.generationExpression`` Spark derives partition filters from (carriers/delta/generated.py) has every file's
partition value held to its rows at ``record``; a lying file is ``table_inconsistent``, honest values attest, and an
expression Spark derives no filter from (``id % 10``) is not held to anything.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError, UnsupportedTableError
from carriers.delta.carrier import attest_after_write
from carriers.delta.generated import parse
from tests.adversarial.conftest import PROGRAM, metadata_commit, verify, write_commit

TS = datetime(2024, 1, 5, 10, 0, tzinfo=UTC)
# partition column -> (its type, generation expression, the honest value for TS / "abcdef", a lying value)
CASES: dict[str, tuple[pa.DataType, str, Any, Any]] = {
    "cast_date": (pa.date32(), "CAST(ts AS DATE)", date(2024, 1, 5), date(2024, 1, 6)),
    "year": (pa.int32(), "YEAR(ts)", 2024, 2023),
    "month": (pa.int32(), "MONTH(ts)", 1, 2),
    "day": (pa.int32(), "DAY(ts)", 5, 6),
    "hour": (pa.int32(), "HOUR(ts)", 10, 11),
    "date_format": (pa.string(), "DATE_FORMAT(ts, 'yyyy-MM-dd-HH')", "2024-01-05-10", "2024-01-05-11"),
    "date_trunc": (pa.timestamp("us", tz="UTC"), "DATE_TRUNC('MONTH', ts)", datetime(2024, 1, 1, tzinfo=UTC),
                   datetime(2024, 2, 1, tzinfo=UTC)),
    "trunc": (pa.date32(), "TRUNC(CAST(ts AS DATE), 'YEAR')", date(2024, 1, 1), date(2023, 1, 1)),
    "substring": (pa.string(), "SUBSTRING(s, 0, 3)", "abc", "abd"),
    "identity": (pa.string(), "s", "abcdef", "abcdeg"),
}


def _table(tmp_path: Path, case: str, value: Any, expression: str | None = None) -> Path:
    """A delta-rs table partitioned by ``p`` (``CASES[case]``'s type), one honest row, its schema then given
    ``p``'s generation expression; then a file of one row (TS, "abcdef") committed by hand under ``value``."""
    kind, generation, honest, _ = CASES[case]
    path = tmp_path / case
    data = pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([TS], pa.timestamp("us", tz="UTC")),
                     "s": ["abcdef"], "p": pa.array([honest], kind)})
    write_deltalake(str(path), data, partition_by=["p"])

    def generated(meta: dict[str, Any]) -> None:
        schema = json.loads(meta["schemaString"])
        for field in schema["fields"]:
            if field["name"] == "p":
                field["metadata"] = {"delta.generationExpression": expression or generation}
        meta["schemaString"] = json.dumps(schema)

    metadata_commit(path, generated)
    spelled = value.strftime("%Y-%m-%dT%H:%M:%S.000000Z") if isinstance(value, datetime) else str(value)
    rel = f"p={uuid.uuid4().hex[:6]}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    (path / rel).parent.mkdir()
    pq.write_table(data.drop_columns(["p"]).set_column(0, "id", pa.array([2], pa.int64())), path / rel)
    write_commit(path, [{"add": {"path": rel, "partitionValues": {"p": spelled}, "size": (path / rel).stat().st_size,
                                 "modificationTime": 2, "dataChange": True,
                                 "stats": json.dumps({"numRecords": 1})}}])
    assert DeltaTable(str(path)).to_pyarrow_table().num_rows == 2  # delta-rs reads both rows
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_generated_partition_value_its_rows_do_not_map_to_is_not_recorded(tmp_path: Path, case: str) -> None:
    path = _table(tmp_path, case, CASES[case][3])
    with pytest.raises(AttestError) as info:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert info.value.code.value == "table_inconsistent", info.value
    assert "'p'" in str(info.value) and "part-00000" in str(info.value)


@pytest.mark.parametrize("case", sorted(CASES))
def test_honest_generated_partition_values_are_recorded_and_verify(tmp_path: Path, case: str) -> None:
    path = _table(tmp_path, case, CASES[case][2])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


def test_a_null_source_under_a_value_is_inconsistent_and_a_null_value_is_spark_s(tmp_path: Path) -> None:
    """Spark writes a null partition value for a null (or empty) expression and prunes by ``IS NULL``: a null ``ts``
    under ``p = 2024-01-05`` is skipped by ``WHERE ts IS NULL``; under a null ``p`` it is what Spark writes."""
    for value, ok in (("2024-01-05", False), (None, True)):
        path = tmp_path / f"n{ok}"
        data = pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([None], pa.timestamp("us", tz="UTC")),
                         "p": pa.array([None if value is None else date(2024, 1, 5)], pa.date32())})
        write_deltalake(str(path), data, partition_by=["p"])

        def generated(meta: dict[str, Any]) -> None:
            schema = json.loads(meta["schemaString"])
            schema["fields"][-1]["metadata"] = {"delta.generationExpression": "CAST(ts AS DATE)"}
            meta["schemaString"] = json.dumps(schema)

        metadata_commit(path, generated)
        if ok:
            attest_after_write(str(path), model="orders", program_hash=PROGRAM)
            assert verify(str(path))[1]["verdict"].startswith("VERIFIED")
        else:
            with pytest.raises(AttestError) as info:
                attest_after_write(str(path), model="orders", program_hash=PROGRAM)
            assert info.value.code.value == "table_inconsistent"


def test_an_expression_spark_derives_no_filter_from_is_not_held(tmp_path: Path) -> None:
    """``id % 10`` (an operator at the top of the analysed expression) gives Spark's match nothing: no reader prunes
    by ``p``, so any value is the rows' (as partition values of an ordinary column are)."""
    path = _table(tmp_path, "year", 7, expression="id % 10")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert verify(str(path))[1]["verdict"].startswith("VERIFIED")


@pytest.mark.parametrize("expression, form", [
    ("CAST(ts AS DATE)", ("date", ["ts"], None)),
    ("to_date(`ts`)", ("date", ["ts"], None)),
    ("year(CAST(ts AS DATE))", ("year", ["ts"], None)),
    ("dayofmonth(ts)", ("dayofmonth", ["ts"], None)),
    ("date_format(ts, 'yyyy-MM')", ("date_format", ["ts"], "%Y-%m")),
    ("substr(s, 1, 2)", ("substring", ["s"], (1, 2))),
    ("left(s, 2)", ("substring", ["s"], (1, 2))),
    ("date_trunc('HOUR', ts)", ("date_trunc", ["ts"], "hour")),
    ("s.a", ("identity", ["s", "a"], None)),
    ("CAST(id AS STRING)", None),
    ("string(id)", None),
    ("year(ts) * 100 + month(ts)", None),
    ("concat(s, 'x')", None),
])
def test_the_forms_spark_optimises_on_are_recognised(expression: str, form: Any) -> None:
    assert parse(expression) == form


@pytest.mark.parametrize("expression", ["date_format(ts, 'yyyyMMdd')", "extract(YEAR FROM ts)",
                                        "date_part('YEAR', ts)", "trunc(ts, 'DD')"])
def test_an_expression_spark_may_optimise_on_that_attest_cannot_evaluate_is_refused(expression: str) -> None:
    with pytest.raises(UnsupportedTableError, match="cannot evaluate"):
        parse(expression)
