"""Round 16, Java's side: Iceberg name mappings (``schema.name-mapping.default``) that Iceberg Java refuses as a whole
while every level of them is sound, for a table whose files have no field ids (``add_files``).

Java's ``NameMapping`` indexes the mapping twice over all its levels (``MappingUtil``): by every field's full dotted
name (``s.x`` for a struct ``s`` holding ``x``; a map that takes no key twice) and by id (``Invalid mapping: ID %s is
not unique``). pyiceberg 0.12 resolves a file's columns a level at a time and never builds either index. Measured
(Spark 4.1 / Iceberg 1.12): a top-level entry named ``s.x`` beside a struct ``s`` holding ``x``, or a field id given
at two levels (top-level ``a`` and ``s.x``), made Spark refuse every read of the table (``Multiple entries with same
key: s.x=…``, ``Invalid mapping: ID 1 is not unique``) while pyiceberg read the attested rows; ``record`` attested
them and ``verify`` said VERIFIED (only each level was checked: tests/adversarial/test_spark_name_mapping.py). Now
``table_inconsistent`` (carriers/iceberg/carrier.py ``_mapping_index_problem``), at ``record`` and at ``verify`` of a
snapshot recorded before a properties-only commit set such a mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.test_spark_name_mapping import _added

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOUND = [{"field-id": 1, "names": ["a"]}, {"field-id": 2, "names": ["b"]}]
MAPPINGS: dict[str, list[dict[str, Any]]] = {
    "a dotted name across levels": [*SOUND, {"field-id": 3, "names": ["s"], "fields": [{"field-id": 4, "names": ["x"]}]},
                                    {"field-id": 5, "names": ["s.x"]}],
    "a field id at two levels": [*SOUND, {"field-id": 3, "names": ["s"], "fields": [{"field-id": 1, "names": ["x"]}]}],
    "two fields without an id": [*SOUND, {"names": ["c"]}, {"names": ["d"]}],
}


def _spark_rows(spark: SparkSession, name: str) -> Any:
    spark.sql(f"REFRESH TABLE {name}")
    try:
        return sorted(tuple(r) for r in spark.sql(f"SELECT a, b FROM {name}").collect())
    except Exception as exc:  # Spark refused the read
        text = str(exc)
        return "refused" if "Multiple entries with same key" in text or "is not unique" in text else text[:200]


@pytest.mark.spark
def test_spark_refuses_a_mapping_whose_whole_index_takes_a_key_twice(spark: SparkSession,
                                                                     spark_warehouse: Path) -> None:
    """Each mapping set on an ``add_files`` table: pyiceberg reads the rows, Spark refuses; ``record`` refuses."""
    seen: dict[str, Any] = {}
    for case, mapping in [("control", SOUND), *MAPPINGS.items()]:
        name, ref, table = _added(spark_warehouse, mapping)
        pyiceberg = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        seen[case] = (pyiceberg, _spark_rows(spark, name), rc, codes(doc) if rc else [])
    assert seen.pop("control") == ([(1, 10), (2, 20)], [(1, 10), (2, 20)], 0, []), seen
    for case, got in seen.items():
        assert got == ([(1, 10), (2, 20)], "refused", 2, ["table_inconsistent"]), (case, seen)
