"""A Delta version's rows as readers get them, per data file, for the content digest (issue 32), and the rewrites
(``dataChange: false`` commits) between two versions.

docs/content-digest.md is the specification; carriers/content_store.py records and judges. Delta's part:

- **columns** as engines identify them: with column mapping (``delta.columnMapping.mode`` name / id) by their
  physical names (identity ``physical:<name>``; nested struct fields by their physical names too), without it by
  their names. The file's column is found by that name; a column the file lacks reads as nulls (schema evolution),
  as every reader reads it. A file that holds a mapped column under its *logical* name only is refused: Spark reads
  such a column as nulls, delta-rs by name (readers disagree);
- **types** as the table declares them (delta-rs's Arrow schema of the version): a column stored with another type
  keeps that type in the encoding (its digest differs), except timestamps stored as INT96 (Spark's legacy) or in
  another unit with the same zone-ness, which every reader converts to the table's type;
- **partition values** (not in the files) folded in as constants, typed as delta-rs types them;
- **deletion vectors** applied: the selection vectors delta-rs reads for the version (``deletion_vectors()``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attest.content import ContentDigest
from attest.errors import CarrierError, Code, UnsupportedTableError
from attest.tables import DataFile, Progress
from carriers.base import Rewrite
from carriers.core import canonical_relative
from carriers.delta.log import read_commit
from carriers.delta.rows import add_action_rows, engine_relative

if TYPE_CHECKING:
    import pyarrow as pa

    from carriers.core import Version
    from carriers.delta.carrier import DeltaCarrier
    from carriers.storage.base import Storage

__all__ = ["DeltaContentReader", "content_reader", "file_content_digests", "rewrites_between"]

_MAPPING = "delta.columnMapping.mode"
_PHYSICAL = "delta.columnMapping.physicalName"


def _physical(field: dict[str, Any]) -> str:
    return str((field.get("metadata") or {}).get(_PHYSICAL) or field.get("name"))


def _physical_type(t: pa.DataType, kind: Any, mapped: bool) -> pa.DataType:
    """``t`` (the logical Arrow type) with nested struct fields renamed to their physical names (as stored)."""
    import pyarrow as pa

    if not mapped or not isinstance(kind, dict):
        return t
    if pa.types.is_struct(t) and kind.get("type") == "struct":
        children = [f for f in kind.get("fields") or [] if isinstance(f, dict)]
        if len(children) != t.num_fields:
            return t
        return pa.struct([pa.field(_physical(c), _physical_type(t.field(i).type, c.get("type"), mapped),
                                   t.field(i).nullable) for i, c in enumerate(children)])
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and kind.get("type") == "array":
        inner = _physical_type(t.value_type, kind.get("elementType"), mapped)
        return pa.list_(pa.field(t.value_field.name, inner, t.value_field.nullable))
    if pa.types.is_map(t) and kind.get("type") == "map":
        return pa.map_(_physical_type(t.key_type, kind.get("keyType"), mapped),
                       _physical_type(t.item_type, kind.get("valueType"), mapped))
    return t


def _read_type(stored: pa.DataType, want: pa.DataType, int96: bool) -> pa.DataType | None:
    """The type a reader converts the stored column to (``want``) when it does so for every value without loss of
    meaning; None when the stored type is kept (its digest then differs, as a changed type should)."""
    import pyarrow as pa

    from attest.content import type_tag

    try:
        if type_tag(stored) == type_tag(want):
            return want
    except Exception:  # an Arrow type with no encoding: digest_table refuses it with its own message
        return None
    if pa.types.is_timestamp(stored) and pa.types.is_timestamp(want):
        if int96 and want.tz is not None:
            return want  # INT96: UTC instants in nanoseconds, read by every engine as the table's timestamp
        if (stored.tz is None) == (want.tz is None):
            return want  # another unit, same zone-ness: the same instants (a lossy conversion is refused by cast)
    return None


@dataclass(frozen=True)
class DeltaContentReader:
    """What reading a version's data files for their content digest needs, built on the driver (``content_reader``)
    and picklable: the same ``digest`` runs on the driver (``file_content_digests``) and on Spark executors
    (carriers/spark/distributed.py), so the two give the same digests."""

    arrow: Any  # pa.Schema: the version's schema as delta-rs gives it
    fields: dict[str, dict[str, Any]]
    partition_columns: list[str]
    partitions: dict[str, dict[str, Any]]  # DataFile.path -> its partition values
    masks: dict[str, list[bool]]  # DataFile.path -> its deletion vector's selection vector
    mode: str  # delta.columnMapping.mode
    paths: frozenset[str]  # the data files it digests

    def digest(self, f: DataFile, storage: Storage, data: bytes | None = None) -> ContentDigest | None:
        """The digest of ``f``'s rows, from ``data`` (its bytes, read once to hash them too) when given, else read
        through ``storage``; None when the file is not there. CarrierError (``table_unreadable``) when it is not
        Parquet or its rows are not the table's columns; UnsupportedTableError when readers disagree on them."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            source: Any = pa.BufferReader(data) if data is not None else storage.open_location(f.location)
            with contextlib.closing(source) as handle:  # delta-rs: no "with"
                parquet = pq.ParquetFile(handle)
                stored = parquet.schema_arrow
                int96 = {parquet.schema.column(i).path.split(".")[0] for i in range(len(parquet.schema))
                         if parquet.schema.column(i).physical_type == "INT96"}
                table = parquet.read()
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException) as exc:
            raise CarrierError(f"{f.path} cannot be read as Parquet: {exc}", code=Code.TABLE_UNREADABLE,
                               path=f.path) from exc
        try:
            return _digest_file(f, table, stored, int96, self.arrow, self.fields, self.partition_columns,
                                self.partitions.get(f.path) or {}, self.masks.get(f.path), self.mode)
        except (KeyError, ValueError, pa.ArrowException) as exc:  # duplicate column names, malformed values, ...
            raise CarrierError(f"the rows of {f.path} cannot be read as the table's columns: {exc}",
                               code=Code.TABLE_UNREADABLE, path=f.path) from exc


def content_reader(carrier: DeltaCarrier, v: Version, files: Sequence[DataFile]) -> DeltaContentReader:
    """The reader of ``files``' rows as readers of ``v`` get them (the version's schema, column mapping, partition
    values, deletion vectors as delta-rs reads them)."""
    import pyarrow as pa

    dt = carrier._load(v.number)
    schema_doc = json.loads(dt.schema().to_json())
    arrow = pa.schema(dt.schema().to_arrow())
    mode = str(dict(dt.metadata().configuration).get(_MAPPING) or "none").lower()
    partition_columns = list(dt.metadata().partition_columns)
    fields = {str(f.get("name")): f for f in schema_doc.get("fields") or [] if isinstance(f, dict)}
    wanted = {f.path for f in files if f.kind == "data"}
    rows = add_action_rows(dt)
    partitions: dict[str, dict[str, Any]] = {}
    for row in rows:
        rel = canonical_relative(str(row["path"]))[0]
        if rel is not None and rel in wanted:
            partitions[rel] = row.get("partition") or {}
    masks: dict[str, list[bool]] = {}
    roots = carrier._engine_roots(dt)
    try:  # every file's deletion vector as delta-rs applies it (whatever the protocol claims)
        for batch in dt.deletion_vectors():
            paths = batch.column("filepath").to_pylist()
            vectors = batch.column("selection_vector").to_pylist()
            for p, vector in zip(paths, vectors, strict=True):
                rel = engine_relative(roots, str(p))
                if rel in wanted:
                    masks[rel] = [bool(x) for x in vector]
    except Exception as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CarrierError(f"delta-rs cannot read the deletion vectors of {carrier.reference}: {text}",
                           code=Code.TABLE_UNREADABLE) from exc
    return DeltaContentReader(arrow=arrow, fields=fields, partition_columns=partition_columns, partitions=partitions,
                              masks=masks, mode=mode, paths=frozenset(wanted))


def file_content_digests(carrier: DeltaCarrier, v: Version, files: Sequence[DataFile], *,
                         progress: Progress | None = None) -> dict[str, ContentDigest]:
    reader = content_reader(carrier, v, files)
    out: dict[str, ContentDigest] = {}
    done = 0
    for f in files:
        if f.kind != "data":
            continue
        digest = reader.digest(f, carrier.storage)
        if digest is None:
            continue
        out[f.path] = digest
        done += 1
        if progress is not None:
            progress(done, len(files), 0)
    return out


def _digest_file(f: DataFile, table: pa.Table, stored: pa.Schema, int96: set[str], arrow: pa.Schema,
                 fields: dict[str, dict[str, Any]], partition_columns: list[str], values: dict[str, Any],
                 vector: list[bool] | None, mode: str) -> ContentDigest:
    import pyarrow as pa

    from attest.content import ColumnSpec, digest_table

    mapped = mode in ("name", "id")
    columns: list[ColumnSpec] = []
    arrays: dict[str, pa.Array | pa.ChunkedArray] = {}
    constants: dict[str, tuple[pa.DataType, Any]] = {}
    for field in arrow:
        doc = fields.get(field.name, {})
        physical = _physical(doc) if mapped else field.name
        identity = f"physical:{physical}" if mapped else field.name
        want = _physical_type(field.type, doc.get("type"), mapped)
        if field.name in partition_columns:
            constants[identity] = (want, values.get(field.name))
            continue
        if mode == "id" and field.name not in partition_columns:
            _check_field_id(f, stored, physical, (doc.get("metadata") or {}).get("delta.columnMapping.id"))
        if physical in stored.names:
            column = table.column(physical)
            target = _read_type(column.type, want, physical in int96)
            if target is not None and column.type != target:
                # A lossy conversion (a timestamp below the table's unit) is refused by the cast: the column keeps
                # its stored type, and its digest differs.
                with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    column = column.cast(target)
            arrays[physical] = column
            columns.append(ColumnSpec(identity=identity, field=pa.field(physical, column.type)))
        elif mapped and field.name in stored.names:
            raise UnsupportedTableError(
                f"{f.path} holds column {field.name!r} under its logical name, not its physical name "
                f"{physical!r}: Spark reads it as nulls, delta-rs by name; its rows have no one content")
        else:  # a column added after the file was written: every reader reads nulls
            arrays[physical] = pa.nulls(table.num_rows, want)
            columns.append(ColumnSpec(identity=identity, field=pa.field(physical, want)))
    rows_table = pa.table(arrays) if arrays else pa.table({"_": pa.nulls(table.num_rows)})
    keep = None
    if vector is not None:
        keep = (vector + [True] * (table.num_rows - len(vector)))[:table.num_rows]
    return digest_table(rows_table, columns, constants, keep=keep)


def _check_field_id(f: DataFile, stored: pa.Schema, physical: str, wanted: Any) -> None:
    """Column mapping by id: Spark resolves a file's columns by their Parquet field ids, delta-rs by name. A file whose
    field ids do not name the same columns as its names (or that has none) is read differently by the two: refused."""
    by_id = {}
    for field in stored:
        raw = (field.metadata or {}).get(b"PARQUET:field_id")
        if raw is not None:
            by_id[raw.decode()] = field.name
    if (physical in stored.names or str(wanted) in by_id) and by_id.get(str(wanted)) != physical:
        raise UnsupportedTableError(
            f"{f.path}: the column with field id {wanted} is {by_id.get(str(wanted))!r}, the column named "
            f"{physical!r} is another: Spark reads columns of id-mapped tables by field id, delta-rs by name")


def rewrites_between(carrier: DeltaCarrier, attested: Version, version: Version) -> list[Rewrite] | None:
    """The file-touching commits after ``attested`` up to ``version`` when each is a rewrite: every add and remove
    ``dataChange: false``, no metaData or protocol action (a schema or protocol change is not a rewrite). None when
    any is not, or a commit is gone from the log."""
    out: list[Rewrite] = []
    for x in range(attested.number + 1, version.number + 1):
        commit = read_commit(carrier.storage, x)
        if commit is None:
            return None
        if not commit.touches_files:
            continue
        if commit.data_change or commit.metadata is not None or commit.protocol is not None:
            return None
        removed = tuple(_file(carrier, a) for a in commit.removes)
        added = tuple(_file(carrier, a) for a in commit.adds)
        if any(f is None for f in (*removed, *added)):
            return None
        out.append(Rewrite(version=str(x), removed=tuple(f for f in removed if f is not None),
                           added=tuple(f for f in added if f is not None), operation=commit.operation))
    return out


def _file(carrier: DeltaCarrier, action: dict[str, Any]) -> DataFile | None:
    rel = canonical_relative(str(action.get("path")))[0]
    if rel is None:
        return None
    size = action.get("size")
    return DataFile(path=rel, size=int(size) if isinstance(size, int) else -1, kind="data",
                    location=carrier._location(rel))
