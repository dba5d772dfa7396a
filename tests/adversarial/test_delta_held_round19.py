"""Round 19 (Delta), variants that held — measured with delta-spark 4.4 on Spark 4.1 (``test_spark_delta_round19.py``)
and delta-rs 1.6:

- **Checksum files** (``_delta_log/<version>.crc``): one written for the latest version (the attestation commit, which
  has none) whose ``allFiles`` lacks a live file, or whose ``numFiles`` / ``tableSizeBytes`` say 1: Spark read every row
  and answered ``COUNT(*)`` / ``MAX`` from the log, delta-rs read every file: VERIFIED, rightly. (A checksum file's
  schema, properties or protocol other than the log's stays ``table_inconsistent``: delta-rs reads them, and Spark
  failed the read, ``DELTA_STATE_RECOVER_ERROR``.)
- **V2 checkpoint sidecars holding other actions than files** (a ``txn``, a ``domainMetadata``, a ``commitInfo`` row
  beside the adds, the sizes restated in the checkpoint and ``_last_checkpoint``): Spark read the same rows, VERIFIED.
- **Domain metadata**: a commit of ``domainMetadata`` alone after the attested version (``delta.rowTracking`` with a
  high-water mark of 0 below the ids given, a ``delta.clustering`` domain): Spark's rows, ``_metadata.row_id`` and
  ``row_commit_version`` unchanged, VERIFIED (domains steer writers: the next ids, the clustering of new files).
- **Column mapping**: two columns with one ``delta.columnMapping.id`` or one physical name, physical names differing in
  case, an id that is not a number — delta-rs refuses each table (``table_unreadable``: never a verdict; Spark failed
  the read of all but one physical name shared in an id-mapped table, whose second column it read by its id as
  nulls); a
  ``delta.columnMapping.maxColumnId`` below the ids, ids given crosswise to the physical names (the file's field ids
  matching), a physical name that is the other column's logical name — delta-rs and Spark read the same rows: VERIFIED.
  Partition values of a mapped table keyed by the logical name, by both names with other values, or by the physical
  name in another case: delta-rs refuses the table (Spark read null, or the physical key's value).
- **In-commit timestamps** (``TIMESTAMP AS OF``) and a version's own change data (``cdc`` files of the attested
  commit) are reads of a time or of a change, which no attestation of a version binds (docs/security.md, *Changes
  between versions*): not forged again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, latest, log_state, verify, write_commit
from tests.adversarial.delta_commits import first_commit
from tests.adversarial.test_delta_v2_sidecars import v2_table


def _field(name: str, i: Any, physical: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "long",
        "nullable": True,
        "metadata": {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": physical},
    }


# name: (mode, [(logical, id, physical)], file columns [(name, field id)]); columns a, b stored 1, 2 and 10, 20
MAPPINGS_REFUSED: dict[str, tuple[str, list[tuple[str, Any, str]]]] = {
    "one id for two columns": ("id", [("a", 1, "col-1"), ("b", 1, "col-2")]),
    "one physical name for two columns": ("name", [("a", 1, "col-1"), ("b", 2, "col-1")]),
    "one physical name for two columns by id": ("id", [("a", 1, "col-1"), ("b", 2, "col-1")]),
    "physical names differing in case": ("name", [("a", 1, "col-x"), ("b", 2, "COL-X")]),
    "an id that is not a number": ("id", [("a", "1", "col-1"), ("b", "2", "col-2")]),
}
# name: (mode, fields, what both engines read as (a, b) ordered by a)
MAPPINGS_READ_ALIKE: dict[str, tuple[str, list[tuple[str, Any, str]], list[tuple[int, int]]]] = {
    "a maxColumnId below the ids": ("name", [("a", 1, "col-1"), ("b", 7, "col-2")], [(1, 10), (2, 20)]),
    "ids crosswise to the physical names": ("id", [("a", 2, "col-1"), ("b", 1, "col-2")], [(1, 10), (2, 20)]),
    "a physical name that is the other logical name": ("name", [("a", 1, "b"), ("b", 2, "a")], [(1, 10), (2, 20)]),
}


def mapped(path: Path, mode: str, fields: list[tuple[str, Any, str]]) -> Path:
    """A one-file mapped table (reader 2, writer 5, ``maxColumnId`` 3) of columns a, b. The file stores each field's
    physical name with the Parquet field id its mapping gives it (where that is a number), values 1, 2 under the
    first field's and 10, 20 under the second's (one column where the two share a physical name: 1, 2)."""
    (path / "_delta_log").mkdir(parents=True)
    rel = "part-00000-mapped.parquet"
    columns: dict[str, tuple[pa.Array, Any]] = {}
    for (_, i, physical), values in zip(fields, ([1, 2], [10, 20]), strict=True):
        columns.setdefault(physical, (pa.array(values, pa.int64()), i))
    schema = pa.schema(
        [
            pa.field(name, pa.int64(), metadata={"PARQUET:field_id": str(i)} if isinstance(i, int) else None)
            for name, (_, i) in columns.items()
        ]
    )
    pq.write_table(pa.table([a for a, _ in columns.values()], schema=schema), path / rel)
    first_commit(path, rel, [_field(*f) for f in fields], num_records=2, reader=2, writer=5,
                 configuration={"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "3"})
    return path


def _query(path: Path, sql: str) -> list[dict[str, Any]]:
    return pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute(sql).read_all()).to_pylist()


@pytest.mark.parametrize("case", sorted(MAPPINGS_REFUSED))
def test_a_duplicate_or_malformed_mapping_gets_no_verdict(tmp_path: Path, case: str) -> None:
    path = mapped(tmp_path / "t", *MAPPINGS_REFUSED[case])
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_unreadable", caught.value


@pytest.mark.parametrize("case", sorted(MAPPINGS_READ_ALIKE))
def test_a_mapping_both_engines_read_alike_verifies(tmp_path: Path, case: str) -> None:
    mode, fields, read = MAPPINGS_READ_ALIKE[case]
    path = mapped(tmp_path / "t", mode, fields)
    assert [(r["a"], r["b"]) for r in _query(path, "SELECT a, b FROM t ORDER BY a")] == read
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


# Partition values of a mapped table (p: physical ``col-2``) keyed otherwise than by the physical name.
PARTITION_KEYS: list[dict[str, str]] = [
    {"p": "x"},
    {"col-2": "x", "p": "y"},
    {"COL-2": "x"},
    {"col-2": "x", "COL-2": "y"},
]


def partition_keyed(path: Path, keys: dict[str, str]) -> Path:
    """``mapped`` with column p (``col-2``, a string) a partition column, its add's partition values ``keys``."""
    mapped(path, "name", [("a", 1, "col-1"), ("p", 2, "col-2")])
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            schema["fields"][1]["type"] = "string"
            action["metaData"].update(schemaString=json.dumps(schema), partitionColumns=["p"])
        if "add" in action:
            action["add"]["partitionValues"] = keys
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path


@pytest.mark.parametrize("keys", PARTITION_KEYS)
def test_mapped_partition_values_under_other_keys_get_no_verdict(tmp_path: Path, keys: dict[str, str]) -> None:
    """Spark read null (the logical or other-case key alone) or the physical key's value; delta-rs refuses them."""
    path = partition_keyed(tmp_path / "t", keys)
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_unreadable", caught.value


def checksum_forged(path: Path, change: str) -> Path:
    """A checksum file of the table's latest version, written from the log's state: ``allFiles`` lacking one live
    file (``change`` "allFiles"), or ``numFiles`` and ``tableSizeBytes`` of 1 ("counts"). Hadoop's checksums of the
    log's files dropped (a forger rewrites or drops them)."""
    for crc in path.rglob(".*.crc"):
        crc.unlink()
    n = latest(path)
    state = log_state(path)
    adds = sorted(state.adds.values(), key=lambda a: str(a["path"]))
    checksum = {
        "txnId": "00000000-0000-0000-0000-000000000019",
        "tableSizeBytes": 1 if change == "counts" else sum(int(a["size"]) for a in adds),
        "numFiles": 1 if change == "counts" else len(adds),
        "numMetadata": 1,
        "numProtocol": 1,
        "setTransactions": [],
        "domainMetadata": [],
        "metadata": state.metadata,
        "protocol": state.protocol,
        "allFiles": adds[1:] if change == "allFiles" else adds,
    }
    (path / "_delta_log" / f"{n:020d}.crc").write_text(json.dumps(checksum))
    return path


@pytest.mark.parametrize("change", ["allFiles", "counts"])
def test_a_checksum_file_misstating_the_files_verifies_and_changes_no_read(tmp_path: Path, change: str) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int64())}))
    write_deltalake(str(path), pa.table({"v": pa.array([3], pa.int64())}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    checksum_forged(path, change)
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2, 3]
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


_EXTRA = {
    "txn": {"txn": {"appId": "x", "version": 5, "lastUpdated": 1}},
    "domainMetadata": {"domainMetadata": {"domain": "zz.custom", "configuration": "{}", "removed": False}},
    "commitInfo": {"commitInfo": {"operation": "X"}},
}


def sidecar_holding(path: Path, kind: str) -> Path:
    """The table's v2 checkpoint's sidecar given one more row, a ``kind`` action (``_EXTRA``); its size restated in the
    checkpoint (JSON) and in ``_last_checkpoint`` (its checksum dropped) where there is one."""
    for crc in path.rglob(".*.crc"):
        crc.unlink()
    log = path / "_delta_log"
    sidecar = next((log / "_sidecars").iterdir())
    pq.write_table(
        pa.concat_tables([pq.read_table(sidecar), pa.Table.from_pylist([_EXTRA[kind]])], promote_options="default"),
        sidecar,
    )
    size = sidecar.stat().st_size
    top = next(log.glob("*.checkpoint.*.json"))
    actions = [json.loads(line) for line in top.read_text().splitlines()]
    for action in actions:
        if "sidecar" in action:
            action["sidecar"]["sizeInBytes"] = size
    top.write_text("".join(json.dumps(a) + "\n" for a in actions))
    hint = log / "_last_checkpoint"
    if hint.exists():
        said = json.loads(hint.read_text())
        said.pop("checksum", None)
        for held in (said.get("v2Checkpoint") or {}).get("sidecarFiles") or []:
            held["sizeInBytes"] = size
        said.get("v2Checkpoint", {}).update(sizeInBytes=top.stat().st_size)
        hint.write_text(json.dumps(said))
    return path


@pytest.mark.parametrize("kind", sorted(_EXTRA))
def test_a_sidecar_holding_another_action_verifies(tmp_path: Path, kind: str) -> None:
    path = sidecar_holding(v2_table(tmp_path), kind)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc


def domains_committed(path: Path) -> Path:
    """A commit of domain metadata alone: the row-id high-water mark set to 0, a clustering domain."""
    for crc in path.rglob(".*.crc"):
        crc.unlink()
    write_commit(
        path,
        [
            {
                "domainMetadata": {
                    "domain": "delta.rowTracking",
                    "configuration": json.dumps({"rowIdHighWaterMark": 0}),
                    "removed": False,
                }
            },
            {
                "domainMetadata": {
                    "domain": "delta.clustering",
                    "configuration": json.dumps({"clusteringColumns": [["v"]]}),
                    "removed": False,
                }
            },
        ],
    )
    return path


def test_a_domain_metadata_commit_after_the_attested_version_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int64())}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    domains_committed(path)
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2]
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
