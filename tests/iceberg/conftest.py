"""Fixtures for the Iceberg carrier: a pyiceberg SqlCatalog on a sqlite file in tmp_path."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import IcebergCarrier

CATALOG = "attesttest"
PROGRAM = "1" * 64


def rows(start: int, count: int = 3) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64()),
                     "v": pa.array([f"row-{i}" for i in range(start, start + count)], pa.string())})


def catalog_properties(root: Path) -> dict[str, str]:
    return {"uri": f"sqlite:///{root / 'catalog.db'}", "warehouse": f"file://{root / 'warehouse'}"}


def ns_catalog(root: Path) -> SqlCatalog:
    """A sqlite catalog under `root` (warehouse folder made) holding the namespace `ns`."""
    (root / "warehouse").mkdir()
    cat = SqlCatalog(CATALOG, **catalog_properties(root))
    cat.create_namespace("ns")
    return cat


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return ns_catalog(tmp_path)


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    return catalog.create_table("ns.t", schema=rows(0).schema)


@pytest.fixture
def carrier(table: Table) -> IcebergCarrier:
    return IcebergCarrier(table, catalog_name=CATALOG)


@pytest.fixture
def iceberg_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """pyiceberg's own configuration (PYICEBERG_CATALOG__<NAME>__*) naming the test catalog."""
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    props = catalog_properties(tmp_path)
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE", "sql")
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI", props["uri"])
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE", props["warehouse"])
    # pyiceberg reads its environment once at import; re-read it for this test's variables.
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    yield CATALOG


def local(uri: str) -> Path:
    """The local path of a ``file:///p`` or ``file:/p`` (as Spark writes it) location, or of a plain path."""
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    return Path(uri[len("file:"):] if uri.startswith("file:/") else uri)


def rewrite_metadata(catalog: SqlCatalog, table: Table, edit: Callable[[dict[str, Any]], None]) -> Table:
    """Write an edited copy of the current metadata.json and point the catalog at it (a hand-made commit)."""
    current = local(table.metadata_location)
    doc = json.loads(current.read_text())
    edit(doc)
    new = current.with_name(f"99999-{uuid.uuid4()}.metadata.json")
    new.write_text(json.dumps(doc))
    db = catalog.properties["uri"][len("sqlite:///"):]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                     "WHERE catalog_name = ? AND table_name = ?",
                     (f"file://{new}", table.metadata_location, CATALOG, table.name()[-1]))
    return catalog.load_table(".".join(table.name()))


def summary_of(table: Table, snapshot_id: int | str) -> dict[str, str]:
    snap = table.snapshot_by_id(int(snapshot_id))
    assert snap is not None and snap.summary is not None
    return dict(snap.summary.additional_properties)


def commit_delete_file(table: Table, path: Path, *, target: str | None = None, equality: bool = False,
                       deleted: pa.Table | None = None, equality_ids: list[int] | None = None,
                       stored: Callable[[pa.Table], pa.Table] | None = None,
                       metrics: dict[str, Any] | None = None) -> None:
    """Commit a position-delete file at ``path`` hiding row 0 of ``target`` (default: the first data file), or an
    equality-delete file hiding ``id == 1``, in a snapshot of its own, as Java writers do: in a *delete* manifest.

    pyiceberg writes no delete files itself; its snapshot producer would put one in a data manifest, which Java
    readers read as rows (recipe-attest refuses such a table: ``table_inconsistent``).

    ``deleted`` / ``equality_ids``: an equality delete file of these rows instead, its columns stored with the
    Parquet field ids (as Flink's and Iceberg Java's writers store them) of ``equality_ids``, in order.

    A position delete file stores ``file_path`` (string) and ``pos`` (long) as Iceberg Java's writers do: required,
    with the spec's reserved field ids 2147483546 and 2147483545. ``stored``: the table written is
    ``stored(<that table>)`` instead (another physical Parquet schema: other types, field ids, names). ``metrics``:
    the manifest entry's metrics (``lower_bounds``, ``null_value_counts``, ...) as given, none otherwise."""
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    def fid(name: str, t: pa.DataType, i: int) -> pa.Field:
        return pa.field(name, t, nullable=False, metadata={b"PARQUET:field_id": str(i).encode()})

    if deleted is not None:
        equality, ids = True, list(equality_ids or [])
        fields = [f.with_metadata({b"PARQUET:field_id": str(i).encode()})
                  for f, i in zip(deleted.schema, ids, strict=True)]
        written = pa.table(deleted.columns, schema=pa.schema(fields))
    elif equality:
        written = pa.table({"id": pa.array([1], pa.int64())})
    else:
        target = target or next(iter(table.scan().plan_files())).file.file_path
        spec = pa.schema([fid("file_path", pa.string(), 2147483546), fid("pos", pa.int64(), 2147483545)])
        written = pa.table({"file_path": [target], "pos": pa.array([0], pa.int64())}, schema=spec)
    pq.write_table(written if stored is None else stored(written), path)
    df = DataFile.from_args(content=DataFileContent.EQUALITY_DELETES if equality else DataFileContent.POSITION_DELETES,
                            file_path=f"file://{path}", file_format=FileFormat.PARQUET, partition=Record(),
                            record_count=1 if deleted is None else deleted.num_rows,
                            file_size_in_bytes=path.stat().st_size,
                            equality_ids=(equality_ids or [1]) if equality else None, **(metrics or {}))
    commit_delete_entry(table, df)


def commit_delete_entry(table: Table, df: Any) -> None:
    """Commit the delete file ``df`` (a pyiceberg ``DataFile``) in a snapshot of its own, in a *delete* manifest as
    Java writers do (pyiceberg's snapshot producer would put it in a data manifest)."""
    with table.transaction() as tx:
        producer: Any = tx.update_snapshot().fast_append()

        def delete_manifest_writer(spec: Any) -> Any:
            return manifest_writer(spec, producer._transaction.table_metadata.schema(),
                                   producer.new_manifest_output(), producer._snapshot_id, deletes=True)

        producer.new_manifest_writer = delete_manifest_writer
        producer.append_data_file(df)
        producer.commit()


def manifest_writer(spec: Any, schema: Any, output_file: Any, snapshot_id: int, *, deletes: bool) -> Any:
    """A format-v2 manifest writer for data files, or for delete files (pyiceberg has only the former)."""
    from pyiceberg.manifest import ManifestContent, ManifestWriterV2

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    return (DeleteManifestWriter if deletes else ManifestWriterV2)(spec, schema, output_file, snapshot_id, "null")
