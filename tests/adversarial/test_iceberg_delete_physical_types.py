"""A rewrite whose delete files store their columns otherwise than Iceberg's writers do (pyiceberg 0.12 / Spark 4.1,
Iceberg 1.12).

The attack: a ``replace`` snapshot adds a data file holding the attested rows plus one more (id 3, first in the file),
then a second ``replace`` adds a delete file hiding it. The content digest of the new file applies that delete file as
pyiceberg reads a position delete file (its ``file_path`` and ``pos`` columns by name, converted by pyarrow) and, for an
equality delete file, reads its key column through pyarrow (a timestamp in milliseconds converted to microseconds):
the extra row was gone, the digest the attested one, ``VERIFIED (content; …, same rows)``. Iceberg Java (Spark) reads
a position delete file by the spec's reserved field ids (``file_path`` 2147483546, ``pos`` 2147483545) as a string and
a long, and an equality delete file's key column as the table's type. Measured below: Spark refused the read of the
table whose position delete file swaps the two field ids, stores ``pos`` as an unsigned int64 or as an optional
column holding a null, or has no field ids (where pyiceberg returned ids 1 and 2); it read a 32-bit ``pos`` and key
timestamps in milliseconds or nanoseconds as pyarrow converts them. Each is now ``table_inconsistent``
(carriers/iceberg/content.py ``_check_delete_representation``): the ones Spark read alike too, as no Iceberg writer
stores them and no reader is bound to convert them; delete files as Iceberg Java writes them (the conftest builder)
still verify.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import codes
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    commit_delete_file,
    local,
)
from tests.iceberg.rewrites import live_data_files, replace, rewrite_metadata, with_ids

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
IDS = [1, 2, 3]  # the field ids pyiceberg assigns to id, ts, v
PATH_ID, POS_ID = 2147483546, 2147483545
EXTRA = 3  # the row the dishonest rewrite adds and its delete file hides


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "ts": pa.array([T0 + timedelta(hours=i) for i in ids], pa.timestamp("us", tz="UTC")),
                     "v": pa.array([f"v{i}" for i in ids], pa.string())})


def _fields(table: pa.Table, edit: Callable[[pa.Field], pa.Field]) -> pa.Table:
    """``table`` with each field's schema entry edited (type and field id kept unless ``edit`` changes them)."""
    schema = pa.schema([edit(f) for f in table.schema])
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(table.columns, schema, strict=True)], schema=schema)


def _retype(name: str, t: pa.DataType) -> Callable[[pa.Table], pa.Table]:
    return lambda table: _fields(table, lambda f: f.with_type(t) if f.name == name else f)


def _swap_ids(table: pa.Table) -> pa.Table:
    swap = {str(PATH_ID).encode(): str(POS_ID).encode(), str(POS_ID).encode(): str(PATH_ID).encode()}
    return _fields(table, lambda f: f.with_metadata({b"PARQUET:field_id": swap[f.metadata[b"PARQUET:field_id"]]}))


def _no_ids(table: pa.Table) -> pa.Table:
    return _fields(table, lambda f: f.with_metadata(None))


def _null_pos(table: pa.Table) -> pa.Table:
    """``pos`` optional, and a second row of the same ``file_path`` whose ``pos`` is null."""
    optional = _fields(table, lambda f: f.with_nullable(f.name == "pos"))
    extra = pa.Table.from_pylist([{"file_path": table.column("file_path")[0].as_py(), "pos": None}],
                                 schema=optional.schema)
    return pa.concat_tables([optional, extra])


# position delete file attacks: the file the conftest builder writes (as Iceberg Java does), stored otherwise
POSITION: dict[str, Callable[[pa.Table], pa.Table]] = {
    "file_path and pos with swapped field ids": _swap_ids,
    "pos optional, with a null": _null_pos,
    "pos as unsigned int64": _retype("pos", pa.uint64()),
    "pos as int32": _retype("pos", pa.int32()),
    "no field ids": _no_ids,
}
# equality delete file attacks (key: ts, field id 2)
EQUALITY: dict[str, Callable[[pa.Table], pa.Table]] = {
    "a key timestamp in milliseconds": _retype("ts", pa.timestamp("ms", tz="UTC")),
    "a key timestamp in nanoseconds": _retype("ts", pa.timestamp("ns", tz="UTC")),
}



def _attested(catalog: SqlCatalog, name: str = "ns.t") -> Table:
    table = catalog.create_table(name, schema=_rows([]).schema)
    table.append(_rows([1]))
    table.append(_rows([2]))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog.load_table(name)


def _as_replace(catalog: SqlCatalog, table: Table) -> Table:
    def edit(doc: dict[str, Any]) -> None:
        for snap in doc["snapshots"]:
            if snap["snapshot-id"] == doc["current-snapshot-id"]:
                snap["summary"]["operation"] = "replace"
    return rewrite_metadata(catalog, table, edit)


def _dishonest(catalog: SqlCatalog, table: Table, *, equality: bool,
               stored: Callable[[pa.Table], pa.Table] | None) -> Table:
    """A rewrite of every file into one holding ids 3 (position 0), 1 and 2, then a ``replace`` adding a delete file
    hiding id 3 — a position delete of position 0 of the new file, or an equality delete of its ``ts`` — its Parquet
    file stored by ``stored``."""
    name = ".".join(table.name())
    table = replace(catalog, table, [with_ids(_rows([EXTRA, 1, 2]), IDS)])
    path = local(table.location()) / "data" / ("eq.parquet" if equality else "pos.parquet")
    if equality:
        commit_delete_file(table, path, deleted=_rows([EXTRA]).select(["ts"]), equality_ids=[2], stored=stored)
    else:
        (new,) = live_data_files(table)
        commit_delete_file(table, path, target=new.file_path, stored=stored)
    return _as_replace(catalog, catalog.load_table(name))


def _read(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _refused(name: str = "ns.t") -> dict[str, Any]:
    from tests.adversarial.conftest import verify

    rc, doc = verify(f"iceberg://{CATALOG}/{name}")
    assert rc == 1 and not doc["passed"] and codes(doc) == ["table_inconsistent"], json.dumps(doc, indent=1)
    return doc


def _verified(name: str = "ns.t") -> None:
    from tests.adversarial.conftest import verify

    rc, doc = verify(f"iceberg://{CATALOG}/{name}")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot"), json.dumps(doc)


@pytest.mark.parametrize("attack", list(POSITION))
def test_a_position_delete_stored_otherwise_is_refused(attack: str, catalog: SqlCatalog) -> None:
    table = _dishonest(catalog, _attested(catalog), equality=False, stored=POSITION[attack])
    assert _read(table) == [1, 2]  # pyiceberg applies it: the digest alone cannot tell
    doc = _refused()
    assert "position delete file" in json.dumps(doc) and "pos.parquet" in json.dumps(doc), doc


@pytest.mark.parametrize("attack", list(EQUALITY))
def test_an_equality_delete_stored_otherwise_is_refused(attack: str, catalog: SqlCatalog) -> None:
    table = _dishonest(catalog, _attested(catalog), equality=True, stored=EQUALITY[attack])
    with pytest.raises((NotImplementedError, ValueError), match="equality deletes"):  # measured: pyiceberg refuses
        table.scan().to_arrow()
    doc = _refused()
    text = json.dumps(doc)
    assert "equality delete file" in text and "eq.parquet" in text and "'ts'" in text, doc


@pytest.mark.parametrize("equality", [False, True])
def test_delete_files_as_iceberg_writes_them_verify(equality: bool, catalog: SqlCatalog) -> None:
    """The controls: the same rewrites with the delete file as Iceberg Java writes it (the spec's field ids and
    types; the key column as the table's type) verify by content."""
    table = _dishonest(catalog, _attested(catalog), equality=equality, stored=None)
    if not equality:
        assert _read(table) == [1, 2]
    _verified()


def test_an_honest_position_delete_on_a_kept_file_verifies(catalog: SqlCatalog) -> None:
    """A position delete (as Iceberg Java writes it) applied before the attestation, then an honest rewrite that
    writes the rows readers get: verifies."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([EXTRA, 1]))
    table.append(_rows([2]))
    first = next(f for f in live_data_files(table) if f.record_count == 2)
    commit_delete_file(table, local(table.location()) / "data" / "pos.parquet", target=first.file_path)
    table = catalog.load_table("ns.t")
    assert _read(table) == [1, 2]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = replace(catalog, catalog.load_table("ns.t"), [with_ids(_rows([1, 2]), IDS)])
    _verified()


# ---- what Spark reads (Iceberg 1.12) -------------------------------------------------------------------------------
def _java_equality_delete(spark: SparkSession, name: str, path: Path, stored: Callable[[pa.Table], pa.Table] | None
                          ) -> None:
    """The equality delete file of ``ts`` = id 3's (field id 2, stored by ``stored``) committed through Iceberg Java's
    RowDelta, as Flink commits one: pyiceberg 0.12's manifest writer stores ``equality_ids`` as longs, which Iceberg
    Java 1.12 fails to read (measured in tests/spark/test_maintenance_iceberg.py)."""
    import pyarrow.parquet as pq

    written = with_ids(_rows([EXTRA]).select(["ts"]), [2])
    pq.write_table(written if stored is None else stored(written), path)
    jvm = spark._jvm  # type: ignore[attr-defined]
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"iceberg.{name}")
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)  # type: ignore[union-attr]
    ids[0] = 2
    delete = jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(java_table.spec()).ofEqualityDeletes(ids) \
        .withPath(f"file://{path}").withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET) \
        .withFileSizeInBytes(path.stat().st_size).withRecordCount(1).build()
    java_table.newRowDelta().addDeletes(delete).commit()


# What Spark's read returned for each table (its ids, or "refused" when the read failed), measured. pyiceberg returned
# ids 1 and 2 for every position delete table and refuses equality deletes. The int32 position and the key
# timestamps in other units Spark read as pyarrow converts them: refused all the same, as no Iceberg writer stores
# them and readers are bound to no conversion of them (the spec gives the types).
SPARK_READS: dict[str, Any] = {
    "control": [1, 2],
    "equality control": [1, 2],
    "file_path and pos with swapped field ids": "refused",  # "Not an instance of java.lang.CharSequence: 0"
    "pos optional, with a null": "refused",  # NullPointerException (Long.longValue); pyiceberg passes the null over
    "pos as unsigned int64": "refused",  # "Cannot read UINT64 as a long value"
    "pos as int32": [1, 2],
    "no field ids": "refused",  # "Missing required field: file_path": Java reads it by the spec's field ids only
    "a key timestamp in milliseconds": [1, 2],
    "a key timestamp in nanoseconds": [1, 2],
}


@pytest.mark.spark
def test_spark_reads_these_delete_files_otherwise(spark: SparkSession, spark_warehouse: Path) -> None:
    """The measurement behind the refusals: the same tables read by Spark (the equality delete files committed
    through Iceberg Java). With ``file_path`` and ``pos`` swapping field ids Spark refuses the read where pyiceberg
    returned ids 1 and 2; the controls return ids 1 and 2 and verify; every attack is ``table_inconsistent``."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_spark_attacks import _verify

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    cases: list[tuple[str, bool, Callable[[pa.Table], pa.Table] | None]] = [
        ("control", False, None), ("equality control", True, None),
        *[(a, False, POSITION[a]) for a in POSITION], *[(a, True, EQUALITY[a]) for a in EQUALITY]]
    seen: dict[str, Any] = {}
    verdicts: dict[str, Any] = {}
    for i, (case, equality, stored) in enumerate(cases):
        name = f"del{i}.t"
        catalog.create_namespace(f"del{i}")
        table = replace(catalog, _attested(catalog, name), [with_ids(_rows([EXTRA, 1, 2]), IDS)])
        path = local(table.location()) / "data" / ("eq.parquet" if equality else "pos.parquet")
        if equality:
            spark.sql(f"REFRESH TABLE iceberg.{name}")
            _java_equality_delete(spark, name, path, stored)
        else:
            (new,) = live_data_files(table)
            commit_delete_file(table, path, target=new.file_path, stored=stored)
        _as_replace(catalog, catalog.load_table(name))
        spark.sql(f"REFRESH TABLE iceberg.{name}")
        try:
            seen[case] = sorted(r[0] for r in spark.sql(f"SELECT id FROM iceberg.{name}").collect())
        except Exception:  # Spark refused the read
            seen[case] = "refused"
        rc, doc = _verify(f"iceberg://iceberg/{name}", spark_warehouse)
        verdicts[case] = (rc, codes(doc))
    assert seen["control"] == [1, 2] and seen["equality control"] == [1, 2], seen
    assert verdicts["control"] == (0, []) and verdicts["equality control"] == (0, []), verdicts
    assert seen["file_path and pos with swapped field ids"] == "refused", seen
    assert all(verdicts[c] == (1, ["table_inconsistent"]) for c in [*POSITION, *EQUALITY]), verdicts
    assert seen == SPARK_READS, seen


# ---- at record time: the delete file is in the attested snapshot itself ---------------------------------------------
def _with_delete_then_attest(catalog: SqlCatalog, stored: Callable[[pa.Table], pa.Table] | None) -> Table:
    """ids 3 (position 0) and 1 in one file, 2 in another, a position delete file hiding id 3 stored by ``stored``
    committed before the attestation, which is then recorded (``attest_after_write``)."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([EXTRA, 1]))
    table.append(_rows([2]))
    first = next(f for f in live_data_files(table) if f.record_count == 2)
    commit_delete_file(table, local(table.location()) / "data" / "pos.parquet", target=first.file_path, stored=stored)
    table = catalog.load_table("ns.t")
    assert _read(table) == [1, 2]  # pyiceberg applies it whatever its field ids and types
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog.load_table("ns.t")


@pytest.mark.parametrize("attack", ["no field ids", "file_path and pos with swapped field ids",
                                    "pos as unsigned int64"])
def test_a_position_delete_stored_otherwise_is_refused_at_record_time(attack: str, catalog: SqlCatalog) -> None:
    """The gap left by the rewrite-only check: a table whose position delete file Spark refuses to read (measured
    above: ``Missing required field: file_path`` without field ids) was attested with pyiceberg's rows (ids 1, 2)
    and VERIFIED. Now ``record`` refuses it as ``table_inconsistent`` and writes nothing."""
    from attest.errors import AttestError

    with pytest.raises(AttestError) as info:
        _with_delete_then_attest(catalog, POSITION[attack])
    assert info.value.code.value == "table_inconsistent" and "pos.parquet" in str(info.value), info.value
    snapshot = catalog.load_table("ns.t").current_snapshot()
    assert snapshot is not None and not any(k.startswith("recipe") for k in snapshot.summary.additional_properties)


def test_a_position_delete_as_iceberg_writes_it_is_attested(catalog: SqlCatalog) -> None:
    """The control: the same table with the delete file as Iceberg Java writes it is attested and verifies."""
    _with_delete_then_attest(catalog, None)
    from tests.adversarial.conftest import verify

    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)
