"""Iceberg format v3 row lineage and rewrites of an attested table.

Readers of a v3 table get every row's ``_row_id`` and ``_last_updated_sequence_number`` (Spark's metadata columns):
the value of the data file's column of field id 2147483540 / 2147483539 where the file holds one and it is not null,
else the file's ``first_row_id`` plus the row's position in the file / the file's data sequence number. Spark's
``rewrite_data_files`` writes both columns into the new file so the ids survive compaction. Before they were folded
into the content digest, a ``replace`` snapshot whose new file kept every value but gave rows other ids — two ids
swapped, another sequence number, the columns dropped or nulled (the ids then come from the new file's
``first_row_id``) — verified ``VERIFIED (content; compacted ..., same rows)`` exactly as Spark's honest rewrite did
(measured on main's code: the swap below was VERIFIED). Each attack is forged the way someone with write access to
the table's storage would: the rewritten Parquet file replaced in place by one of the same size (the manifest's size
still holds), and checked against what Spark then reads (the same rows, other ids).
"""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.cli import main
from carriers.iceberg.carrier import IcebergCarrier
from tests.adversarial.conftest import PROGRAM, codes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _catalog(warehouse: Path) -> list[str]:
    return ["--uri", f"sqlite:///{warehouse / 'iceberg_catalog.db'}", "--warehouse", (warehouse / "iceberg").as_uri()]


def _cli(warehouse: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json", *_catalog(warehouse)])
    return rc, json.loads(out.getvalue())


def _ids(spark: SparkSession, name: str) -> dict[int, tuple[int, int]]:
    """id -> (_row_id, _last_updated_sequence_number), as Spark reads them."""
    spark.sql(f"REFRESH TABLE {name}")
    rows = spark.sql(f"SELECT id, _row_id AS r, _last_updated_sequence_number AS q FROM {name}").collect()
    return {int(x["id"]): (int(x["r"]), int(x["q"])) for x in rows}


def _table(spark: SparkSession, warehouse: Path, *, bound: bool = True) -> tuple[str, str]:
    """A Spark-written v3 table (two inserts, then a DELETE of id 2 kept as a deletion vector: the file's later rows
    keep their positions), recorded by ``attest record`` (detached: pyiceberg cannot commit to v3) — with the row
    lineage bound, or as an attestation made before it was; (Spark name, attest reference)."""
    ns = f"lin{uuid.uuid4().hex[:6]}"
    name = f"iceberg.{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ('format-version'='3', "
              "'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(0, 5)")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(5, 8)")
    spark.sql(f"DELETE FROM {name} WHERE id = 2")
    ref = f"iceberg://iceberg/{ns}.t"
    with pytest.MonkeyPatch.context() as m:
        if not bound:
            m.setattr(IcebergCarrier, "content_row_ids", lambda self, version: None)
        rc, doc = _cli(warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    return name, ref


@dataclass
class Rewritten:
    name: str
    ref: str
    before: dict[int, tuple[int, int]]  # the ids Spark read at the attested snapshot
    path: Path  # the file Spark's rewrite_data_files wrote
    honest: bytes


@pytest.fixture(scope="module")
def rewritten(spark: SparkSession, spark_warehouse: Path) -> Rewritten:
    name, ref = _table(spark, spark_warehouse)
    before = _ids(spark, name)
    assert sorted(before) == [0, 1, 3, 4, 5, 6, 7] and before[3] == (3, 1), before  # positions kept past the DV
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{name.split('.', 1)[1]}', "
              "options => map('rewrite-all', 'true'))")
    (location,) = [r[0] for r in spark.sql(f"SELECT file_path FROM {name}.files").collect()]
    path = Path(location[len("file:"):] if location.startswith("file:") else location)
    assert {"_row_id", "_last_updated_sequence_number"} <= set(pq.read_schema(path).names)  # Spark materializes
    return Rewritten(name=name, ref=ref, before=before, path=path, honest=path.read_bytes())


def _write_same_size(path: Path, table: pa.Table, size: int) -> None:
    """``table`` written over ``path`` as a Parquet file of exactly ``size`` bytes (a key-value entry pads it): the
    manifest's file size still holds, so readers open it."""
    tmp = path.with_name(path.name + ".forged")
    pad = 0
    for _ in range(8):
        writer = pq.ParquetWriter(tmp, table.schema, store_schema=False, compression="zstd")
        writer.write_table(table)
        writer.add_key_value_metadata({"pad": "x" * pad})
        writer.close()
        got = tmp.stat().st_size
        if got == size:
            os.replace(tmp, path)
            for crc in path.parent.glob(f".{path.name}.crc"):  # Hadoop's local checksum: an attacker drops it too
                crc.unlink()
            return
        pad += size - got
        assert pad >= 0, f"the forged file is {-pad} bytes too big"
    raise AssertionError("no padding gave the size")


def _set(column: str, edit: Callable[[list[Any]], list[Any]]) -> Callable[[pa.Table], pa.Table]:
    def apply(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index(column)
        return t.set_column(i, t.schema.field(i), pa.array(edit(t.column(i).to_pylist()), pa.int64()))
    return apply


def _swap_first_two(values: list[Any]) -> list[Any]:
    return [values[1], values[0], *values[2:]]


ATTACKS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "row_ids_swapped": _set("_row_id", _swap_first_two),
    "row_ids_shifted": _set("_row_id", lambda v: [x + 100 for x in v]),
    "one_sequence_number_changed": _set("_last_updated_sequence_number", lambda v: [v[0] + 1, *v[1:]]),
    "row_ids_null": _set("_row_id", lambda v: [None] * len(v)),  # ids from the new file's first_row_id
    "lineage_columns_dropped": lambda t: t.select(["id", "s"]),  # ids and sequence numbers from the manifest
}


@pytest.fixture
def forged(rewritten: Rewritten, spark: SparkSession) -> Iterator[Callable[[str], None]]:
    def forge(attack: str) -> None:
        honest = pq.read_table(rewritten.path)
        _write_same_size(rewritten.path, ATTACKS[attack](honest), len(rewritten.honest))

    yield forge
    rewritten.path.write_bytes(rewritten.honest)
    spark.sql(f"REFRESH TABLE {rewritten.name}")


def test_sparks_honest_rewrite_verifies_by_content(rewritten: Rewritten, spark: SparkSession,
                                                   spark_warehouse: Path) -> None:
    assert _ids(spark, rewritten.name) == rewritten.before  # the ids survive Spark's compaction
    rc, doc = _cli(spark_warehouse, "verify", rewritten.ref, "--level", "bytes")
    assert rc == 0 and doc["content"]["passed"] and doc["verdict"].startswith("VERIFIED (content;"), doc


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_rewrite_that_changes_row_lineage_is_content_changed(rewritten: Rewritten, spark: SparkSession,
                                                               spark_warehouse: Path, forged: Callable[[str], None],
                                                               attack: str) -> None:
    forged(attack)
    after = _ids(spark, rewritten.name)
    assert sorted(after) == sorted(rewritten.before) and after != rewritten.before, after  # same rows, other ids
    rc, doc = _cli(spark_warehouse, "verify", rewritten.ref, "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert doc["verdict"].startswith("NOT VERIFIED"), doc


def test_an_attestation_without_row_lineage_is_not_carried_over(spark: SparkSession, spark_warehouse: Path) -> None:
    """Recorded before the ids were bound (no ``row_ids`` in its content object): it verifies as before with a note,
    and a rewrite — honest or not, its digests cannot tell — stays compacted (before: VERIFIED by content)."""
    name, ref = _table(spark, spark_warehouse, bound=False)
    rc, doc = _cli(spark_warehouse, "verify", ref, "--level", "bytes")
    assert rc == 0 and any("iceberg-row-lineage" in n for n in doc["notes"]), doc
    spark.sql(f"CALL iceberg.system.rewrite_data_files(table => '{name.split('.', 1)[1]}', "
              "options => map('rewrite-all', 'true'))")
    rc, doc = _cli(spark_warehouse, "verify", ref, "--level", "bytes")
    assert rc == 1 and codes(doc) == ["compacted"], doc
    assert "iceberg-row-lineage" in json.dumps(doc), doc
