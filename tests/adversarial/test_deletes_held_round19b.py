"""Round 19b, variants that held — measured with Spark 4.1 / Iceberg 1.12, delta-spark 4.4, delta-rs 1.6, pyiceberg
0.12:

- **Iceberg, a partition field stored as a type both readers widen alike**: the delete manifest's ``p`` (a ``long``)
  stored as an Avro ``int`` — what a manifest written before the column's promotion keeps. Spark and pyiceberg read
  the attested rows, ``p = 2`` alike (test_spark_deletes_round19b.py): recorded, VERIFIED. (A ``date`` stored for a
  ``long``, read alike by pyiceberg, is refused by design: no writer writes it.) A ``date`` partition stored as a plain
  Avro int (the days, as an old writer of a day transform wrote it): pyiceberg and Spark read ``d = '2024-01-02'``
  alike, VERIFIED. Two partition fields whose ids are swapped (positions kept): Spark read ``p`` by id as ``q``'s values
  and ``p = 1`` pruned the file pyiceberg reads by position — the round-19 field-id check's refusal, pinned.
- **Delta, deletion vectors in a classic Parquet checkpoint** (written by delta-rs after an inline vector's rewrite):
  the checkpoint's ``sizeInBytes`` of the inline vector set 2 bytes short — refused (``table_inconsistent``) with the
  JSON commits kept (the checkpoint is not their replay) and after they are cleaned up (the inline size check reads
  the checkpoint's adds: delta-rs still deletes row 1 from every decoded byte); the checkpoint's vector descriptor
  other than the commit's (another cardinality) with the commits kept: ``table_inconsistent``. With the commits
  cleaned up the checkpoint is all any reader has, and every reader reads its descriptor.
- **Delta, a v2 checkpoint's sidecar** holding the add with its inline vector stated short: ``table_inconsistent``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial import test_delta_dv_cardinality as cardinality
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_lists import rewrite_manifest
from tests.adversarial.test_deletes_round19 import delta, ids, inline_vector, partitioned  # noqa: F401
from tests.adversarial.test_deletes_round19b import retyped_partition, swapped
from tests.iceberg.conftest import CATALOG, PROGRAM

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog


@pytest.mark.parametrize("content", [1, 0], ids=["delete manifest", "data manifest"])
def test_an_int_stored_for_a_long_partition_verifies(catalog: SqlCatalog, content: int) -> None:
    table = partitioned(catalog)
    retyped_partition(table, "int", content=content)
    table = catalog.load_table("ns.t")
    assert ids(table) == [1, 2, 4] and ids(table, "p = 2") == [4]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)


def checkpointed(path: Path) -> Path:
    """The inline vector of test_deletes_round19.py (honest) attested again, then a classic checkpoint delta-rs writes
    of the attested version."""
    from carriers.delta.carrier import attest_after_write as delta_attest

    inline_vector(path)
    delta_attest(str(path), model="orders", program_hash=PROGRAM)
    DeltaTable(str(path)).create_checkpoint()
    return next((path / "_delta_log").glob("*.checkpoint.parquet"))


def edit_checkpoint_vector(checkpoint: Path, edit: Any) -> None:
    table = pq.read_table(checkpoint)
    rows = table.to_pylist()
    for row in rows:
        if row.get("add") and row["add"].get("deletionVector"):
            edit(row["add"]["deletionVector"])
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), checkpoint)


def clean_up(path: Path, checkpoint: Path) -> None:
    """The JSON commits before the checkpoint's version removed (log cleanup)."""
    version = int(checkpoint.name.split(".")[0])
    for commit in (path / "_delta_log").glob("*.json"):
        if commit.name.split(".")[0].isdigit() and int(commit.name.split(".")[0]) < version:
            commit.unlink()


def test_an_honest_checkpoint_of_an_inline_vector_verifies(delta: Path) -> None:  # noqa: F811
    checkpointed(delta)
    clean_up(delta, next((delta / "_delta_log").glob("*.checkpoint.parquet")))
    rc, doc = verify(str(delta), "--level", "bytes")
    assert rc == 0 and doc["passed"] and doc["level"] == "bytes", json.dumps(doc)


@pytest.mark.parametrize("cleaned", [False, True], ids=["commits kept", "commits cleaned up"])
def test_a_checkpoint_vector_stated_short_is_refused(delta: Path, cleaned: bool) -> None:  # noqa: F811
    before = cardinality._delta_rs(delta)
    checkpoint = checkpointed(delta)
    edit_checkpoint_vector(checkpoint, lambda dv: dv.__setitem__("sizeInBytes", dv["sizeInBytes"] - 2))
    if cleaned:
        clean_up(delta, checkpoint)
    assert cardinality._delta_rs(delta) == before  # delta-rs reads every decoded byte
    rc, doc = verify(str(delta), "--level", "bytes")
    assert rc != 0 and "table_inconsistent" in codes(doc), json.dumps(doc)
    assert any("states 32 bytes, its bitmap takes 34" in e["message"] for e in doc["errors"]), json.dumps(doc)


def test_a_checkpoint_vector_other_than_the_commits_is_refused(delta: Path) -> None:  # noqa: F811
    checkpoint = checkpointed(delta)
    edit_checkpoint_vector(checkpoint, lambda dv: dv.__setitem__("cardinality", 2))
    rc, doc = verify(str(delta), "--level", "bytes")
    assert rc != 0 and "table_inconsistent" in codes(doc), json.dumps(doc)
    assert any("is not the replay" in e["message"] for e in doc["errors"]), json.dumps(doc)


def v2_checkpointed(path: Path, *, short: int = 0) -> None:
    """The inline vector of test_deletes_round19.py in a table given the ``v2Checkpoint`` feature, attested, then a v2
    checkpoint of the attested version (JSON, one sidecar holding the adds, the vector's ``sizeInBytes`` ``short``
    bytes below its bitmap), the commits before it cleaned up."""
    from carriers.delta.carrier import attest_after_write as delta_attest
    from tests.adversarial.conftest import latest, log_state, write_commit

    inline_vector(path)
    protocol = dict(log_state(path).protocol)
    protocol["readerFeatures"] = sorted({*protocol.get("readerFeatures", []), "v2Checkpoint"})
    protocol["writerFeatures"] = sorted({*protocol.get("writerFeatures", []), "v2Checkpoint"})
    write_commit(path, [{"protocol": protocol}])
    delta_attest(str(path), model="orders", program_hash=PROGRAM)
    DeltaTable(str(path)).create_checkpoint()
    version, log = latest(path), path / "_delta_log"
    classic = log / f"{version:020d}.checkpoint.parquet"
    table = pq.read_table(classic)
    adds = table.filter(pa.compute.is_valid(table.column("add"))).select(["add"])
    rows = adds.to_pylist()
    for row in rows:
        if row["add"].get("deletionVector"):
            row["add"]["deletionVector"]["sizeInBytes"] -= short
    (log / "_sidecars").mkdir()
    name = f"{version:020d}.checkpoint.0000000001.0000000001.00000000-0000-0000-0000-00000000b19b.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=adds.schema), log / "_sidecars" / name)
    state = log_state(path)
    actions = [{"checkpointMetadata": {"version": version}}, {"protocol": state.protocol},
               {"metaData": state.metadata},
               {"sidecar": {"path": name, "sizeInBytes": (log / "_sidecars" / name).stat().st_size,
                            "modificationTime": 1}}]
    (log / f"{version:020d}.checkpoint.00000000-0000-0000-0000-00000000b19c.json").write_text(
        "".join(json.dumps(a) + "\n" for a in actions))
    classic.unlink()
    (log / "_last_checkpoint").unlink()
    clean_up(path, log / f"{version:020d}.checkpoint.00000000-0000-0000-0000-00000000b19c.json")


@pytest.mark.parametrize("short", [0, 2])
def test_a_v2_sidecar_vector_stated_short_is_refused(delta: Path, short: int) -> None:  # noqa: F811
    before = cardinality._delta_rs(delta)
    v2_checkpointed(delta, short=short)
    assert cardinality._delta_rs(delta) == before
    rc, doc = verify(str(delta), "--level", "bytes")
    if not short:
        assert rc == 0 and doc["passed"] and doc["level"] == "bytes", json.dumps(doc)
        return
    assert rc != 0 and "table_inconsistent" in codes(doc), json.dumps(doc)
    assert any("states 32 bytes, its bitmap takes 34" in e["message"] for e in doc["errors"]), json.dumps(doc)


def dated(catalog: SqlCatalog, ident: str = "ns.d") -> Any:
    """ids 1, 2 of 2024-01-01 and 3 of 2024-01-02 in two appends, partitioned by identity(d) (a date); the second
    append's data manifest rewritten in place with d stored as a plain Avro int (the days), as an old writer of a
    day transform wrote it."""
    import datetime

    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, IntegerType, LongType, NestedField

    from tests.iceberg.conftest import local

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.date32())])
    table = catalog.create_table(ident, schema=schema)
    with table.update_spec() as spec:
        spec.add_identity("d")
    day = datetime.date(2024, 1, 1)
    table.append(pa.table({"id": [1, 2], "d": [day, day]}, schema=schema))
    table.append(pa.table({"id": [3], "d": [day + datetime.timedelta(days=1)]}, schema=schema))
    table = catalog.load_table(ident)
    snap = table.current_snapshot()
    assert snap is not None
    manifest = next(m for m in snap.manifests(table.io) if m.added_snapshot_id == snap.snapshot_id)
    entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    as_int = Schema(NestedField(1, "id", LongType()), NestedField(2, "d", IntegerType()))
    rewrite_manifest(table, manifest, entries, spec=table.spec(), schema=as_int, deletes=False)
    assert _avro_type(local(manifest.manifest_path)) == "int" and DateType() != IntegerType()
    return catalog.load_table(ident)


def _avro_type(path: Path) -> Any:
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import MANIFEST_ENTRY_SCHEMAS

    from carriers.iceberg.manifests import _avro_partition_fields

    reader: Any
    with AvroFile(PyArrowFileIO().new_input(f"file://{path}"), MANIFEST_ENTRY_SCHEMAS[2], read_types={},
                  read_enums={}) as reader:
        ((_, stored),) = _avro_partition_fields(json.loads(reader.header.meta["avro.schema"])) or []
    return str(stored)


def test_a_date_stored_as_an_int_verifies(catalog: SqlCatalog) -> None:
    """pyiceberg reads the days as the date (Spark too: test_spark_deletes_round19b.py): recorded, VERIFIED."""
    table = dated(catalog)
    assert sorted(table.scan(row_filter="d = '2024-01-02'").to_arrow().column("id").to_pylist()) == [3]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.d")
    assert rc == 0 and doc["passed"], json.dumps(doc)


def test_record_refuses_swapped_partition_field_ids(catalog: SqlCatalog) -> None:
    """The round-19 field-id check, pinned for swapped ids (its positions kept): Spark read ``p`` by id as ``q``'s
    values and ``p = 1`` pruned the file pyiceberg reads by position (test_spark_deletes_round19b.py)."""
    swapped(catalog, "ns.s")
    table = catalog.load_table("ns.s")
    assert table.scan(row_filter="p = 1").to_arrow().column("id").to_pylist() == [1]
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert "field ids [1001, 1000]" in refused.value.message
