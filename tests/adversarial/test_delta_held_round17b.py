"""Round 17, second Delta pass (rt17e): string collations, CHECK constraints and column defaults in a Delta schema,
tried and held. What Spark (delta-spark 4.4 on Spark 4.1) reads of each is in ``test_spark_delta_round17b.py``.

- **Collations.** Spark 4 reads a string field's collation from its metadata (``__COLLATIONS``: ``{"s":
  "spark.UTF8_LCASE"}``) with no table feature (delta-spark 4.4 has no ``collations`` feature and refuses to create
  such a column, but reads one a hand-written ``metaData`` gives): ``WHERE s = 'apple'`` then matches ``Apple``.
  Measured: Spark skips no file by the (binary) statistics of a collated column — ``s = 'a'``, ``s > 'w'`` and ``s
  LIKE 'a%'`` returned every collated match across files whose bounds exclude it in binary order — and derives no
  partition filter from a generated partition column over it (``SUBSTRING(s, 1, 1)``: ``s = 'apple'`` kept the
  partition ``A``), and prunes a collated partition column by its collation (``p = 'a'``, ``p IN ('a')``: partitions
  ``A`` and ``a``). delta-rs ignores the metadata and reads the same rows. So a collated table is recorded as it is
  (its rows are every reader's; a collation changes how a query compares them, as Spark evaluates the query), and a
  metadata-only commit adding or changing a collation after the attested version changes the schema's field metadata,
  which is in the view: ``reader_view_changed``.
- **CHECK constraints** (``delta.constraints.<name>``): a metadata-only commit adding ``id > 100`` over rows 1, 2
  (which violate it) changes nothing Spark reads (measured: ``id = 1``, ``id < 50``, ``count(*)``, ``max(id)`` as
  before — Spark checks constraints at write only): VERIFIED, rightly (writer-only, never in the view).
- **Column defaults**: ``CURRENT_DEFAULT`` / ``EXISTS_DEFAULT`` added to a column every file holds, in a metadata-only
  commit: field metadata, ``reader_view_changed`` (conservative: Spark fills only a column a file lacks, which
  ``test_delta_exists_default.py`` covers).
- **A column every file lacks** (added by a metadata-only commit) whose field has ``CURRENT_DEFAULT`` alone, or
  ``exists_default`` in lower case: Spark reads nulls, as delta-rs (measured; the control, ``EXISTS_DEFAULT``, reads
  7): the exact key is what ``carriers/delta/content.py`` holds a file to, and a table so is recorded.
- **In-commit timestamps / TIMESTAMP AS OF**: not tried by forging — ``attest verify`` has no time option and no
  verdict names a time (docs/security.md, *Changes between versions*); the Spark hook records the version Spark's plan
  resolved (``snapshotAtAnalysis``), whatever timestamp named it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, verify

LCASE = {"__COLLATIONS": {"s": "spark.UTF8_LCASE"}}


def metadata_commit(path: Path, edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
    """A metadata-only commit after the latest version, as an attacker with write access to storage writes one: the
    latest ``metaData`` with its schema and configuration edited by ``edit(schema, metaData)``."""
    version = DeltaTable(str(path)).version()
    meta: dict[str, Any] | None = None
    for v in range(version, -1, -1):
        for line in (path / commit_name(v)).read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                meta = action["metaData"]
        if meta is not None:
            break
    assert meta is not None
    schema = json.loads(meta["schemaString"])
    edit(schema, meta)
    meta["schemaString"] = json.dumps(schema)
    actions = [{"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}, {"metaData": meta}]
    (path / commit_name(version + 1)).write_text("".join(json.dumps(a) + "\n" for a in actions))


def set_field_metadata(name: str, metadata: dict[str, Any]) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(schema: dict[str, Any], meta: dict[str, Any]) -> None:
        for field in schema["fields"]:
            if field["name"] == name:
                field["metadata"] = metadata

    return edit


def set_property(key: str, value: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(schema: dict[str, Any], meta: dict[str, Any]) -> None:
        meta.setdefault("configuration", {})[key] = value

    return edit


def collated_files(path: Path, collate: bool = True) -> None:
    """Two files by delta-rs — s ``A``, ``Z`` (binary bounds A..Z) and ``b``, ``c`` — with s collated ``UTF8_LCASE``
    (hand-written field metadata) when ``collate``."""
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array(["A", "Z"])}))
    write_deltalake(str(path), pa.table({"id": pa.array([3, 4], pa.int64()), "s": pa.array(["b", "c"])}), mode="append")
    if collate:
        commit = path / commit_name(0)
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in actions:
            if "metaData" in action:
                schema = json.loads(action["metaData"]["schemaString"])
                set_field_metadata("s", LCASE)(schema, action["metaData"])
                action["metaData"]["schemaString"] = json.dumps(schema)
        commit.write_text("".join(json.dumps(a) + "\n" for a in actions))


def collated_generated_partition(path: Path) -> None:
    """Partitioned by p ``GENERATED ALWAYS AS (SUBSTRING(s, 1, 1))`` (writer version 4), s collated ``UTF8_LCASE``:
    rows (1, Apple, A), (2, apple, a), (3, berry, b), each partition value its row's expression."""
    write_deltalake(
        str(path),
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "s": pa.array(["Apple", "apple", "berry"]),
                "p": pa.array(["A", "a", "b"]),
            }
        ),
        partition_by=["p"],
    )
    commit = path / commit_name(0)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            set_field_metadata("s", LCASE)(schema, action["metaData"])
            set_field_metadata("p", {"delta.generationExpression": "SUBSTRING(s, 1, 1)"})(schema, action["metaData"])
            action["metaData"]["schemaString"] = json.dumps(schema)
        if "protocol" in action:
            action["protocol"] = {"minReaderVersion": 1, "minWriterVersion": 4}
    commit.write_text("".join(json.dumps(a) + "\n" for a in actions))


def collated_partition(path: Path) -> None:
    """Partitioned by a collated (``UTF8_LCASE``) column p: rows (1, A), (2, a), (3, b)."""
    write_deltalake(
        str(path),
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": pa.array(["A", "a", "b"])}),
        partition_by=["p"],
    )
    commit = path / commit_name(0)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            set_field_metadata("p", {"__COLLATIONS": {"p": "spark.UTF8_LCASE"}})(schema, action["metaData"])
            action["metaData"]["schemaString"] = json.dumps(schema)
    commit.write_text("".join(json.dumps(a) + "\n" for a in actions))


def defaulted_column(path: Path, metadata: dict[str, Any]) -> None:
    """ids 1, 2 in one file, then a metadata-only commit adding a column c (long) with field ``metadata``: the file
    lacks c."""
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64())}))
    metadata_commit(
        path,
        lambda schema, meta: schema["fields"].append(
            {"name": "c", "type": "long", "nullable": True, "metadata": metadata}
        ),
    )


@pytest.mark.parametrize("metadata", [{"CURRENT_DEFAULT": "7"}, {"exists_default": "7"}], ids=["current", "lower"])
def test_defaults_spark_does_not_fill_are_recorded(tmp_path: Path, metadata: dict[str, Any]) -> None:
    path = tmp_path / "t"
    defaulted_column(path, metadata)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def test_collated_tables_are_recorded(tmp_path: Path) -> None:
    for name, build in (
        ("files", collated_files),
        ("generated", collated_generated_partition),
        ("partition", collated_partition),
    ):
        path = tmp_path / name
        build(path)
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
        rc, doc = verify(str(path), "--level", "bytes")
        assert rc == 0, (name, doc)


@pytest.mark.parametrize(
    ("edit", "held"),
    [
        (set_field_metadata("s", LCASE), "reader_view_changed"),
        (set_field_metadata("s", {"comment": "names", **LCASE}), "reader_view_changed"),
        (set_field_metadata("s", {"CURRENT_DEFAULT": "'zz'", "EXISTS_DEFAULT": "'zz'"}), "reader_view_changed"),
        (set_property("delta.constraints.c", "id > 100"), None),
    ],
    ids=["collation", "collation-beside-comment", "defaults", "check-constraint"],
)
def test_metadata_commit_after_the_attestation(tmp_path: Path, edit: Any, held: str | None) -> None:
    path = tmp_path / "t"
    collated_files(path, collate=False)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    metadata_commit(path, edit)
    rc, doc = verify(str(path), "--level", "bytes")
    if held is None:
        assert rc == 0, doc  # Spark reads the same rows (test_spark_delta_round17b.py)
    else:
        assert rc != 0 and held in codes(doc), doc
