"""A tag or branch named with a spelling of a snapshot id that one Iceberg Spark runtime reads as a number and another
as the ref's name.

Spark's ``VERSION AS OF '<text>'`` reads a snapshot id when the text parses as a long, else the ref of that name.
Iceberg 1.12's runtime parses with Guava's ``Longs.tryParse`` (ASCII digits after an optional ``-``): ``'+<U>'`` and
``<U>`` in fullwidth or Arabic-Indic digits are ref names to it, as to pyiceberg's ``snapshot_by_name`` (measured
below). Earlier runtimes' ``SparkCatalog.loadTable(ident, version)`` call ``Long.parseLong`` (read in their source:
Iceberg's ``spark/v3.5``), which takes a leading ``+`` and any Unicode decimal digit: to them the same text is snapshot
``U``. A tag ``+<U>`` on the attested snapshot ``S`` made ``attest verify --snapshot-id +<U>`` say
``VERIFIED (… snapshot S …)`` (measured on the code before) where such a runtime reads ``U``'s rows. Now such a
selector is ``invalid_argument``: Iceberg readers resolve it to different snapshots. ASCII digits beyond a long are a
ref name to every runtime (``tryParse`` and ``parseLong`` both fail) and to pyiceberg: they resolve so (before:
``version_not_found``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, verify
from tests.adversarial.test_iceberg_attacks import REF, catalog, iceberg_env  # noqa: F401 (fixtures)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _spellings(snapshot_id: int) -> list[str]:
    """Texts Java's ``Long.parseLong`` reads as ``snapshot_id`` and pyiceberg as a ref name."""
    text = str(snapshot_id)
    return [f"+{text}", text.translate(_FULLWIDTH), text.translate(_ARABIC_INDIC)]


def _attested_then_appended(table: Table) -> tuple[int, int]:
    """(the attested snapshot S, the unattested head U)."""
    attested = int(str(attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version))
    table.append(_ids(666))
    head = table.current_snapshot()
    assert head is not None
    return attested, head.snapshot_id


def _tag(table: Table, snapshot_id: int, names: list[str]) -> None:
    for name in names:
        table.manage_snapshots().create_tag(snapshot_id=snapshot_id, tag_name=name).commit()


@pytest.fixture
def tagged(catalog: SqlCatalog) -> tuple[Table, int, int]:  # noqa: F811
    """S attested, U appended on top, and tags spelling U's id (Java's reading) on S."""
    table = catalog.create_table("ns.t", schema=_ids().schema)
    table.append(_ids(1))
    s, u = _attested_then_appended(table)
    _tag(table, s, _spellings(u))
    return table, s, u


def test_a_tag_spelling_another_snapshots_id_gets_no_verdict(tagged: tuple[Table, int, int]) -> None:
    table, s, u = tagged
    for spelling in _spellings(u):
        assert table.snapshot_by_name(spelling).snapshot_id == s  # type: ignore[union-attr]  # pyiceberg: the tag
        doc = assert_refused(REF, "invalid_argument", "--snapshot-id", spelling)
        assert str(u) in doc["verdict"] or str(u) in str(doc), doc
    rc, doc = verify(REF, "--snapshot-id", str(s))
    assert rc == 0, doc  # S itself, by its id, verifies as before


def test_a_branch_so_named_gets_no_verdict(catalog: SqlCatalog) -> None:  # noqa: F811
    table = catalog.create_table("ns.t", schema=_ids().schema)
    table.append(_ids(1))
    s, u = _attested_then_appended(table)
    table.manage_snapshots().create_branch(snapshot_id=s, branch_name=f"+{u}").commit()
    assert_refused(REF, "invalid_argument", "--snapshot-id", f"+{u}")


def test_digits_beyond_a_long_are_the_ref_of_that_name(catalog: SqlCatalog) -> None:  # noqa: F811
    """Java's ``Long.parseLong`` cannot read 2**63 and looks the ref up by name, as pyiceberg does: it resolves so."""
    table = catalog.create_table("ns.t", schema=_ids().schema)
    table.append(_ids(1))
    s, _ = _attested_then_appended(table)
    name = str(2**63)
    _tag(table, s, [name])
    rc, doc = verify(REF, "--snapshot-id", name)
    assert rc == 0 and f"snapshot {s}" in doc["verdict"], doc
    rc, doc = verify(f"{REF}@{name}")
    assert rc == 0 and f"snapshot {s}" in doc["verdict"], doc


@pytest.mark.spark
def test_spark_reads_each_spelling_as_a_ref_name(spark: SparkSession, spark_warehouse: Path) -> None:
    """Measured with Iceberg 1.12: ``VERSION AS OF`` with each spelling of U's id reads the tag of that name (S's
    rows), as pyiceberg does, and so does 2**63 (no long); U's plain id reads U."""
    from carriers.spark.session import pyiceberg_catalog_properties

    cat = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    cat.create_namespace("spelt")
    name = "spelt.t"
    table = cat.create_table(name, schema=_ids().schema)
    table.append(_ids(1))
    s, u = _attested_then_appended(table)
    table = cat.load_table(name)
    _tag(table, s, [*_spellings(u), str(2**63)])
    spark.sql(f"REFRESH TABLE iceberg.{name}")

    def rows(version: str) -> list[Any]:
        return sorted(r[0] for r in spark.sql(f"SELECT id FROM iceberg.{name} VERSION AS OF '{version}'").collect())

    for spelling in _spellings(u):
        assert rows(spelling) == [1], spelling  # the tag (on S), not snapshot U
    assert rows(str(2**63)) == [1]
    assert rows(str(u)) == [1, 666]
