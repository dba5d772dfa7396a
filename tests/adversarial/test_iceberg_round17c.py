"""Round 17 (second pass), Iceberg: a manifest list's partition summary of a float partition, or a data file's float
bounds, that exclude a signed zero in Iceberg Java's order only.

Iceberg Java orders doubles and floats as ``Double.compare`` does (``-0.0 < 0.0``) when it prunes manifests by the
list's partition summaries: a summary ``[-0.0, -0.0]`` of a manifest whose files are in partition ``x = 0.0``
excludes ``0.0``, so Spark's ``WHERE x = 0.0`` skips the manifest and returns none of its rows (measured in
``test_spark_iceberg_round17c.py``, Spark 4.1 / Iceberg 1.12), while pyiceberg and a full read return them. The
summary check compared with Python's ``<=``, in which ``-0.0 == 0.0``: ``record`` attested the table and ``verify``
said VERIFIED before. Likewise a data file's metrics: an upper bound ``-0.0`` over a stored ``0.0`` (Spark's
``x = 0.0`` skipped the file), a lower bound ``0.0`` over a stored ``-0.0`` (``x = -0.0``): attested before.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_list
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
)

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table



def zero_table(catalog: Catalog, ident: str, zero: float = 0.0) -> Table:
    """A table partitioned by ``identity(x)`` (double), ids 0, 1, 2 with ``x = zero`` in one data file."""
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "x", DoubleType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="x"))
    table = catalog.create_table(ident, schema=schema, partition_spec=spec, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "x": pa.array([zero] * 3, pa.float64())}))
    return catalog.load_table(ident)


def summarize_as(zero: float) -> Any:
    """A manifest-list edit giving each manifest's ``x`` summary the bounds ``[zero, zero]``."""
    bound = struct.pack("<d", zero)

    def edit(manifest: Any) -> None:
        for summary in manifest.partitions or []:
            summary._data[2] = summary._data[3] = bound  # lower_bound, upper_bound (pyiceberg has no setter)

    return edit


def _ids(table: Table, expr: str | None = None) -> list[int]:
    scan = table.scan() if expr is None else table.scan(row_filter=expr)
    return sorted(scan.to_arrow().column("id").to_pylist())


@pytest.mark.parametrize(("stored", "summarized"), [(0.0, -0.0), (-0.0, 0.0)])
def test_a_float_partition_summary_of_the_other_zero(catalog: SqlCatalog, stored: float, summarized: float) -> None:
    table = zero_table(catalog, "ns.t", stored)
    _rewrite_manifest_list(table, summarize_as(summarized))
    table = catalog.load_table("ns.t")
    assert _ids(table) == [0, 1, 2]
    assert _ids(table, "x = 0.0") == [0, 1, 2]  # pyiceberg: -0.0 == 0.0, the manifest is read (Java skips it)
    with pytest.raises(AttestError) as exc:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert exc.value.code.value == "table_inconsistent", exc.value
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and "table_inconsistent" in codes(doc), json.dumps(doc)


def test_the_summary_forged_after_the_record(catalog: SqlCatalog) -> None:
    table = zero_table(catalog, "ns.t")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    _rewrite_manifest_list(catalog.load_table("ns.t"), summarize_as(-0.0))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"], json.dumps(doc)
    assert "table_inconsistent" in codes(doc), json.dumps(doc)


# (stored x values, the forged x bounds, the filter Java's metrics evaluator then skips the file for)
ZERO_BOUNDS = {
    "upper bound -0.0 over 0.0": ([-1.0, float("nan"), 0.0], (-1.0, -0.0), "x = 0.0"),
    "lower bound 0.0 over -0.0": ([-0.0, float("nan"), 1.0], (0.0, 1.0), "x = -0.0"),
}


def zero_bounds_table(catalog: Catalog, monkeypatch: pytest.MonkeyPatch, case: str) -> Table:
    """tests/adversarial/test_iceberg_round14.py's hand-appended file (ids 100, 101, null) holding the x values of
    ``case`` under its forged bounds (every other metric honest)."""
    import tests.adversarial.test_iceberg_round14 as r14

    stored, (lo, hi), _ = ZERO_BOUNDS[case]
    monkeypatch.setitem(r14.ROWS, "x", stored)
    metrics = {
        "lower_bounds": {r14.ID: r14._long(100), r14.X: r14._double(lo), r14.V: b"abcdef"},
        "upper_bounds": {r14.ID: r14._long(101), r14.X: r14._double(hi), r14.V: b"abcdzz"},
    }
    return r14._appended(catalog, metrics)


@pytest.mark.parametrize("case", sorted(ZERO_BOUNDS))
def test_float_bounds_of_the_other_zero(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    table = zero_bounds_table(catalog, monkeypatch, case)
    assert table.scan(row_filter=ZERO_BOUNDS[case][2]).to_arrow().num_rows == 1  # pyiceberg: the zeros are equal
    with pytest.raises(AttestError) as exc:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert exc.value.code.value == "table_inconsistent", exc.value
    assert "misstate its rows" in exc.value.message and "Double.compare" in exc.value.message
