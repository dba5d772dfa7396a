"""A Delta deletion vector whose ``cardinality`` is not the number of rows its bitmap deletes (redteam11d).

delta-rs (and the content digest, which takes delta-rs's selection vectors) applies the bitmap and never reads the
cardinality. Spark (delta-spark 4.4) reads it: a vector of cardinality 0 is no vector (every stored row read), a
vector of another non-zero cardinality than its bitmap fails the read (``DELTA_DELETION_VECTOR_CARDINALITY_MISMATCH``)
and ``COUNT(*)`` is answered from the log alone, ``numRecords`` less the cardinality. Measured on a hand-made
``dataChange: false`` rewrite whose added file is the attested file's bytes under a new name with the attested vector,
its cardinality restated: delta-rs read the attested 11 rows; Spark read 12 (the deleted row back) at cardinality 0,
and counted 10 / 9 rows at cardinality 2 / 3 — ``VERIFIED (content; compacted …, same rows)`` before. The cardinality
of every vector the digest applies is now held to the rows it deletes: ``content_changed`` for a rewrite's file,
``table_inconsistent`` at ``record``.

The same holds of a vector in a table whose protocol does not enable deletion vectors (reader version 1, no
``deletionVectors`` feature, as delta-rs creates a table): Spark applies none, delta-rs every one. A rewrite of a
plain delta-rs table adding a file of the attested rows plus one more (777), with a vector deleting that row, read as
the attested rows in delta-rs and as them plus 777 in Spark (its ``COUNT(*)`` 6, the log's) — VERIFIED before;
``table_inconsistent`` now at every version such a file is live in (and at ``record``; the digest refuses it too).

Tried and held: a vector whose bitmap names bucket 0 twice (``[{2}, {1}]``): delta-rs keeps the last (row 1, the
attested rows), Spark refuses the read (``Keys are required to be sorted``) and counts by the cardinality (1, right);
32-bit bitmaps with unsorted or repeated values or unsorted container keys: delta-rs refuses them
(``table_unreadable``).
"""

from __future__ import annotations

import json
import shutil
import struct
import uuid
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from attest.errors import CarrierError
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import commit_name, z85_encode
from tests.adversarial.conftest import PROGRAM, codes, latest, log_state, verify
from tests.adversarial.test_content_rewrite_delta import _adds, _attested, _batch
from tests.delta.dv import MAGIC, _roaring32, add_deletion_vector, dv_file

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _stored_vector(buckets: list[tuple[int, list[int]]]) -> tuple[bytes, int, int]:
    """A DV file of one vector whose 64-bit bitmap holds ``buckets`` as given (order and repeats kept)."""
    data = struct.pack("<i", MAGIC) + struct.pack("<Q", len(buckets))
    for high, values in buckets:
        data += struct.pack("<I", high) + _roaring32(values)
    body = struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    return b"\x01" + body, 1, len(data)


def _containers(containers: list[tuple[int, list[int]]]) -> bytes:
    """A 32-bit roaring bitmap of array containers, each (key, values) kept as given: unsorted, repeated."""
    header = struct.pack("<II", 12346, len(containers))
    header += b"".join(struct.pack("<HH", key, len(values) - 1) for key, values in containers)
    offset, offsets, body = len(header) + 4 * len(containers), b"", b""
    for _, values in containers:
        offsets += struct.pack("<I", offset + len(body))
        body += b"".join(struct.pack("<H", v) for v in values)
    return header + offsets + body


def _stored_raw(bitmap32: bytes) -> tuple[bytes, int, int]:
    data = struct.pack("<i", MAGIC) + struct.pack("<QI", 1, 0) + bitmap32
    body = struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    return b"\x01" + body, 1, len(data)


def _rewrite(path: Path, *, cardinality: int | None = None,
             buckets: list[tuple[int, list[int]]] | None = None, raw: bytes | None = None) -> None:
    """A ``dataChange: false`` commit removing the file with the deletion vector and adding its bytes under a new name
    with the same vector (``cardinality``: restated; ``buckets``: a new DV file of that bitmap, cardinality 1;
    ``raw``: a new DV file of that one 32-bit bitmap as bucket 0)."""
    adds = _adds(path)
    rel = next(r for r, a in adds.items() if a.get("deletionVector"))
    add = adds[rel]
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    shutil.copy(path / rel, path / new)
    vector = dict(add["deletionVector"])
    if buckets is not None or raw is not None:
        u = uuid.uuid4()
        (path / "cd").mkdir(exist_ok=True)
        data, offset, size = _stored_vector(buckets or []) if raw is None else _stored_raw(raw)
        (path / f"cd/deletion_vector_{u}.bin").write_bytes(data)
        vector = {"storageType": "u", "pathOrInlineDv": "cd" + z85_encode(u.bytes), "offset": offset,
                  "sizeInBytes": size, "cardinality": 1}
    if cardinality is not None:
        vector["cardinality"] = cardinality
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}},
        {"remove": {"path": rel, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                    "partitionValues": {}, "size": add["size"], "deletionVector": add["deletionVector"]}},
        {"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size, "modificationTime": 2,
                 "dataChange": False, "stats": add.get("stats"), "deletionVector": vector}}]
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _delta_rs(path: Path) -> list[int]:
    out = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("select v from t").read_all())
    return sorted(out.column("v").to_pylist())


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """Three files of four rows, row 1 of one file deleted by a vector (cardinality 1), attested with digests."""
    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    return path


def test_a_rewrite_restating_nothing_verifies(table: Path) -> None:
    before = _delta_rs(table)
    _rewrite(table)
    assert _delta_rs(table) == before
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


@pytest.mark.parametrize("cardinality", [0, 2, 3, "1"])
def test_a_rewrite_restating_the_cardinality_is_content_changed(table: Path, cardinality: Any) -> None:
    before = _delta_rs(table)
    _rewrite(table, cardinality=cardinality)
    assert _delta_rs(table) == before  # delta-rs reads the bitmap: the attested rows
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "deletion vector states a cardinality" in doc["errors"][0]["message"], doc
    with pytest.raises(CarrierError) as err:  # nor is the attestation carried onto it
        DeltaCarrier(str(table)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "content_changed"


def test_record_refuses_a_vector_whose_cardinality_is_not_its_bitmap(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(2):
        write_deltalake(str(path), _batch(i, False), mode="append",
                        configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    add_deletion_vector(path, [1])
    commit = path / commit_name(latest(path))
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            action["add"]["deletionVector"]["cardinality"] = 0
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "table_inconsistent" and "cardinality of 0" in err.value.message


def test_a_bucket_named_twice_in_the_attested_order_is_held(table: Path) -> None:
    """delta-rs keeps the last of two buckets of one key: [{1}, {2}] deletes row 2 (other rows), [{2}, {1}] row 1."""
    other, same = table.parent / "other", table.parent / "same"
    shutil.copytree(table, other)
    shutil.copytree(table, same)
    before = _delta_rs(table)
    _rewrite(other, buckets=[(0, [1]), (0, [2])])
    _rewrite(same, buckets=[(0, [2]), (0, [1])])
    assert _delta_rs(other) != before and _delta_rs(same) == before
    rc, doc = verify(str(other), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    rc, doc = verify(str(same), "--level", "bytes")  # Spark refuses the read (test below): no other rows
    assert rc == 0, doc


@pytest.mark.parametrize("containers", [[(0, [3, 1])], [(0, [1, 1])], [(1, [0]), (0, [1])]],
                         ids=["values unsorted", "a value twice", "keys unsorted"])
def test_a_bitmap_delta_rs_refuses_is_never_verified(table: Path, containers: list[tuple[int, list[int]]]) -> None:
    """Malformed 32-bit bitmaps Java's RoaringBitmap would read without a check: delta-rs refuses to deserialize them
    (measured), so no digest is taken of such a file."""
    _rewrite(table, raw=_containers(containers), cardinality=2)
    with pytest.raises(Exception, match="deserialize deletion vector"):
        _delta_rs(table)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc


def _plain_table(path: Path) -> None:
    """Two appends by delta-rs (protocol 1/2: no deletion vectors), attested with digests."""
    for i in range(2):
        write_deltalake(str(path), pa.table({"v": pa.array([10 * i, 10 * i + 1, 10 * i + 2], pa.int64())}),
                        mode="append")
    from carriers.delta.carrier import attest_after_write

    attest_after_write(str(path), model="m", program_hash=PROGRAM)


def _vector_without_the_feature(path: Path, *, rewrite: bool = True) -> None:
    """A commit (``rewrite``: ``dataChange: false``, removing the first file) adding a file of the first file's rows
    plus 777, with a vector deleting 777 — the protocol left as it is."""
    rel, add = sorted(log_state(path).adds.items())[0]
    values = pq.read_table(path / rel).column("v").to_pylist()
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"v": pa.array([*values, 777], pa.int64())}), path / new)
    u = uuid.uuid4()
    (path / "ab").mkdir(exist_ok=True)
    data, offset, size = dv_file([len(values)])
    (path / f"ab/deletion_vector_{u}.bin").write_bytes(data)
    stats = {"numRecords": len(values) + 1, "minValues": {"v": min(values)}, "maxValues": {"v": 777},
             "nullCount": {"v": 0}, "tightBounds": False}
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE" if rewrite else "WRITE"}}]
    if rewrite:
        actions.append({"remove": {"path": rel, "dataChange": False, "deletionTimestamp": 1,
                                   "extendedFileMetadata": True, "partitionValues": {}, "size": add["size"]}})
    actions.append({"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size,
                            "modificationTime": 2, "dataChange": not rewrite, "stats": json.dumps(stats),
                            "deletionVector": {"storageType": "u", "pathOrInlineDv": "ab" + z85_encode(u.bytes),
                                               "offset": offset, "sizeInBytes": size, "cardinality": 1}}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_a_rewrite_adding_a_vector_the_protocol_does_not_enable_is_not_verified(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _plain_table(path)
    before = _delta_rs(path)
    _vector_without_the_feature(path)
    assert _delta_rs(path) == before  # delta-rs applies the vector: the attested rows
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "does not enable deletion vectors" in doc["errors"][0]["message"], doc


def test_record_refuses_a_vector_the_protocol_does_not_enable(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([0, 1, 2], pa.int64())}))
    _vector_without_the_feature(path, rewrite=False)
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).record(model="m", program_hash=PROGRAM)
    assert err.value.code.value == "table_inconsistent" and "does not enable" in err.value.message


def test_an_attestation_made_before_over_a_vector_the_protocol_does_not_enable(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Attested before the check (both checks off, as then): its version no longer verifies."""
    import carriers.delta.carrier as delta_carrier
    import carriers.delta.content as delta_content

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([0, 1, 2], pa.int64())}))
    _vector_without_the_feature(path, rewrite=False)
    with monkeypatch.context() as m:
        m.setattr(delta_carrier, "_vector_without_the_feature", lambda log: None)
        m.setattr(delta_content, "_check_cardinality", lambda *args, **kwargs: None)
        DeltaCarrier(str(path)).record(model="m", program_hash=PROGRAM)
        rc, doc = verify(str(path), "--level", "bytes")
        assert rc == 0, doc
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "does not enable deletion vectors" in doc["errors"][0]["message"], doc


@pytest.mark.spark
def test_spark_applies_no_vector_the_protocol_does_not_enable(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _plain_table(path)
    before = _delta_rs(path)
    _vector_without_the_feature(path)
    assert _delta_rs(path) == before
    rows = sorted(r["v"] for r in spark.read.format("delta").load(str(path)).select("v").collect())
    assert rows == sorted([*before, 777])  # the deleted row read
    assert spark.sql(f"select count(*) from delta.`{path}`").collect()[0][0] == len(before)  # the log's count


@pytest.mark.spark
def test_spark_reads_the_cardinality(spark: SparkSession, table: Path) -> None:
    """What Spark returns for each restated vector (delta-rs: the attested 11 rows every time)."""
    before = _delta_rs(table)
    cases: dict[str, dict[str, Any]] = {"honest": {}, "0": {"cardinality": 0}, "2": {"cardinality": 2},
                                        "twice": {"buckets": [(0, [2]), (0, [1])]}}
    got: dict[str, tuple[Any, int]] = {}
    for name, forge in cases.items():
        path = table.parent / f"case-{name}"
        shutil.copytree(table, path)
        _rewrite(path, **forge)
        assert _delta_rs(path) == before
        try:
            rows: Any = sorted(r["v"] for r in spark.read.format("delta").load(str(path)).select("v").collect())
        except Exception as exc:  # the read Spark refuses, named by its message
            rows = "CARDINALITY_MISMATCH" if "CARDINALITY_MISMATCH" in str(exc) else \
                "NOT_SORTED" if "sorted in ascending order" in str(exc) else str(exc)[:200]
        got[name] = (rows, spark.sql(f"select count(*) from delta.`{path}`").collect()[0][0])
    assert got["honest"] == (before, 11)
    rows, count = got["0"]  # the deleted row back
    assert isinstance(rows, list) and len(rows) == 12 and set(before) < set(rows) and count == 12, got
    assert got["2"] == ("CARDINALITY_MISMATCH", 10)  # COUNT(*) by the log alone
    assert got["twice"] == ("NOT_SORTED", 11)
