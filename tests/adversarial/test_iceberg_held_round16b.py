"""Round 16, second part, tried and held: rewrites of a table partitioned by ``identity(u)`` of a uuid column whose
new manifest's partition summary Iceberg Java reads as holding every value (tests/adversarial/
test_iceberg_round16b.py has the one it does not).

Spark's own ``rewrite_data_files`` writes the summary in Java's order (two signed longs): Spark finds both rows by
``u = …`` after it and ``verify`` says VERIFIED (compacted). pyiceberg's manifest writer (bytewise) over two uuids on
one side of ``0x80…``: both orders agree, VERIFIED.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.test_iceberg_round16 import HIGH, LOW, LOW2, found_by_uuid
from tests.adversarial.test_iceberg_round16b import copy_replace, uuid_partitioned

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.mark.spark
def test_rewrites_whose_uuid_partition_summary_java_reads_whole(spark: SparkSession, spark_warehouse: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}
    for case, values in (("Spark's rewrite, straddling", [LOW, HIGH]), ("pyiceberg's, one side", [LOW, LOW2])):
        catalog, ident, name, ref = uuid_partitioned(spark, spark_warehouse, values)
        rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
        assert rc == 0, (case, doc)
        if case.startswith("Spark"):
            spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{ident}', "
                      "options => map('rewrite-all', 'true'))")
        else:
            copy_replace(catalog, ident, monkeypatch)
        operation = catalog.load_table(ident).current_snapshot().summary.operation.value
        rc, doc = _cli(spark_warehouse, "verify", ref)
        seen[case] = (operation, found_by_uuid(spark, name, values), rc, codes(doc), "compacted" in doc["verdict"])
    for case, got in seen.items():
        assert got == ("replace", [0, 1], 0, [], True), (case, seen)
