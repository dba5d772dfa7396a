"""Delta attacks of the fifteenth round measured as held, pinned so a change in delta-rs, Spark or attest shows
(redteam15d; measured with delta-rs 1.6 and delta-spark 4.4 on Spark 4.1: ``test_spark_delta_round15.py``).

- add paths spelled so an engine might decode them otherwise — ``a+b.parquet`` beside a decoy ``a b.parquet``,
  ``a%2541.parquet`` (the file ``a%41.parquet``) beside ``aA.parquet``, ``a%2Bc.parquet`` (``a+c.parquet``) beside
  ``a%2Bc.parquet`` and ``a c.parquet``, ``x..parquet`` beside ``x.parquet``, an NFD ``café`` beside the NFC one:
  delta-rs and Spark read the same file, the one attest hashes (decoded once, ``+`` kept): VERIFIED;
- a partition column also stored in the data file with another value: both engines read the log's partition value
  (``p = 1`` for rows stored with ``p = 2``; Spark's ``WHERE p = 2`` none), as the digest does: VERIFIED;
- ``_delta_log/_last_checkpoint`` naming an older checkpoint, a wrong ``size`` or ``parts``, not JSON, or empty: both
  engines list the log and read the newest checkpoint — the same six rows: VERIFIED; naming a checkpoint that is not
  there (version 9 of 6): delta-rs refuses the table ("Had a _last_checkpoint hint but didn't find any checkpoints"),
  Spark reads the six rows — ``table_unreadable``, never VERIFIED;
- deletion vectors naming rows past their file within the first 65536 rows (``{1, 100}`` of 4 rows): delta-rs refuses
  them ("mask length 101 exceeds numRecords 4"), Spark fails the read (the bitmap's cardinality is not the stated
  one): ``table_unreadable`` (farther ones: ``test_delta_round15.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from carriers.delta import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, verify, write_commit
from tests.adversarial.test_content_rewrite_delta import _attested
from tests.adversarial.test_delta_dv_cardinality import _rewrite

# add path as the log spells it -> (the file it names, decoys engines decoding otherwise would read: name -> row)
SPELLINGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "plus": ("a+b.parquet", "a+b.parquet", {"a b.parquet": 999}),
    "escaped percent": ("a%2541.parquet", "a%41.parquet", {"aA.parquet": 888}),
    "escaped plus": ("a%2Bc.parquet", "a+c.parquet", {"a%2Bc.parquet": 777, "a c.parquet": 666}),
    "trailing dot": ("x..parquet", "x..parquet", {"x.parquet": 555}),
    "nfd": ("cafe\u0301.parquet", "cafe\u0301.parquet", {"caf\u00e9.parquet": 444}),
}


def spelled(path: Path, case: str) -> None:
    """A one-row table (1), then a hand-made append of row 100 under the case's add path, its decoys beside it."""
    raw, name, decoys = SPELLINGS[case]
    write_deltalake(str(path), pa.table({"v": pa.array([1], pa.int64())}))
    for file, row in {name: 100, **decoys}.items():
        pq.write_table(pa.table({"v": pa.array([row], pa.int64())}), path / file)
    stats = {"numRecords": 1, "minValues": {"v": 100}, "maxValues": {"v": 100}, "nullCount": {"v": 0}}
    write_commit(path, [{"add": {"path": raw, "partitionValues": {}, "size": (path / name).stat().st_size,
                                 "modificationTime": 1, "dataChange": True, "stats": json.dumps(stats)}}])


def delta_rs(path: Path, column: str = "v") -> list[int]:
    out = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute(f"select {column} from t").read_all())
    return sorted(out.column(column).to_pylist())


@pytest.mark.parametrize("case", sorted(SPELLINGS))
def test_add_paths_engines_decode_alike_verify(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    spelled(path, case)
    assert delta_rs(path) == [1, 100]
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def partition_stored_in_the_file(path: Path) -> None:
    """A table partitioned by ``p`` (rows under ``p = 1``) whose data file also stores ``p``, as 2."""
    write_deltalake(str(path), pa.table({"p": pa.array([1, 1], pa.int64()), "v": pa.array([10, 11], pa.int64())}),
                    partition_by=["p"])
    log = path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            f = path / action["add"]["path"]
            pq.write_table(pq.read_table(f).append_column("p", pa.array([2, 2], pa.int64())), f)
            action["add"]["size"] = f.stat().st_size
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_a_partition_column_stored_in_the_file_is_read_from_the_log(tmp_path: Path) -> None:
    path = tmp_path / "t"
    partition_stored_in_the_file(path)
    assert delta_rs(path, "p") == [1, 1]
    assert DeltaTable(str(path)).to_pyarrow_table(filters=[("p", "=", 2)]).num_rows == 0
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


def checkpointed(path: Path) -> tuple[str, dict[str, object]]:
    """Six appends of one row, checkpoints at versions 2 and 5, attested: (the first hint's text, the second's)."""
    for i in range(3):
        write_deltalake(str(path), pa.table({"v": pa.array([i], pa.int64())}), mode="append")
    DeltaTable(str(path)).create_checkpoint()
    older = (path / "_delta_log" / "_last_checkpoint").read_text()
    for i in range(3, 6):
        write_deltalake(str(path), pa.table({"v": pa.array([i], pa.int64())}), mode="append")
    DeltaTable(str(path)).create_checkpoint()
    newer = json.loads((path / "_delta_log" / "_last_checkpoint").read_text())
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    return older, newer


def hints(older: str, newer: dict[str, object]) -> dict[str, str]:
    return {"older": older, "size": json.dumps({**newer, "size": 1}), "parts": json.dumps({**newer, "parts": 3}),
            "not json": "{not json", "empty": "", "missing": json.dumps({**newer, "version": 9})}


def test_last_checkpoint_hints(tmp_path: Path) -> None:
    table = tmp_path / "t"
    older, newer = checkpointed(table)
    for case, text in hints(older, newer).items():
        path = tmp_path / case.replace(" ", "-")
        shutil.copytree(table, path)
        (path / "_delta_log" / "_last_checkpoint").write_text(text)
        rc, doc = verify(str(path), "--level", "bytes")
        if case == "missing":
            assert rc == 2 and codes(doc) == ["table_unreadable"], doc
            assert "didn't find any checkpoints" in doc["errors"][0]["message"], doc
        else:
            assert delta_rs(path) == [0, 1, 2, 3, 4, 5], case
            assert rc == 0, (case, doc)


def test_a_vector_past_its_file_within_its_first_container_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    _rewrite(path, buckets=[(0, [1, 100])])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc
    assert "exceeds numRecords" in doc["errors"][0]["message"], doc
