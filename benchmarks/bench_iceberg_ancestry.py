"""Iceberg verify over a long history: 50,000 chained no-file snapshots on top of an attested one.

Run on demand: ``.venv/bin/python benchmarks/bench_iceberg_ancestry.py [n_snapshots]``. The history is built fast by
writing the metadata.json directly (one append, its follow-up attestation, then ``n`` appends of no file, each the
parent of the next, sharing the head's manifest list), not by 50,000 commits. The reference, measured in the same
run, is pyiceberg loading the table from the catalog and reading its rows: what any reader of the table pays. Then
the carrier, on the same table:

- ``verify`` of the head in process (the walk from the head down to the attestation, through every snapshot);
- ``verify`` of the attested snapshot itself (its follow-up found among its children);
- ``attest verify`` as a process, which loads the table itself (compare with the reference plus ~2 s of imports).

Before every walk went through a snapshot index, verify took 193 s of CPU at 45,000 snapshots (pyiceberg's
``snapshot_by_id`` scans the whole list, once per parent).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa
from _timing import timed  # benchmarks run as scripts: their folder is on sys.path
from pyiceberg.catalog.sql import SqlCatalog

from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write

PROGRAM = "a" * 64


def chain(metadata: Path, count: int) -> Path:
    """A copy of ``metadata`` with ``count`` chained no-file appends on top of its current snapshot."""
    doc = json.loads(metadata.read_text())
    head = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
    summary = {"operation": "append", **{k: v for k, v in head["summary"].items() if k.startswith("total-")}}
    parent, sequence = head["snapshot-id"], doc["last-sequence-number"]
    for i in range(count):
        sid = 10**12 + i
        doc["snapshots"].append({"snapshot-id": sid, "parent-snapshot-id": parent, "sequence-number": sequence + 1 + i,
                                 "timestamp-ms": head["timestamp-ms"] + 1 + i, "manifest-list": head["manifest-list"],
                                 "summary": summary, "schema-id": head.get("schema-id", 0)})
        parent = sid
    doc.update({"current-snapshot-id": parent, "last-sequence-number": sequence + count, "snapshot-log": [],
                "refs": {"main": {"snapshot-id": parent, "type": "branch"}}})
    out = metadata.with_name(f"99999-{uuid.uuid4()}.metadata.json")
    out.write_text(json.dumps(doc))
    return out


def main(count: int = 50_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "wh").mkdir()
        uri, warehouse = f"sqlite:///{root / 'catalog.db'}", f"file://{root / 'wh'}"
        catalog = SqlCatalog("bench", uri=uri, warehouse=warehouse)
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": pa.array(range(1000), pa.int64())}))
        data = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
        attest_after_write(table, model="bench", program_hash=PROGRAM)
        start = time.perf_counter()
        forged = chain(Path(table.metadata_location[len("file://"):]), count)
        with sqlite3.connect(root / "catalog.db") as conn:
            conn.execute("UPDATE iceberg_tables SET metadata_location = ? WHERE table_name = 't'", (f"file://{forged}",))
        size = forged.stat().st_size
        print(f"{f'history of {count} snapshots written':<46}{time.perf_counter() - start:9.3f} s  "
              f"(metadata.json {size / 1e6:.1f} MB)")

        def reference() -> int:
            return catalog.load_table("ns.t").scan().to_arrow().num_rows

        ref, rows = timed("reference: pyiceberg load_table + read rows", reference)
        assert rows == 1000
        loaded = catalog.load_table("ns.t")
        _, report = timed("verify the head (walk to the attestation)",
                          lambda: verify_table(IcebergCarrier(loaded, catalog_name="bench")), ref)
        assert report.passed and report.attested_version == str(data), report.human()
        _, report = timed("verify the attested snapshot (its follow-up)",
                          lambda: verify_table(IcebergCarrier(loaded, catalog_name="bench"), version=str(data)), ref)
        assert report.passed, report.human()
        env = dict(os.environ, PYICEBERG_CATALOG__BENCH__TYPE="sql", PYICEBERG_CATALOG__BENCH__URI=uri,
                   PYICEBERG_CATALOG__BENCH__WAREHOUSE=warehouse, PYICEBERG_HOME=tmp)
        _, done = timed("attest verify iceberg://bench/ns.t (a process)",
                        lambda: subprocess.run([sys.executable, "-m", "attest.cli", "verify", "iceberg://bench/ns.t"],
                                               capture_output=True, text=True, env=env), ref)
        assert done.returncode == 0, done.stdout + done.stderr


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
