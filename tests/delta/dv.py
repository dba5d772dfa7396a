"""Deletion vectors as Delta writers store them (PROTOCOL.md, "Deletion Vector Format"), built by hand for tests.

A DV file is a version byte (1) followed by vectors; each vector at its descriptor's ``offset`` is
``[size: i32 BE][data: size bytes][CRC-32 of data: i32 BE]``, where data is the magic number 1681511377 (i32 LE)
followed by a 64-bit roaring bitmap in the portable format: the bucket count (u64 LE), then per bucket its high
32 bits (u32 LE) and a 32-bit roaring bitmap (cookie 12346, container count, keys and cardinalities, offsets, arrays).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from pathlib import Path

MAGIC = 1681511377


def _roaring32(values: list[int]) -> bytes:
    containers: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        containers.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(containers)
    header = struct.pack("<II", 12346, len(keys))
    header += b"".join(struct.pack("<HH", k, len(containers[k]) - 1) for k in keys)
    offset = len(header) + 4 * len(keys)
    offsets = b""
    body = b""
    for k in keys:
        offsets += struct.pack("<I", offset + len(body))
        body += b"".join(struct.pack("<H", x) for x in containers[k])  # array containers (< 4096 values)
    return header + offsets + body


def bitmap(positions: Iterable[int]) -> bytes:
    """Magic + portable 64-bit roaring bitmap of row positions (the ``data`` of a stored vector)."""
    buckets: dict[int, list[int]] = {}
    for p in positions:
        buckets.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = struct.pack("<i", MAGIC) + struct.pack("<Q", len(buckets))
    for high in sorted(buckets):
        out += struct.pack("<I", high) + _roaring32(buckets[high])
    return out


def dv_file(positions: Iterable[int]) -> tuple[bytes, int, int]:
    """(file bytes, offset, sizeInBytes) of a DV file holding one vector."""
    data = bitmap(positions)
    body = struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    return b"\x01" + body, 1, len(data)


def add_deletion_vector(table_dir: Path, positions: list[int], *, version: int | None = None) -> str:
    """Commit (by hand, as Spark would) a deletion vector on the table's first live file; returns the DV's path."""
    import json
    import uuid

    import pyarrow as pa
    from deltalake import DeltaTable

    from carriers.delta.log import z85_encode

    dt = DeltaTable(str(table_dir))
    n = dt.version() + 1 if version is None else version
    add = pa.table(dt.get_add_actions()).to_pylist()[0]
    stats = None
    for name in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in name.read_text().splitlines():
            action = json.loads(line)
            if action.get("add", {}).get("path") == add["path"]:
                stats = action["add"].get("stats")
    u = uuid.UUID(int=len(positions) * 7919 + n)
    rel = f"ab/deletion_vector_{u}.bin"
    (table_dir / "ab").mkdir(exist_ok=True)
    data, offset, size = dv_file(positions)
    (table_dir / rel).write_bytes(data)
    lines = [
        {"commitInfo": {"operation": "DELETE", "operationParameters": {"predicate": "by hand"}}},
        {"remove": {"path": add["path"], "dataChange": True, "deletionTimestamp": 1, "size": add["size_bytes"],
                    "partitionValues": add.get("partition") or {}}},
        {"add": {"path": add["path"], "partitionValues": add.get("partition") or {}, "size": add["size_bytes"],
                 "modificationTime": 1, "dataChange": True, "stats": stats,
                 "deletionVector": {"storageType": "u", "pathOrInlineDv": "ab" + z85_encode(u.bytes),
                                    "offset": offset, "sizeInBytes": size, "cardinality": len(positions)}}},
    ]
    (table_dir / "_delta_log" / f"{n:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return rel
