"""Which Iceberg delete files apply to which data files, computed as the readers compute it (docs/iceberg.md).

Most of what decides it is held by each file's manifest entry and already in a file's reader view: its content, data
sequence number (explicit, or inherited from the manifest list), partition spec id and tuple, location as written,
``referenced_data_file``, equality field ids and path bounds. Readers also plan with the manifest list itself:

- pyiceberg skips a delete manifest whose list ``sequence_number`` is below the smallest ``min_sequence_number`` of the
  data manifests (``DataScan._check_sequence_number``: "not interested in deletes that are older than the data");
- Iceberg Java (Spark) takes delete entries of a data sequence number above 0 only (``DeleteFileIndex``,
  ``entry.dataSequenceNumber() > minSequenceNumber`` with its default 0), scopes a position delete file to one data
  file by ``referenced_data_file`` (or equal path bounds), lets a deletion vector replace position delete files, and
  applies an equality delete file of an unpartitioned spec to every partition.

Both shortcuts hold for tables the writers write (an entry's sequence number is never above its manifest's). Entries
rewritten with explicit sequence numbers, and the delete manifest's list sequence number then set to 0, brought a
deleted row back for pyiceberg while every entry and file view stayed the same (VERIFIED before); Java still applied
the delete. :func:`applicability` computes what each reader applies, so the view binds the result, and names the
deletes one reader drops by a shortcut while the other applies them (``table_inconsistent``: readers differ).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ListedManifest", "Planned", "applicability"]

PATH_FIELD_ID = 2147483546  # the file_path column of position delete files (Iceberg's reserved field id)
_DATA, _POSITION, _EQUALITY = 0, 1, 2


@dataclass(frozen=True)
class ListedManifest:
    """A manifest as the manifest list describes it (what readers plan with before opening it)."""

    path: str
    content: int  # 0 data, 1 deletes
    sequence_number: int | None
    min_sequence_number: int | None


@dataclass(frozen=True)
class Planned:
    """One live file as planning sees it (from its manifest entry and its manifest)."""

    key: str  # the file's identity (a deletion vector's with its offset: several share one Puffin file)
    location: str  # as written: readers match data files by this string
    content: int
    puffin: bool
    spec_id: int
    partition: str  # the partition tuple, canonical
    sequence: int | None  # the data sequence number, as readers inherit it
    referenced: str | None  # referenced_data_file
    path_lower: str | None  # bounds of the file_path column (position deletes)
    path_upper: str | None
    manifest: str
    # Its partition tuple holds a NaN: pyiceberg's partition keys (Records) compare values with ==, and NaN equals
    # nothing, so pyiceberg finds no data file in the partition of a delete file so scoped; Java's comparator
    # (Double.compare) makes NaN equal to NaN.
    partition_nan: bool = False


def path_bound(bounds: Any) -> str | None:
    """The file_path column's bound of a position delete file (bytes in the manifest), as a string."""
    if not isinstance(bounds, Mapping):
        return None
    raw = bounds.get(PATH_FIELD_ID)
    if not isinstance(raw, (bytes, bytearray)):
        return None
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def applicability(files: Sequence[Planned], manifests: Sequence[ListedManifest], unpartitioned: set[int]
                  ) -> tuple[dict[str, Any], list[str]]:
    """({"pyiceberg": plan, "java": plan}, why readers differ) for one snapshot's live files.

    A plan is compact, as readers index deletes: ``groups`` lists the delete files of each scope (a partition, a data
    file's location, the global equality deletes) in the order of their data sequence numbers, and ``files`` gives for
    each data file some delete applies to the scopes that apply to it, each as ``<scope>#<n>``: the scope's deletes
    from position n on (those of a sequence number at or above the data file's, above it for equality deletes), a
    deletion vector as ``dv:<key>``, a read the reader refuses as ``!<why>``. Statistics-based pruning is left out:
    it skips no row a delete file holds, and the statistics are in each file's view."""
    data = [f for f in files if f.content == _DATA]
    deletes = [f for f in files if f.content != _DATA]
    listed = {m.path: m for m in manifests}
    smallest = min((m.min_sequence_number or 0 for m in manifests if m.content == _DATA), default=0)
    skipped = [d for d in deletes if (m := listed.get(d.manifest)) is not None and m.content != _DATA
               and (m.sequence_number or 0) < smallest]
    gone = {d.key for d in skipped}
    kept = [d for d in deletes if d.key not in gone]
    py = _pyiceberg(data, kept)
    py["skipped"] = sorted(d.key for d in skipped)
    java = _java(data, deletes, unpartitioned)
    differ: list[str] = []
    for d in skipped:
        target = _java_applies_to(d, data, deletes, unpartitioned)
        if target is not None:
            m = listed[d.manifest]
            differ.append(f"pyiceberg skips delete manifest {d.manifest} (its manifest-list sequence number "
                          f"{m.sequence_number} is below the data manifests' smallest, {smallest}), Iceberg Java "
                          f"applies its delete file {d.key} to {target}")
    for d in kept:
        if d.content != _EQUALITY and d.sequence is not None and d.sequence <= 0:
            target = next((f.key for f in data if (f.sequence or 0) <= 0 and _py_scope(d) == _py_file_scope(f, d)),
                          None)
            if target is not None:
                differ.append(f"pyiceberg applies delete file {d.key} (data sequence number {d.sequence}) to "
                              f"{target}, Iceberg Java reads no delete of a sequence number below 1")
        if d.content != _EQUALITY and _py_scope(d).startswith("unmatched:"):
            target = _java_applies_to(d, data, deletes, unpartitioned)
            if target is not None:
                differ.append(f"pyiceberg scopes delete file {d.key} by its partition, which holds NaN, and applies it "
                              f"to no data file (its partition keys compare values with ==, and NaN equals nothing); "
                              f"Iceberg Java applies it to {target}")
    return {"pyiceberg": py, "java": java}, differ


def _py_scope(d: Planned) -> str:
    """The scope pyiceberg indexes a position delete file under: a data file's location when the file_path bounds
    are equal (whatever ``referenced_data_file`` says), else its partition — none when that holds NaN."""
    if d.path_lower is not None and d.path_lower == d.path_upper:
        return f"path:{d.path_lower}"
    if d.partition_nan:  # a scope no data file's is: pyiceberg's lookup by a NaN partition finds none
        return f"unmatched:{d.key}"
    return f"partition:{d.spec_id}:{d.partition}"


def _py_file_scope(f: Planned, d: Planned) -> str:
    return f"path:{f.location}" if _py_scope(d).startswith("path:") else f"partition:{f.spec_id}:{f.partition}"


def _plan(data: Sequence[Planned], groups: Mapping[str, list[Planned]], scopes: Any, *, strict: Any = None
          ) -> dict[str, Any]:
    """A compact plan: each group's deletes ordered by sequence number, each data file's scopes with the position
    from which the group's deletes apply to it (``scopes(f)`` names the groups for data file f; ``strict(group)``
    whether a delete must be newer than the data file, as equality deletes must)."""
    ordered = {g: sorted(ds, key=lambda d: (d.sequence or 0, d.key)) for g, ds in groups.items() if ds}
    seqs = {g: [d.sequence or 0 for d in ds] for g, ds in ordered.items()}
    files: dict[str, list[str]] = {}
    for f in data:
        applied: list[str] = []
        for g in scopes(f):
            if g not in ordered:
                continue
            find = bisect_right if strict is not None and strict(g) else bisect_left
            start = find(seqs[g], f.sequence or 0)
            if start < len(seqs[g]):
                applied.append(f"{g}#{start}")
        if applied:
            files[f.key] = sorted(applied)
    return {"groups": {g: [d.key for d in ds] for g, ds in sorted(ordered.items())}, "files": files}


def _pyiceberg(data: Sequence[Planned], kept: Sequence[Planned]) -> dict[str, Any]:
    """pyiceberg 0.12's planning (DataScan.plan_files, DeleteFileIndex) of the deletes it keeps: position deletes
    (deletion vectors too) by location when the file_path bounds are equal, else by partition, applied from a sequence
    number at or above the data file's; equality deletes make it refuse the scan."""
    groups: dict[str, list[Planned]] = defaultdict(list)
    for d in kept:
        if d.content != _EQUALITY:
            groups[_py_scope(d)].append(d)
    plan = _plan(data, groups, lambda f: (f"path:{f.location}", f"partition:{f.spec_id}:{f.partition}"))
    plan["refused"] = sorted(d.key for d in kept if d.content == _EQUALITY)
    return plan


def _java_scope(d: Planned, unpartitioned: set[int]) -> str:
    if d.content == _EQUALITY:
        return "equality:global" if d.spec_id in unpartitioned else f"equality:{d.spec_id}:{d.partition}"
    if d.puffin:
        return f"dv:{d.referenced or ''}"
    ref = d.referenced if d.referenced is not None else (
        d.path_lower if d.path_lower is not None and d.path_lower == d.path_upper else None)
    return f"path:{ref}" if ref is not None else f"partition:{d.spec_id}:{d.partition}"


def _java(data: Sequence[Planned], deletes: Sequence[Planned], unpartitioned: set[int]) -> dict[str, Any]:
    """Iceberg Java 1.12's planning (DeleteFileIndex.forDataFile): delete entries of a data sequence number above 0;
    equality deletes of an unpartitioned spec everywhere, others in their partition, applied to older data files; a
    deletion vector for its referenced data file, replacing position delete files; position deletes by
    ``referenced_data_file`` (or equal file_path bounds), else by partition, applied from the data file's sequence
    number on. What it refuses to read (ValidationException, a missing sequence number) is named."""
    groups: dict[str, list[Planned]] = defaultdict(list)
    broken = sorted(f"!delete file {d.key} has no data sequence number" for d in deletes if d.sequence is None)
    for d in deletes:
        if d.sequence is not None and d.sequence > 0:  # entry.dataSequenceNumber() > minSequenceNumber (0)
            groups[_java_scope(d, unpartitioned)].append(d)
    vectors = {g[len("dv:"):]: ds for g, ds in groups.items() if g.startswith("dv:")}
    scoped = {g: ds for g, ds in groups.items() if not g.startswith("dv:")}

    def scopes(f: Planned) -> list[str]:
        out = ["equality:global", f"equality:{f.spec_id}:{f.partition}"]
        return out if f.location in vectors else [*out, f"path:{f.location}", f"partition:{f.spec_id}:{f.partition}"]

    plan = _plan(data, scoped, scopes, strict=lambda g: g.startswith("equality:"))
    files: dict[str, list[str]] = plan["files"]
    for f in data:
        extra: list[str] = list(broken)
        if f.sequence is None:
            extra.append("!the data file has no data sequence number")
        dvs = vectors.get(f.location, [])
        if len(dvs) > 1:
            extra.append("!more than one deletion vector for the data file")
        for dv in dvs[:1]:
            extra.append(f"dv:{dv.key}")
            if f.sequence is not None and (dv.sequence or 0) < f.sequence:
                extra.append("!a deletion vector older than its data file")
            if (dv.spec_id, dv.partition) != (f.spec_id, f.partition):
                extra.append("!a deletion vector of another partition")
        for d in scoped.get(f"path:{f.location}", []):
            if (d.sequence or 0) >= (f.sequence or 0) and (d.spec_id, d.partition) != (f.spec_id, f.partition):
                extra.append("!a position delete file of another partition")
        if extra:
            files[f.key] = sorted({*files.get(f.key, []), *extra})
    return plan


def _java_applies_to(d: Planned, data: Sequence[Planned], deletes: Sequence[Planned], unpartitioned: set[int]
                     ) -> str | None:
    """A data file Iceberg Java applies delete file ``d`` to (None: none)."""
    if d.sequence is None or d.sequence <= 0:
        return None
    scope = _java_scope(d, unpartitioned)
    vectors = {x.referenced for x in deletes if x.puffin and x.content != _EQUALITY and (x.sequence or 0) > 0}
    for f in data:
        if f.sequence is None:
            continue
        if d.content == _EQUALITY:
            hit = scope == "equality:global" or scope == f"equality:{f.spec_id}:{f.partition}"
            if hit and f.sequence < d.sequence:
                return f.key
        elif d.puffin:
            if d.referenced == f.location:
                return f.key
        elif f.location not in vectors and scope in (f"path:{f.location}", f"partition:{f.spec_id}:{f.partition}") \
                and f.sequence <= d.sequence:
            return f.key
    return None
