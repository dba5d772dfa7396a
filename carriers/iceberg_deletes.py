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
                  ) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """({"pyiceberg": {data file: [delete files]}, "java": {...}}, why readers differ) for one snapshot's live files.

    A data file no delete applies to is left out; a read a reader refuses is an entry ``"!..."`` (Java validates a
    deletion vector against its data file; pyiceberg refuses equality deletes it plans)."""
    data = [f for f in files if f.content == _DATA]
    deletes = [f for f in files if f.content != _DATA]
    listed = {m.path: m for m in manifests}
    py, py_skipped = _pyiceberg(data, deletes, manifests, listed)
    java = _java(data, deletes, unpartitioned)
    differ: list[str] = []
    by_key = {d.key: d for d in deletes}
    for target, applied in sorted(java.items()):
        for key in applied:
            delete = by_key.get(key)
            if delete is None:
                continue
            if key in py_skipped:
                m = listed[delete.manifest]
                differ.append(f"pyiceberg skips delete manifest {delete.manifest} (its manifest-list sequence number "
                              f"{m.sequence_number} is below the data manifests' smallest, {py_skipped[key]}), Iceberg "
                              f"Java applies its delete file {key} to {target}")
    for target, applied in sorted(py.items()):
        for key in applied:
            delete = by_key.get(key)
            if delete is not None and delete.sequence is not None and delete.sequence <= 0:
                differ.append(f"pyiceberg applies delete file {key} (data sequence number {delete.sequence}) to "
                              f"{target}, Iceberg Java reads no delete of a sequence number below 1")
    return {"pyiceberg": py, "java": java}, list(dict.fromkeys(differ))


def _pyiceberg(data: Sequence[Planned], deletes: Sequence[Planned], manifests: Sequence[ListedManifest],
               listed: Mapping[str, ListedManifest]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """pyiceberg 0.12's planning (DataScan.plan_files, DeleteFileIndex): the applied map, and the delete files it
    skips with their manifest (key -> the data manifests' smallest sequence number)."""
    smallest = min((m.min_sequence_number or 0 for m in manifests if m.content == _DATA), default=0)
    skipped: dict[str, int] = {}
    by_path: dict[str, list[Planned]] = defaultdict(list)
    by_partition: dict[tuple[int, str], list[Planned]] = defaultdict(list)
    equality: list[Planned] = []
    for d in deletes:
        manifest = listed.get(d.manifest)
        if manifest is not None and manifest.content != _DATA and (manifest.sequence_number or 0) < smallest:
            skipped[d.key] = smallest
            continue
        if d.content == _EQUALITY:
            equality.append(d)
        elif d.path_lower is not None and d.path_lower == d.path_upper:
            by_path[d.path_lower].append(d)
        else:
            by_partition[(d.spec_id, d.partition)].append(d)
    out: dict[str, list[str]] = {}
    for f in data:
        seq = f.sequence or 0
        applied = [d.key for d in by_path.get(f.location, ()) if (d.sequence or 0) >= seq]
        for d in by_partition.get((f.spec_id, f.partition), ()):
            if (d.sequence or 0) >= seq and (d.path_lower is None or d.path_upper is None
                                             or d.path_lower <= f.location <= d.path_upper):
                applied.append(d.key)
        if equality:
            applied.append("!pyiceberg does not read equality deletes")
        if applied:
            out[f.key] = sorted(set(applied))
    return out, skipped


def _java(data: Sequence[Planned], deletes: Sequence[Planned], unpartitioned: set[int]) -> dict[str, list[str]]:
    """Iceberg Java 1.12's planning (DeleteFileIndex.forDataFile), without its statistics-based pruning (the
    statistics are in each file's view): the applied map."""
    dvs: dict[str, list[Planned]] = defaultdict(list)
    pos_path: dict[str, list[Planned]] = defaultdict(list)
    pos_partition: dict[tuple[int, str], list[Planned]] = defaultdict(list)
    eq_global: list[Planned] = []
    eq_partition: dict[tuple[int, str], list[Planned]] = defaultdict(list)
    broken: list[str] = []
    for d in deletes:
        if d.sequence is None:
            broken.append(f"!delete file {d.key} has no data sequence number")
            continue
        if d.sequence <= 0:
            continue  # entry.dataSequenceNumber() > minSequenceNumber (0)
        if d.content == _EQUALITY:
            (eq_global if d.spec_id in unpartitioned else eq_partition[(d.spec_id, d.partition)]).append(d)
        elif d.puffin:
            dvs[d.referenced or ""].append(d)
        else:
            ref = d.referenced if d.referenced is not None else (
                d.path_lower if d.path_lower is not None and d.path_lower == d.path_upper else None)
            if ref is not None:
                pos_path[ref].append(d)
            else:
                pos_partition[(d.spec_id, d.partition)].append(d)
    out: dict[str, list[str]] = {}
    for f in data:
        applied: list[str] = list(broken)
        if f.sequence is None:
            applied.append("!data file has no data sequence number")
            out[f.key] = applied
            continue
        seq = f.sequence
        part = (f.spec_id, f.partition)
        applied += [d.key for d in (*eq_global, *eq_partition.get(part, ())) if d.sequence is not None
                    and d.sequence - 1 >= seq]
        vectors = dvs.get(f.location, [])
        if len(vectors) > 1:
            applied.append("!more than one deletion vector for the data file")
        elif vectors:
            dv = vectors[0]
            applied.append(dv.key)
            if dv.sequence is not None and dv.sequence < seq:
                applied.append("!deletion vector older than its data file")
            if (dv.spec_id, dv.partition) != part:
                applied.append("!deletion vector of another partition")
        else:
            applied += [d.key for d in pos_partition.get(part, ()) if d.sequence is not None and d.sequence >= seq]
            for d in pos_path.get(f.location, ()):
                if d.sequence is not None and d.sequence >= seq:
                    applied.append(d.key)
                    if (d.spec_id, d.partition) != part:
                        applied.append("!position delete file of another partition")
        if applied:
            out[f.key] = sorted(set(applied))
    return out
