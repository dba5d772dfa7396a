"""The metadata-only commit keeping a format-v3 detached attestation in a metastore catalog, made at the JSON level
because pyiceberg 0.12 writes no v3 table metadata (docs/maintenance.md, "Kept attestations"). ``JsonKeeper`` holds
the steps every such catalog shares; a catalog's keeper adds only how it reads and swaps its pointer
(carriers/iceberg/sql_keep.py: a SQL catalog's row; carriers/iceberg/hive_keep.py: a Hive Metastore table).

One attempt (``JsonKeeper.__call__``):

1. read the catalog's pointer (the table's current metadata location); it must be the metadata the request was
   planned on (``DetachedKeep.base``), else a concurrent commit landed: ``KeepRaced``, nothing written;
2. read that metadata file's text as its writer wrote it (Java, pyiceberg) and parse it as plain JSON, never through
   pyiceberg's model (which would drop what it does not know, and cannot write v3);
3. change exactly: the attested snapshot's ``statistics`` entry (set-statistics: an entry of that snapshot replaced),
   the retention tag in ``refs`` (set-snapshot-ref: an existing tag keeps its other fields), the stale tags removed,
   ``last-updated-ms`` bumped and the previous file appended to ``metadata-log`` (trimmed to
   ``write.metadata.previous-versions-max``, as pyiceberg and Java trim it); every other member is the one read;
4. check with pyiceberg that old and new parse to the same table but for those members (nothing written otherwise);
5. write ``<metadata dir>/NNNNN-<uuid>.metadata.json`` (the version after the current one's, the name Iceberg's
   writers give; ``.gz.metadata.json`` gzip-compressed when ``write.metadata.compression-codec`` is gzip, as Java
   names it), never replacing a file;
6. swap the pointer from the file read to the new one, only while it still names the file read (the catalog's own
   compare-and-swap); a moved pointer is a concurrent commit, ``KeepRaced``. The new file is then left where it is
   (referenced by nothing: orphan removal deletes it) and nothing is deleted.

The carrier (carriers/iceberg/commit.py ``_keep_detached``) plans the request again from a fresh read and retries a
``KeepRaced``, bounded; the last one is a warning with the code ``commit_conflict``: the attestation (its pointer)
stands, only its keeping failed.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import time
import uuid
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from attest.errors import CarrierError, Code, CommitConflictError

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from carriers.iceberg.commit import DetachedKeep

__all__ = ["CHANGED", "JsonKeeper", "KeepRaced", "apply_keep"]

# Iceberg's metadata file name: version, UUID, optional codec, suffix (pyiceberg TABLE_METADATA_FILE_NAME_REGEX).
_NAME = re.compile(r"(\d+)-([0-9a-fA-F-]{36})(?:\.\w+)?\.metadata\.json(?:\.gz)?")
# The members a keep changes; every other member of the metadata is written as it was read.
CHANGED = ("statistics", "refs", "last-updated-ms", "metadata-log")
# Table metadata is read whole (a JSON document); larger than this is not one a keep rewrites.
MAX_METADATA_BYTES = 256 << 20
_PREVIOUS_MAX = "write.metadata.previous-versions-max"
_CODEC = "write.metadata.compression-codec"


class KeepRaced(CommitConflictError):
    """The catalog's pointer moved between our read and our swap (another writer committed). ``written``: the
    metadata file we wrote and left in place (None: none written yet)."""

    def __init__(self, message: str, *, written: str | None = None) -> None:
        super().__init__(message, path=written or "")
        self.written = written


class JsonKeeper(ABC):
    """Commits a ``DetachedKeep`` to ``table`` at the JSON level (module docstring); a catalog's keeper says how its
    pointer is read (``pointer``) and swapped (``_swap``). ``before_swap`` (tests): called with the new metadata
    location after the file is written, before the swap."""

    def __init__(self, table: Table, *, before_swap: Callable[[str], None] | None = None) -> None:
        self.table = table
        self.before_swap = before_swap
        self.written: list[str] = []  # every metadata file written, swapped in or not

    @abstractmethod
    def pointer(self) -> str:
        """The metadata location the catalog names for the table now."""

    @abstractmethod
    def _swap(self, base: str, location: str) -> bool:
        """Point the catalog at ``location`` only while it still names ``base``; False when it does not."""

    @abstractmethod
    def _what(self) -> str:
        """The pointer, named for messages."""

    def __call__(self, request: DetachedKeep) -> None:
        base = self.pointer()
        if request.base is not None and base != request.base:
            raise KeepRaced(f"{self._what()} moved from {request.base} to {base} since the keep was planned")
        old_text = self._read(base)
        doc = _parse(old_text, base)
        new_doc = apply_keep(doc, request, base, now_ms=int(time.time() * 1000))
        if new_doc is None:
            return  # nothing to change
        try:
            new_text = json.dumps(new_doc, ensure_ascii=False, separators=(",", ":"))
            new_text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate the file spelled \uXXXX: kept as that escape
            new_text = json.dumps(new_doc, separators=(",", ":"))
        _same_table(old_text, new_text, base)
        location = self._new_location(base, new_doc)
        self._write(location, new_text)
        if self.before_swap is not None:
            self.before_swap(location)
        if not self._swap(base, location):
            raise KeepRaced(f"{self._what()} was committed by another writer between our read of {base} and our "
                            f"swap; the metadata file {location} we wrote is left in place, referenced by nothing "
                            "(orphan removal deletes it)", written=location)

    # ---- the metadata files -----------------------------------------------------------------------------------------
    def _read(self, location: str) -> str:
        with self.table.io.new_input(location).open() as stream:
            data = stream.read(MAX_METADATA_BYTES + 1)
        if location.endswith(".gz.metadata.json") or location.endswith(".metadata.json.gz"):
            # Java's two gzip spellings (pyiceberg reads the first); inflated no further than the bound
            try:
                data = zlib.decompressobj(wbits=31).decompress(data, MAX_METADATA_BYTES + 1)
            except zlib.error as exc:
                raise CarrierError(f"the table metadata {location} is not gzip ({exc})", path=location) from exc
        if len(data) > MAX_METADATA_BYTES:
            raise CarrierError(f"the table metadata {location} is larger than {MAX_METADATA_BYTES} bytes; not "
                               "rewritten", path=location)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CarrierError(f"the table metadata {location} is not UTF-8 ({exc})", path=location) from exc

    def _new_location(self, base: str, doc: Mapping[str, Any]) -> str:
        """The next metadata file's location, named as Iceberg's writers name it: ``NNNNN-<uuid>.metadata.json``,
        the version one past the current file's (0 when its name has none, as pyiceberg), under the table's
        metadata folder (``write.metadata.path`` honoured: pyiceberg's location provider)."""
        from pyiceberg.table.locations import load_location_provider

        match = _NAME.fullmatch(base.rsplit("/", 1)[-1])
        version = int(match.group(1)) + 1 if match else 0
        properties = {str(k): str(v) for k, v in (doc.get("properties") or {}).items()}
        provider = load_location_provider(str(doc["location"]), properties)
        name = f"{version:05d}-{uuid.uuid4()}"
        if _gzip(properties):
            return provider.new_metadata_location(f"{name}.gz.metadata.json")
        return provider.new_metadata_location(f"{name}.metadata.json")

    def _write(self, location: str, text: str) -> None:
        data = text.encode("utf-8")
        if location.endswith(".gz.metadata.json"):
            data = gzip.compress(data)
        with self.table.io.new_output(location).create(overwrite=False) as out:
            out.write(data)
        self.written.append(location)


def _gzip(properties: Mapping[str, str]) -> bool:
    return properties.get(_CODEC, "none").strip().lower() == "gzip"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 would be written back as Infinity, which is not JSON
        raise ValueError(f"{text} is out of a double's range")
    return value


def _parse(text: str, location: str) -> dict[str, Any]:
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise CarrierError(f"the table metadata {location} is not JSON ({str(exc)[:200]})", path=location) from exc
    if not isinstance(doc, dict) or type(doc.get("format-version")) is not int or \
            not isinstance(doc.get("location"), str):
        raise CarrierError(f"the table metadata {location} is not Iceberg table metadata", path=location)
    return doc


def apply_keep(doc: Mapping[str, Any], request: DetachedKeep, base: str, *, now_ms: int) -> dict[str, Any] | None:
    """``doc`` (table metadata as JSON) with the keep applied, as a new dict (``doc`` untouched); None when it
    changes nothing. Only the members ``CHANGED`` differ; each other member is the very value read."""
    snapshots = doc.get("snapshots") or []
    ids = {s.get("snapshot-id") for s in snapshots if isinstance(s, dict)}
    if request.snapshot_id not in ids:
        raise CarrierError(f"snapshot {request.snapshot_id} is no longer in the table metadata {base} (expired "
                           "meanwhile): nothing registered", code=Code.VERSION_NOT_FOUND, path=base)
    new = dict(doc)
    changed = False
    if request.statistics is not None:
        entry = {**request.statistics, "snapshot-id": request.snapshot_id}
        old = [e for e in doc.get("statistics") or [] if isinstance(e, dict)]
        # set-statistics: the snapshot's entry replaced (one per snapshot), the others as they were
        kept = [e for e in doc.get("statistics") or [] if not (isinstance(e, dict)
                                                                and e.get("snapshot-id") == request.snapshot_id)]
        if [e for e in old if e.get("snapshot-id") == request.snapshot_id] != [entry]:
            new["statistics"] = [*kept, entry]
            changed = True
    refs_in = doc.get("refs")
    refs: dict[str, Any] = dict(refs_in) if isinstance(refs_in, dict) else {}
    for name in request.stale:
        ref = refs.get(name)
        if isinstance(ref, dict) and ref.get("type") == "tag":
            del refs[name]
            changed = True
    if request.tag is not None:
        ref = refs.get(request.tag)
        if ref is not None and not (isinstance(ref, dict) and ref.get("type") == "tag"):
            raise CarrierError(f"{request.tag!r} in the table metadata {base} is not a tag; not moved",
                               code=Code.UNSUPPORTED_TABLE, path=base)
        if ref is None or ref.get("snapshot-id") != request.snapshot_id:
            # a moved tag keeps its other fields (max-ref-age-ms), as Java's replaceTag keeps them
            refs[request.tag] = {**(ref or {"type": "tag"}), "snapshot-id": request.snapshot_id}
            changed = True
    if not changed:
        return None
    if refs != refs_in:
        current = doc.get("current-snapshot-id")
        if not isinstance(refs_in, dict) and type(current) is int and current != -1:
            # metadata without refs (old writers) implies main at the current snapshot: written out, as readers
            # would once any ref is present
            refs.setdefault("main", {"snapshot-id": current, "type": "branch"})
        new["refs"] = refs
    last = doc.get("last-updated-ms")
    last_ms = last if type(last) is int else 0
    new["last-updated-ms"] = max(now_ms, last_ms + 1)  # never back in time (Java checks the log's order)
    log = [e for e in doc.get("metadata-log") or []]
    properties = doc.get("properties") if isinstance(doc.get("properties"), dict) else {}
    try:
        keep = max(1, int(str((properties or {}).get(_PREVIOUS_MAX, "100"))))
    except ValueError:
        keep = 100
    log.append({"timestamp-ms": last_ms, "metadata-file": base})
    new["metadata-log"] = log[-keep:]  # as pyiceberg's and Java's commits trim it
    return new


def _same_table(old_text: str, new_text: str, base: str) -> None:
    """pyiceberg reads both, and they are the same table but for the members a keep changes; else nothing is
    written (a reader that cannot load the new metadata would lose the table, not only the attestation)."""
    from pyiceberg.table.metadata import TableMetadataUtil

    try:
        old = TableMetadataUtil.parse_raw(old_text)
        new = TableMetadataUtil.parse_raw(new_text)
    except Exception as exc:  # pydantic's and pyiceberg's own errors alike: the edit is refused, not the table
        raise CarrierError(f"the table metadata {base} with the attestation registered does not read back "
                           f"({type(exc).__name__}: {str(exc)[:300]}); nothing written", path=base) from exc
    skip = {"statistics", "refs", "last_updated_ms", "metadata_log"}
    if old.model_dump(exclude=skip) != new.model_dump(exclude=skip):
        raise CarrierError(f"the table metadata {base} would read differently with the attestation registered; "
                           "nothing written", path=base)
