"""Round 20b, Iceberg Java's side (Spark 4.1 / Iceberg 1.12): which metadata file a path reader reads
(tests/adversarial/test_iceberg_round20b.py).

``spark.read.format("iceberg").load(folder)`` (``HadoopTables``) with no ``version-hint.text`` lists the folder and
takes the highest ``N`` whose ``v<N>.metadata.json`` exists spelt as Java prints the int: the attested ``v2`` planted as
``v04`` or ``v2147483648`` is not read, the later ``v3`` (no row) is, whatever the static read (VERIFIED before) took.
A hint Java's ``parseInt`` cannot read (past 2^31-1) is passed over the same way. Each is now ``unsupported_table``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_iceberg_round20b import audited, hadoop_table_with_a_later_commit

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("planted", "hint"),
    [("v04.metadata.json", None), ("v2147483648.metadata.json", None), ("v2147483648.metadata.json", "2147483648\n")],
)
def test_spark_reads_the_later_commit_not_the_planted_copy(
    tmp_path: Path, spark: Any, planted: str, hint: str | None
) -> None:
    folder, files = hadoop_table_with_a_later_commit(tmp_path)
    meta = folder / "metadata"

    def read() -> int:
        return int(spark.read.format("iceberg").load(str(folder)).count())

    assert read() == 0  # control: the later v3, no row
    shutil.copy(files[2], meta / planted)
    if hint is not None:
        (meta / "version-hint.text").write_text(hint)
    assert read() == 0  # Spark still reads v3, not the attested copy (two rows)
    (meta / "v3.metadata.json").unlink()
    if hint is None:
        assert read() == 2  # with v3 gone, Java's listing reads the attested v2 itself: the planted name is no version
    row = audited(tmp_path)
    assert (row["rc"], row["code"]) == (2, "unsupported_table"), row
