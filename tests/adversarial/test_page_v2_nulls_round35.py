"""Round 35: a DataPageV2 header whose null count is not its definition levels'.

A v2 data page states its nulls (``num_nulls``) beside the definition levels that place them. pyarrow reads the
levels alone; arrow-rs (delta-rs) decodes ``num_values - num_nulls`` values and refuses the file when they are not
there. Measured (delta-rs 1.6): a rewrite's file of the attested rows whose first page states one null more than its
levels hold — ``VERIFIED (content; compacted …, same rows)``, exit 0, while delta-rs refused every read ("insufficient
values read from column"); a negative count ("Integer overflow") and levels that do not fit the page the same (one null
fewer delta-rs read as pyarrow does: refused too, as no writer states another count than its levels'). Found by a
differential fuzzer of a rewrite's page headers. Now a v2 page of a column that is not repeated must state its
levels' nulls (levels below its maximum, at any depth; a required column: none) and levels within its body
(``content_store._v2_nulls``): ``content_changed`` in a rewrite, ``table_inconsistent`` at record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.adversarial.parquet_thrift import field, with_page_header
from tests.adversarial.test_file_size_round33 import rewritten_as, written_as
from tests.adversarial.test_footer_statistics_round35 import verified_by_content
from tests.conftest import run_cli

ROWS = pa.table({"id": pa.array(range(20), pa.int64()),
                 "v": pa.array([None if i % 3 == 0 else i for i in range(20)], pa.int64()),
                 "st": pa.array([None if i % 4 == 0 else {"a": None if i % 5 == 0 else i} for i in range(20)],
                                pa.struct([("a", pa.int64())]))})


def v2_file(edit: Any = None, compression: str = "snappy", chunk: int = 1) -> bytes:
    """ROWS in DataPageV2 pages (no dictionary, no page index); ``edit`` given the header of ``v``'s first page's
    DataPageHeaderV2 (its nulls: field 2; levels' lengths: 5, 6) and the page header (uncompressed size: 2)."""
    sink = pa.BufferOutputStream()
    pq.write_table(ROWS, sink, data_page_version="2.0", write_page_index=False, use_dictionary=False,
                   compression=compression)
    data = bytes(sink.getvalue().to_pybytes())
    if edit is None:
        return data
    return with_page_header(data, chunk, 0, lambda header: edit(field(header, 8)[2], header))  # type: ignore[index]


def _set(fid: int, value: int) -> Any:
    def edit(v2: Any, _: Any) -> None:
        field(v2, fid)[2] = value  # type: ignore[index]

    return edit


def _levels_past_the_page(v2: Any, header: Any) -> None:
    field(v2, 5)[2] = field(header, 3)[2] + 1  # type: ignore[index]  # definition levels longer than the page


def _uncompressed_size_below_the_levels(v2: Any, header: Any) -> None:
    field(header, 2)[2] = 0  # type: ignore[index]  # PageHeader.uncompressed_page_size (a file of no compression)


EDITS = {"one null more": _set(2, 8), "one null fewer": _set(2, 6), "a negative null count": _set(2, -1),
         "levels past the page": _levels_past_the_page,
         "an uncompressed size below the levels": _uncompressed_size_below_the_levels}


def test_the_honest_v2_file_states_its_nulls() -> None:
    """What the edits start from: seven nulls in ``v``'s one page (ids 0, 3, ..., 18)."""  # chunk 1: id, v, st.a
    seen: list[int] = []
    v2_file(lambda v2, _: seen.append(field(v2, 2)[2]))  # type: ignore[index]
    assert seen == [7]


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_rewrite_whose_v2_page_misstates_its_nulls(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "t"
    data = v2_file(EDITS[edit], "none" if edit == "an uncompressed size below the levels" else "snappy")
    if edit != "levels past the page":  # pyarrow reads the levels: the attested rows
        assert pq.ParquetFile(pa.BufferReader(data)).read().equals(ROWS)
    rewritten_as(path, ROWS, lambda _: data)
    if edit == "one null fewer":  # delta-rs reads the rows too (measured); refused all the same: no writer states it
        got = QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t order by id").read_all()
        assert pa.table(got).column("v").to_pylist() == ROWS.column("v").to_pylist()
    else:
        with pytest.raises(Exception, match="Parquet"):  # delta-rs refuses the file
            QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode in (1, 2), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    doc = json.loads(done.stdout)
    assert not doc["passed"] and [e["code"] for e in doc["errors"]] in (["content_changed"], ["table_unreadable"]), doc
    if edit != "levels past the page":
        assert doc["errors"][0]["code"] == "content_changed" and "data page (v2)" in doc["errors"][0]["message"], doc


def test_a_nested_columns_v2_page_counts_a_structs_nulls_too(tmp_path: Path) -> None:
    """``st.a`` (definition levels 0-2): a null struct and a null field are both nulls of the page (8 here, levels
    below 2); one more is refused as above (found by the fuzzer after the first version counted one level only)."""
    seen: list[int] = []
    v2_file(lambda v2, _: seen.append(field(v2, 2)[2]), chunk=2)  # type: ignore[index]
    assert seen == [8]  # rows 0, 4, 8, 12, 16 (struct) and 5, 10, 15 (field)
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: v2_file(_set(2, 9), chunk=2))
    with pytest.raises(Exception, match="insufficient values"):
        QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1 and "stating 9 nulls where its definition levels hold 8" in done.stdout, done.stdout


def test_the_honest_v2_rewrite_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: v2_file())
    assert QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all().num_rows == 20
    verified_by_content(path)


def test_record_of_such_a_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    written_as(path, ROWS, v2_file(EDITS["one null more"]))
    done = run_cli("record", str(path), "--model", "m", "--sql", "select 1", "--json")
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # recorded before
    assert "table_inconsistent" in done.stdout and "stating 8 nulls where its definition levels hold 7" in \
        done.stdout, done.stdout
