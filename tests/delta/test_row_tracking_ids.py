"""Each row's row-tracking ids as the content digest takes them (docs/content-digest.md, "Row-tracking ids";
measured against Spark in tests/adversarial/test_row_tracking_rewrite.py): the materialized column's value when not
null, else baseRowId + the row's physical index / defaultRowCommitVersion."""

from __future__ import annotations

import pyarrow as pa
import pytest

from attest.errors import CarrierError
from attest.tables import DataFile
from carriers.delta.content import RowTracking, row_id_arrays

F = DataFile(path="part-0.parquet", size=1, kind="data")
RID, RCV = "_row-id-col-x", "_row-commit-version-col-x"


def _ids(table: pa.Table, base: int | None, version: int | None) -> tuple[list[object], list[object]]:
    tracking = RowTracking(row_id_column=RID, commit_version_column=RCV, files={F.path: (base, version)})
    a, b = row_id_arrays(F, table, table.schema, tracking)
    assert a.type == b.type == pa.int64()
    return a.to_pylist(), b.to_pylist()


def test_derived_from_the_add_when_not_materialized() -> None:
    assert _ids(pa.table({"v": [5, 6, 7]}), 40, 3) == ([40, 41, 42], [3, 3, 3])


def test_materialized_values_win_where_not_null() -> None:
    table = pa.table({"v": [5, 6, 7], RID: pa.array([9, None, 2], pa.int64()),
                      RCV: pa.array([None, 1, None], pa.int32())})
    assert _ids(table, 40, 3) == ([9, 41, 2], [3, 1, 3])


def test_no_add_ids_read_as_null() -> None:
    assert _ids(pa.table({"v": [5, 6]}), None, None) == ([None, None], [None, None])


def test_a_materialized_column_that_is_not_an_integer_is_refused() -> None:
    with pytest.raises(CarrierError) as exc:
        _ids(pa.table({"v": [1], RID: ["7"]}), 0, 1)
    assert exc.value.code.value == "table_unreadable"


def test_ids_past_64_bits_are_refused() -> None:
    with pytest.raises(CarrierError) as exc:
        _ids(pa.table({"v": [1, 2]}), (1 << 63) - 1, 1)
    assert exc.value.code.value == "table_unreadable"
