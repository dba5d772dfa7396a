"""Reading an Iceberg snapshot's manifests as the table format version writes them, and what their summaries claim.

pyiceberg 0.12 reads v3 manifests with the v2 schema (losing deletion-vector offsets and row lineage) and caches
manifest lists process-wide by path: the carrier reads them here itself, through pyiceberg's Avro reader, with the
format version's own schema (``ManifestReader``, a part of ``IcebergCarrier``). ``_summary_problems``: where the
manifest list's summary of a manifest says other than its entries; ``_canonical_uri``: a location readers resolve
differently.
"""

from __future__ import annotations

import functools
import json
import math
import struct
import zlib
from collections.abc import Container, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from attest.errors import AttestError, Code, Problem
from attest.numbers import is_digits
from attest.view import json_safe

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["ManifestReader"]

# Data-file fields of v3's manifest schema that v2's lacks. Java's v2 manifests carry referenced_data_file, which Java
# readers scope a position delete file by and pyiceberg 0.12 reads for v3 only (measured with Spark 4.1 / Iceberg 1.12:
# a v2 delete file referenced to one data file and holding a row of another, Spark kept the row, pyiceberg deleted it).
_V3_ONLY = ("first_row_id", "referenced_data_file", "content_offset", "content_size_in_bytes")


class ManifestReader:
    """The manifest reading of ``IcebergCarrier`` (its ``table``)."""

    table: Table

    def _manifest_entries(self, snapshot: Snapshot, *, only: Container[str] | None = None,
                          ) -> tuple[list[dict[str, Any]], list[Problem]]:
        """Live data-file records of a snapshot, read with the table format version's own manifest schema, and where
        the manifest list's summary of a manifest contradicts the manifest (:func:`_summary_problems`). ``only``: the
        paths of the manifests to read (the others are skipped)."""
        from pyiceberg.avro.file import AvroFile
        from pyiceberg.manifest import MANIFEST_ENTRY_SCHEMAS, ManifestEntryStatus

        fv = max(2, int(self.table.metadata.format_version))
        # Read with v3's schema whatever the version: Iceberg Java reads a v2 manifest's referenced_data_file too (its
        # v2 writer writes it), and scopes a position delete file by it (_JAVA_ONLY).
        schema = MANIFEST_ENTRY_SCHEMAS[3]
        entry_names = [f.name for f in schema.fields]
        file_type: Any = schema.find_field("data_file").field_type
        file_names = [f.name for f in file_type.fields]
        out: list[dict[str, Any]] = []
        problems: list[Problem] = []
        partition_types: dict[int, Any] = {}
        reason = _canonical_uri(str(snapshot.manifest_list))
        if reason is not None:
            return out, [Problem(Code.PATH_AMBIGUOUS, f"manifest list {snapshot.manifest_list!r}: {reason}",
                                 str(snapshot.manifest_list))]
        for manifest, first_row_id in self._manifest_list(snapshot, fv):
            reader: Any
            if only is not None and str(manifest.manifest_path) not in only:
                continue
            reason = _canonical_uri(str(manifest.manifest_path))
            if reason is not None:
                problems.append(Problem(Code.PATH_AMBIGUOUS, f"manifest {manifest.manifest_path!r}: {reason}",
                                        str(manifest.manifest_path)))
                continue
            inherited = int(manifest.sequence_number or 0)
            content = int(getattr(manifest.content, "value", manifest.content) or 0)
            statuses: list[int] = []
            live: list[dict[str, Any]] = []
            # v3 row lineage: a data file without a first_row_id takes its manifest's, plus the rows of the live files
            # before it in the manifest that had none (Iceberg spec, "First Row ID Inheritance"; Iceberg Java skips
            # deleted entries); readers' _row_id.
            next_row_id = first_row_id if content == 0 else None
            with unreadable_avro(f"manifest {manifest.manifest_path}"), \
                    AvroFile(self.table.io.new_input(manifest.manifest_path), schema, read_types={},
                             read_enums={}) as reader:
                renumbered = self._partition_ids_problem(reader.header.meta.get("avro.schema"),
                                                         manifest.partition_spec_id)
                if renumbered is not None:
                    problems.append(Problem(Code.TABLE_INCONSISTENT, f"manifest {manifest.manifest_path}: "
                                            f"{renumbered}", str(manifest.manifest_path)))
                for record in reader:
                    entry = dict(zip(entry_names, record._data, strict=False))
                    status = entry.get("status")
                    statuses.append(int(status or 0))
                    data_file = dict(zip(file_names, entry["data_file"]._data, strict=False))
                    if fv < 3:  # the v2 record as before (views attested before compare on it), Java's extra apart
                        data_file["java_referenced_data_file"] = data_file.get("referenced_data_file")
                        for name in _V3_ONLY:
                            data_file.pop(name, None)
                    if status == ManifestEntryStatus.DELETED.value:
                        continue  # Java's idAssigner gives a deleted entry no id: it takes none from the range
                    if fv >= 3 and content == 0 and first_row_id is None:
                        # Iceberg Java (ManifestReader.idAssigner) reads a committed data manifest the list gives no
                        # first_row_id as holding no row ids: every entry's first_row_id null, explicit ones too.
                        # Kept as written, a list rewritten in place without it gave Spark null _row_ids while the
                        # view and digests kept the attested ones (VERIFIED before).
                        data_file["first_row_id"] = None
                    elif next_row_id is not None and data_file.get("first_row_id") is None:
                        data_file["first_row_id"] = next_row_id
                        next_row_id += int(data_file.get("record_count") or 0)
                    data_file["spec_id"] = manifest.partition_spec_id
                    data_file["manifest_content"] = content
                    data_file["manifest_path"] = manifest.manifest_path
                    # The data sequence number decides which delete files apply to the file (Iceberg spec, "Sequence
                    # Number Inheritance"): an added entry without one takes its manifest's, as every reader does.
                    sequence = entry.get("sequence_number")
                    if sequence is None and (inherited == 0 or status == ManifestEntryStatus.ADDED.value):
                        sequence = inherited
                    data_file["data_sequence_number"] = sequence
                    live.append(data_file)
            spec_id = manifest.partition_spec_id
            if spec_id not in partition_types:
                partition_types[spec_id] = self._partition_type(spec_id)
            problems += _summary_problems(manifest, statuses, live, partition_types[spec_id])
            out += live
        return out, problems

    def _manifest_list(self, snapshot: Snapshot, format_version: int) -> list[tuple[Any, int | None]]:
        """(manifest, its first_row_id) for each manifest of the snapshot's list, as the file says now:
        Snapshot.manifests() serves records cached process-wide by manifest path (a list rewritten in place would go
        unseen by a long-lived process), and reads no first_row_id (pyiceberg reads every list as a v2 one)."""
        from pyiceberg.avro.file import AvroFile
        from pyiceberg.manifest import (
            MANIFEST_LIST_FILE_SCHEMAS,
            ManifestContent,
            ManifestFile,
            PartitionFieldSummary,
            read_manifest_list,
        )

        source = self.table.io.new_input(snapshot.manifest_list)
        with unreadable_avro(f"manifest list {snapshot.manifest_list}"):
            if format_version < 3:
                return [(m, None) for m in read_manifest_list(source)]
            schema = MANIFEST_LIST_FILE_SCHEMAS[3]
            position = [f.name for f in schema.fields].index("first_row_id")
            reader: Any
            with AvroFile(source, schema, read_types={-1: ManifestFile, 508: PartitionFieldSummary},
                          read_enums={517: ManifestContent}) as reader:
                return [(m, m._data[position] if len(m._data) > position else None) for m in reader]

    def _partition_ids_problem(self, avro_schema: Any, spec_id: int) -> str | None:
        """Why the partition tuples of a manifest whose Avro schema is ``avro_schema`` (its header's JSON) are read
        otherwise by Iceberg Java than by pyiceberg (None when they are not). Java reads a manifest with its spec's
        partition type (the table's spec of the list's ``partition_spec_id``), projecting the tuple's fields by
        field id: a field the file numbers otherwise is read as null. pyiceberg, and this reader, take the file's
        fields by position. Measured (Spark 4.1 / Iceberg 1.12, pyiceberg 0.12): a delete manifest rewritten with
        its partition field numbered 1001 rather than the spec's 1000 — Spark read the position delete file's
        partition as null and returned the deleted row, pyiceberg applied it, and the table was attested (round
        19). Writers write the spec's ids. Likewise the fields' types: Java reads the spec's, pyiceberg the file's
        (:func:`_partition_type_kept` lists the ones both read alike)."""
        spec = self.table.metadata.specs().get(spec_id)
        if spec is None or not isinstance(avro_schema, str):
            return None
        wanted = [int(f.field_id) for f in spec.fields]
        partition_type = self._partition_type(spec_id)
        types = [f.field_type for f in getattr(partition_type, "fields", None) or []]
        key = (avro_schema, tuple(wanted), tuple(str(t) for t in types))
        if key in _PARTITION_IDS:
            return _PARTITION_IDS[key]
        why: str | None = None
        try:
            found = _avro_partition_fields(json.loads(avro_schema))
        except (ValueError, TypeError, KeyError, AttributeError):
            found = None
        # A schema whose tuple is not found as a record here (a named type referenced, say) is left as it is: no
        # writer's is, and an honest table is never refused on a guess.
        if found is not None and [i for i, _ in found] != wanted:
            why = (f"its partition tuple's fields carry field ids {[i for i, _ in found]}, its spec {spec_id}'s are "
                   f"{wanted}: Iceberg Java reads the tuple by the spec's field ids (a field numbered otherwise reads "
                   "as null), pyiceberg by position — readers apply deletes and filters to other partitions")
        elif found is not None and len(types) == len(found):
            # Java reads each field as the spec's type (an Avro int promoted to a long, a float to a double), pyiceberg
            # as the file's: a value of another type (a string "2", a double 2.0 for a long 2) no longer equals the
            # data file's in pyiceberg's delete matching. Measured (pyiceberg 0.12): a delete manifest writing p = 2
            # as a string or a double, the position delete no longer applied, the deleted row read back — recorded
            # before (round 19b). Writers write the spec's types (an old manifest keeps a promoted column's narrower
            # one, which every reader widens alike).
            for (fid, stored), spec_type in zip(found, types, strict=True):
                if not _partition_type_kept(stored, spec_type):
                    why = (f"its partition tuple's field {fid} is stored as {stored}, its spec {spec_id}'s type is "
                           f"{spec_type}: Iceberg Java reads the spec's type, pyiceberg the file's — readers match "
                           "deletes and filters to other partitions")
                    break
        if len(_PARTITION_IDS) < 4096:
            _PARTITION_IDS[key] = why
        return why

    def _partition_type(self, spec_id: int) -> Any:
        """The partition tuple's type under spec ``spec_id`` (None when the current schema cannot resolve it)."""
        spec = self.table.metadata.specs().get(spec_id)
        try:
            return None if spec is None else spec.partition_type(self.table.metadata.schema())
        except Exception:  # a source column dropped since: bounds are then not compared (counts still are)
            return None

    def java_summary_skips(self, snapshot: Snapshot, data: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """For each data file of ``data`` (DataFile.path -> its manifest record) whose uuid partition value the manifest
        list's summary of its manifest excludes in Iceberg Java's order (two signed longs): why, by path. Java's
        manifest-list pruning then skips the manifest for ``u = <that value>``. pyiceberg's manifest writer takes the
        summary bytewise (``10000000-…``..``90000000-…`` over both: an empty range to Java): measured (Spark 4.1 /
        Iceberg 1.12), a ``replace`` so written hid both rows of a table partitioned by ``identity(u)`` from Spark's
        ``u = …`` that Spark's own insert had shown (tests/adversarial/test_iceberg_round16b.py). The judge holds a
        rewrite's files to it (content_changed), as their own bounds (``content._java_uuid_skips``)."""
        from pyiceberg.conversions import from_bytes
        from pyiceberg.types import UUIDType

        wanted: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for path, df in data.items():
            wanted.setdefault(str(df.get("manifest_path")), []).append((path, df))
        out: dict[str, str] = {}
        fv = max(2, int(self.table.metadata.format_version))
        for manifest, _ in self._manifest_list(snapshot, fv):
            files = wanted.get(str(manifest.manifest_path))
            partition_type = None if not files else self._partition_type(manifest.partition_spec_id)
            fields = list(getattr(partition_type, "fields", None) or [])
            summaries = manifest.partitions or []
            if not files or len(fields) != len(summaries):  # a count mismatch: _summary_problems says so
                continue
            for i, (field, summary) in enumerate(zip(fields, summaries, strict=True)):
                if not isinstance(field.field_type, UUIDType) or summary.lower_bound is None \
                        or summary.upper_bound is None:
                    continue
                try:
                    lo, hi = (_uuid_bytes(from_bytes(field.field_type, b))
                              for b in (summary.lower_bound, summary.upper_bound))
                except Exception:  # hostile bytes: _summary_problems says so
                    continue
                for path, df in files:
                    value = _partition_value(df.get("partition"), i)
                    if value is None or path in out:
                        continue
                    if not _java_key(lo) <= _java_key(_uuid_bytes(value)) <= _java_key(hi):
                        out[path] = (f"the manifest list's summary of its manifest {manifest.manifest_path} bounds "
                                     f"{field.name} by {lo.hex()}..{hi.hex()}, which Iceberg Java (uuids as two signed "
                                     f"longs) takes to exclude the file's {_uuid_bytes(value).hex()} — Spark's "
                                     f"{field.name} = <value> skips the manifest")
        return out

    def record_of(self, data_file: Any, spec_id: int) -> dict[str, Any]:
        """An in-memory pyiceberg DataFile as the field-name record a manifest read gives back."""
        from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION

        names = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields]
        record = dict(zip(names, data_file._data, strict=False))
        record["spec_id"] = spec_id
        return record


# (a manifest's Avro schema, its spec's partition field ids) -> why readers read its tuples otherwise (or None):
# manifests of one writer share a schema, so each is parsed once.
_PARTITION_IDS: dict[tuple[str, tuple[int, ...], tuple[str, ...]], str | None] = {}


def _avro_partition_fields(entry: Mapping[str, Any]) -> list[tuple[int | None, Any]] | None:
    """The field ids and types (as pyiceberg converts them; None where it cannot) of the ``data_file.partition``
    record's fields in a manifest entry's Avro schema, in order (id None for a field without one); None when the
    schema has no such record."""
    from pyiceberg.utils.schema_conversion import AvroSchemaConversion

    def field(record: Any, name: str) -> Any:
        for f in record.get("fields", []) if isinstance(record, Mapping) else []:
            if isinstance(f, Mapping) and f.get("name") == name:
                t = f.get("type")
                return next((x for x in t if isinstance(x, Mapping)), None) if isinstance(t, list) else t
        return None

    partition = field(field(entry, "data_file"), "partition")
    if not isinstance(partition, Mapping) or partition.get("type") != "record":
        return None
    out: list[tuple[int | None, Any]] = []
    for f in partition.get("fields", []):
        fid = f.get("field-id") if isinstance(f, Mapping) else None
        try:
            stored: Any = AvroSchemaConversion()._convert_field({**f, "field-id": 0}).field_type
        except Exception:  # a type pyiceberg cannot read: not judged here (pyiceberg refuses the manifest)
            stored = None
        out.append((int(fid) if isinstance(fid, int) or (isinstance(fid, str) and is_digits(fid)) else None, stored))
    return out


def _partition_type_kept(stored: Any, spec_type: Any) -> bool:
    """Whether a partition field stored as ``stored`` (an Iceberg type) is read alike by Iceberg Java (as
    ``spec_type``) and pyiceberg (as ``stored``): the same type, a promotion both make (int to long, float to double,
    a decimal to a wider one of its scale), an int for a date or a date for an int (both days since the epoch), a
    timestamp with or without a zone for the other (microseconds either way, the Avro ``adjust-to-utc`` flag apart)."""
    from pyiceberg.types import (
        DateType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        TimestampType,
        TimestamptzType,
    )

    if stored is None or stored == spec_type:
        return True
    pair = (type(stored), type(spec_type))
    if pair in ((IntegerType, LongType), (FloatType, DoubleType), (IntegerType, DateType), (DateType, IntegerType),
                (TimestampType, TimestamptzType), (TimestamptzType, TimestampType)):
        return True
    return isinstance(stored, DecimalType) and isinstance(spec_type, DecimalType) \
        and stored.scale == spec_type.scale and stored.precision <= spec_type.precision


# Characters urlsplit treats specially after "scheme://": a fragment, a query, and the tab and newlines it removes
# (looked for one by one in _canonical_uri).
_FAST_REFUSED = frozenset("#?\t\r\n")


def _canonical_uri(path: str) -> str | None:
    """Why a file's absolute location (a data or delete file, a manifest, a manifest list) would be read differently
    by different FileIOs or from different working directories (None when it would not)."""
    if path[:8] == "file:///" and "#" not in path and "?" not in path and "\t" not in path and "\r" not in path \
            and "\n" not in path:
        # urlparse gives such a location scheme file, no host and the path after "file://" (local_path_of): only the
        # segment and character checks below are left to make (a call per live file). The characters are looked for
        # one by one (a set built of the whole location cost ~2 µs a file: docs/scale.md, seventeenth pass), and the
        # path after "file://", which starts with "/", has an empty, "." or ".." segment exactly when it holds "//",
        # "/./" or "/../" once a "/" is put after it (each segment is then between two slashes).
        body = path[7:] + "/"
        if "//" in body or "/./" in body or "/../" in body or "\\" in path or "\x00" in path:
            return "'.', '..' or empty segments (Hadoop FileIO normalises them, object stores do not)"
        return None
    from urllib.parse import urlparse

    try:
        parsed = urlparse(path)
    except ValueError:  # "s3://[b/k": urlsplit refuses an unbalanced '[' in the authority, other parsers read a bucket
        return "an authority with an unbalanced '[' or ']' (URI parsers refuse or read it differently)"
    if len(parsed.scheme) <= 1 and not path.startswith("/"):
        return "a relative path"
    if parsed.scheme == "file" and (parsed.netloc or not parsed.path.startswith("/")):
        # pyiceberg reads file://host/p and file:p as the relative path host/p or p, from its working directory
        # (measured: rows from '/', FileNotFoundError from /tmp); Hadoop refuses a host ("Wrong FS").
        return "a file URI with a host or a relative path: readers resolve it against their working directory"
    if len(parsed.scheme) > 1 and parsed.scheme != "file" and not path[len(parsed.scheme) + 1:].startswith("//"):
        return "a URI without '//' after its scheme (FileIOs parse it differently, or refuse it)"
    body = parsed.path if len(parsed.scheme) > 1 else path
    segments = body.split("/")[1:]
    if any(s in ("", ".", "..") for s in segments) or "\\" in path or "\x00" in path:
        return "'.', '..' or empty segments (Hadoop FileIO normalises them, object stores do not)"
    if "#" in path or "?" in path:
        # Measured: pyiceberg read x.parquet for file:///t/x.parquet#f; Hadoop FileIO reads the whole name, Java's
        # S3FileIO drops a query and a fragment from an s3:// key.
        return "a '#' or '?' in the location (some FileIOs read the file named before it, others the whole name)"
    return None


def _summary_problems(manifest: Any, statuses: list[int], live: list[dict[str, Any]],
                      partition_type: Any) -> list[Problem]:
    """Where the manifest list's summary of a manifest says other than the manifest's entries. Readers plan with the
    summary before they open a manifest: Java skips a manifest whose added and existing counts are zero, Java and
    pyiceberg skip one whose partition bounds exclude a query's filter, pyiceberg skips delete manifests listed below
    the data manifests' smallest sequence number (carriers/iceberg/deletes.py). A summary narrower than its manifest
    hides rows from some readers or queries, with every file and byte intact (a wider one only costs planning time, as
    writers may make it)."""
    path = manifest.manifest_path
    out: list[Problem] = []

    def inconsistent(what: str) -> None:
        out.append(Problem(Code.TABLE_INCONSISTENT, f"the manifest list says manifest {path} {what}: readers that plan "
                           "with the summary skip rows others read", path))

    for label, status, claimed in (("added", 1, manifest.added_files_count),
                                   ("existing", 0, manifest.existing_files_count),
                                   ("deleted", 2, manifest.deleted_files_count)):
        real = statuses.count(status)
        if claimed is not None and claimed != real:
            inconsistent(f"holds {claimed} {label} file(s), it holds {real}")
    sequences = [df["data_sequence_number"] for df in live if isinstance(df.get("data_sequence_number"), int)]
    claimed_min = manifest.min_sequence_number
    if sequences and claimed_min is not None and claimed_min > min(sequences):
        inconsistent(f"holds no file older than sequence number {claimed_min}, it holds one of {min(sequences)}")
    # No writer writes an entry newer than its manifest (added entries inherit the manifest's number, existing ones
    # are older). pyiceberg skips a delete manifest listed below the smallest min_sequence_number of the data
    # manifests a query's partition filter keeps: an entry given its number explicitly and its manifest listed lower
    # kept the full read's plan (and every view) while a filtered read brought the deleted row back (round 19,
    # VERIFIED before).
    listed = manifest.sequence_number
    if sequences and isinstance(listed, int) and max(sequences) > listed:
        inconsistent(f"was added at sequence number {listed}, it holds a file of data sequence number "
                     f"{max(sequences)}")
    summaries = manifest.partitions or []
    fields = list(getattr(partition_type, "fields", None) or [])
    if partition_type is None or len(summaries) != len(fields):
        if partition_type is not None and live and summaries:
            inconsistent(f"has {len(summaries)} partition summaries for {len(fields)} partition fields")
        return out
    from pyiceberg.conversions import from_bytes
    from pyiceberg.types import DoubleType, FloatType, UUIDType

    for i, (field, summary) in enumerate(zip(fields, summaries, strict=True)):
        values = [_partition_value(df.get("partition"), i) for df in live]
        if summary.contains_null is False and any(v is None for v in values):
            inconsistent(f"has no null {field.name} partition value, it has one")
        present = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
        if summary.contains_nan is False and len(present) + values.count(None) < len(values):
            inconsistent(f"has no NaN {field.name} partition value, it has one")
        if not present:
            continue
        try:
            low = None if summary.lower_bound is None else from_bytes(field.field_type, summary.lower_bound)
            high = None if summary.upper_bound is None else from_bytes(field.field_type, summary.upper_bound)
        except Exception:  # hostile bytes (struct.error, UnicodeDecodeError, ...): never a crash
            inconsistent(f"has {field.name} partition bounds that are not {field.field_type} values")
            continue
        try:
            if isinstance(field.field_type, UUIDType):
                outside = _uuids_outside(present, low, high)
            elif isinstance(field.field_type, FloatType | DoubleType):
                outside = _floats_outside(present, low, high)
            else:
                outside = [v for v in present if low is None or high is None or not low <= v <= high]
        except TypeError:  # a value this reader does not compare with its bound (a promoted type): not judged
            continue
        if outside:
            inconsistent(f"holds {field.name} partition values in [{low!r}, {high!r}], it holds {outside[0]!r}")
    return out


def _floats_outside(present: list[Any], low: Any, high: Any) -> list[Any]:
    """The float / double partition values of ``present`` (NaN left out) outside a summary's ``[low, high]`` in
    Iceberg Java's order, ``Double.compare``'s (``-0.0 < 0.0``), by which it prunes manifests; pyiceberg compares with
    Python's ``<=`` (``-0.0 == 0.0``), a wider range. Measured (Spark 4.1 / Iceberg 1.12): a summary ``[-0.0, -0.0]``
    of a manifest of partition ``x = 0.0`` made Spark's ``WHERE x = 0.0`` skip it (no row; pyiceberg's filtered read
    and the full read: every row), VERIFIED before (tests/adversarial/test_iceberg_round17c.py). Java's own summaries
    are in its order, so they hold."""
    if low is None or high is None:
        return list(present)
    lo, hi = _java_float_key(low), _java_float_key(high)
    return [v for v in present if not lo <= _java_float_key(v) <= hi]


def _java_float_key(value: float) -> tuple[float, int]:
    """A key ordering floats as ``Double.compare`` does: by value, ``-0.0`` below ``0.0`` (a NaN bound compares false
    both ways, so it holds no value: no writer's summary has one, NaN being counted apart)."""
    return value, 0 if math.copysign(1.0, value) < 0 else 1


def _uuids_outside(present: list[Any], low: Any, high: Any) -> list[Any]:
    """The uuid partition values of ``present`` outside a summary's ``[low, high]`` in both readers' orders: pyiceberg
    compares uuids bytewise, Iceberg Java (1.12) as two signed longs and writes its summaries so (Spark's own manifest
    of 10000000-… and 90000000-… says lower 90000000-…, upper 10000000-…; measured). A value inside in either order is
    passed (each engine's honest summary); one outside both is skipped by both. The tuple holds bytes or ``UUID``s,
    the bounds ``UUID``s: compared as they were, every value raised TypeError and no uuid summary was judged (a
    summary narrowed to hide a partition from Java's ``u = …`` verified)."""
    if low is None or high is None:
        return list(present)
    lo, hi = _uuid_bytes(low), _uuid_bytes(high)
    return [v for v in present
            if not lo <= _uuid_bytes(v) <= hi and not _java_key(lo) <= _java_key(_uuid_bytes(v)) <= _java_key(hi)]


def _uuid_bytes(value: Any) -> bytes:
    """A uuid partition value or bound (a ``UUID`` or its 16 bytes) as its bytes."""
    import uuid

    return value.bytes if isinstance(value, uuid.UUID) else bytes(value)


def _java_key(value: bytes) -> tuple[int, int]:
    """A uuid's place in Iceberg Java's order: its most and least significant 8 bytes each as a signed long."""
    return int.from_bytes(value[:8], "big", signed=True), int.from_bytes(value[8:16], "big", signed=True)


def _partition_value(partition: Any, i: int) -> Any:
    data = getattr(partition, "_data", partition)
    try:
        return _plain(data[i])
    except (IndexError, KeyError, TypeError):
        return None


# Values ``_plain`` gives back as they are: these exact types (an enum member's type is its enum class, a Record's its
# own), checked first because most values of a manifest entry are such scalars and the checks below cost far more
# (pyiceberg's Record is a Protocol subclass: isinstance against it runs typing's protocol check).
_PLAIN_TYPES = frozenset({int, str, bytes, float, bool, type(None)})


# Per value type, which branch of ``_plain`` it takes: 1 an enum member, 2 a Record, 3 a Mapping, 0 none of these (a
# value with an ``items`` attribute is still looked at one by one). isinstance against Record runs typing's protocol
# check and against Mapping the ABC's: once per type here rather than once per value (both depend on the type alone).
_BRANCHES: dict[type, int] = {}


def _branch(kind: type) -> int:
    import enum

    from pyiceberg.typedef import Record

    if issubclass(kind, enum.Enum):  # before int/str: DataFileContent is an IntEnum, FileFormat a str enum
        return 1
    if issubclass(kind, Record):
        return 2
    return 3 if issubclass(kind, Mapping) else 0


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return value
    branch = _BRANCHES.get(kind)
    if branch is None:
        branch = _BRANCHES[kind] = _branch(kind)
    if branch == 1:
        return value.value
    if branch == 2:
        return [_plain(v) for v in value._data]
    if branch == 3 or hasattr(value, "items"):
        # pyiceberg's LazyDict (a manifest's maps) builds a dict once; its Mapping items() looks each key up in
        # Python. The same pairs either way.
        held = value._dict or value._build_dict() if kind is _lazy_dict() else dict(value.items())
        return {str(k): _plain(v) for k, v in sorted(held.items())}
    return value


_SCALARS = frozenset({int, str, bool, type(None)})


def view_value(value: Any) -> Any:
    """``json_safe(_plain(value))``, a manifest entry's value as its file's view holds it, with the maps of an entry
    (column sizes, counts, bounds: pyiceberg LazyDicts of scalars) made in one pass rather than two (a call per value
    of every live file). The same value: tests/iceberg/test_iceberg_fast_paths.py."""
    kind = type(value)
    if kind in _SCALARS:  # json_safe and _plain give these back as they are
        return value
    if kind is dict or kind is _lazy_dict():
        held = value if kind is dict else value._dict or value._build_dict()
        # _plain's {str(k): _plain(v)} in key order, then json_safe's per value (a str key is kept as it is).
        # A bound is bytes: json_safe's {"bytes": hex} made here.
        return {str(k): v if type(v) in _SCALARS else {"bytes": v.hex()} if type(v) is bytes else json_safe(_plain(v))
                for k, v in sorted(held.items())}
    branch = _BRANCHES.get(kind)
    if branch is None:
        branch = _BRANCHES[kind] = _branch(kind)
    if branch == 2:  # a Record (a partition tuple): json_safe of _plain's list is json_safe(_plain(v)) of each value
        return [view_value(v) for v in value._data]
    return json_safe(value.value if branch == 1 else _plain(value))


@functools.cache
def _lazy_dict() -> type:
    from pyiceberg.utils.lazydict import LazyDict

    return LazyDict


# What pyiceberg's Avro reader raises on bytes that are no Avro of the expected schema: a header whose schema is not
# JSON or not UTF-8 (JSONDecodeError, UnicodeDecodeError: ValueErrors), a block cut short (EOFError), a deflated block
# that does not inflate (zlib.error), a varint or length out of range (struct.error, OverflowError, IndexError,
# MemoryError; a negative length reaches its C decoder as SystemError), a record of another shape (KeyError,
# TypeError, AttributeError, AssertionError). Found fuzzing (round 32): each was an internal error. Never an OSError
# (a missing or unreadable file is coded apart) nor our own AttestError.
_AVRO_REFUSALS: tuple[type[BaseException], ...] = (
    ValueError, EOFError, zlib.error, struct.error, OverflowError, IndexError, MemoryError, SystemError, KeyError,
    TypeError, AttributeError, AssertionError, RecursionError)


@contextmanager
def unreadable_avro(what: str) -> Iterator[None]:
    """Raise ``table_unreadable`` naming ``what`` when reading it as Avro fails (``_AVRO_REFUSALS``)."""
    try:
        yield
    except _AVRO_REFUSALS as exc:  # an AttestError is none of them: raised as it is
        text = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise AttestError(f"{what} cannot be read as Iceberg's Avro ({type(exc).__name__}: {text})",
                          code=Code.TABLE_UNREADABLE) from exc
