"""Hand-made Iceberg rewrites for the content-digest tests: a ``replace`` snapshot that removes chosen data files and
adds files written by hand (any Parquet: chosen field ids, values, types), the way Spark's rewrite_data_files commits.

pyiceberg 0.12 has no rewrite API and its summary builder refuses ``replace``, so the files are swapped with its
lowest-level snapshot producer (an overwrite, whose summary counts are pyiceberg's own) and the operation is then set
to ``replace`` in a hand-written metadata.json (tests/iceberg/conftest.py ``rewrite_metadata``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _OverwriteFiles

from carriers.iceberg.carrier import IcebergCarrier
from tests.iceberg.conftest import CATALOG, local


def rewrite_metadata(catalog: SqlCatalog, table: Table, edit: Any) -> Table:
    """tests/iceberg/conftest.py's hand-made commit, for any SqlCatalog on sqlite (the Spark tests' too)."""
    import json
    import sqlite3

    current = local(table.metadata_location)
    doc = json.loads(current.read_text())
    edit(doc)
    new = current.with_name(f"99999-{uuid.uuid4()}.metadata.json")
    new.write_text(json.dumps(doc))
    with sqlite3.connect(catalog.properties["uri"][len("sqlite:///"):]) as conn:
        conn.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                     "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
                     (f"file://{new}", table.metadata_location, catalog.name, ".".join(table.name()[:-1]),
                      table.name()[-1]))
    return catalog.load_table(".".join(table.name()))


def with_ids(data: pa.Table, ids: Sequence[int]) -> pa.Table:
    """``data`` with each top-level column tagged with the Parquet field id given (in column order)."""
    fields = [f.with_metadata({b"PARQUET:field_id": str(i).encode()}) for f, i in zip(data.schema, ids, strict=True)]
    return data.cast(pa.schema(fields))


def write_file(table: Table, data: pa.Table, *, partition: Any = None, spec_id: int = 0) -> Any:
    """Write ``data`` as a Parquet file under the table's data folder; a pyiceberg DataFile for it (unpartitioned,
    unless ``partition`` gives its tuple under spec ``spec_id``)."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    folder = local(table.location()) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rewritten-{uuid.uuid4().hex}.parquet"
    pq.write_table(data, path)
    return DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}", file_format=FileFormat.PARQUET,
                              partition=Record() if partition is None else partition, record_count=data.num_rows,
                              file_size_in_bytes=path.stat().st_size, spec_id=spec_id)


def live_data_files(table: Table, branch: str | None = None) -> list[Any]:
    snapshot = table.current_snapshot() if branch is None else table.snapshot_by_name(branch)
    assert snapshot is not None
    return [entry.data_file for manifest in snapshot.manifests(table.io)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
            if int(getattr(entry.data_file.content, "value", entry.data_file.content)) == 0]  # v1 manifests: an int


def replace(catalog: SqlCatalog, table: Table, new: Sequence[pa.Table] | None = None, *,
            remove: Sequence[Any] | None = None, data_files: Sequence[Any] | None = None,
            operation: str = "replace", branch: str | None = None) -> Table:
    """Commit a snapshot removing ``remove`` (default: every live data file) and adding a file per table of ``new``
    (default: the rows pyiceberg reads now, written by pyiceberg's own writer), or the DataFiles ``data_files``;
    then set its operation to ``operation``. On main, or on ``branch``. Returns the table reloaded."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files
    from pyiceberg.table.refs import MAIN_BRANCH

    remove = live_data_files(table, branch) if remove is None else list(remove)
    head = table.current_snapshot() if branch is None else table.snapshot_by_name(branch)
    with table.transaction() as tx:
        producer = _OverwriteFiles(operation=Operation.OVERWRITE, transaction=tx, io=table.io,
                                   branch=branch or MAIN_BRANCH)
        for data_file in remove:
            producer.delete_data_file(data_file)
        if data_files is not None:
            added = list(data_files)
        elif new is None:
            rows = table.scan(snapshot_id=None if head is None else head.snapshot_id).to_arrow()
            added = list(_dataframe_to_data_files(table_metadata=tx.table_metadata, df=rows,
                                                  io=table.io, write_uuid=producer.commit_uuid))
        else:
            added = [write_file(table, t) for t in new]
        for data_file in added:
            producer.append_data_file(data_file)
        producer.commit()

    def as_replace(doc: dict[str, Any]) -> None:
        written = doc["refs"][branch]["snapshot-id"] if branch is not None else doc["current-snapshot-id"]
        for snap in doc["snapshots"]:
            if snap["snapshot-id"] == written:
                snap["summary"]["operation"] = operation

    return rewrite_metadata(catalog, table, as_replace)


def carrier_of(table: Table) -> IcebergCarrier:
    return IcebergCarrier(table, catalog_name=CATALOG)


def content_check(table: Table, attested: str) -> tuple[bool, int, int]:
    """What the judge checks, from the seam alone: (the rows of the files the rewrites removed, digested at the
    attested snapshot, equal the rows of the files they added, digested at the current one; rows removed; rows
    added). Asserts the current snapshot is reached from ``attested`` by rewrites only."""
    from attest.content import ContentDigest

    carrier = carrier_of(table)
    old = carrier._resolve(attested)
    new = carrier._resolve(None)
    rewrites = carrier.rewrites_between(old, new)
    assert rewrites, rewrites
    removed = [f for r in rewrites for f in r.removed]
    added = [f for r in rewrites for f in r.added]
    before = carrier.file_content_digests(old, removed)
    after = carrier.file_content_digests(new, added)
    assert set(before) == {f.path for f in removed}, carrier.content_problems
    if set(after) != {f.path for f in added}:
        return False, -1, -1
    a, b = ContentDigest.total(before.values()), ContentDigest.total(after.values())
    return a == b, a.rows, b.rows


def path_of(table: Table, data_file: Any) -> Path:
    return local(str(data_file.file_path))


def replace_manifests(catalog: SqlCatalog, table: Table, keep: Any, summary: dict[str, str] | None = None) -> Table:
    """Commit by hand a ``replace`` snapshot whose manifest list holds the current snapshot's manifests ``keep``
    selects (``keep(manifest) -> bool``): what rewrite_position_delete_files commits when it drops a delete file."""
    import random
    import time

    from pyiceberg.manifest import write_manifest_list

    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifests = [m for m in snapshot.manifests(table.io) if keep(m)]
    new_id = random.randint(1, 2**62)
    sequence = table.metadata.last_sequence_number + 1
    path = local(table.location()) / "metadata" / f"snap-{new_id}-hand.avro"
    with write_manifest_list(format_version=2, output_file=table.io.new_output(f"file://{path}"), snapshot_id=new_id,
                             parent_snapshot_id=snapshot.snapshot_id, sequence_number=sequence,
                             avro_compression="null") as writer:
        writer.add_manifests(manifests)
    now = int(time.time() * 1000)

    def add(doc: dict[str, Any]) -> None:
        doc["snapshots"].append({
            "snapshot-id": new_id, "parent-snapshot-id": snapshot.snapshot_id, "sequence-number": sequence,
            "timestamp-ms": now, "manifest-list": f"file://{path}", "schema-id": doc["current-schema-id"],
            "summary": {"operation": "replace", **(summary or {})}})
        doc["current-snapshot-id"] = new_id
        doc["last-sequence-number"] = sequence
        doc["last-updated-ms"] = now
        doc["refs"] = {**doc.get("refs", {}), "main": {"snapshot-id": new_id, "type": "branch"}}
        doc.setdefault("snapshot-log", []).append({"snapshot-id": new_id, "timestamp-ms": now})

    return rewrite_metadata(catalog, table, add)
