"""Iceberg v3 deletion vectors that readers read from different bytes.

A deletion vector is a blob of a Puffin file. Iceberg Java (Spark) reads the blob at the manifest entry's
``content_offset`` / ``content_size_in_bytes`` (and checks its length, magic and CRC); pyiceberg 0.12 reads every blob
the Puffin *footer* lists and matches them to data files by the footer's ``referenced-data-file`` property, the
manifest's offset unused. A ``replace`` snapshot that adds a Puffin file (Spark's ``rewrite_position_delete_files``
turning an upgraded table's position delete files into deletion vectors) is checked by content, read through
pyiceberg: its Puffin file rewritten in place — the same size, the footer's offset of one blob moved to another blob
of the same bits, the bytes at the manifest's offset now deleting another row — left pyiceberg's rows and the digest
unchanged while Spark returned a deleted row and lost another (measured): ``VERIFIED (content; ..., same rows)``
before (main's code). Now each vector is read both ways and must agree: ``table_inconsistent``.

A vector's stated row count against its bitmap (the Delta cardinality attack, dvcard11i): Java holds the bitmap's
cardinality to the manifest entry's ``record_count`` and refuses the read otherwise (COUNT(*) too: no metadata-only
count, no vector skipped at 0); pyiceberg reads neither it nor the footer's ``cardinality`` property, which Java does
not read either (measured). Held: ``table_inconsistent`` for the former, VERIFIED (the same rows) for the latter.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import PROGRAM, codes
from tests.adversarial.conftest import warehouse_cli as _cli
from tests.adversarial.spark_iceberg import pyiceberg_ids, spark_ids
from tests.iceberg.conftest import local
from tests.spark.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@dataclass
class Converted:
    name: str
    ident: str
    ref: str
    puffin: Path
    honest: bytes
    rows: list[int]


@pytest.fixture(scope="module")
def converted(spark: SparkSession, spark_warehouse: Path) -> Converted:
    """A v2 table with position deletes of ids 2 and 7 (position 2 of each of its two files: two equal vectors),
    upgraded to v3, one more row inserted (its first v3 snapshot gives the older rows their row ids), attested, then
    ``rewrite_position_delete_files``: one Puffin file with a deletion vector for each data file."""
    ns = f"dv{uuid.uuid4().hex[:6]}"
    name, ident = f"iceberg.{ns}.t", f"{ns}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(0, 5)")
    spark.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, CAST(id AS STRING) FROM range(5, 10)")
    spark.sql(f"DELETE FROM {name} WHERE id IN (2, 7)")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {name} VALUES (100, 'x')")
    ref = f"iceberg://iceberg/{ident}"
    rc, doc = _cli(spark_warehouse, "record", ref, "--model", "orders", "--program-hash", PROGRAM)
    assert rc == 0, doc
    spark.sql(f"CALL iceberg.system.rewrite_position_delete_files(table => '{ident}', "
              "options => map('rewrite-all', 'true'))")
    found = {r[0] for r in spark.sql(f"SELECT file_path FROM {name}.files WHERE file_format = 'PUFFIN'").collect()}
    assert len(found) == 1, found
    location = found.pop()
    puffin = Path(location[len("file:"):] if location.startswith("file:") else location)
    # Not read through Spark here: Iceberg's executor cache keeps a deletion vector file's bits by path, and the
    # attack's first Spark read must see the file as forged.
    rows = pyiceberg_ids(spark_warehouse, ident)
    assert rows == [0, 1, 3, 4, 5, 6, 8, 9, 100]
    return Converted(name=name, ident=ident, ref=ref, puffin=puffin, honest=puffin.read_bytes(), rows=rows)


@pytest.fixture
def restored(converted: Converted, spark: SparkSession) -> Iterator[Converted]:
    yield converted
    converted.puffin.write_bytes(converted.honest)
    spark.sql(f"REFRESH TABLE {converted.name}")


def _footer(data: bytes) -> tuple[int, dict[str, Any]]:
    size = struct.unpack("<i", data[-12:-8])[0]
    return size, json.loads(data[-12 - size:-12])


def _moved_footer(data: bytes, position: int) -> bytes:
    """The Puffin file with its first blob's bits replaced by a vector deleting ``position`` (length, magic and CRC
    kept valid: what Java reads at the manifest's offset), and the footer's offset of that blob moved to the second
    blob (equal to the first's old bits: what pyiceberg reads); the footer keeps its length, the file its size."""
    out = bytearray(data)
    size, footer = _footer(data)
    first, second = footer["blobs"][0], footer["blobs"][1]
    assert data[first["offset"]:first["offset"] + first["length"]] == \
        data[second["offset"]:second["offset"] + second["length"]]
    start = first["offset"]
    length = int.from_bytes(data[start:start + 4], "big")
    body = bytearray(data[start + 4:start + 4 + length])
    assert body[-2:] == struct.pack("<H", 2)  # one array container holding position 2
    body[-2:] = struct.pack("<H", position)
    out[start + 4:start + 4 + length] = body
    out[start + 4 + length:start + 8 + length] = struct.pack(">I", zlib.crc32(bytes(body)))
    first["offset"] = second["offset"]
    text = json.dumps(footer, separators=(",", ":"))
    created = footer.get("properties", {}).get("created-by", "")
    footer["properties"]["created-by"] = created[: len(created) - (len(text) - size)]
    text = json.dumps(footer, separators=(",", ":"))
    assert len(text) == size
    out[-12 - size:-12] = text.encode()
    return bytes(out)


def test_sparks_conversion_to_deletion_vectors_verifies_by_content(converted: Converted,
                                                                   spark_warehouse: Path) -> None:
    rc, doc = _cli(spark_warehouse, "verify", converted.ref, "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc


def test_a_vector_whose_footer_points_elsewhere_is_table_inconsistent(restored: Converted, spark: SparkSession,
                                                                      spark_warehouse: Path) -> None:
    restored.puffin.write_bytes(_moved_footer(restored.honest, 3))
    for crc in restored.puffin.parent.glob(f".{restored.puffin.name}.crc"):
        crc.unlink()
    assert pyiceberg_ids(spark_warehouse, restored.ident) == restored.rows  # pyiceberg: the footer's blob
    with session_conf(spark, "spark.sql.iceberg.executor-cache.enabled", "false"):
        # Spark reads the manifest's offset: the first blob's data file gets its position 2 back, loses position 3
        first = _footer(restored.honest)[1]["blobs"][0]["properties"]["referenced-data-file"]
        base = int(pq.read_table(local(first)).column("id")[0].as_py())
        expected = sorted((set(restored.rows) | {base + 2}) - {base + 3})
        assert spark_ids(spark, restored.name) == expected != restored.rows
    rc, doc = _cli(spark_warehouse, "verify", restored.ref, "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "Iceberg Java reads the blob at each manifest entry's offset" in json.dumps(doc), doc


def test_a_vector_java_refuses_is_table_inconsistent(restored: Converted, spark_warehouse: Path) -> None:
    """The blob at the manifest's offset with a broken CRC (Spark refuses the read: "Invalid CRC for deletion vector",
    measured), the footer pointing pyiceberg at an intact blob of the same bits (it reads the attested rows): no one
    reading."""
    forged = bytearray(_moved_footer(restored.honest, 2))  # the same bits: only the footer moved
    _, footer = _footer(restored.honest)
    start = footer["blobs"][0]["offset"]
    length = int.from_bytes(forged[start:start + 4], "big")
    forged[start + 4 + length] ^= 0xFF  # the CRC's first byte
    restored.puffin.write_bytes(bytes(forged))
    for crc in restored.puffin.parent.glob(f".{restored.puffin.name}.crc"):
        crc.unlink()
    assert pyiceberg_ids(spark_warehouse, restored.ident) == restored.rows
    rc, doc = _cli(spark_warehouse, "verify", restored.ref, "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "fails its CRC" in json.dumps(doc), doc


def _restated(data: bytes, cardinality: str) -> bytes:
    """The Puffin file with its first blob's footer property ``cardinality`` restated (one digit for one: the footer
    keeps its length, the file its size; the blobs' bytes unchanged)."""
    size, footer = _footer(data)
    text = data[-12 - size:-12].decode()
    assert footer["blobs"][0]["properties"]["cardinality"] == "1"
    old = '"cardinality":"1"'
    at = text.index(old)
    assert len(cardinality) == 1
    out = bytearray(data)
    out[len(data) - 12 - size + at:len(data) - 12 - size + at + len(old)] = f'"cardinality":"{cardinality}"'.encode()
    return bytes(out)


@pytest.mark.parametrize("cardinality", ["0", "2"])
def test_a_restated_blob_cardinality_is_read_by_no_one(restored: Converted, spark: SparkSession,
                                                       spark_warehouse: Path, cardinality: str) -> None:
    """The Puffin footer's ``cardinality`` of a vector restated (0: what Delta's Spark reads as no vector; 2): neither
    reader reads it (measured: Spark 4.1 / Iceberg 1.12 and pyiceberg 0.12 both read the attested rows, and COUNT(*)
    counts them), so the rewrite still verifies by content, rightly."""
    forged = _restated(restored.honest, cardinality)
    assert _footer(forged)[1]["blobs"][0]["properties"]["cardinality"] == cardinality
    restored.puffin.write_bytes(forged)
    for crc in restored.puffin.parent.glob(f".{restored.puffin.name}.crc"):
        crc.unlink()
    assert pyiceberg_ids(spark_warehouse, restored.ident) == restored.rows
    with session_conf(spark, "spark.sql.iceberg.executor-cache.enabled", "false"):
        spark.sql(f"REFRESH TABLE {restored.name}")
        assert spark_ids(spark, restored.name) == restored.rows
        assert spark.sql(f"SELECT COUNT(*) FROM {restored.name}").collect()[0][0] == len(restored.rows)
    rc, doc = _cli(spark_warehouse, "verify", restored.ref, "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc


def _varint(data: bytes, at: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), at


def _zigzag(value: int) -> bytes:
    n, out = (value << 1) ^ (value >> 63), bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _patched_avro(data: bytes, old: bytes, new: bytes) -> bytes | None:
    """The deflate Avro file ``data`` with the first ``old`` in its decompressed blocks replaced by ``new`` (that
    block deflated again: the file's size may change); None when no block holds ``old``."""
    size, at = _varint(data, 4)  # the header: magic, then the metadata map (unsized blocks, as Java writes it)
    while size != 0:
        assert size > 0
        for _ in range(2 * size):
            n, at = _varint(data, at)
            at += n
        size, at = _varint(data, at)
    sync = data[at:at + 16]
    at += 16
    out, done = bytearray(data[:at]), False
    while at < len(data):
        objects, at = _varint(data, at)
        length, at = _varint(data, at)
        raw = data[at:at + length]
        assert data[at + length:at + length + 16] == sync
        at += length + 16
        block = zlib.decompress(raw, -15)
        if not done and old in block:
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            raw = packer.compress(block.replace(old, new, 1)) + packer.flush()
            done = True
        out += _zigzag(objects) + _zigzag(len(raw)) + raw + sync
    return bytes(out) if done else None


def _restate_record_count(spark: SparkSession, converted: Converted, count: int) -> list[tuple[Path, bytes]]:
    """Restate in place the manifest ``record_count`` of the first deletion vector in ``converted``'s Puffin file
    (it follows the entry's file_path, file_format ``PUFFIN`` and an unpartitioned spec's empty partition tuple), and
    the manifest's length in the manifest list (Iceberg Java opens a manifest with that length); Hadoop's checksum
    files removed. The files' honest bytes, to restore."""
    honest: list[tuple[Path, bytes]] = []
    found = []
    for row in spark.sql(f"SELECT path, length FROM {converted.name}.manifests WHERE content = 1").collect():
        location, length = str(row[0]), int(row[1])
        manifest = Path(location.removeprefix("file:"))
        data = manifest.read_bytes()
        assert len(data) == length
        for spelled in (str(converted.puffin), f"file:{converted.puffin}"):
            raw = spelled.encode()
            needle = _zigzag(len(raw)) + raw + _zigzag(6) + b"PUFFIN"
            forged = _patched_avro(data, needle + _zigzag(1), needle + _zigzag(count))
            if forged is not None:
                found.append((location, length, manifest, data, forged))
    assert len(found) == 1, found
    location, length, manifest, data, forged = found[0]
    lists = [Path(str(r[0]).removeprefix("file:")) for r in
             spark.sql(f"SELECT manifest_list FROM {converted.name}.snapshots ORDER BY committed_at DESC LIMIT 1"
                       ).collect()]
    listed = lists[0].read_bytes()
    raw = location.encode()
    relisted = _patched_avro(listed, _zigzag(len(raw)) + raw + _zigzag(length),
                             _zigzag(len(raw)) + raw + _zigzag(len(forged)))
    assert relisted is not None
    for path, before, after in ((manifest, data, forged), (lists[0], listed, relisted)):
        honest.append((path, before))
        path.write_bytes(after)
        for crc in path.parent.glob(f".{path.name}.crc"):
            crc.unlink()
    return honest


@pytest.mark.parametrize("count", [0, 2])
def test_a_restated_record_count_is_table_inconsistent(restored: Converted, spark: SparkSession,
                                                       spark_warehouse: Path, count: int) -> None:
    """The manifest's ``record_count`` of a deletion vector restated (the Puffin file unchanged): pyiceberg does not
    read it (the attested rows); Spark (Iceberg 1.12) refuses the read and COUNT(*) alike ("Invalid cardinality: 1,
    expected 0": no vector skipped at 0, no count from metadata, measured). Readers differ: table_inconsistent, for
    the rewrite and for a record of the snapshot."""
    honest = _restate_record_count(spark, restored, count)
    try:
        assert pyiceberg_ids(spark_warehouse, restored.ident) == restored.rows
        with session_conf(spark, "spark.sql.iceberg.executor-cache.enabled", "false"):
            spark.sql(f"REFRESH TABLE {restored.name}")
            with pytest.raises(Exception, match=f"Invalid cardinality: 1, expected {count}"):
                spark_ids(spark, restored.name)
            with pytest.raises(Exception, match=f"Invalid cardinality: 1, expected {count}"):
                spark.sql(f"SELECT COUNT(*) FROM {restored.name}").collect()
        rc, doc = _cli(spark_warehouse, "verify", restored.ref, "--level", "bytes")
        assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
        assert f"deletes 1 rows, its manifest entry says {count}" in json.dumps(doc), doc
        rc, doc = _cli(spark_warehouse, "record", restored.ref, "--model", "orders", "--program-hash", PROGRAM)
        assert rc != 0 and codes(doc) == ["table_inconsistent"], doc
    finally:
        for path, data in honest:
            path.write_bytes(data)
