"""The reader's view of a table version: everything beyond file bytes that decides the rows a reader gets.

A file's bytes are not the whole story. The same files are read differently when the schema maps columns to other
names or ids, when a file's partition values change, when a deletion vector or delete file hides rows, when data
skipping statistics make a filtered query skip a file, or when a table feature changes how readers decode values.
Each table format computes this view from its engine's own snapshot (carriers/); this module only holds it, hashes
it and says what differs between two views, so the verifier stays engine-free.

A view has two parts: ``table`` (schema as readers resolve it, partitioning, reader features and the properties that
change read results) and ``files`` (per live file: a digest of everything recorded about that file that changes what
is read from it). The digest of the whole view is what an attestation binds; the parts make a mismatch explainable.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from attest.canonical import blake3_hex, digest, digest_of_chunks, mapping_chunks, object_chunks

VIEW_VERSION = 1

# Keys of a view's table part that attestations bind from a later release on: (what each binds, who reads it). A view
# attested without one is compared without it (the verdict says so), so earlier attestations keep verifying what they
# bound.
LATER_KEYS: dict[str, tuple[str, str]] = {
    "file_times": ("file modification times", "Spark's _metadata.file_modification_time"),
    "locations": ("file locations as written", "Spark's _file and input_file_name()"),
    "deletes": ("which delete files readers apply to which data files",
                "pyiceberg's and Iceberg Java's scan planning, which read sequence numbers from the manifest list too"),
    "schemas": ("the schemas readers of the snapshot resolve",
                "time travel reads the snapshot's own schema-id, Spark's read of a branch the current schema"),
    "java_equality_fields": ("the types Iceberg Java reads equality delete files' metrics by",
                             "Iceberg Java's delete index, which takes each equality field from the schema of the "
                             "highest id"),
}
# Keys of a view's table part that earlier releases bound and a later one binds in a narrower form: {earlier key: the
# key replacing it}. A live view holds the earlier key's value aside (``ReaderView.earlier``, outside its digest), and a
# view attested with the earlier key is compared on it, as it was attested: earlier attestations keep verifying as they
# did, a new one binds the narrower form.
REPLACED_KEYS: dict[str, str] = {
    # Delta: the reader protocol as written (version and features) -> the reader features that change what is read
    # (carriers/delta/view.py, view_reader_features; issue 30.4).
    "reader_protocol": "reader_features",
}


# Keys of a view's table part that a rewrite checked by content must narrow to one member (a sorted list of digests):
# ``schemas``, the schemas readers of the snapshot resolve. A rewrite commits under the table's current schema (Iceberg
# Java's and pyiceberg's snapshot producers), so every read of the rewritten version is under one schema, the view's
# ``schema`` (compared exactly), the one the content check read its rows under. The attested head may have been read
# under two (its own older schema-id by time travel: a column added after the last write), and was not a change
# (measured: reader_view_changed after every honest Spark rewrite_data_files of such a table). Two schemas after a
# rewrite mean time travel to it reads under one the check did not read: a hand-made replace naming the older
# schema-id whose files changed a column dropped since was VERIFIED while time travel to it read the changed values.
NARROWED_BY_REWRITES = ("schemas",)


# Keys of a view's table part that describe delete files, present only while the snapshot holds such files, one
# member per field they delete by: Iceberg's ``java_equality_fields`` (the type Iceberg Java reads each equality
# field's metrics by; carriers/iceberg/carrier.py). A rewrite applies delete files into the rows it writes, and the
# files so spent go (each commit of Iceberg Java's MergingSnapshotProducer drops the delete files older than every
# live data file, rewrite_data_files' too; rewrite_position_delete_files drops dangling ones): the key, or some of
# its members, go with them, and the rows the deletes hid are the content check's to judge. Measured: Spark's
# rewrite_data_files after an equality delete was reader_view_changed while the key was compared whole. Compared on
# the members both views hold; each member a live view holds is held to the column readers read where it is made
# (table_inconsistent otherwise), so a member a rewrite adds is judged too.
DELETE_FILE_KEYS = ("java_equality_fields",)


def table_kept_by_rewrites(attested: Mapping[str, Any], current: Mapping[str, Any], skip: frozenset[str] | set[str]
                           ) -> bool:
    """Whether the table part of a view after rewrites whose rows passed the content check is the attested one: every
    key but ``skip`` (what rewrites change by nature) equal, but a key of :data:`NARROWED_BY_REWRITES` present in both
    must hold exactly one member, one of its attested members, and a key of :data:`DELETE_FILE_KEYS` is compared on
    the members both hold (the delete files a rewrite applied and dropped take theirs with them)."""
    return not table_changed_by_rewrites(attested, current, skip)


def table_changed_by_rewrites(attested: Mapping[str, Any], current: Mapping[str, Any],
                              skip: frozenset[str] | set[str]) -> list[str]:
    """The keys of the table part that :func:`table_kept_by_rewrites` finds changed, sorted (a verdict names these,
    not the keys the rewrites change by nature)."""
    changed: list[str] = []
    for key in sorted((set(attested) | set(current)) - set(skip)):
        was, now = attested.get(key), current.get(key)
        if key in NARROWED_BY_REWRITES and was is not None and now is not None:
            if not (isinstance(was, list) and isinstance(now, list) and len(now) == 1 and now[0] in was):
                changed.append(key)
        elif key in DELETE_FILE_KEYS and (was is None or now is None):
            continue
        elif key in DELETE_FILE_KEYS and isinstance(was, Mapping) and isinstance(now, Mapping):
            if any(was[member] != now[member] for member in set(was) & set(now)):
                changed.append(key)
        elif was != now:
            changed.append(key)
    return changed


def key_label(key: str) -> str:
    """How a verdict names a key of a view's table part."""
    return LATER_KEYS[key][0] if key in LATER_KEYS else key


# Views of more files than this are hashed in pieces (attest.canonical.object_chunks): the same digest.
_STREAM_FILES = 8192


@dataclass(frozen=True)
class ReaderView:
    """Engine-free reader view. ``table`` values must be canonical-JSON-able; ``files`` maps a file's identity path
    to the v1 digest of its per-file view (see :func:`file_digest`)."""

    table: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    # The values of REPLACED_KEYS' earlier keys, for comparing with views attested with them; not part of the view.
    earlier: dict[str, Any] = field(default_factory=dict, compare=False)

    @functools.cached_property
    def digest(self) -> str:
        # Computed once per view (a verification compares it, reports it and a signature names it: each a canonical
        # encoding of one entry per file). A view is not changed once made: bound_as and from_dict make new ones.
        if len(self.files) <= _STREAM_FILES:
            return digest({"view": VIEW_VERSION, "table": self.table, "files": self.files})
        # The same bytes hashed in pieces: a million files' entries are never one canonical text (~140 MB).
        return digest_of_chunks(object_chunks({"view": VIEW_VERSION, "table": self.table},
                                              {"files": lambda: mapping_chunks(self.files)}))

    def to_dict(self) -> dict[str, Any]:
        return {"version": VIEW_VERSION, "digest": self.digest, "table": self.table, "files": self.files}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, files_hashed: Any = None) -> ReaderView:
        """Parse a recorded view; raises ValueError when it is malformed or its digest does not match.
        ``files_hashed``: a BLAKE3 hasher (``blake3.blake3``) that has hashed ``b'{"files":'`` and the canonical text
        of ``data["files"]`` (the sidecar reader hashes that text as it reads it, carriers/sidecar.py): the digest is
        then finished from it, the same bytes hashed, rather than the files encoded again."""
        if not isinstance(data, Mapping) or data.get("version") != VIEW_VERSION:
            raise ValueError(f"reader view is not a version {VIEW_VERSION} view")
        table, files = data.get("table"), data.get("files")
        if not isinstance(table, dict) or not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise ValueError("reader view must hold a 'table' object and a 'files' object of strings")
        view = cls(table=table, files=dict(files))
        if files_hashed is not None and len(view.files) > _STREAM_FILES:
            # Only where the digest is hashed in pieces (object_chunks): its table part, and any refusal of it, are
            # then those of the code computing it from the values.
            view.__dict__["digest"] = _digest_after_files(files_hashed, table)  # functools.cached_property's slot
        if data.get("digest") != view.digest:
            raise ValueError("reader view digest does not match its content")
        return view

    def same_digest(self, other: ReaderView) -> bool:
        """``self.digest == other.digest``, without encoding either view's files when they are the same strings (a
        verification of an unchanged table: each view one entry per file). Files map strings to strings, so equal
        maps are the same canonical bytes; the tables, whose values ``==`` may equate across types (``1`` and
        ``True``), are compared by their digests."""
        if self.files == other.files and digest(self.table) == digest(other.table):
            return True
        return self.digest == other.digest

    def differences(self, current: ReaderView, *, limit: int = 5) -> list[str]:
        """What ``current`` (the live view) changed relative to this (the attested) view, for a verdict's detail."""
        out: list[str] = []
        for key in sorted(set(self.table) | set(current.table)):
            if self.table.get(key) != current.table.get(key):
                out.append(f"{key_label(key)} changed")
        changed = [p for p in sorted(set(self.files) & set(current.files)) if self.files[p] != current.files[p]]
        added = sorted(set(current.files) - set(self.files))
        removed = sorted(set(self.files) - set(current.files))
        for label, paths in (("file view changed", changed), ("file added", added), ("file removed", removed)):
            if paths:
                shown = ", ".join(paths[:limit]) + (f" (+{len(paths) - limit} more)" if len(paths) > limit else "")
                out.append(f"{label}: {shown}")
        return out

    def same_files(self, current: ReaderView) -> bool:
        return set(self.files) == set(current.files)

    def bound_as(self, attested: ReaderView) -> tuple[ReaderView, list[str]]:
        """This (live) view without the :data:`LATER_KEYS` that ``attested`` does not hold, and those keys: an
        attestation made before a key was bound is compared on what it bound (and one made before a key of
        :data:`REPLACED_KEYS` was replaced, on the earlier key)."""
        table = self.table
        for old, new in REPLACED_KEYS.items():
            if old in attested.table and new not in attested.table and old in self.earlier:
                # Attested before ``new`` replaced ``old``: compared on ``old``, as attested (no note: it binds more).
                table = {**{k: v for k, v in table.items() if k != new}, old: self.earlier[old]}
        missing = [k for k in LATER_KEYS if k in table and k not in attested.table]
        if not missing and table is self.table:
            return self, []
        table = {k: v for k, v in table.items() if k not in missing}
        return ReaderView(table=table, files=self.files), missing


def _digest_after_files(files_hashed: Any, table: dict[str, Any]) -> str:
    """ReaderView.digest of a view of more than _STREAM_FILES files whose ``b'{"files":'`` and files text
    ``files_hashed`` hashed: the rest of the pieces ``digest`` hashes, from the same object_chunks call."""
    hasher = files_hashed.copy()
    pieces = object_chunks({"view": VIEW_VERSION, "table": table}, {"files": lambda: iter(())})
    # b"{" and b'"files":' ("files" sorts first), which were hashed before the files' text
    for expected in (b"{", b'"files":'):
        if next(pieces) != expected:
            raise AssertionError("the view's pieces changed shape")
    for piece in pieces:
        hasher.update(piece)
    digest_: str = hasher.hexdigest()
    return digest_


def file_digest(entry: Mapping[str, Any]) -> str:
    """The v1 digest of one file's view: BLAKE3 of its canonical JSON (``entry`` must already be JSON-able, e.g.
    built with :func:`json_safe`). Computed for every live file of a version, so it skips canonical_bytes' type walk:
    the bytes are the same for such an entry."""
    return file_text_digest(file_text(entry))


def file_text(entry: Mapping[str, Any]) -> str:
    """The canonical JSON text :func:`file_digest` hashes for ``entry`` (a listing may hold a file's view as this text,
    a fraction of the memory of the entry's objects)."""
    return _file_encode()(entry)


def file_text_digest(text: str) -> str:
    """:func:`file_digest` of the entry whose :func:`file_text` is ``text``."""
    return blake3_hex(text.encode("utf-8", "surrogatepass"))


@functools.cache
def _file_encoder() -> json.JSONEncoder:
    # One encoder for every file: json.dumps with these options builds a new one per call (~2 µs of 2,000 files).
    return json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@functools.cache
def _file_encode() -> Callable[[Any], str]:
    """_file_encoder().encode, with CPython's C encoder made once rather than per call (JSONEncoder.iterencode builds
    one each time: ~40 % of encoding a file's view). The same options, so the same text; the encoder's own where
    there is no C encoder."""
    encoder = _file_encoder()
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    # The arguments JSONEncoder.iterencode passes (json/encoder.py), with these options. No circular check (markers
    # None): a view is a tree json_safe built, and a markers dict shared by every call keeps stale ids after an error.
    c_encode = make(None, encoder.default, json.encoder.encode_basestring, None, ":", ",", True, False, False)
    return lambda entry: "".join(c_encode(entry, 0))


_PLAIN = frozenset({str, int, bool})


def json_safe(value: Any) -> Any:
    """A deterministic JSON-able form of an engine value (stats, partition values): exact types are kept apart
    (``1`` and ``"1"`` differ), values without a JSON form become tagged strings."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return value
    if kind is dict:
        # Plain values inline (a call per value was most of the cost: 3 dicts of stats per file of a version).
        return {k if type(k) is str else str(k): v if v is None or type(v) in _PLAIN else json_safe(v)
                for k, v in value.items()}
    import datetime as _dt
    import decimal

    if isinstance(value, float):
        # repr is exact and covers nan/inf/-0.0, which JSON numbers cannot carry.
        return {"float": repr(value)}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return {type(value).__name__: value.isoformat()}
    if isinstance(value, _dt.timedelta):
        return {"timedelta": repr(value)}
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return {type(value).__name__: str(value)}
