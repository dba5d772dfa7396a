"""Time-travel selectors of the thirteenth round measured as held (redteam13t), pinned so a change in pyiceberg,
delta-rs, Spark or attest shows. Each compares the version a verdict is about with what an engine given the same
selector reads:

- Iceberg: a tag named with ASCII digits (or ``-<id>``) that are no snapshot's id: Spark with Iceberg 1.12 reads them
  as a snapshot id (``Longs.tryParse``) and fails to find it, the verifier refuses (``version_not_found``) — neither
  reads the tag's snapshot;
- Iceberg: the ``main`` ref made a tag, dropped (``refs: {}``), or given a retention of 1 ms
  (``max-ref-age-ms``, ``max-snapshot-age-ms``), ``current-snapshot-id`` unchanged: pyiceberg and Spark (the metadata
  file read directly) read the current snapshot's rows, and it verifies;
- Iceberg: a tag moved after a verify: ``--snapshot-id <tag>`` checks where the tag points now, the snapshot the
  verdict names, as Spark's ``VERSION AS OF '<tag>'`` reads it;
- Delta: a commit file rewritten after a later checkpoint (its add pointing at another file): ``--version`` of it
  reads the rewritten commit, as delta-rs and Spark do, and is ``stale``; the checkpointed versions, whose commits no
  longer replay to the checkpoint, are ``table_inconsistent``.

(A commit file removed with its checkpoint kept was not held: tests/adversarial/test_delta_commit_behind_checkpoint.py.)
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.delta.carrier import attest_after_write as attest_delta
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, assert_refused, codes, verify
from tests.adversarial.test_iceberg_attacks import REF, catalog, iceberg_env  # noqa: F401 (fixtures)
from tests.adversarial.test_iceberg_metadata_java_refuses import _attested
from tests.iceberg.conftest import CATALOG, ns_catalog
from tests.iceberg.rewrites import rewrite_metadata

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NUMERIC_TAG = "12345"


def _ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _iceberg(table: Table) -> tuple[int, int]:
    """``table`` holding [1], attested (S), then [666] appended (the head U)."""
    table.append(_ids(1))
    s = int(str(attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version))
    table.append(_ids(666))
    head = table.current_snapshot()
    assert head is not None
    return s, head.snapshot_id


def _tags(table: Table, snapshot_id: int, *names: str) -> None:
    for name in names:
        table.manage_snapshots().create_tag(snapshot_id=snapshot_id, tag_name=name).commit()


def test_a_numeric_tag_naming_no_snapshot_is_not_found(catalog: SqlCatalog) -> None:  # noqa: F811
    table = catalog.create_table("ns.t", schema=_ids().schema)
    s, u = _iceberg(table)
    _tags(table, s, NUMERIC_TAG, f"-{u}")
    for name in (NUMERIC_TAG, f"-{u}"):
        assert table.snapshot_by_name(name).snapshot_id == s  # type: ignore[union-attr]  # pyiceberg: the tag
        assert_refused(REF, "version_not_found", "--snapshot-id", name)
    assert_refused(f"{REF}@{NUMERIC_TAG}", "version_not_found")


def test_a_moved_tag_is_checked_where_it_points(catalog: SqlCatalog) -> None:  # noqa: F811
    table = catalog.create_table("ns.t", schema=_ids().schema)
    s, u = _iceberg(table)
    _tags(table, s, "release")
    rc, doc = verify(REF, "--snapshot-id", "release")
    assert rc == 0 and f"snapshot {s}," in doc["verdict"], doc
    table.manage_snapshots().remove_tag("release").commit()
    _tags(table, u, "release")
    rc, doc = verify(REF, "--snapshot-id", "release")
    assert rc != 0 and f"snapshot {u}," in doc["verdict"] and codes(doc) == ["stale"], doc


MAIN_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "main_tag": lambda doc: doc["refs"]["main"].__setitem__("type", "tag"),
    "no_refs": lambda doc: doc.__setitem__("refs", {}),
    "main_retention": lambda doc: doc["refs"]["main"].update({"max-ref-age-ms": 1, "max-snapshot-age-ms": 1}),
}


def _main_edited(tmp_path: Path, edit: str) -> Table:
    cat = ns_catalog(tmp_path)
    return rewrite_metadata(cat, _attested(cat, "ns"), MAIN_EDITS[edit])


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("edit", sorted(MAIN_EDITS))
def test_the_main_ref_edited_beside_the_current_snapshot(tmp_path: Path, edit: str) -> None:
    table = _main_edited(tmp_path, edit)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), doc


def _delta(path: Path) -> Path:
    """[1] at version 0, attested by the follow-up commit 1, [666] appended at 2, a checkpoint at 1."""
    shutil.rmtree(path, ignore_errors=True)
    write_deltalake(str(path), _ids(1))
    attest_delta(str(path), model="orders", program_hash=PROGRAM)
    write_deltalake(str(path), _ids(666), mode="append")
    DeltaTable(str(path), version=1).create_checkpoint()
    return path / "_delta_log"


def _commit(log: Path, version: int) -> Path:
    return log / f"{version:020d}.json"


def _forge_first_commit(log: Path) -> None:
    """Commit 0's add replaced by commit 2's (the file holding 666)."""
    add = next(line for line in _commit(log, 2).read_text().splitlines() if '"add"' in line)
    lines = [add if '"add"' in line else line for line in _commit(log, 0).read_text().splitlines()]
    _commit(log, 0).write_text("\n".join(lines) + "\n")


def _delta_rs(path: Path, version: int) -> list[Any]:
    return sorted(DeltaTable(str(path), version=version).to_pyarrow_table().column("id").to_pylist())


def test_a_commit_rewritten_after_a_later_checkpoint(tmp_path: Path) -> None:
    table = tmp_path / "t"
    _forge_first_commit(_delta(table))
    assert (_delta_rs(table, 0), _delta_rs(table, 1)) == ([666], [1])
    rc, doc = verify(str(table), "--version", "0")
    assert rc != 0 and codes(doc) == ["stale"], doc
    for version in ("1", "2"):
        rc, doc = verify(str(table), "--version", version)
        assert rc != 0 and codes(doc) == ["table_inconsistent"], doc


@pytest.mark.spark
def test_what_spark_reads_for_the_same_selectors(spark: SparkSession, spark_warehouse: Path, tmp_path: Path) -> None:
    from carriers.spark.session import pyiceberg_catalog_properties

    cat = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    cat.create_namespace("heldtt")
    name = "heldtt.t"
    s, u = _iceberg(cat.create_table(name, schema=_ids().schema))
    _tags(cat.load_table(name), s, NUMERIC_TAG, f"-{u}", "release")
    spark.sql(f"REFRESH TABLE iceberg.{name}")

    def rows(version: str) -> list[Any]:
        return sorted(r[0] for r in spark.sql(f"SELECT id FROM iceberg.{name} VERSION AS OF '{version}'").collect())

    for number in (NUMERIC_TAG, f"-{u}"):
        with pytest.raises(Exception, match="Cannot find snapshot with ID"):
            rows(number)  # read as a snapshot id, not the tag
    assert rows("release") == [1]
    table = cat.load_table(name)
    table.manage_snapshots().remove_tag("release").commit()
    _tags(table, u, "release")
    spark.sql(f"REFRESH TABLE iceberg.{name}")
    assert rows("release") == [1, 666]

    def delta(path: Path, version: int) -> list[Any]:
        return sorted(r[0] for r in spark.read.format("delta").option("versionAsOf", version).load(str(path))
                      .select("id").collect())

    forged = tmp_path / "forged"
    _forge_first_commit(_delta(forged))
    assert (delta(forged, 0), delta(forged, 1)) == ([666], [1])


@pytest.mark.spark
def test_spark_reads_the_current_snapshot_whatever_main_says(spark: SparkSession, tmp_path: Path) -> None:
    for edit in sorted(MAIN_EDITS):
        (tmp_path / edit).mkdir()
        table = _main_edited(tmp_path / edit, edit)
        got = sorted(r[0] for r in spark.read.format("iceberg").load(table.metadata_location).select("id").collect())
        assert got == [1, 2, 3], edit
