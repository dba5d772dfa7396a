"""A Delta version's rows as readers get them, per data file, for the content digest (issue 32), and the rewrites
(``dataChange: false`` commits) between two versions.

docs/content-digest.md is the specification; carriers/content_store.py records and judges. Delta's part:

- **columns** as engines identify them: with column mapping (``delta.columnMapping.mode`` name / id) by their
  physical names (identity ``physical:<name>``; nested struct fields by their physical names too), without it by
  their names. The file's column is found by that name; a column the file lacks reads as nulls (schema evolution),
  as every reader reads it. A file that holds a mapped column under its *logical* name only is refused: Spark reads
  such a column as nulls, delta-rs by name (readers disagree); so is one holding a column under another case (Spark
  matches names without case, delta-rs exactly);
- **types** as the table declares them (delta-rs's Arrow schema of the version): a column stored with another type
  keeps that type in the encoding (its digest differs), except timestamps stored as INT96 (Spark's legacy) or in
  another unit with the same zone-ness, which every reader converts to the table's type — but nanoseconds
  (``TIMESTAMP(NANOS)``), which Spark refuses to read: such a file's rows have no one content (unsupported);
- **partition values** (not in the files) folded in as constants, typed as delta-rs types them;
- **deletion vectors** applied: the selection vectors delta-rs reads for the version (``deletion_vectors()``);
- **row-tracking ids** (``delta.enableRowTracking`` true): each row's ``row_id`` and ``row_commit_version`` as Spark
  readers get them (``_metadata.row_id`` / ``_metadata.row_commit_version``: the materialized column's value when the
  file holds one that is not null, else the add's ``baseRowId`` plus the row's physical index in the file, before its
  deletion vector / the add's ``defaultRowCommitVersion``), folded in as two more fields of reserved identities
  (``ROW_ID`` / ``ROW_COMMIT_VERSION``, int64); the materialized columns are not data columns (not in the schema).
"""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attest.content import ContentDigest
from attest.errors import CarrierError, Code, UnsupportedTableError
from attest.tables import DataFile, Progress
from carriers.base import Rewrite
from carriers.core import canonical_relative
from carriers.delta.log import Commit, holds_value, read_commit
from carriers.delta.rows import add_action_rows, engine_relative
from carriers.delta.spellings import _OFFSET, _STAMP_TEXT, _zoneless, stamp_instant

if TYPE_CHECKING:
    import pyarrow as pa

    from carriers.core import Version
    from carriers.delta.carrier import DeltaCarrier
    from carriers.storage.base import Storage

__all__ = ["DeltaContentReader", "content_reader", "file_content_digests", "rewrites_between", "widened"]

_MAPPING = "delta.columnMapping.mode"
_PHYSICAL = "delta.columnMapping.physicalName"
_ROW_TRACKING = "delta.enableRowTracking"
_MATERIALIZED_ROW_ID = "delta.rowTracking.materializedRowIdColumnName"
_MATERIALIZED_COMMIT_VERSION = "delta.rowTracking.materializedRowCommitVersionColumnName"
# docs/content-digest.md, "Row-tracking ids": the identities of the two fields folded into each row's encoding when
# the table tracks rows. Braces are not allowed in a Delta column name without column mapping, and with it every
# column's identity starts with "physical:": no column of the table can have them.
ROW_ID = "{row_id}"
ROW_COMMIT_VERSION = "{row_commit_version}"
# The sidecar's content object names it ("row_ids") when its digests fold the ids in (content_store.Binding).
ROW_IDS_MARKER = "delta-row-tracking"


def row_tracking_enabled(configuration: dict[str, Any]) -> bool:
    """Does the table give readers row-tracking ids (``delta.enableRowTracking``, read as Spark reads a boolean
    property: case-insensitive ``true``)?"""
    return str(configuration.get(_ROW_TRACKING) or "").strip().lower() == "true"


@dataclass(frozen=True)
class RowTracking:
    """What a reader needs to give each row of the digested files its row-tracking ids: the materialized columns'
    names (the table's configuration) and each file's ``baseRowId`` / ``defaultRowCommitVersion`` (its add action)."""

    row_id_column: str | None
    commit_version_column: str | None
    files: dict[str, tuple[int | None, int | None]]  # DataFile.path -> (baseRowId, defaultRowCommitVersion)


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


def _read_type(stored: pa.DataType, want: pa.DataType, int96: bool, *, widen: bool = False) -> pa.DataType | None:
    """The type a reader converts the stored column to (``want``) when it does so for every value without loss of
    meaning; None when the stored type is kept (its digest then differs, as a changed type should). ``widen``: a
    type widening's conversion too (``_widens``; the cast is exact or refused)."""
    import pyarrow as pa

    from attest.content import type_tag

    try:
        if type_tag(stored) == type_tag(want):
            return want
    except Exception:  # an Arrow type with no encoding: digest_table refuses it with its own message
        return None
    if widen and _widen_target(stored, want):
        return want
    if pa.types.is_timestamp(stored) and pa.types.is_timestamp(want):
        if int96 and want.tz is not None:
            return want  # INT96: UTC instants in nanoseconds, read by every engine as the table's timestamp
        if (stored.tz is None) == (want.tz is None):
            return want  # another unit, same zone-ness: the same instants (a lossy conversion is refused by cast)
    return None


# A stored column's type against the schema's (the Arrow types pyarrow reads the file as, and delta-rs gives the
# schema): the digest reads the stored values, and every reader converts them to the schema's type. Where that
# conversion loses nothing, every engine reads the stored values (measured, delta-spark 4.4 / delta-rs 1.6: an int32 in
# a long or double column, a float in a double column, a decimal(10,2) in a decimal(12,4) column, a date in a
# timestamp_ntz column, unannotated bytes in a string column). Where it does, they read other values than the digest
# holds, and not alike: an int32 of 70000 in a short column Spark reads as 4464 (300 in a byte column: 44) where
# delta-rs's query engine fails; a decimal(12,4) 1.2345 in a decimal(10,2) column, a double 1e300 in a float column, a
# double 1.5 in a long column, a timestamp in a date column, an int in a string or boolean column: delta-rs reads
# 1.23, inf, 1, the date, '1', true, and Spark fails the read. Timestamps stored in another unit or zone-ness are
# judged where the rows are read (``_read_type``, the spellings checks), not here.
_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}  # decimal digits a signed integer of that width needs


def _converted_otherwise(stored: pa.DataType, want: pa.DataType) -> bool:
    """Whether readers converting a column stored as ``stored`` to the schema's ``want`` may read other values than
    the stored ones (see above); nested types compared leaf by leaf (struct fields by name: a field a file lacks is
    read as nulls by every reader)."""
    import pyarrow as pa

    t = pa.types
    if t.is_dictionary(stored):
        stored = stored.value_type
    if t.is_struct(stored) and t.is_struct(want):
        wanted = {want.field(i).name: want.field(i).type for i in range(want.num_fields)}
        return any(_converted_otherwise(stored.field(i).type, wanted[stored.field(i).name])
                   for i in range(stored.num_fields) if stored.field(i).name in wanted)
    listed = (t.is_list, t.is_large_list, t.is_list_view, t.is_large_list_view, t.is_fixed_size_list)
    if any(is_(stored) for is_ in listed) and any(is_(want) for is_ in listed):
        return _converted_otherwise(stored.value_type, want.value_type)
    if t.is_map(stored) and t.is_map(want):
        return _converted_otherwise(stored.key_type, want.key_type) or \
            _converted_otherwise(stored.item_type, want.item_type)
    if t.is_nested(stored) or t.is_nested(want) or t.is_null(stored) or stored == want:
        return False  # another shape (no reader converts it: a read that fails), or nulls
    if t.is_timestamp(stored) and t.is_timestamp(want):
        return False
    texts = (t.is_string, t.is_large_string, t.is_string_view, t.is_binary, t.is_large_binary, t.is_binary_view)
    if any(is_(stored) for is_ in texts) and any(is_(want) for is_ in texts):
        return False  # the same bytes
    if t.is_fixed_size_binary(stored) and t.is_binary(want):
        return False
    if t.is_integer(stored):
        signed = t.is_signed_integer(stored)
        digits = _INTEGER_DIGITS[stored.bit_width * (1 if signed else 2)] if stored.bit_width < 64 or signed else 20
        if t.is_integer(want):
            return not t.is_signed_integer(want) or bool(want.bit_width < stored.bit_width + (0 if signed else 1))
        if t.is_floating(want):  # exact below the mantissa's width
            return bool(stored.bit_width + (0 if signed else 1) > (53 if t.is_float64(want) else 24))
        if t.is_decimal(want):
            return bool(digits > want.precision - want.scale)
        return True
    if t.is_float32(stored) and t.is_float64(want):
        return False
    if t.is_decimal(stored) and t.is_decimal(want):
        return bool(want.scale < stored.scale or want.precision - want.scale < stored.precision - stored.scale)
    return not (t.is_date32(stored) and t.is_timestamp(want) and want.tz is None)


def _numbers_kept(column: Any, want: pa.DataType) -> bool:
    """Whether the stored numbers of a top-level ``column`` (integers, floats or decimals, converted to the number type
    ``want`` with a loss for some values) are all kept by the conversion: read back as stored (a short column of int32
    values that fit in 16 bits reads the stored values in every reader)."""
    import pyarrow as pa

    t = pa.types
    number = (t.is_integer, t.is_floating, t.is_decimal)
    if not any(is_(column.type) for is_ in number) or not any(is_(want) for is_ in number):
        return False
    try:
        return bool(column.cast(want, safe=True).cast(column.type, safe=True).equals(column))
    except (pa.ArrowException, ValueError, OverflowError):
        return False


def _stored_columns(stored: pa.Schema, arrow: pa.Schema, fields: dict[str, dict[str, Any]],
                    partition_columns: Sequence[str], mode: str) -> Iterator[tuple[Any, dict[str, Any], str, int,
                                                                                   Any, Any]]:
    """Each schema column the file stores (partition columns are not in files): (its field, its schema JSON, its
    physical name under column mapping ``mode``, its index in ``stored``, the stored type, the type readers want)."""
    mapped = mode in ("name", "id")
    for field in arrow:
        if field.name in partition_columns:
            continue
        doc = fields.get(field.name, {})
        physical = _physical(doc) if mapped else field.name
        index = stored.get_field_index(physical)
        if index >= 0:
            yield field, doc, physical, index, stored.field(index).type, _physical_type(field.type, doc.get("type"),
                                                                                        mapped)


def _stored_otherwise(column: Callable[[int], Any], stored: pa.Schema, arrow: pa.Schema,
                      fields: dict[str, dict[str, Any]], partition_columns: Sequence[str], mode: str) -> str | None:
    """The first column the file stores as a type readers convert to the schema's with a loss
    (``_converted_otherwise``) for some of its values (``_numbers_kept``: ``column(i)``, the stored column ``i`` as
    read, asked only of such a column), said; None when there is none."""
    for field, doc, _, index, have, want in _stored_columns(stored, arrow, fields, partition_columns, mode):
        if _converted_otherwise(have, want) and not _numbers_kept(column(index), want):
            return (f"column {field.name!r} is stored as {have} and the schema's type is {doc.get('type', want)}: "
                    "readers convert its stored values with a loss, and not alike (Spark wraps an integer past the "
                    "column's width where delta-rs fails; other conversions Spark fails and delta-rs rounds)")
    return None


def stored_problem(parquet: Any, handle: Any, table: pa.Table | None, arrow: pa.Schema,
                   fields: dict[str, dict[str, Any]], partition_columns: Sequence[str], mode: str) -> str | None:
    """Why readers of the table (schema ``arrow``, its fields' ``fields``, column mapping ``mode``) read other values
    than the Parquet file ``parquet`` (open on ``handle``) stores, said; None when they read the stored ones: integers
    past their INT(8) / INT(16) annotation (``narrow_integer_problems``), a column stored as a type converted to the
    schema's with a loss for some of its values (``_stored_otherwise``). ``table``: the file's rows as pyarrow read
    them, when read (record); None: the footer decides, and only a column it flags is read (verify: docs/verify.md,
    "Stored types"). The one rule of record, rewrites and verify."""
    from carriers.content_store import narrow_integer_columns, narrow_integer_problems

    narrow = narrow_integer_columns(parquet.schema)
    if narrow:
        past = narrow_integer_problems(handle, table, narrow, opened=parquet)
        if past:
            return f"{past[0]} — readers get other values"
    read: list[pa.Table] = [] if table is None else [table]

    def column(index: int) -> Any:
        if not read:
            read.append(parquet.read())  # a flagged column: the file's rows, as the record read them
        return read[0].column(index)

    otherwise = _stored_otherwise(column, parquet.schema_arrow, arrow, fields, partition_columns, mode)
    return None if otherwise is None else f"{otherwise} — readers get other values than it stores"


def stored_types_judge(carrier: DeltaCarrier, v: Version) -> Callable[[Any, Any], str | None]:
    """``stored_problem`` of a data file of version ``v`` as its readers read it, for ``verify --level bytes``
    (``content_store.stored_type_problems``): the version's schema, column mapping and partition columns."""
    import pyarrow as pa

    dt = carrier._load(v.number)
    schema_doc = json.loads(dt.schema().to_json())
    arrow = pa.schema(dt.schema().to_arrow())
    mode = str(dict(dt.metadata().configuration).get(_MAPPING) or "none").lower()
    partition_columns = list(dt.metadata().partition_columns)
    fields = {str(f.get("name")): f for f in schema_doc.get("fields") or [] if isinstance(f, dict)}

    def judge(parquet: Any, handle: Any) -> str | None:
        return (stored_problem(parquet, handle, None, arrow, fields, partition_columns, mode)
                or calendar_problem(parquet, arrow, fields, partition_columns, mode))

    return judge


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
    # With statistics: each file's statistics as the log writes them (JSON) and as delta-rs reads them (typed), held
    # to its rows by ``digest`` (``_check_statistics``, ``_check_calendar``): the judge asks it for rewritten files.
    logged: dict[str, Any] | None = None
    typed: dict[str, dict[str, Any]] | None = None
    # Without: each file's statistics as the log writes them, held to its rows leniently (``_check_statistics`` with
    # ``recorded``): filtered reads and aggregates of the attested version itself use them.
    recorded: dict[str, Any] | None = None
    # Row tracking enabled: every row's ids are folded in (None: the table gives readers none).
    row_tracking: RowTracking | None = None
    # Delta type widening (``widened_digests``): these columns (by name), stored as a narrower type, are read as the
    # schema's wider one (``_widens``), as Spark reads them; any other column keeps its stored type.
    widen: frozenset[str] = frozenset()
    # DataFile.path -> the ``cardinality`` its add's deletion vector states, for every file the log gives one: held to
    # the rows delta-rs's vector deletes (``_check_cardinality``).
    cardinalities: dict[str, Any] | None = None
    # The protocol enables deletion vectors (the deletionVectors feature, reader and writer): Spark applies none
    # without it (``_check_cardinality``).
    vectors_enabled: bool = True
    # Generated partition columns Spark derives partition filters from: partition column -> (form, source column
    # path, parameter) (carriers/delta/generated.py), each file's partition value held to its rows by ``digest``.
    generated: dict[str, tuple[str, list[str], Any]] | None = None

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
                nanos = {parquet.schema.column(i).path.split(".")[0] for i in range(len(parquet.schema))
                         if _nanoseconds(parquet.schema.column(i))}
                table = parquet.read()
                from carriers.content_store import int96_problem

                problem = stored_problem(parquet, handle, table, self.arrow, self.fields, self.partition_columns,
                                         self.mode) or (int96_problem(handle, int96) if int96 else None)
                if problem is not None:
                    raise CarrierError(
                        f"{f.path}{', added by a rewrite' if self.logged is not None else ''}: {problem}",
                        path=f.path, code=Code.CONTENT_CHANGED if self.logged is not None else Code.TABLE_INCONSISTENT)
                meta = parquet.metadata
                footer = dict(meta.metadata or {})
                from carriers.content_store import read_parquet_indexes

                # the page index and bloom filters too, as written (_check_footer, _check_recorded_indexes)
                indexes = read_parquet_indexes(handle)
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:  # pyarrow decodes a footer's names as UTF-8
            raise CarrierError(f"{f.path} cannot be read as Parquet: {exc}", code=Code.TABLE_UNREADABLE,
                               path=f.path) from exc
        try:
            digest, read = _digest_file(f, table, stored, int96, self.arrow, self.fields, self.partition_columns,
                                        self.partitions.get(f.path) or {}, self.masks.get(f.path), self.mode,
                                        self.row_tracking, widen=self.widen)
        except (KeyError, ValueError, pa.ArrowException) as exc:  # duplicate column names, malformed values, ...
            raise CarrierError(f"the rows of {f.path} cannot be read as the table's columns: {exc}",
                               code=Code.TABLE_UNREADABLE, path=f.path) from exc
        if nanos & set(read):
            # Measured (delta-spark 4.4): Spark's Parquet reader converts no TIMESTAMP(NANOS) column to a Delta
            # timestamp or timestamp_ntz (SchemaColumnConvertNotSupportedException) and fails the read, where
            # pyarrow and delta-rs read the instants (cast exactly to microseconds: the attested digest).
            raise UnsupportedTableError(
                f"{f.path} stores {sorted(nanos & set(read))[0]!r} as timestamps in nanoseconds: Spark cannot read "
                "them (it fails the read), delta-rs reads them as microseconds; its rows have no one content")
        if self.generated:
            from carriers.delta.generated import check_generated

            physical = {name: _physical(doc) if self.mode in ("name", "id") else name
                        for name, doc in self.fields.items()}
            check_generated(f.path, self.generated, self.partitions.get(f.path) or {}, read, physical,
                            self.masks.get(f.path), rewrite=self.logged is not None)
        if f.path in (self.cardinalities or {}):
            _check_cardinality(f, self.masks.get(f.path), table.num_rows, (self.cardinalities or {})[f.path],
                               rewritten=self.logged is not None, enabled=self.vectors_enabled)
        if self.logged is not None:
            _check_statistics(f, table.num_rows, read, self.logged.get(f.path), (self.typed or {}).get(f.path) or {})
            _check_calendar(f, footer, read, int96)
            _check_footer(f, meta, table, indexes)
        else:
            _check_recorded_indexes(f, meta, table, indexes)
            # The recorded version's own files too: Spark reads their ancient dates rebased all the same.
            _check_calendar(f, footer, read, int96, rewritten=False)
            # Where type widening is on too: Spark skips files and answers COUNT / MIN / MAX by the statistics of
            # such a table (measured, tests/adversarial/test_spark_delta_round16.py). Not in a re-read of attested
            # files as the wider types (widened_digests: recorded None, the attested reading holds them).
            if self.recorded is not None:
                try:
                    _check_statistics(f, table.num_rows, read, self.recorded.get(f.path),
                                      (self.typed or {}).get(f.path) or {}, recorded=True)
                except CarrierError as exc:
                    floats = sorted(n for n in self.widen & set(stored.names) if pa.types.is_float32(
                        stored.field(n).type) and pa.types.is_float64(self.arrow.field(n).type))
                    if not floats:
                        raise
                    # An honest Spark table too: measured (delta-spark 4.4), after ALTER COLUMN c TYPE DOUBLE
                    # Spark answered MIN(c) 0.1 and returned no row for c = 0.10000000149011612D, which a full
                    # read returns: its filtered reads are not its full reads.
                    raise CarrierError(f"{exc.message} ({floats[0]!r} is a float column widened to double: Spark "
                                       "reads its float statistics as doubles, 0.1 for the stored "
                                       "0.10000000149011612, and skips the file by them)",
                                       code=exc.code, path=exc.path) from None
        return digest


def content_reader(carrier: DeltaCarrier, v: Version, files: Sequence[DataFile], *,
                   statistics: bool = False) -> DeltaContentReader:
    """The reader of ``files``' rows as readers of ``v`` get them (the version's schema, column mapping, partition
    values, deletion vectors as delta-rs reads them); ``statistics``: one that also holds each file's statistics, as
    the log writes them (Spark reads them) and as delta-rs reads them, to its stored rows."""
    import pyarrow as pa

    dt = carrier._load(v.number)
    schema_doc = json.loads(dt.schema().to_json())
    arrow = pa.schema(dt.schema().to_arrow())
    configuration = dict(dt.metadata().configuration)
    mode = str(configuration.get(_MAPPING) or "none").lower()
    partition_columns = list(dt.metadata().partition_columns)
    fields = {str(f.get("name")): f for f in schema_doc.get("fields") or [] if isinstance(f, dict)}
    wanted = {f.path for f in files if f.kind == "data"}
    rows = add_action_rows(dt)
    partitions: dict[str, dict[str, Any]] = {}
    typed: dict[str, dict[str, Any]] = {}
    for row in rows:
        rel = canonical_relative(str(row["path"]))[0]
        if rel is not None and rel in wanted:
            partitions[rel] = row.get("partition") or {}
            typed[rel] = {k: row.get(k) for k in ("num_records", "null_count", "min", "max")}
    logged: dict[str, Any] | None = None
    tracking: RowTracking | None = None
    tracked = row_tracking_enabled(configuration)
    log = None
    if True:  # the log's statistics of every file: held to its rows (recorded ones leniently, ``_check_statistics``)
        log = carrier.content_log(v.number)  # the carrier's own replay of v, not another (one per version)
        logged = {}
        ids: dict[str, tuple[int | None, int | None]] = {}
        for raw, add in log.adds.items():
            rel = canonical_relative(str(raw))[0]
            if rel is not None and rel in wanted:
                if logged is not None:
                    logged[rel] = add.get("stats")
                ids[rel] = (_id_value(add.get("baseRowId")), _id_value(add.get("defaultRowCommitVersion")))
        if tracked:
            tracking = RowTracking(row_id_column=_name(configuration.get(_MATERIALIZED_ROW_ID)),
                                   commit_version_column=_name(configuration.get(_MATERIALIZED_COMMIT_VERSION)),
                                   files=ids)
    masks: dict[str, list[bool]] = {}
    roots = carrier._engine_roots(dt)
    features = set(dt.protocol().reader_features or [])
    # Delta type widening on (docs/content-digest.md, "Delta type widening"): readers get every file's values as the
    # schema's types, a narrower stored column upcast (the protocol; Spark does), so the digest reads them so too.
    # delta-rs 1.6 reads no deletion vector of such a table ("Unsupported table features required: [TypeWidening]"),
    # so where the log gives none of these files one, and the table has no deletionVectors feature, none is read:
    # no reader applies a vector the log does not name.
    widening_on = bool(features & {"typeWidening", "typeWidening-preview"})
    vectors_named = "deletionVectors" in features or any(
        canonical_relative(str(raw))[0] in wanted for raw, _ in carrier.content_log(v.number).adds.having(
            "deletionVector")) if widening_on else True
    if vectors_named:  # delta-rs's row mask is as long as the greatest row a vector names: refused unread here
        past = carrier.vectors_past_their_rows(carrier.content_log(v.number))
        if past:
            raise CarrierError(past[0].message, code=past[0].code, path=past[0].path)
    try:  # every file's deletion vector as delta-rs applies it (whatever the protocol claims)
        for batch in (dt.deletion_vectors() if vectors_named else ()):
            paths = batch.column("filepath").to_pylist()
            vectors = batch.column("selection_vector").to_pylist()
            for p, vector in zip(paths, vectors, strict=True):
                rel = engine_relative(roots, str(p), encoded=True)
                if rel == str(p):  # under no root as read: the vector would be matched to no file, its rows kept
                    raise CarrierError(f"delta-rs applies a deletion vector to {str(p)[:300]}, which is not under the "
                                       f"root of {carrier.reference} as read", code=Code.TABLE_INCONSISTENT)
                if rel in wanted:
                    masks[rel] = [bool(x) for x in vector]
    except CarrierError:
        raise
    except Exception as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CarrierError(f"delta-rs cannot read the deletion vectors of {carrier.reference}: {text}",
                           code=Code.TABLE_UNREADABLE) from exc
    cardinalities: dict[str, Any] = {}
    # Only where delta-rs applies a vector (``masks``) can a stated cardinality differ from it: a table without one
    # is not replayed again (a record replays its version once: tests/delta/test_record_replays.py).
    vectored = (log if log is not None else carrier.content_log(v.number)) if masks else None
    for raw, add in vectored.adds.having("deletionVector") if vectored is not None else ():
        vector, rel = add.get("deletionVector"), canonical_relative(str(raw))[0]
        if isinstance(vector, dict) and rel is not None and rel in wanted:
            cardinalities[rel] = vector.get("cardinality")
    from carriers.delta.generated import generated_partitions

    return DeltaContentReader(arrow=arrow, fields=fields, partition_columns=partition_columns, partitions=partitions,
                              masks=masks, mode=mode, paths=frozenset(wanted), logged=logged if statistics else None,
                              recorded=None if statistics else logged, typed=typed, row_tracking=tracking,
                              widen=frozenset(arrow.names) if widening_on else frozenset(),
                              cardinalities=cardinalities,
                              vectors_enabled="deletionVectors" in features
                              and "deletionVectors" in set(dt.protocol().writer_features or []),
                              generated=generated_partitions(fields, partition_columns) or None)


def _nanoseconds(column: Any) -> bool:
    """Is this Parquet leaf column (a ColumnDescriptor) a timestamp in nanoseconds (INT64 TIMESTAMP(NANOS, *))?"""
    logical = column.logical_type
    if logical is None or logical.type != "TIMESTAMP":
        return False
    try:
        return bool(json.loads(logical.to_json()).get("timeUnit") == "nanoseconds")
    except ValueError:  # no JSON form: not a type this check knows
        return False


def _check_cardinality(f: DataFile, vector: list[bool] | None, num_rows: int, cardinality: Any, *,
                       rewritten: bool, enabled: bool = True) -> None:
    """A deletion vector the log gives ``f``, held to what Spark reads of it. Its stated ``cardinality`` must be the
    number of rows delta-rs's vector deletes (the digest's reading): Spark (delta-spark 4.4) takes a vector of
    cardinality 0 for none and reads every stored row, fails the read of a file whose vector holds another number of
    rows than stated, and answers ``COUNT(*)`` from ``numRecords`` less the cardinality without reading the vector
    (measured: 12 rows for delta-rs's 11; COUNT(*) 10 and 9 over 11 rows). And the protocol must enable deletion
    vectors (``enabled``): without the feature Spark applies no vector, delta-rs every one (measured: Spark read the
    row a vector deleted). A rewrite's file so: ``content_changed`` (StatisticsMismatch); any other file:
    ``table_inconsistent``."""
    from carriers.content_store import StatisticsMismatch

    keep = (list(vector or []) + [True] * num_rows)[:num_rows]
    deleted = keep.count(False)
    if type(cardinality) is int and cardinality == deleted and enabled:
        return
    message = (f"{f.path}: its deletion vector states a cardinality of {str(cardinality)[:40]} and deletes "
               f"{deleted} of its {num_rows} rows as delta-rs reads it — Spark reads a vector of cardinality 0 as "
               "none and answers COUNT(*) by the cardinality: readers get other rows") if enabled else (
        f"{f.path} has a deletion vector, and the protocol does not enable deletion vectors (reader and writer "
        "feature deletionVectors): delta-rs applies it, Spark reads every stored row — readers get other rows")
    if rewritten:
        raise StatisticsMismatch(f"{message} (added by a rewrite)")
    raise CarrierError(message, code=Code.TABLE_INCONSISTENT, path=f.path)


def _id_value(value: Any) -> int | None:
    """A ``baseRowId`` / ``defaultRowCommitVersion`` as the log gives it; ValueError-free: anything but an integer is
    refused (table_unreadable), as no reader can add a row index to it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CarrierError(f"an add action's row-tracking id {value!r} is not an integer", code=Code.TABLE_UNREADABLE)
    return value


def _name(value: Any) -> str | None:
    return str(value) if value else None


def row_id_arrays(f: DataFile, table: pa.Table, stored: pa.Schema,
                  tracking: RowTracking) -> tuple[pa.Array, pa.Array]:
    """Each stored row's ``row_id`` and ``row_commit_version`` as Spark reads ``_metadata.row_id`` /
    ``_metadata.row_commit_version`` (measured, Delta 4 on Spark 4.1): the materialized column's value where the file
    holds that column and the value is not null, else ``baseRowId`` + the row's physical index in the file (its
    position before the deletion vector is applied) / ``defaultRowCommitVersion``; null when neither is there."""
    import pyarrow as pa
    import pyarrow.compute as pc

    base, commit_version = tracking.files.get(f.path, (None, None))
    n = table.num_rows
    fallback_ids = pa.nulls(n, pa.int64()) if base is None else \
        pa.array(range(base, base + n), pa.int64()) if base + n <= (1 << 63) else None
    if fallback_ids is None:
        raise CarrierError(f"{f.path}: its baseRowId {base} plus its {n} rows overflow a row id (64 bits)",
                           code=Code.TABLE_UNREADABLE, path=f.path)
    fallback_versions = pa.nulls(n, pa.int64()) if commit_version is None else \
        pa.array([commit_version] * n, pa.int64())
    out: list[pa.Array] = []
    for name, fallback in ((tracking.row_id_column, fallback_ids),
                           (tracking.commit_version_column, fallback_versions)):
        if name is not None and name in stored.names:
            column = table.column(name)
            if not pa.types.is_integer(column.type):
                raise CarrierError(f"{f.path}: its materialized row-tracking column {name!r} is of type {column.type}, "
                                   "not an integer", code=Code.TABLE_UNREADABLE, path=f.path)
            materialized = column.combine_chunks().cast(pa.int64())
            out.append(pc.coalesce(materialized, fallback))
        else:
            out.append(fallback)
    return out[0], out[1]


def file_content_digests(carrier: DeltaCarrier, v: Version, files: Sequence[DataFile], *,
                         progress: Progress | None = None, statistics: bool = False) -> dict[str, ContentDigest]:
    """Each data file's digest (the module docstring); ``statistics``: each file's statistics held to its rows too
    (``content_reader``)."""
    reader = content_reader(carrier, v, files, statistics=statistics)
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
                 vector: list[bool] | None, mode: str,
                 tracking: RowTracking | None = None, *,
                 widen: frozenset[str] = frozenset()) -> tuple[ContentDigest, dict[str, Any]]:
    """The file's digest, and its data columns as read (every stored row), keyed as its statistics name them.
    ``tracking``: each row's row-tracking ids folded in (``row_id_arrays``)."""
    import pyarrow as pa

    from attest.content import ColumnSpec, digest_table

    mapped = mode in ("name", "id")
    folds: dict[str, list[str]] = {}
    for name in stored.names:
        for key in _folded(name):
            folds.setdefault(key, []).append(name)
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
            if stored.get_field_index(physical) >= 0:
                _check_nested_ids(f, stored.field(stored.get_field_index(physical)).type, doc.get("type"), physical)
        if _nested_exists_default(doc.get("type")):
            raise UnsupportedTableError(
                f"column {field.name!r} has a nested field with an {_EXISTS_DEFAULT} (Spark fills a field a file lacks "
                "with it, delta-rs with nulls): its rows have no one content")
        if physical not in stored.names and _EXISTS_DEFAULT in (doc.get("metadata") or {}) \
                and not (mapped and field.name in stored.names):
            raise UnsupportedTableError(
                f"{f.path} lacks column {field.name!r}, whose schema field has an {_EXISTS_DEFAULT}: Spark reads "
                "the default in every row of it, delta-rs nulls (measured): its rows have no one content")
        _check_case(f, stored, physical, folds)
        if physical in stored.names:
            _check_nested_case(f, stored.field(physical).type, doc.get("type"), mapped, physical)
            column = table.column(physical)
            target = _read_type(column.type, want, physical in int96, widen=field.name in widen)
            if target is None and mode == "name" and _reordered(column.type, want):
                # Spark and delta-rs resolve nested struct fields by physical name (measured: a struct whose fields
                # are stored in another order, or under each other's names with the values moved to match, reads
                # as the attested rows): the digest reads them by name too (pyarrow's struct cast matches names).
                target = want
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
    table_arrays: dict[str, pa.Array | pa.ChunkedArray] = dict(arrays)
    if tracking is not None:
        if {ROW_ID, ROW_COMMIT_VERSION} & ({c.identity for c in columns} | set(constants) | set(arrays)):
            raise UnsupportedTableError(f"the table has a column named {ROW_ID!r} or {ROW_COMMIT_VERSION!r}, the "
                                        "identities of the row-tracking ids in the content digest")
        for materialized in (tracking.row_id_column, tracking.commit_version_column):
            if materialized is not None:
                # Spark reads a materialized row-tracking column by name without case too (measured: a rewrite's
                # file holding `_ROW-ID-COL-…` gave Spark its ids, the digest baseRowId + index: VERIFIED before).
                _check_case(f, stored, materialized, folds)
        row_ids, commit_versions = row_id_arrays(f, table, stored, tracking)
        table_arrays[ROW_ID] = row_ids
        table_arrays[ROW_COMMIT_VERSION] = commit_versions
        columns.append(ColumnSpec(identity=ROW_ID, field=pa.field(ROW_ID, pa.int64())))
        columns.append(ColumnSpec(identity=ROW_COMMIT_VERSION, field=pa.field(ROW_COMMIT_VERSION, pa.int64())))
    rows_table = pa.table(table_arrays) if table_arrays else pa.table({"_": pa.nulls(table.num_rows)})
    keep = None
    if vector is not None:
        keep = (vector + [True] * (table.num_rows - len(vector)))[:table.num_rows]
    return digest_table(rows_table, columns, constants, keep=keep), arrays


def _reordered(stored: pa.DataType, want: pa.DataType) -> bool:
    """Is ``stored`` ``want`` but for the order of struct fields (at any depth): the same field names, each once, the
    same leaf types? Only then are nested fields read by name (a field missing, added or of another type is not)."""
    import pyarrow as pa

    if pa.types.is_struct(stored) and pa.types.is_struct(want):
        names = [stored.field(i).name for i in range(stored.num_fields)]
        wanted = {want.field(i).name: want.field(i).type for i in range(want.num_fields)}
        return len(set(names)) == len(names) == len(wanted) and set(names) == set(wanted) and all(
            _reordered(stored.field(i).type, wanted[stored.field(i).name]) for i in range(stored.num_fields))
    if (pa.types.is_list(stored) and pa.types.is_list(want)) or \
            (pa.types.is_large_list(stored) and pa.types.is_large_list(want)):
        return _reordered(stored.value_type, want.value_type)
    if pa.types.is_map(stored) and pa.types.is_map(want):
        return _reordered(stored.key_type, want.key_type) and _reordered(stored.item_type, want.item_type)
    return bool(stored == want)


# Spark's column-default metadata (ResolveDefaultColumns): Spark's readers, Delta's included, fill a column (or
# nested field) a file lacks with this value; delta-rs reads nulls. Delta's own DDL never writes it (only
# CURRENT_DEFAULT, which affects writes), a hand-written schema can (measured with delta-spark 4.4: 7, delta-rs: null).
_EXISTS_DEFAULT = "EXISTS_DEFAULT"


def _nested_exists_default(t: Any) -> bool:
    """Does a Delta schema type (JSON) hold a struct field, at any depth, whose metadata names an EXISTS_DEFAULT."""
    if not isinstance(t, dict):
        return False
    kind = t.get("type")
    if kind == "struct":
        return any(_EXISTS_DEFAULT in ((fld.get("metadata") or {}) if isinstance(fld, dict) else {})
                   or _nested_exists_default(fld.get("type") if isinstance(fld, dict) else None)
                   for fld in t.get("fields") or [])
    if kind == "array":
        return _nested_exists_default(t.get("elementType"))
    if kind == "map":
        return _nested_exists_default(t.get("keyType")) or _nested_exists_default(t.get("valueType"))
    return False


_EXACT = ("int8", "int16", "int32", "int64", "uint", "decimal", "date32", "bool", "float")


class _Beyond:
    """A date or timestamp outside Python's years 1 to 9999 (which Parquet, delta-rs and Spark hold: a ``date32`` of
    -800000 days is the year -221, delta-rs writes its statistic ``-0221-09-04``), as its count of days (a date) or
    microseconds (a timestamp; UTC for an instant) since 1970: below (``raw`` < 0) or above every value Python
    holds, ordered exactly against another such value. Read from the rows or a bound, it raised a bare
    OverflowError (``internal_error`` at ``record`` and ``verify --level bytes``) or refused honest statistics as
    misstating the rows (round 20b); the digest itself encodes from Arrow and holds such values."""

    __slots__ = ("raw", "text")

    def __init__(self, raw: int, text: str) -> None:
        self.raw, self.text = raw, text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Beyond) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __lt__(self, other: object) -> bool:
        return self.raw < other.raw if isinstance(other, _Beyond) else self.raw < 0

    def __gt__(self, other: object) -> bool:
        return self.raw > other.raw if isinstance(other, _Beyond) else self.raw >= 0

    def __le__(self, other: object) -> bool:
        return self < other or self == other

    def __ge__(self, other: object) -> bool:
        return self > other or self == other


def _civil_days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (astronomical: year 0 is 1 BC, as delta-rs's
    ``-0001`` and Java's)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _beyond_bound(value: str, t: pa.DataType) -> _Beyond | None:
    """A bound spelled as ISO 8601 with a year outside 1 to 9999 (``-0249-10-15T19:33:20Z``, ``+11476-08-15
    05:20:00``, ``-0221-09-04``, as delta-rs writes them) as a ``_Beyond``; None when it is no such spelling (a year
    Python holds, a zone other than UTC or an offset, a zone where the column has none or none where it has one)."""
    import calendar

    import pyarrow as pa

    found = _STAMP_TEXT.fullmatch(value)
    if found is None:
        return None
    year = int(found.group("sign") + found.group("year"))
    month, day = int(found.group("month")), int(found.group("day"))
    if 1 <= year <= 9999 or not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year % 400 + 2000, month)[1]:
        return None
    days = _civil_days(year, month, day)
    if pa.types.is_date32(t):
        return _Beyond(days, value) if found.group("hour") is None and not found.group("zone") else None
    zone = found.group("zone").strip()
    offset = 0
    if zone.lower() in ("z", "utc"):
        pass
    elif zone:
        spelled = _OFFSET.fullmatch(zone)
        if spelled is None:
            return None
        offset = (int(spelled.group("hours")) * 60 + int(spelled.group("minutes"))) * 60
        offset = -offset if spelled.group("sign") == "-" else offset
    if bool(zone) != (t.tz is not None):
        return None
    hour, minute, second = (int(found.group(g) or 0) for g in ("hour", "minute", "second"))
    if hour > 23 or minute > 59 or second > 59:
        return None
    fraction = int((found.group("fraction") or "")[:6].ljust(6, "0"))
    return _Beyond(((days * 24 + hour) * 60 + minute) * 60_000_000 + (second - offset) * 1_000_000 + fraction, value)


def _python_value(scalar: Any) -> Any:
    """A pyarrow date or timestamp scalar as Python holds it, or a ``_Beyond`` outside Python's years."""
    import pyarrow as pa

    try:
        return scalar.as_py()
    except (OverflowError, ValueError):
        t = scalar.type
        if not (pa.types.is_date32(t) or pa.types.is_timestamp(t)):
            raise
        raw = scalar.cast(pa.int32() if pa.types.is_date32(t) else pa.int64()).as_py()
        per = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}.get(getattr(t, "unit", "us"), 1)
        raw = raw // 1_000 if getattr(t, "unit", "") == "ns" else raw * per
        return _Beyond(raw, f"{raw} {'days' if pa.types.is_date32(t) else 'microseconds'} from 1970 (outside the "
                            "years 1 to 9999)")


def _observe(column: Any) -> Any:
    """``content_store.observe`` of a leaf column, its least and greatest date or timestamp outside Python's years
    as ``_Beyond`` values."""
    import dataclasses

    import pyarrow as pa
    import pyarrow.compute as pc

    from carriers.content_store import observe

    t = column.type
    if not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
        return observe(column)
    if len(column) == column.null_count:
        return observe(column)
    found = pc.min_max(column)
    lo, hi = _python_value(found["min"]), _python_value(found["max"])
    if not (isinstance(lo, _Beyond) or isinstance(hi, _Beyond)):
        return observe(column)
    return dataclasses.replace(observe(column.slice(0, 0)), values=len(column), nulls=int(column.null_count),
                               lo=lo, hi=hi)


def _ms_floor(seen: Any, t: pa.DataType) -> Any:
    """The greatest timestamp read, truncated to its millisecond as writers may write a bound (None: not one)."""
    import datetime as dt

    import pyarrow as pa

    if pa.types.is_timestamp(t) and isinstance(seen.hi, dt.datetime):
        return seen.hi.replace(microsecond=seen.hi.microsecond // 1000 * 1000)
    if pa.types.is_timestamp(t) and isinstance(seen.hi, _Beyond):
        return _Beyond(seen.hi.raw - seen.hi.raw % 1000, seen.hi.text)
    return None


def _claimed(value: Any, t: pa.DataType) -> Any:
    """A bound as the log writes it (JSON), as a Python value of the column's type (ValueError when it is none):
    what Spark reads. delta-rs's typed reading is checked as it gives it."""
    import datetime as dt
    import decimal

    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_boolean(t):
        if not isinstance(value, bool):
            raise ValueError(value)
        return value
    if pa.types.is_integer(t):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(value)
        return value
    if pa.types.is_floating(t):
        if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
            return float(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(value)
        if pa.types.is_float32(t):
            # A FLOAT column's bound as its readers take it: Spark writes the shortest text of the float32
            # ("6.3333335") and Spark (Jackson's getFloatValue) and delta-rs (f64 `as f32`) read it back as the nearest
            # float32 of that double — the value stored. Compared as the double of the text, every Spark OPTIMIZE of a
            # FLOAT column holding a value like 19/3 was refused (measured, delta-spark 4.4). Beyond the float32
            # range: kept as the double (never a stored value: the exact comparison refuses it).
            with contextlib.suppress(OverflowError):
                return float(struct.unpack("<f", struct.pack("<f", float(value)))[0])
        return float(value)
    if pa.types.is_decimal(t):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(value)
        return decimal.Decimal(str(value))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if not isinstance(value, str):
            raise ValueError(value)
        return value
    if (pa.types.is_date32(t) or pa.types.is_timestamp(t)) and isinstance(value, str):
        beyond = _beyond_bound(value, t)
        if beyond is not None:
            return beyond
    if pa.types.is_date32(t):
        return dt.date.fromisoformat(str(value))
    if pa.types.is_timestamp(t):
        when = dt.datetime.fromisoformat(str(value))
        if t.tz is not None:
            if when.tzinfo is None:
                raise ValueError(value)
            return when.astimezone(dt.UTC)
        if when.tzinfo is not None:
            raise ValueError(value)
        return when
    raise TypeError(t)  # binary and others: no statistics engines use


def _statistics_leaves(columns: dict[str, Any], *readings: Any, prefix: str = "",
                       ) -> Iterator[tuple[str, Any, tuple[Any, ...], tuple[bool, ...]]]:
    """The columns a file's statistics bound, depth first as the statistics nest them (a struct's fields under its
    name): each one's dotted name, its rows, its entry in each of ``readings`` (one statistics object each —
    ``minValues``, ``maxValues``, ``nullCount`` as one engine reads them; None where there is none) and, for each,
    whether that reading is an object without the column's key (``_check_statistics``, ``_spark_only_bounds``)."""
    import pyarrow as pa

    for key, column in columns.items():
        name = f"{prefix}{key}"
        entries = tuple(r.get(key) if isinstance(r, dict) else None for r in readings)
        t = column.type
        if pa.types.is_struct(t):
            flat = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            children = flat.flatten()
            yield from _statistics_leaves({t.field(i).name: children[i] for i in range(t.num_fields)}, *entries,
                                          prefix=f"{name}.")
            continue
        if pa.types.is_nested(t):
            continue  # lists and maps: no statistics engines skip by
        yield name, column, entries, tuple(isinstance(r, dict) and key not in r for r in readings)


def _check_statistics(f: DataFile, num_rows: int, read: dict[str, Any], logged: Any, typed: dict[str, Any], *,
                      recorded: bool = False) -> None:
    """A rewritten file's statistics, as the log writes them (Spark) and as delta-rs reads them, held to its stored
    rows (every row, its deletion vector not applied, as the protocol counts them): ``numRecords`` and each
    ``nullCount`` exactly (null counts and bounds only when ``tightBounds`` is not false), bounds soundly (no row
    outside them: a filtered read skips none) and, for numbers, dates and booleans, exactly (Spark and delta-rs answer
    COUNT(*) and MIN / MAX from them). Strings are kept to a prefix by writers and timestamps to the millisecond:
    bound soundly only. StatisticsMismatch (content_changed) otherwise.

    ``recorded``: a file of the version being recorded (or re-digested), not a rewrite's, held as Iceberg's manifest
    metrics are at record (``table_inconsistent``): counts exactly (as the log writes them and as delta-rs reads
    them), bounds as delta-rs reads them (the log's, where it reads them) soundly and those of integers, dates,
    booleans and floats exactly (Spark answers a float's MIN / MAX from them, measured: test_delta_round16.py).
    Bounds delta-rs reads none of are held as Spark reads them (``_spark_only_bounds``) and bound as the log writes
    them (the reader view, carriers/delta/spellings.py: a note says so), and NaN is held as IEEE orders it (writers
    leave it out of bounds). Under wide bounds (``tightBounds`` false) a null count Spark skips by — 0 over a null,
    every row over a value — is refused too. Measured (delta-rs
    1.6, delta-spark 4.4): an append whose ``maxValues`` said 1 over rows 1, 2 returned no row for ``v = 2`` in Spark
    and delta-rs while a full read returned both, and was attested and VERIFIED."""
    import pyarrow as pa

    from carriers.content_store import StatisticsMismatch, bound_problem

    try:
        doc = json.loads(logged) if isinstance(logged, str) else {} if logged is None else None
    except (ValueError, RecursionError) as exc:  # nested deeper than Python parses: no statistics delta-rs reads either
        if recorded and isinstance(exc, RecursionError):
            # Spark reads bounds nested 990 deep as their text and skipped the file by them (measured,
            # test_spark_attacks): bounds this check cannot hold to the rows, refused rather than trusted.
            raise CarrierError(f"{f.path} has statistics in the log nested deeper than this check parses, which "
                               "Spark reads (and skips files by) while delta-rs reads none of them",
                               code=Code.TABLE_INCONSISTENT, path=f.path) from None
        doc = None
        if recorded and holds_value(typed):
            # delta-rs's JSON reader takes text Python's (and Jackson's, as Spark configures it) refuses — leading
            # zeros (01), a trailing decimal point (1.), extra or trailing commas, raw control characters in strings —
            # and skips files by what it reads there (measured, delta-rs 1.6: a maximum 01 over rows 1, 2 and its
            # filtered read of v = 2 returned no row; recorded, VERIFIED): statistics no check here can hold.
            raise CarrierError(f"{f.path} has statistics in the log that are not JSON ({exc}) but that delta-rs reads "
                               "and skips files by (leading zeros, trailing commas, ...), while stricter readers "
                               "read none of them", code=Code.TABLE_INCONSISTENT, path=f.path) from None
    if not isinstance(doc, dict):
        if recorded:
            return  # malformed (bound as written, the reader view): no engine reads statistics of it
        raise StatisticsMismatch(f"{f.path}, added by a rewrite: its statistics in the log do not parse")
    tight = doc.get("tightBounds") is not False
    sources = [("the log", doc.get("numRecords"), doc.get("nullCount"), doc.get("minValues"), doc.get("maxValues"),
                True),
               ("delta-rs", typed.get("num_records"), typed.get("null_count"), typed.get("min"), typed.get("max"),
                False)]
    if recorded:
        # Bounds as delta-rs reads them (the log's, where it reads them; the rest as Spark reads them, after the loop:
        # delta-rs writes a decimal past 17 digits as a rounded float it cannot read). Counts as the log writes them
        # too, whatever delta-rs reads: Spark counts rows by numRecords beside a bound delta-rs cannot read (measured).
        sources = [("the log", doc.get("numRecords"), doc.get("nullCount"), None, None, True), sources[1]]
    problems: list[str] = []
    for source, count, nulls, lo, hi, as_json in sources:
        if count is not None and (isinstance(count, bool) or count != num_rows):
            problems.append(f"{num_rows} rows stored, {count!r} in its statistics ({source})")

        try:
            for name, column, (n, a, b), _ in _statistics_leaves(read, nulls, lo, hi):
                t = column.type
                seen = _observe(column)
                if n is not None and tight and (isinstance(n, bool) or n != seen.nulls):
                    problems.append(f"{name}: {seen.nulls} nulls stored, {n!r} in its statistics ({source})")
                elif type(n) is int and not tight and ((n == 0 and seen.nulls) or (
                        n == num_rows and seen.nulls < num_rows)):
                    # Wide bounds (tightBounds false) too: Spark skips a file for IS NULL by a null count of 0, and
                    # for IS NOT NULL and v = 1 by one of every row (measured, test_delta_round16.py).
                    problems.append(f"{name}: {seen.nulls} nulls stored, {n!r} in its statistics, which Spark skips "
                                    f"the file by with tightBounds false too ({source})")
                try:
                    a, b = (_claimed(a, t), _claimed(b, t)) if as_json else (a, b)
                except TypeError:
                    continue
                except ValueError:
                    if not recorded:  # a recorded file's: bound as the log writes them (the reader view)
                        problems.append(f"{name}: bounds {a!r} / {b!r} that are not values of the column ({source})")
                    continue
                floor = _ms_floor(seen, t)
                exact = tight and not pa.types.is_timestamp(t) and any(str(t).startswith(x) for x in _EXACT)
                exact = exact or (tight and pa.types.is_floating(t))
                if recorded:  # delta-rs writes a decimal past 17 digits as a rounded float
                    # Floats exactly (their bounds leave NaN out: the least and greatest number, -0.0 as 0.0): Spark
                    # answers MIN / MAX of a float or double from them (measured: MAX 50.0 over 1.5, 2.5), of a
                    # decimal, timestamp or string from the rows.
                    exact = exact and not pa.types.is_decimal(t)
                found = bound_problem(name, seen, a, b, exact=exact, hi_floor=floor, total_order=not recorded)
                if found is not None:
                    problems.append(f"{found} ({source})")
        except (pa.ArrowException, ValueError, TypeError) as exc:
            problems.append(f"its statistics cannot be held to its rows ({exc})")
    if recorded and isinstance(logged, str):
        try:
            problems += _spark_only_bounds(logged, read, typed, tight=tight)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            problems.append(f"its statistics cannot be held to its rows ({exc})")
    if problems and recorded:
        raise CarrierError(f"{f.path} has statistics in the log that misstate its rows — readers skip files and answer "
                           f"COUNT / MIN / MAX by them: {'; '.join(problems[:3])}", code=Code.TABLE_INCONSISTENT,
                           path=f.path)
    if problems:
        raise StatisticsMismatch(f"{f.path}, added by a rewrite, has statistics that misstate its rows — readers skip "
                                 f"files and answer COUNT / MIN / MAX by them: {'; '.join(problems[:3])}")


class _Unsure(ValueError):
    """A bound Spark's lenient parser may read as some value this check does not know for certain."""


def _spark_reads(value: Any, t: pa.DataType) -> Any:
    """A bound delta-rs reads none of, as Spark reads the log's JSON (Delta parses statistics with ``from_json``:
    Spark's JacksonParser), from the number's own text (``value`` parsed with ``parse_float=Decimal``). None where
    Spark reads null (a value that does not fit the column: Spark then skips nothing by it); _Unsure where its parser
    is more lenient than this check (a date or timestamp spelled otherwise, a number for a temporal column)."""
    import datetime as dt
    import decimal

    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_boolean(t):
        return value if isinstance(value, bool) else None
    if pa.types.is_integer(t):
        if isinstance(value, bool) or not isinstance(value, int):
            return None  # Spark reads an integer column's bound from an integer token only (measured: 5.0, "5")
        width = t.bit_width
        lo, hi = (0, 2**width - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (width - 1)), 2 ** (width - 1) - 1)
        return value if lo <= value <= hi else None  # past the type: null to Spark (measured, 4294967297 for an INT)
    if pa.types.is_floating(t):
        if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
            return float(value)
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
            return None
        return _claimed(float(value), t)  # a FLOAT column's bound as the float32 Spark reads (see _claimed)
    if pa.types.is_decimal(t):
        if isinstance(value, bool) or not isinstance(value, int | str | decimal.Decimal):
            return None
        with decimal.localcontext() as context:
            context.prec = 200
            try:
                exact = decimal.Decimal(str(value).strip() if isinstance(value, str) else value)
                # Spark's Decimal.set: the scale by ROUND_HALF_UP, then null past the precision (measured: 1e30 for
                # a decimal(10, 2) skipped no file).
                kept = exact.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP)
            except (decimal.InvalidOperation, ValueError):
                return None
            return kept if kept.is_finite() and len(kept.as_tuple().digits) <= t.precision else None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if isinstance(value, str):
            return value
        raise _Unsure(value)  # Spark reads any other JSON value as its text (measured: an object skipped the file)
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        if not isinstance(value, str):
            raise _Unsure(value)
        beyond = _beyond_bound(value, t)
        if beyond is not None:  # delta-rs writes such a bound and reads none of it, Spark reads it
            return beyond
        try:
            when: Any = (dt.date.fromisoformat(value) if pa.types.is_date32(t) and len(value) == 10
                         else dt.datetime.fromisoformat(value) if pa.types.is_timestamp(t) else None)
        except ValueError:
            when = None
        if when is None or (pa.types.is_timestamp(t) and (when.tzinfo is None) != (t.tz is None)):
            raise _Unsure(value)  # another spelling, or one read in Spark's session time zone
        # a date has no zone (date32 has no tz attribute); an instant compares in UTC
        return when.astimezone(dt.UTC) if pa.types.is_timestamp(t) and t.tz is not None else when
    return None  # binary and others: no statistics Spark skips by


def _spark_only_bounds(logged: str, read: dict[str, Any], typed: dict[str, Any], *, tight: bool) -> list[str]:
    """A recorded file's bounds that delta-rs reads none of (it reads a value it cannot parse as none, and one such
    value voids the file's statistics for it) held to its rows as Spark reads them (``_spark_reads``): soundly, and
    exactly where the check of delta-rs's reading is exact (integers, dates, booleans: Spark answered MAX from an
    integer bound delta-rs read none of, measured). delta-rs writes a decimal past 17 digits as a float it cannot
    read; Spark reads the rounded text and skipped the file holding the greatest value when it rounded down
    (measured): refused. Rounded outward, Spark reads every row (and answered MIN / MAX of a decimal from the rows,
    measured): accepted."""
    import decimal

    import pyarrow as pa

    from carriers.content_store import bound_problem

    try:
        doc = json.loads(logged, parse_float=decimal.Decimal)
    except (ValueError, RecursionError):
        return []  # malformed: Spark reads no statistics of it (nested too deep: refused by the caller)
    if not isinstance(doc, dict):
        return []
    problems: list[str] = []

    leaves = _statistics_leaves(read, doc.get("minValues"), doc.get("maxValues"), typed.get("min"), typed.get("max"))
    for name, column, (a, b, ra, rb), (_, _, rs_lo_lacks, rs_hi_lacks) in leaves:
        t = column.type
        # delta-rs's own reading is checked as it reads it. A column it keeps out of its statistics altogether
        # (past delta.dataSkippingNumIndexedCols, outside dataSkippingStatsColumns) Spark reads no bounds of
        # either (measured, test_delta_held_round13); where delta-rs reads none of the file's, all are held.
        a = None if ra is not None or rs_lo_lacks else a
        b = None if rb is not None or rs_hi_lacks else b
        if a is None and b is None:
            continue
        try:
            a, b = _spark_reads(a, t), _spark_reads(b, t)
        except _Unsure as exc:
            given = repr(exc.args[0])
            given = given if len(given) <= 60 else given[:57] + "…"
            problems.append(f"{name}: a bound {given} that delta-rs reads none of and Spark reads (a string "
                            "column's as its JSON text, a date or timestamp by its lenient parser) and skips the "
                            "file by")
            continue
        seen = _observe(column)
        floor = _ms_floor(seen, t)
        exact = (tight and not pa.types.is_timestamp(t) and not pa.types.is_decimal(t)  # floats too, as above
                 and any(str(t).startswith(x) for x in _EXACT))
        found = bound_problem(name, seen, a, b, exact=exact, hi_floor=floor)
        if found is not None:
            why = ("; delta-rs writes a decimal past 17 digits rounded through a float and reads none of it"
                   if pa.types.is_decimal(t) else "")
            problems.append(f"{found} (the log, as Spark reads it: delta-rs reads none of it, Spark skips the file "
                            f"by it{why})")
    return problems


def _check_footer(f: DataFile, meta: Any, table: pa.Table, indexes: Any = None) -> None:
    """A rewritten file's Parquet footer statistics held to its stored rows (``content_store.footer_problems``):
    delta-rs skips row groups by them whatever the log says (measured: a footer maximum of 1.0 over a NaN dropped the
    NaN row from ``x > 5``, ``x = NaN`` and ``x != 1.0`` under a log maximum of NaN), and so does Spark's reader."""
    from carriers.content_store import StatisticsMismatch, footer_problems, index_problems

    problems = footer_problems(meta, table, total_order=True, indexes=indexes)
    if indexes is not None:
        problems += index_problems(indexes, meta, table, total_order=True)
    if problems:
        raise StatisticsMismatch(f"{f.path}, added by a rewrite, has Parquet footer statistics that misstate its rows "
                                 f"— readers skip row groups by them: {'; '.join(problems[:3])}")


def _check_recorded_indexes(f: DataFile, meta: Any, table: pa.Table, indexes: Any) -> None:
    """Any digested file's (not only a rewrite's) page index, bloom filters and the footer structures pyarrow does
    not read (``content_store.index_problems``) held to its stored rows: delta-rs and parquet-mr (Spark) skip pages
    and row groups by them while a full read returns every row — measured on an appended file (tests/adversarial/
    test_record_parquet_indexes.py), attested and VERIFIED before. CarrierError ``table_inconsistent``."""
    from carriers.content_store import index_problems

    # NaN held as IEEE orders it (left out of bounds), not above every number: delta-rs's own page indexes leave NaN
    # out of a page's maximum; which NaN rows a filtered read gets then depends on the writer's layout, not a forgery.
    problems = index_problems(indexes, meta, table, total_order=False)
    if problems:
        raise CarrierError(f"{f.path} has a Parquet page index, bloom filters or footer structures that misstate its "
                           f"rows — readers skip pages and row groups by them: {'; '.join(problems[:3])}",
                           code=Code.TABLE_INCONSISTENT, path=f.path)


# Spark reads a Parquet file's dates and timestamps rebased from the hybrid Julian calendar when its footer says it
# was written so (DataSourceUtils.datetimeRebaseSpec / int96RebaseSpec): written by Spark before 3.0.0 (INT96: 3.1.0),
# or marked org.apache.spark.legacyDateTime / legacyINT96. delta-rs, pyarrow and the digest read the stored values.
_SPARK_VERSION, _LEGACY_DATETIME, _LEGACY_INT96 = (b"org.apache.spark.version", b"org.apache.spark.legacyDateTime",
                                                   b"org.apache.spark.legacyINT96")
_ANCIENT = 1900  # the rebase moves dates before 1582-10-15 and, by time zone, timestamps before about 1900


def _check_calendar(f: DataFile, footer: dict[bytes, bytes], read: dict[str, Any], int96: set[str], *,
                    rewritten: bool = True) -> None:
    """A rewritten file whose footer makes Spark rebase its dates or timestamps (above) while holding values old
    enough for the rebase to move them: Spark reads other values than delta-rs and the digest (content_changed).
    ``rewritten`` False: a file of the version being recorded (table_inconsistent: it was attested and VERIFIED
    before, test_delta_round16.py)."""
    problem = _calendar_problem(footer, read, int96)
    if problem is not None:
        raise CarrierError(f"{f.path}{', added by a rewrite,' if rewritten else ''} {problem}",
                           code=Code.CONTENT_CHANGED if rewritten else Code.TABLE_INCONSISTENT, path=f.path)


def _calendar_legacy(footer: dict[bytes, bytes]) -> tuple[bool, bool]:
    """Does Spark rebase the file's dates and timestamps (and its INT96 timestamps) from the hybrid Julian calendar,
    by its footer (above)? (False, False) for a file whose footer names no Spark writer."""
    version = footer.get(_SPARK_VERSION)
    if version is None:
        return False, False  # Spark reads by its session's rebase mode: EXCEPTION by default (an error, never others)
    said = version.decode("utf-8", "replace")
    return said < "3.0.0" or _LEGACY_DATETIME in footer, said < "3.1.0" or _LEGACY_INT96 in footer


def _calendar_problem(footer: dict[bytes, bytes], read: dict[str, Any], int96: set[str]) -> str | None:
    """Why Spark reads other dates or timestamps than the file stores (``_check_calendar``: the columns ``read``, as
    the digest reads them), said; None when it reads the stored ones. The one rule of record, rewrites and verify
    (``calendar_problem``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    legacy, legacy96 = _calendar_legacy(footer)
    if not (legacy or legacy96):
        return None
    version = footer.get(_SPARK_VERSION, b"").decode("utf-8", "replace")
    for name, column in read.items():
        t = column.type
        if not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
            continue  # nested dates are rebased too; a rewrite holding them ancient is left to the digest
        if not (legacy or (legacy96 and name in int96)) or column.null_count == len(column):
            continue
        least = _python_value(pc.min(column))
        if (isinstance(least, _Beyond) and least.raw < 0) or (
                least is not None and not isinstance(least, _Beyond) and least.year < _ANCIENT):
            return (f"holds {name} values before {_ANCIENT} and its Parquet footer says Spark {version!r} wrote it "
                    "in the legacy calendar: Spark reads them rebased from the Julian calendar, delta-rs as stored — "
                    "readers get other values")
    return None


def calendar_problem(parquet: Any, arrow: pa.Schema, fields: dict[str, dict[str, Any]],
                     partition_columns: Sequence[str], mode: str) -> str | None:
    """``_calendar_problem`` of the Parquet file ``parquet`` as readers of the table (schema ``arrow``, its fields'
    ``fields``, column mapping ``mode``) read it, for ``verify --level bytes`` (docs/verify.md, "Stored types"): the
    footer decides, and only where it makes Spark rebase are the date and timestamp columns read (cast as the digest
    casts them, ``_read_type``)."""
    import pyarrow as pa

    footer = dict(parquet.metadata.metadata or {})
    legacy, legacy96 = _calendar_legacy(footer)
    if not (legacy or legacy96):
        return None
    stored = parquet.schema_arrow
    int96 = {parquet.schema.column(i).path.split(".")[0] for i in range(len(parquet.schema))
             if parquet.schema.column(i).physical_type == "INT96"}
    wanted: dict[str, pa.DataType] = {}
    for _, _, physical, _, have, want in _stored_columns(stored, arrow, fields, partition_columns, mode):
        if any(pa.types.is_date(t) or pa.types.is_timestamp(t) for t in (have, want)):
            wanted[physical] = want
    if not wanted:
        return None
    table = parquet.read(columns=list(wanted))
    read: dict[str, Any] = {}
    for name, want in wanted.items():
        column = table.column(name)
        target = _read_type(column.type, want, name in int96)
        if target is not None and column.type != target:
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
                column = column.cast(target)
        read[name] = column
    problem = _calendar_problem(footer, read, int96)
    return None if problem is None else f"it {problem}"


def _folded(name: str) -> set[str]:
    """A column name as Spark compares names case-insensitively (Java's ``toLowerCase(Locale.ROOT)``; Python's
    ``casefold`` too, which folds more: a wider match only refuses more)."""
    return {name.lower(), name.casefold()}


def _check_case(f: DataFile, stored: pa.Schema, physical: str, folds: dict[str, list[str]], *,
                where: str = "") -> None:
    """Spark (``spark.sql.caseSensitive`` false, its default) resolves a file's top-level columns by name without
    case (ParquetReadSupport.clipParquetSchema), delta-rs and the digest by the exact name: a file holding the
    column ``physical`` under another case (``V`` for ``v``) gives Spark its values and delta-rs nulls (measured), a
    file holding it under two cases makes Spark refuse the read. Either is refused. ``folds``: the file's column names
    by their folded forms."""
    others = [name for key in _folded(physical) for name in folds.get(key, ()) if name != physical]
    if others:
        raise UnsupportedTableError(
            f"{f.path} holds column {where}{others[0]!r}, which is {physical!r} in another case: Spark matches a "
            f"file's columns by name without case, delta-rs by the exact name (a column {physical!r} "
            f"{'held beside it' if physical in stored.names else 'missing from the file'}): readers get other rows")


def _check_nested_case(f: DataFile, stored: pa.DataType, doc: Any, mapped: bool, where: str) -> None:
    """``_check_case`` for the fields nested in a column (``stored``: its type in the file, ``doc``: its type in the
    Delta schema), at every depth: Spark resolves a struct's fields by name without case as well, delta-rs by the
    exact name (measured: a file holding ``s.X`` for the field ``s.x`` read as nulls in delta-rs and as its values in
    Spark — recorded with a digest of them, VERIFIED before; tests/adversarial/test_delta_round17.py)."""
    import pyarrow as pa

    if not isinstance(doc, dict):
        return
    kind = doc.get("type")
    if kind == "struct" and pa.types.is_struct(stored):
        children = pa.schema([stored.field(i) for i in range(stored.num_fields)])
        folds: dict[str, list[str]] = {}
        for name in children.names:
            for key in _folded(name):
                folds.setdefault(key, []).append(name)
        for child in doc.get("fields") or []:
            if not isinstance(child, dict):
                continue
            physical = _physical(child) if mapped else str(child.get("name"))
            _check_case(f, children, physical, folds, where=f"{where}.")
            if children.get_field_index(physical) >= 0:
                _check_nested_case(f, children.field(children.get_field_index(physical)).type, child.get("type"),
                                   mapped, f"{where}.{physical}")
    elif kind == "array" and (pa.types.is_list(stored) or pa.types.is_large_list(stored)):
        _check_nested_case(f, stored.value_type, doc.get("elementType"), mapped, f"{where}.element")
    elif kind == "map" and pa.types.is_map(stored):
        _check_nested_case(f, stored.key_type, doc.get("keyType"), mapped, f"{where}.key")
        _check_nested_case(f, stored.item_type, doc.get("valueType"), mapped, f"{where}.value")


def _check_field_id(f: DataFile, stored: pa.Schema, physical: str, wanted: Any, *, where: str = "") -> None:
    """Column mapping by id: Spark resolves a file's columns by their Parquet field ids, delta-rs by name. A file whose
    field ids do not name the same columns as its names (or that has none) is read differently by the two: refused."""
    by_id: dict[str, str] = {}
    for field in stored:
        raw = (field.metadata or {}).get(b"PARQUET:field_id")
        if raw is not None:
            if raw.decode() in by_id:  # one id given to two columns: which one a reader by id takes is its own
                raise UnsupportedTableError(f"{f.path}: field id {raw.decode()} names two columns, "
                                            f"{where}{by_id[raw.decode()]!r} and {where}{field.name!r}")
            by_id[raw.decode()] = field.name
    if (physical in stored.names or str(wanted) in by_id) and by_id.get(str(wanted)) != physical:
        raise UnsupportedTableError(
            f"{f.path}: the column with field id {wanted} is {where}{by_id.get(str(wanted))!r}, the column named "
            f"{where}{physical!r} is another: Spark reads columns of id-mapped tables by field id, delta-rs by name")


def _check_nested_ids(f: DataFile, stored: pa.DataType, doc: Any, where: str) -> None:
    """``_check_field_id`` for the fields nested in a column of an id-mapped table (``stored``: its type in the file,
    ``doc``: its type in the Delta schema): Spark resolves struct fields by their Parquet field ids at every depth,
    delta-rs by physical name (measured: a file whose two struct fields carry each other's ids read swapped in
    Spark, as written in delta-rs — VERIFIED before)."""
    import pyarrow as pa

    if not isinstance(doc, dict):
        return
    kind = doc.get("type")
    if kind == "struct" and pa.types.is_struct(stored):
        children = pa.schema([stored.field(i) for i in range(stored.num_fields)])
        for child in doc.get("fields") or []:
            if not isinstance(child, dict):
                continue
            meta = child.get("metadata") or {}
            physical = str(meta.get("delta.columnMapping.physicalName") or child.get("name"))
            _check_field_id(f, children, physical, meta.get("delta.columnMapping.id"), where=f"{where}.")
            if children.get_field_index(physical) >= 0:
                _check_nested_ids(f, children.field(children.get_field_index(physical)).type, child.get("type"),
                                  f"{where}.{physical}")
    elif kind == "array" and (pa.types.is_list(stored) or pa.types.is_large_list(stored)):
        _check_nested_ids(f, stored.value_type, doc.get("elementType"), f"{where}.element")
    elif kind == "map" and pa.types.is_map(stored):
        _check_nested_ids(f, stored.key_type, doc.get("keyType"), f"{where}.key")
        _check_nested_ids(f, stored.item_type, doc.get("valueType"), f"{where}.value")


def rewrites_between(carrier: DeltaCarrier, attested: Version, version: Version) -> list[Rewrite] | None:
    """The file-touching commits after ``attested`` up to ``version`` when each is a rewrite: every add and remove
    ``dataChange: false``, no metaData or protocol action (a schema or protocol change is not a rewrite). None when
    any is not, or a commit is gone from the log."""
    out: list[Rewrite] = []
    commits: list[Commit] = []
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
        commits.append(commit)
        out.append(Rewrite(version=str(x), removed=tuple(f for f in removed if f is not None),
                           added=tuple(f for f in added if f is not None), operation=commit.operation))
    if commits:
        _check_partition_zones(carrier, attested, version, commits)
        _check_dropped_statistics(carrier, attested, commits)
    return out


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """A statistics map (``minValues``, ``nullCount``, ...) as its leaf values by dotted column path (nested structs
    are nested objects); a value that is null is left out (no statistic, as readers take it)."""
    out: dict[str, Any] = {}
    for key, value in (node.items() if isinstance(node, dict) else ()):
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        elif value is not None:
            out[f"{prefix}{key}"] = value
    return out


def _statistics_doc(text: Any) -> dict[str, Any] | None:
    """An add's ``stats`` as an object; None when it has none or they do not parse (``_check_statistics`` refuses
    those of a rewrite's file that do not)."""
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _dropped(doc: dict[str, Any] | None, before: Sequence[dict[str, Any] | None]) -> list[str]:
    """What an added file's statistics (``doc``) leave out that the files its rewrite removed (``before``) carried:
    ``numRecords``, a column's ``nullCount``, or its ``minValues`` / ``maxValues`` — bounds of a column the file's
    own (tight) statistics count as all null excepted (no writer bounds a column without a value)."""
    doc = doc or {}
    mins, maxes, nulls = (_leaves(doc.get(k)) for k in ("minValues", "maxValues", "nullCount"))
    count = doc.get("numRecords")
    tight = doc.get("tightBounds") is not False
    had_count, had_nulls, had_bounds = False, set[str](), set[str]()
    for old in before:
        if old is None:
            continue
        had_count = had_count or old.get("numRecords") is not None
        had_nulls |= set(_leaves(old.get("nullCount")))
        had_bounds |= set(_leaves(old.get("minValues"))) & set(_leaves(old.get("maxValues")))
    out = ["numRecords"] if had_count and count is None else []
    out += [f"nullCount.{c}" for c in sorted(had_nulls - set(nulls))]
    for c in sorted(had_bounds):
        if c in mins and c in maxes:
            continue
        # A column the file holds no value of has no bounds (Spark and delta-rs write none): its null count, held to
        # its rows exactly by _check_statistics when tight, says so.
        if tight and type(count) is int and type(nulls.get(c)) is int and nulls[c] == count:
            continue
        out.append(f"{'minValues' if c not in mins else 'maxValues'}.{c}")
    return out


def _unbounded(doc: dict[str, Any]) -> list[str]:
    """What statistics (``doc``) leave out that its own counts call for: ``numRecords``, any ``nullCount``, and the
    bounds of each column its null counts say holds a value."""
    mins, maxes, nulls = (_leaves(doc.get(k)) for k in ("minValues", "maxValues", "nullCount"))
    count = doc.get("numRecords")
    out = ["numRecords"] if count is None else []
    out += [] if nulls else ["nullCount"]
    for c, n in sorted(nulls.items()):
        if type(n) is int and type(count) is int and n >= count:
            continue  # no value: no bounds
        if c not in mins or c not in maxes:
            out.append(f"{'minValues' if c not in mins else 'maxValues'}.{c}")
    return out


def _check_dropped_statistics(carrier: DeltaCarrier, attested: Version, commits: Sequence[Commit]) -> None:
    """A rewrite's added file must keep the statistics the files it removed carried: ``numRecords``, each column's
    ``nullCount``, and ``minValues`` / ``maxValues`` of each column it holds a value of. delta-rs 1.6's filtered reads
    (``to_pyarrow_dataset``, ``to_pyarrow_table(filters=...)``) take a missing bound of a column it keeps bounds for
    as a null one and skip the file (delta-io/delta-rs#3173; measured: ``v >= 1`` returned 0 of 4 rows, Spark and
    delta-rs's own query engine all 4), so dropping them changes what a reader gets. Honest rewrites keep them (a
    column Spark bounds none of — booleans — was unbounded in the removed files too). Else CarrierError
    (content_changed). A log that no longer holds the attested version: each added file must bound every column its
    own null counts say holds a value, and state those counts."""
    from attest.errors import AttestError

    removed = {canonical_relative(str(a.get("path")))[0] for c in commits for a in c.removes}
    written: dict[str, dict[str, Any] | None] = {}
    known = True
    try:
        state = carrier.content_log(attested.number)
    except AttestError:
        known = False
    else:
        paths = [raw for raw in state.adds if canonical_relative(str(raw))[0] in removed]
        for raw, text in zip(paths, state.adds.locate(paths).values("stats"), strict=True):
            written[canonical_relative(str(raw))[0] or ""] = _statistics_doc(text)
    for commit in commits:
        rels = [canonical_relative(str(a.get("path")))[0] or "" for a in commit.removes]
        unknown = not known and any(rel not in written for rel in rels)
        before = [written.get(rel) for rel in rels]
        for add in commit.adds:
            doc = _statistics_doc(add.get("stats"))
            # The removed files' statistics gone: the file's own null counts name the columns it must bound.
            dropped = _unbounded(doc or {}) if unknown else _dropped(doc, before)
            if dropped:
                path = str(add.get("path"))[:300]
                what = (f"statistics its own counts call for (the log no longer holds version {attested.number}, "
                        "whose files' statistics it would be held to)") if unknown else \
                    "statistics the files it removed carried"
                raise CarrierError(
                    f"{path}, added by the rewrite at version {commit.version}, leaves out {what}: "
                    f"{', '.join(dropped[:4])} — delta-rs's filtered reads take a missing bound for a null one and "
                    "skip the file, a missing null count for none (delta-io/delta-rs#3173): they get other rows than "
                    "Spark",
                    code=Code.CONTENT_CHANGED, path=path)
            rel = canonical_relative(str(add.get("path")))[0]
            if rel is not None:
                written[rel] = doc


def _check_partition_zones(carrier: DeltaCarrier, attested: Version, version: Version,
                           commits: Sequence[Commit]) -> None:
    """A rewrite must keep each ``timestamp`` partition value's zone as written: delta-rs (and the digest, which folds
    its typed value in) reads ``2024-01-05 10:00:00.000000`` and ``2024-01-05T10:00:00.000000Z`` as one instant,
    Spark the first in its session time zone (measured, delta-spark 4.4 in a New York session: 15:00 UTC against
    10:00). Per rewrite and instant, the files it added must spell it as the files it removed do (all with a zone, or
    all without); else CarrierError (content_changed). A log that no longer holds the attested version: the removed
    files' spellings are unknown, so a table with such a column is not carried over (content_changed too)."""
    from attest.errors import AttestError

    meta = None
    for n in (attested.number, version.number):  # the partition columns: the attested schema's, else the version's
        try:
            meta = carrier._replay(n, whole=False)[0].metadata
            break
        except AttestError:
            continue
    fields = _schema_fields(meta)
    partitioned = {str(c) for c in (meta or {}).get("partitionColumns") or []}
    columns = [key for key, (name, f) in fields.items()
               if "." not in key and name in partitioned and isinstance(f, dict) and f.get("type") == "timestamp"]
    if meta is not None and not columns:
        return
    try:
        state = carrier._replay(attested.number)[0]
    except AttestError as exc:
        raise CarrierError(f"the log no longer holds version {attested.number}, so the time zones its timestamp "
                           "partition values were written with cannot be compared with the rewrites' (Spark reads a "
                           "value without a zone in its session time zone): not carried over by content",
                           code=Code.CONTENT_CHANGED) from exc
    paths = list(state.adds)
    located = state.adds.locate(paths).values("partitionValues")
    written: dict[str, Any] = {}
    for raw, values in zip(paths, located, strict=True):
        rel = canonical_relative(str(raw))[0]
        if rel is not None:
            written[rel] = values
    for commit in commits:
        before = [written.get(canonical_relative(str(a.get("path")))[0] or "") for a in commit.removes]
        after = [a.get("partitionValues") for a in commit.adds]
        for column in columns:
            gone = _zones(before, column)
            for instant, (zones, text) in _zones(after, column).items():
                had = gone.get(instant, (None, ""))[0]
                if had is not None and (len(had) > 1 or zones != had):
                    name = fields[column][0]
                    removed = "both ways" if len(had) > 1 else "with one" if False in had else "without one"
                    raise CarrierError(
                        f"the rewrite at version {commit.version} writes partition value {text!r} of timestamp "
                        f"column {name!r} {'without' if True in zones else 'with'} a time zone, where the files it "
                        f"removed spell it {removed}: delta-rs reads one instant, Spark a value without a zone in its "
                        "session time zone — other rows outside UTC", code=Code.CONTENT_CHANGED)
        for a in commit.adds:
            rel = canonical_relative(str(a.get("path")))[0]
            if rel is not None:
                written[rel] = a.get("partitionValues")


def _zones(values: Sequence[Any], column: str) -> dict[Any, tuple[set[bool], str]]:
    """The instants ``column`` takes in ``values`` (partition-value maps as written), each with whether it is spelled
    without a zone (True) and with one (False), and one spelling of it. An instant is delta-rs's reading (without a
    zone: UTC), in any spelling delta-rs reads (``stamp_instant``: unpadded, signed, a zone spelled ``UTC`` — round 20,
    the check parsed them with ``fromisoformat`` and missed them); another spelling is an instant of its own."""
    out: dict[Any, tuple[set[bool], str]] = {}
    for mapping in values:
        text = mapping.get(column) if isinstance(mapping, dict) else None
        if not isinstance(text, str) or not text:
            continue
        instant = stamp_instant(text)
        out.setdefault(text if instant is None else instant, (set(), text))[0].add(_zoneless(text))
    return out


def _file(carrier: DeltaCarrier, action: dict[str, Any]) -> DataFile | None:
    rel = canonical_relative(str(action.get("path")))[0]
    if rel is None:
        return None
    size = action.get("size")
    return DataFile(path=rel, size=int(size) if isinstance(size, int) else -1, kind="data",
                    location=carrier._location(rel))


# docs/content-digest.md, "Delta type widening": the type changes Delta's typeWidening feature allows (Delta protocol,
# "Type Widening"; delta-spark 4.x), as the schema names them. Decimals widen by precision (and scale) and are told
# apart by their text; these are the rest.
_WIDENINGS = frozenset({
    ("byte", "short"), ("byte", "integer"), ("byte", "long"), ("short", "integer"), ("short", "long"),
    ("integer", "long"), ("float", "double"), ("byte", "double"), ("short", "double"), ("integer", "double"),
    ("date", "timestamp_ntz"),
})
_TYPE_CHANGES = "delta.typeChanges"


def _schema_fields(meta: Any) -> dict[str, tuple[str, Any]]:
    """The schema's fields of ``meta`` (a metaData action), by dotted path of their physical names (column mapping)
    or names — what a reader's value of the field is identified by (docs/content-digest.md, "Identities") — each
    with its dotted path of names (for messages)."""
    try:
        schema = json.loads(str((meta or {}).get("schemaString")))
    except ValueError:
        return {}
    out: dict[str, tuple[str, Any]] = {}

    def walk(prefix: str, names: str, node: Any, depth: int = 0) -> None:
        if not isinstance(node, dict) or depth > 64:
            return
        for field in node.get("fields") or ():
            if not isinstance(field, dict):
                continue
            metadata = field.get("metadata")
            physical = metadata.get(_PHYSICAL) if isinstance(metadata, dict) else None
            key = f"{prefix}{physical or field.get('name')}"
            name = f"{names}{field.get('name')}"
            out[key] = (name, field)
            walk(f"{key}.", f"{name}.", field.get("type"), depth + 1)
            inner(key, name, field.get("type"), depth + 1)

    def inner(key: str, name: str, node: Any, depth: int) -> None:
        """A list's element, a map's key and value, as fields of their own (``a.element``: a widening names them)."""
        if not isinstance(node, dict) or depth > 64:
            return
        for part, label in (("elementType", "element"), ("keyType", "key"), ("valueType", "value")):
            if part in node:
                out[f"{key}.{label}"] = (f"{name}.{label}", {"type": node[part]})
                walk(f"{key}.{label}.", f"{name}.{label}.", node[part], depth + 1)
                inner(f"{key}.{label}", f"{name}.{label}", node[part], depth + 1)

    walk("", "", schema)
    return out


def _widens(stored: pa.DataType, want: pa.DataType) -> bool:
    """Is ``stored`` → ``want`` a conversion Delta's type widening makes readers apply (Arrow types)? Integers to wider
    integers, to double or to a decimal; float to double; a decimal to one of no fewer integer and fraction digits;
    date to timestamp without a zone. Exactness is the cast's (pyarrow's safe cast refuses a lossy one)."""
    import pyarrow as pa

    ints = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
    if stored in ints:
        return (want in ints and ints.index(want) > ints.index(stored)) or (
            want == pa.float64() and stored != pa.int64()) or pa.types.is_decimal(want)
    if stored == pa.float32():
        return bool(want == pa.float64())
    if pa.types.is_decimal(stored) and pa.types.is_decimal(want):
        return bool(want.scale >= stored.scale and want.precision - want.scale >= stored.precision - stored.scale)
    return pa.types.is_date32(stored) and pa.types.is_timestamp(want) and want.tz is None


def _widen_target(stored: pa.DataType, want: pa.DataType) -> bool:
    """Is ``want`` ``stored`` with some leaves widened (``_widens``) — a top-level column, or a struct's fields, a
    list's element, a map's key and value at any depth (the same field names in the same order, every other leaf of
    the same type tag)? Only then is the column cast to ``want`` (exact or refused, as for a top-level column)."""
    import pyarrow as pa

    from attest.content import type_tag

    try:
        if type_tag(stored) == type_tag(want):
            return True
    except Exception:  # an Arrow type with no encoding: not cast
        return False
    if pa.types.is_struct(stored) and pa.types.is_struct(want):
        return stored.num_fields == want.num_fields and all(
            stored.field(i).name == want.field(i).name and _widen_target(stored.field(i).type, want.field(i).type)
            for i in range(stored.num_fields))
    if (pa.types.is_list(stored) or pa.types.is_large_list(stored)) and \
            (pa.types.is_list(want) or pa.types.is_large_list(want)):
        return _widen_target(stored.value_type, want.value_type)
    if pa.types.is_map(stored) and pa.types.is_map(want):
        return _widen_target(stored.key_type, want.key_type) and _widen_target(stored.item_type, want.item_type)
    return _widens(stored, want)


def _decimal(text: str) -> tuple[int, int] | None:
    import re

    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}  # the decimal integer digits each integer needs


def _widening_allowed(a: str, b: str) -> bool:
    """Delta's type widening (protocol, "Type Widening"), by the schema's type names."""
    if (a, b) in _WIDENINGS:
        return True
    da, db = _decimal(a), _decimal(b)
    if db is None:
        return False
    if da is not None:
        return db[1] >= da[1] and db[0] - db[1] >= da[0] - da[1]
    return a in _DIGITS and db[0] - db[1] >= _DIGITS[a]


def _bare(field: dict[str, Any]) -> dict[str, Any]:
    """A schema field but its type and the ``delta.typeChanges`` its widenings add to its metadata."""
    meta = field.get("metadata")
    kept = {k: v for k, v in meta.items() if k != _TYPE_CHANGES} if isinstance(meta, dict) else meta
    return {**{k: v for k, v in field.items() if k != "type"}, "metadata": kept}


def _type_widenings(a: Any, b: Any, path: str, out: dict[str, str], depth: int = 0) -> bool:
    """Adds to ``out`` the widenings (``path`` → ``integer → long``) that make schema type ``a`` into ``b`` — a
    primitive widened, or a struct's fields, an array's element, a map's key and value widened at any depth, all
    else equal; False when they differ otherwise."""
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str):
        if not _widening_allowed(a, b):
            return False
        out[path] = f"{a} → {b}"
        return True
    if not isinstance(a, dict) or not isinstance(b, dict) or a.get("type") != b.get("type") or depth > 64:
        return False
    kind = a.get("type")
    if kind == "struct":
        fa, fb = a.get("fields"), b.get("fields")
        if not isinstance(fa, list) or not isinstance(fb, list) or len(fa) != len(fb) or \
                {k: v for k, v in a.items() if k != "fields"} != {k: v for k, v in b.items() if k != "fields"}:
            return False
        return all(isinstance(x, dict) and isinstance(y, dict) and _bare(x) == _bare(y)
                   and _type_widenings(x.get("type"), y.get("type"), f"{path}.{x.get('name')}", out, depth + 1)
                   for x, y in zip(fa, fb, strict=True))
    parts = {"array": ("elementType",), "map": ("keyType", "valueType")}.get(str(kind))
    if parts is None or {k: v for k, v in a.items() if k not in parts} != \
            {k: v for k, v in b.items() if k not in parts}:
        return False
    names = {"elementType": "element", "keyType": "key", "valueType": "value"}
    return all(_type_widenings(a.get(k), b.get(k), f"{path}.{names[k]}", out, depth + 1) for k in parts)


def widening(old_table: dict[str, Any], new_table: dict[str, Any]) -> dict[str, str] | None:
    """The columns and nested fields widened between two reader views' table parts (``schema``,
    ``partition_columns``: the attested view and the current one) — dotted path (``st.x``, ``a.element``,
    ``mp.value``) → ``integer → long`` — when that is the only difference of the two schemas (names, order,
    nullability, field metadata but ``delta.typeChanges`` all equal; the same partition columns, which may be widened
    too; each change one Delta allows). ``{}``: the schemas are equal; None: they differ otherwise — no carry-over by
    widened digests then. The views' own schemas, so that what verify then leaves out of its view comparison
    (``ContentCheck.view_keys``) is exactly what was compared here."""
    old, new = old_table.get("schema"), new_table.get("schema")
    if not isinstance(old, dict) or not isinstance(new, dict) or \
            old_table.get("partition_columns") != new_table.get("partition_columns"):
        return None
    a_fields, b_fields = old.get("fields"), new.get("fields")
    if not isinstance(a_fields, list) or not isinstance(b_fields, list) or len(a_fields) != len(b_fields) or \
            {k: v for k, v in old.items() if k != "fields"} != {k: v for k, v in new.items() if k != "fields"}:
        return None
    out: dict[str, str] = {}
    for a, b in zip(a_fields, b_fields, strict=True):
        if not isinstance(a, dict) or not isinstance(b, dict) or _bare(a) != _bare(b) or \
                not _type_widenings(a.get("type"), b.get("type"), str(a.get("name")), out):
            return None  # a rename, another type change: not carried over this way
    return out


def widened_columns(schema: pa.Schema, widened: frozenset[str]) -> frozenset[str]:
    """The top-level columns of ``schema`` that ``widened`` (``widening``'s dotted paths) are in."""
    return frozenset(name for name in schema.names
                     if any(w == name or w.startswith(f"{name}.") for w in widened))


def widened_digests(carrier: DeltaCarrier, attested: Version, version: Version, files: Sequence[DataFile],
                    identities: dict[str, tuple[int, str]], columns: frozenset[str]
                    ) -> dict[str, tuple[ContentDigest, ContentDigest]] | str:
    """Each attested file's digest as ``attested`` reads it and as ``version`` reads it after a type widening (the
    widened ``columns`` read as the wider types, every other column as before), from one read of its bytes, which
    must be the attestation's ``identities[path]`` (size, BLAKE3); a string saying why not (a file gone, changed or
    outside the table, the attested version no longer readable). The files are no longer live, so nothing else
    confined them: each is held inside the table and read as a regular file of at most its attested size, never a
    FIFO's endless wait or a link to /dev/zero."""
    import dataclasses

    import pyarrow as pa

    from attest.errors import AttestError, Problem
    from attest.hashing import hash_bytes, read_regular

    try:
        before = content_reader(carrier, attested, files)
        dt = carrier._load(version.number)
        schema_doc = json.loads(dt.schema().to_json())
        arrow = pa.schema(dt.schema().to_arrow())
        top = widened_columns(arrow, columns)
        # recorded=None: ``before`` holds each file's statistics to its rows as the attested version's log states
        # them (of the stored, narrower types); read as the wider types they are no statistics of the log.
        after = dataclasses.replace(before, arrow=arrow, widen=top | before.widen, recorded=None,
                                    fields={str(f.get("name")): f for f in schema_doc.get("fields") or []
                                            if isinstance(f, dict)},
                                    partitions=_widened_partitions(before, arrow, top))
    except AttestError as exc:
        return f"{carrier.noun} {attested.id} cannot be read again: {exc.message}"
    except (ValueError, pa.ArrowException) as exc:  # a partition value the wider type cannot hold exactly
        return f"the partition values of {carrier.noun} {attested.id} cannot be read as the wider types: {exc}"
    outside: list[Problem] = []
    carrier._confine(files, outside)
    if outside:
        return outside[0].message
    out: dict[str, tuple[ContentDigest, ContentDigest]] = {}
    for f in files:
        size, digest = identities.get(f.path, (-1, ""))
        local = carrier.storage.local_of(f.location)
        try:
            if local is not None:
                data = read_regular(local, size + 1)
            else:
                with contextlib.closing(carrier.storage.open_location(f.location)) as handle:
                    data = handle.read(size + 1)
        except (OSError, AttestError) as exc:  # gone (VACUUM), not a regular file, or a store's coded failure
            return f"{f.path}, removed by a rewrite, cannot be read: {getattr(exc, 'message', None) or exc}"
        if len(data) != size or hash_bytes(data) != digest:
            return f"{f.path}, removed by a rewrite, no longer holds the attested bytes"
        try:
            a, b = before.digest(f, carrier.storage, data), after.digest(f, carrier.storage, data)
        except AttestError as exc:
            return f"{f.path} cannot be read again: {exc.message}"
        if a is None or b is None:
            return f"{f.path}, removed by a rewrite, is no longer in storage"
        out[f.path] = (a, b)
    return out


def _widened_partitions(before: DeltaContentReader, arrow: pa.Schema, columns: frozenset[str]
                        ) -> dict[str, dict[str, Any]]:
    """Each file's partition values as the attested version typed them, the widened partition columns cast to the
    wider type (Delta readers upcast partition values as they do stored values; pyarrow's safe cast: exact or
    refused)."""
    import pyarrow as pa

    wide = [c for c in before.partition_columns if c in columns and c in arrow.names and c in before.arrow.names]
    if not wide:
        return before.partitions
    out: dict[str, dict[str, Any]] = {}
    for path, values in before.partitions.items():
        cast = dict(values)
        for c in wide:
            if cast.get(c) is not None:
                cast[c] = pa.array([cast[c]], before.arrow.field(c).type).cast(arrow.field(c).type)[0].as_py()
        out[path] = cast
    return out


def _type_text(t: Any) -> str:
    return t if isinstance(t, str) else str((t or {}).get("type") if isinstance(t, dict) else t)


def rows_read(carrier: DeltaCarrier, attested: Version, paths: Sequence[str]) -> dict[str, int]:
    """The rows readers of ``attested`` got from each of ``paths`` carrying a deletion vector: its add's
    ``numRecords`` (every stored row, as Delta's statistics count them) less the vector's ``cardinality``. Where the
    log no longer holds that version, or an add states neither, nothing is known of it."""
    from attest.errors import AttestError

    wanted = set(paths)
    try:
        state = carrier._replay(attested.number)[0]
    except AttestError:
        return {}
    out: dict[str, int] = {}
    for raw, add in state.adds.having("deletionVector"):
        vector, rel = add.get("deletionVector"), canonical_relative(str(raw))[0]
        if not isinstance(vector, dict) or rel not in wanted:
            continue
        try:
            stored = json.loads(add.get("stats") or "null")
        except ValueError:
            continue
        records, deleted = (stored or {}).get("numRecords") if isinstance(stored, dict) else None, \
            vector.get("cardinality")
        if type(records) is int and type(deleted) is int and 0 <= deleted <= records:
            out[rel] = records - deleted
    return out


def widened(carrier: DeltaCarrier, attested: Version, version: Version) -> list[str]:
    """The columns whose type changed between ``attested`` and ``version`` (``id: integer → long``), marked
    "widened" when the change is one Delta's typeWidening allows (``_widening_allowed``): a
    content digest encodes each value's type, so a rewrite after it is ``content_changed`` though the values read are
    equal. Read from the log's own replay (delta-rs cannot load a version with the typeWidening reader feature).
    Empty when none changed or a schema cannot be read (the message then names no column)."""
    from attest.errors import AttestError

    try:
        before = _schema_fields(carrier._replay(attested.number, whole=False)[0].metadata)
        after = _schema_fields(carrier._replay(version.number, whole=False)[0].metadata)
    except AttestError:
        return []
    out: list[str] = []
    for key, (name, field) in after.items():
        old = before.get(key)
        if old is None:
            continue
        a, b = _type_text(old[1].get("type")), _type_text(field.get("type"))
        if a == b or a in ("struct", "array", "map") or b in ("struct", "array", "map"):
            continue  # nested types: their fields are listed themselves
        kind = "widened" if _widening_allowed(a, b) else "type changed"
        out.append(f"{name}: {a} → {b} ({kind})")
    return out
