"""Unknown keys and actions in the Delta log (issue 30.5), and the exit code of tables delta-rs cannot read.

PROTOCOL.md: readers ignore unknown fields and actions. Spark's own log-evolvability test table
(delta-io/delta, spark/src/test/resources/delta/transaction_log_schema_evolvability) holds an unknown action on a line
of its own (``{"some_new_action": {"a": 1}}``), an unknown key beside ``commitInfo`` and ``add``
(``"some_new_action_alongside_add_action": ["a", "1"]``) and an unknown field inside ``add``
(``"some_new_column_in_add_action": 1``); delta-rs 1.6 reads it (measured: 4 files, 18 rows). It was
``table_inconsistent`` ("one line holds 2 actions"). Two *known* actions on one line stay refused (engines apply one
or both), and so does a key that spells a known action or field in another case (an engine matching names without
case would read it as that; delta-rs ignores it, measured).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from attest.cli import main
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, assert_refused, verify


def run(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([*args, "--json"])
    return rc, json.loads(out.getvalue())


def record(path: Path) -> tuple[int, dict[str, Any]]:
    return run("record", str(path), "--model", "m", "--program-hash", PROGRAM)


def codes(doc: dict[str, Any]) -> list[str]:
    return [e["code"] for e in doc.get("errors", [])]


def _lines(path: Path, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / commit_name(version)).read_text().splitlines() if line.strip()]


def _write(path: Path, version: int, actions: list[dict[str, Any]]) -> None:
    (path / commit_name(version)).write_text("".join(json.dumps(a) + "\n" for a in actions))


def evolvability_table(tmp_path: Path) -> Path:
    """Spark's table reproduced with delta-rs: an append (version 1), its files removed beside an unknown action
    (version 2), then added again with unknown keys beside commitInfo and add and inside add (version 3)."""
    path = tmp_path / "evo"
    write_deltalake(str(path), pa.table({"key": [1, 2, 3, 4], "value": [1, 2, 3, 4]}))
    write_deltalake(str(path), pa.table({"key": [5, 6, 7, 8, 9], "value": [5, 6, 7, 8, 9]}), mode="append")
    adds = [a["add"] for a in _lines(path, 1) if "add" in a]
    _write(path, 2, [*({"remove": {"path": a["path"], "deletionTimestamp": 1623255727201, "dataChange": True,
                                   "extendedFileMetadata": True, "partitionValues": {}, "size": a["size"]}}
                       for a in adds), {"some_new_action": {"a": 1}}])
    _write(path, 3, [{"commitInfo": {"timestamp": 1623255724166, "operation": "WRITE",
                                     "operationParameters": {"mode": "Append", "partitionBy": "[]"}},
                      "some_new_action_alongside_add_action": ["a", "1"]},
                     *({"add": {**a, "some_new_column_in_add_action": 1},
                        "some_new_action_alongside_add_action": ["a", "1"]} for a in adds)])
    return path


def rows(path: Path) -> list[int]:
    result = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT key FROM t ORDER BY key").read_all()
    return list(pa.table(result).column("key").to_pylist())


def test_the_log_evolvability_table_is_read_attested_and_verified(tmp_path: Path) -> None:
    path = evolvability_table(tmp_path)
    assert rows(path) == list(range(1, 10))  # delta-rs reads it
    rc, doc = verify(str(path))
    assert rc == 1 and codes(doc) == ["unattested"], doc  # was table_inconsistent beside it
    rc, doc = record(path)
    assert rc == 0 and doc["attested_version"] == "3", doc
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


def _attested(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    write_deltalake(str(path), pa.table({"v": [4]}), mode="append")
    assert record(path)[0] == 0
    return path


def _an_add(path: Path) -> dict[str, Any]:
    return next(a["add"] for a in _lines(path, 1) if "add" in a)


def test_an_unknown_action_after_the_attestation_keeps_it_verified(tmp_path: Path) -> None:
    path = _attested(tmp_path)
    latest = int(DeltaTable(str(path)).version())
    _write(path, latest + 1, [{"commitInfo": {"operation": "X"}, "future": {"k": 1}}, {"someFutureAction": {"a": 1}}])
    rc, doc = verify(str(path))
    assert rc == 0, doc


# Lines that must never verify: two known actions on one line (an unknown key beside them changes nothing), and keys
# that spell a known action or field in another case.
def _two_actions(add: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"remove": {"path": add["path"], "dataChange": True}, "add": {**add, "dataChange": True}, "x": 1}]


def _with_cdc(add: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"add": {**add, "path": "other.parquet"}, "cdc": {"path": "c.parquet", "size": 1, "dataChange": False}}]


def _remove_spelled_otherwise(add: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"Remove": {"path": add["path"], "dataChange": True}}]


def _path_spelled_otherwise(add: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"remove": {"path": add["path"], "dataChange": True}},
            {"add": {**add, "PATH": "elsewhere.parquet", "dataChange": True}}]


def _schema_spelled_otherwise(add: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                          "schemaString": json.dumps({"type": "struct", "fields": [
                              {"name": "v", "type": "long", "nullable": True, "metadata": {}}]}),
                          "SchemaString": json.dumps({"type": "struct", "fields": [
                              {"name": "w", "type": "long", "nullable": True, "metadata": {}}]}),
                          "configuration": {}}}]


REFUSED = {
    "add and remove on one line beside an unknown key": _two_actions,
    "add and cdc on one line": _with_cdc,
    "Remove": _remove_spelled_otherwise,
    "an add's PATH": _path_spelled_otherwise,
    "a metaData's SchemaString": _schema_spelled_otherwise,
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_an_engine_could_read_otherwise_is_still_refused(tmp_path: Path, case: str) -> None:
    path = _attested(tmp_path)
    latest = int(DeltaTable(str(path)).version())
    _write(path, latest + 1, [{"commitInfo": {"operation": "WRITE"}}, *REFUSED[case](_an_add(path))])
    assert_refused(path, "table_inconsistent")


# ---- one rule for tables delta-rs cannot read: exit 2 (README: 2 = unreadable input), attested or not ------------
# A protocol delta-rs 1.6 cannot read deletion vectors under (vacuumProtocolCheck with deletionVectors, as Databricks
# writes it): measured, 'Unsupported table features required: [VacuumProtocolCheck]'.
FEATURES = ["deletionVectors", "vacuumProtocolCheck"]
UNREADABLE = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": FEATURES,
                           "writerFeatures": FEATURES}}


def test_an_unattested_table_delta_rs_cannot_read_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    _write(path, 0, [UNREADABLE if "protocol" in a else a for a in _lines(path, 0)])  # the data version itself
    rc, doc = verify(str(path))
    assert rc == 2 and codes(doc) == ["unattested", "table_unreadable"] and not doc["passed"], doc  # was exit 1
    rc, doc = record(path)
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc
    rc, doc = run("audit", str(tmp_path))
    assert rc == 2 and doc["counts"]["ERROR"] == 1, doc


def test_an_attested_table_delta_rs_cannot_read_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    assert record(path)[0] == 0
    _write(path, int(DeltaTable(str(path)).version()) + 1, [{"commitInfo": {"operation": "UPGRADE"}}, UNREADABLE])
    rc, doc = verify(str(path))
    assert rc == 2 and "table_unreadable" in codes(doc) and not doc["passed"], doc  # was exit 1
    rc, doc = run("audit", str(tmp_path))
    assert rc == 2 and doc["counts"]["ERROR"] == 1, doc


@pytest.mark.parametrize("column", ["add", "remove", "metaData", "protocol"])
def test_a_checkpoint_column_spelling_an_action_in_another_case_is_refused(tmp_path: Path, column: str) -> None:
    """A Parquet checkpoint whose action column is spelled in another case (``ADD``): the replay reads ``add`` only;
    a reader matching columns without case reads it as the action (delta-rs does: beside ``add`` it refused the
    checkpoint as a duplicate field, measured). Never VERIFIED, whatever the engine makes of it."""
    import pyarrow.parquet as pq

    path = _attested(tmp_path)
    DeltaTable(str(path)).create_checkpoint()
    checkpoint = next((path / "_delta_log").glob("*.checkpoint.parquet"))
    data = pq.read_table(checkpoint)
    names = [column.upper() if name == column else name for name in data.column_names]
    pq.write_table(data.rename_columns(names), checkpoint)
    rc, doc = verify(str(path))
    assert rc != 0 and set(codes(doc)) & {"table_inconsistent", "table_unreadable"}, doc
