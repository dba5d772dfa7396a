"""Round 14 variants on an Iceberg data file's metrics that held, pinned (the refused ones:
tests/adversarial/test_iceberg_round14.py, test_spark_iceberg_round14.py). Each appended file's rows are
id 100, 101, null; x 1.5, NaN, 2.5; v 'abcdef', 'abcdef', 'abcdzz' (pyiceberg 0.12):

- no metrics at all (a writer in metrics mode ``none``, no record count aside): readers prune nothing, every filtered
  read finds its row; attested and VERIFIED;
- bounds and counts keyed by a field id no column has (a dropped column's): readers look metrics up by the filtered
  column's id, so they change no answer; attested and VERIFIED;
- NaN beside honest bounds of the other values, as Iceberg's spec has writers keep them (Spark's and pyiceberg's
  writers do): attested — in one snapshot the layout is the writer's (a rewrite moving NaN rows between files stays
  ``content_changed``, docs/content-digest.md);
- a footer without statistics (``write_statistics=False``): nothing to skip row groups by; attested and VERIFIED.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_iceberg_round14 import HONEST, ID, V, X, _appended, _double, _long
from tests.iceberg.conftest import CATALOG, iceberg_env, ns_catalog  # noqa: F401

HELD: dict[str, dict[str, Any]] = {
    "no_metrics": {k: None for k in HONEST if k != "record_count"},
    "a_dropped_columns_metrics": {"lower_bounds": {**HONEST["lower_bounds"], 99: _long(10**9)},
                                  "upper_bounds": {**HONEST["upper_bounds"], 99: _long(-(10**9))},
                                  "null_value_counts": {**HONEST["null_value_counts"], 99: 7}},
    "nan_beside_honest_bounds": {"lower_bounds": {ID: _long(100), X: _double(1.5), V: b"abcdef"},
                                 "upper_bounds": {ID: _long(101), X: _double(2.5), V: b"abcdzz"}},
}
QUERIES = ("id = 101", "id = 100", "id IS NULL", "x IS NAN", "x = 2.5", "v = 'abcdzz'")


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("variant", sorted(HELD))
def test_metrics_that_change_no_answer_are_attested(variant: str, tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = _appended(catalog, HELD[variant])
    for query in QUERIES:
        assert table.scan(row_filter=query).to_arrow().num_rows >= 1, query
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)


@pytest.mark.usefixtures("iceberg_env")
def test_a_footer_without_statistics_is_attested(tmp_path: Path) -> None:
    catalog = ns_catalog(tmp_path)
    table = _appended(catalog, {}, footer_statistics=False)
    added = [f for f in table.inspect.files().column("file_path").to_pylist() if "rewritten-" in f]
    assert pq.ParquetFile(added[0].removeprefix("file://")).metadata.row_group(0).column(0).statistics is None
    assert sorted(v for v in table.scan().to_arrow().column("id").to_pylist() if v is not None) == [1, 2, 100, 101]
    for query in QUERIES:
        assert table.scan(row_filter=query).to_arrow().num_rows >= 1, query
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)
