"""Values a Delta log spells in ways engines read differently (an empty string partition value, a timestamp without a
zone, statistics one engine cannot read), found file by file while the carrier builds a version's reader view.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attest.errors import Code, Problem

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["_Spellings"]

# The log's statistics and delta-rs's typed reading of each (``get_add_actions``).
_ENGINE_STATISTICS = {"numRecords": "num_records", "nullCount": "null_count", "minValues": "min", "maxValues": "max"}


_ABSENT = object()


# A date-time as Spark's lenient parser reads one (``stringToTimestamp``): blanks around it, a signed year, one or two
# digits to each other field, the time (or part of it) optional, then the zone — nothing (a local date-time, as
# delta-rs writes partition values: ``2024-01-05 10:00:00.000000``), or any text after the time, which both engines read
# as that zone or refuse (measured: Z, +00:00, +0000, +00, UTC, `` UTC``). delta-rs 1.6 reads the unpadded and signed
# spellings too (``2024-1-5 10:0:0``, `` +2024-01-05 10:00:00``: round 20), '' as null like Spark.
_STAMP_TEXT = re.compile(r"\s*(?P<sign>[+-]?)(?P<year>[0-9]{4,})-(?P<month>[0-9]{1,2})-(?P<day>[0-9]{1,2})"
                         r"(?:[T ](?P<hour>[0-9]{1,2})(?::(?P<minute>[0-9]{1,2})(?::(?P<second>[0-9]{1,2})"
                         r"(?:\.(?P<fraction>[0-9]*))?)?)?)?(?P<zone>.*?)\s*", re.DOTALL)
# A timestamp statistic without a zone as delta-rs writes and reads one (padded; ``_zoneless_statistics``). A bound in
# another spelling delta-rs reads none of, and it is held as Spark reads it (content._spark_only_bounds).
_ZONELESS_BOUND = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]*)?)?")
# The zones whose instant delta-rs reads and this check computes: UTC by name, an offset in hours (and minutes).
_UTC_NAMES = frozenset({"z", "utc"})
_OFFSET = re.compile(r"(?P<sign>[+-])(?P<hours>[0-9]{2}):?(?P<minutes>[0-9]{2})")
# A leap second (``2024-01-05 10:00:60``, with or without a fraction or zone): delta-rs reads the next second
# (10:01:00), Spark null (measured, delta-spark 4.4; ``23:59:60`` is the next day's 00:00 for delta-rs).
_LEAP_SECOND = re.compile(r"\s*[+-]?[0-9]{4,}-[0-9]{1,2}-[0-9]{1,2}[T ][0-9]{1,2}:[0-9]{1,2}:60(?![0-9])")
# A lower-case letter: delta-rs reads ``t`` as the separator and ``z`` / ``utc`` (any case) as UTC, Spark null (it takes
# ``T``, ``Z`` and ``UTC`` only; measured, delta-spark 4.4, any session zone). The zone names Spark reads that hold
# lower-case letters (``America/New_York``) delta-rs refuses, so the table is unreadable to it (measured).
_LOWER_CASE = re.compile(r"[a-z]")
# A signed NaN spelled other than ``+NaN`` / ``-NaN``: delta-rs (Rust's float parser) reads NaN in any case, Spark's
# cast (Java's parser, then the lower-case literals ``nan``, ``inf``, ``+inf``, ``infinity``, ...) null — ``+nan``,
# ``-nan``, ``+NAN`` (measured, delta-spark 4.4, round 20; unsigned ``nan`` / ``NAN`` and every infinity read alike).
_SIGNED_NAN = re.compile(r"[+-](?!NaN$)[nN][aA][nN]")


class _Spellings:
    """Values the log spells in ways engines read differently, found file by file (``see``), then reported once
    (``report``). Measured with Spark 4.1 and delta-rs 1.6: an empty partition value of a string column is null for
    delta-rs and '' for Spark; a timestamp without a zone is UTC for delta-rs and in Spark's session time zone;
    statistics delta-rs cannot read are none to it and read by Spark."""

    def __init__(self, dt: DeltaTable) -> None:
        fields = json.loads(dt.schema().to_json()).get("fields")
        columns = set(dt.metadata().partition_columns)
        # {partitionValues key (the physical name under column mapping): (column, type)}
        self.partitions = {_physical(f): (str(f.get("name")), str(f.get("type"))) for f in _fields(fields)
                           if f.get("name") in columns}
        self.strings = [k for k, (_, kind) in self.partitions.items() if kind == "string"]
        self.timestamps = [k for k, (_, kind) in self.partitions.items() if kind == "timestamp"]
        self.stamps = [k for k, (_, kind) in self.partitions.items() if kind in ("timestamp", "timestamp_ntz")]
        self.floats = [k for k, (_, kind) in self.partitions.items() if kind in ("float", "double")]
        self.nan: list[str] = []
        self.leap: list[str] = []
        self.lower: list[str] = []
        self.columns = _leaf_columns(fields)
        self.statistics = [physical for physical, _, kind in self.columns if kind == "timestamp"]
        self.empty: list[str] = []
        self.zoneless: set[str] = set()
        self.zoneless_statistics: list[str] = []
        self.unread: list[str] = []
        self.unread_names: set[str] = set()

    def see(self, rel: str, values: Any, stats: Any, engine: Mapping[str, Any],
            parsed: Mapping[str, Any]) -> list[Any] | None:
        """One live file: its partition values and statistics as the log spells them (``parsed``: statistics text the
        log replay parsed, by text), and delta-rs's row for it. Returns the statistics delta-rs cannot read, as
        written, for the file's view (None when there are none)."""
        self.see_partitions(rel, values)
        # Looked into only where a check needs it: timestamp columns, or a statistic delta-rs read none of.
        gap = (engine.get("num_records") is None or _gap(engine.get("null_count")) or _gap(engine.get("min"))
               or _gap(engine.get("max")))
        if not (self.statistics or gap) or not isinstance(stats, str):
            return None
        value = parsed.get(stats)
        if value is None:  # not parsed by the replay: a key named twice (a problem already), NaN, or malformed
            try:
                value = json.loads(stats)
            except (ValueError, RecursionError):
                value = None
        if not isinstance(value, dict):
            # Not JSON to Python (nested deeper than its parser goes, or malformed): Spark may read it (it read bounds
            # nested 990 deep, measured) and delta-rs read none of it, so the text is bound as written.
            return self._unread(rel, {"statistics"}, [["text", [], stats]]) if gap and stats.strip() else None
        if self.statistics and _zoneless_statistics(value, self.statistics):
            self.zoneless_statistics.append(rel)
        unread = _unread_statistics(value, engine, self.columns) if gap else []
        if not unread:
            return None
        written: list[Any] = []
        for field, path, given in unread:
            try:  # as JSON text: exact types and values (1 and "1", floats by repr), whatever the nesting
                written.append([field, list(path), json.dumps(given, sort_keys=True, separators=(",", ":"),
                                                              ensure_ascii=False)])
            except (ValueError, RecursionError):
                return self._unread(rel, {"statistics"}, [["text", [], stats]])
        return self._unread(rel, {".".join([field, *path]) for field, path, _ in unread}, written)

    def see_partitions(self, rel: str, values: Any) -> None:
        """One live file's partition values as the log spells them (the part of ``see`` that needs no statistics: a
        file whose statistics delta-rs read whole, in a table without timestamp columns, needs no more)."""
        if isinstance(values, dict):
            if self.strings and any(values.get(k) == "" for k in self.strings):
                self.empty.append(rel)
            if self.timestamps:
                self.zoneless.update(self.partitions[k][0] for k in self.timestamps if _zoneless(values.get(k)))
            if self.stamps:
                if any(isinstance(values.get(k), str) and _LEAP_SECOND.match(values[k]) for k in self.stamps):
                    self.leap.append(rel)
                if any(isinstance(values.get(k), str) and _LOWER_CASE.search(values[k]) for k in self.stamps):
                    self.lower.append(rel)
            if self.floats and any(isinstance(values.get(k), str) and _SIGNED_NAN.fullmatch(values[k])
                                   for k in self.floats):
                self.nan.append(rel)

    def _unread(self, rel: str, names: set[str], bound: list[Any]) -> list[Any]:
        """Records a file with statistics delta-rs cannot read (``names``, for the note); returns ``bound``."""
        self.unread.append(rel)
        self.unread_names.update(names)
        return bound

    def report(self, problems: list[Problem], notes: list[str]) -> None:
        if self.empty:
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"{_some(self.empty)}: an empty partition value of a "
                                    "string column, which delta-rs reads as null and Spark as an empty string",
                                    self.empty[0]))
        if self.leap:
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"{_some(self.leap)}: a timestamp partition value with a "
                                    "leap second (':60'), which delta-rs reads as the next second and Spark as null",
                                    self.leap[0]))
        if self.lower:
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"{_some(self.lower)}: a timestamp partition value with "
                                    "a lower-case letter ('t', 'z', 'utc'), which delta-rs reads as an instant and "
                                    "Spark as null", self.lower[0]))
        if self.nan:
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"{_some(self.nan)}: a float partition value spelled as a "
                                    "signed NaN ('+nan', '-nan'), which delta-rs reads as NaN and Spark as null",
                                    self.nan[0]))
        if self.zoneless_statistics:
            # No writer measured writes them so (delta-rs and Spark write 'Z'); delta-rs's typed reading (the view) is
            # the same instant, and Spark in a New York session skipped the file in a query for its rows.
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"the statistics of {_some(self.zoneless_statistics)} "
                                    "give a timestamp bound without a time zone: delta-rs reads it as UTC, Spark in "
                                    "its session time zone, and a filtered query skips the file by it",
                                    self.zoneless_statistics[0]))
        if self.unread:
            # Bound as written in each file's view (see _compute_live), so a change is reader_view_changed: an honest
            # writer leaves them too (delta-rs writes a decimal bound past 17 digits as a rounded float it then cannot
            # read; record refuses one Spark skips rows by: content._spark_only_bounds).
            names = sorted(self.unread_names)
            notes.append(f"the statistics of {_some(self.unread)} give values delta-rs cannot read (it reads none: "
                         f"{', '.join(names[:5])}{' …' if len(names) > 5 else ''}), bound as written: Spark may read "
                         "them, and skip a file or count its rows by them")
        if self.zoneless:
            notes.append(f"timestamp partition values of {', '.join(sorted(self.zoneless))} carry no time zone (as "
                         "delta-rs writes them): delta-rs reads them as UTC, Spark in its session time zone "
                         "(spark.sql.session.timeZone) — other instants unless that zone is UTC")


def _some(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")


def _fields(fields: Any) -> list[dict[str, Any]]:
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []


def _physical(field: dict[str, Any]) -> str:
    return str((field.get("metadata") or {}).get("delta.columnMapping.physicalName") or field.get("name"))


def _leaf_columns(fields: Any, physical: tuple[str, ...] = (), logical: tuple[str, ...] = ()
                  ) -> list[tuple[tuple[str, ...], tuple[str, ...], str]]:
    """(physical path, logical path, type) of every column that is not a struct, through structs: the places the
    statistics can bound or count."""
    out: list[tuple[tuple[str, ...], tuple[str, ...], str]] = []
    for f in _fields(fields):
        key, name, kind = (*physical, _physical(f)), (*logical, str(f.get("name"))), f.get("type")
        if isinstance(kind, dict) and kind.get("type") == "struct":
            out += _leaf_columns(kind.get("fields"), key, name)
        else:
            out.append((key, name, kind if isinstance(kind, str) else "complex"))  # arrays and maps: no bounds
    return out


def _gap(value: Any) -> bool:
    """Whether delta-rs's reading of a statistic lacks something: None, or None somewhere inside."""
    if type(value) is dict:
        for v in value.values():  # noqa: SIM110 - a loop: any() over a generator cost ~2 µs a file here
            if v is None or (type(v) is dict and _gap(v)):
                return True
        return False
    return value is None


def _unread_statistics(parsed: dict[str, Any], engine: Mapping[str, Any],
                       columns: list[tuple[tuple[str, ...], tuple[str, ...], str]]
                       ) -> list[tuple[str, tuple[str, ...], Any]]:
    """(statistic, column path, JSON value) wherever the parsed JSON statistics give a value and delta-rs's typed
    statistics have none. A column delta-rs leaves out of its statistics altogether (past
    ``delta.dataSkippingNumIndexedCols``, not in ``delta.dataSkippingStatsColumns``, a type without bounds) is one
    Spark does not read either (measured)."""
    out: list[tuple[str, tuple[str, ...], Any]] = []
    if parsed.get("numRecords") is not None and engine.get("num_records") is None:
        out.append(("numRecords", (), parsed["numRecords"]))
    for field, key in _ENGINE_STATISTICS.items():
        given, mine = parsed.get(field), engine.get(key)
        if key == "num_records" or not given or not isinstance(given, dict):
            continue
        for physical, logical, _ in columns:
            value = _dig(given, physical)
            if value is None:
                continue
            if mine is not None:
                found = [v for v in (_find(mine, physical), _find(mine, logical)) if v is not _ABSENT]
                if not found or any(v is not None for v in found):  # delta-rs keys by physical name under mapping
                    continue
            # else delta-rs read none of this statistic: one value it could not parse voids them all
            out.append((field, physical, value))
    return out


def _find(node: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path``, None where a struct on the way is null, ``_ABSENT`` where a key is missing."""
    for key in path:
        if node is None:
            return None
        if not isinstance(node, dict) or key not in node:
            return _ABSENT
        node = node[key]
    return node


def _dig(node: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path``, None where anything on the way is missing."""
    value = _find(node, path)
    return None if value is _ABSENT else value


def _zoneless_statistics(parsed: dict[str, Any], columns: list[tuple[str, ...]]) -> bool:
    """Whether parsed JSON statistics give a ``timestamp`` column's minimum or maximum without a zone."""
    return any(isinstance(text := _dig(parsed.get(bound), column), str) and _ZONELESS_BOUND.fullmatch(text) is not None
               for bound in ("minValues", "maxValues") for column in columns)


def _zoneless(text: Any) -> bool:
    """A timestamp spelled without a zone, which delta-rs reads as UTC and Spark in its session time zone."""
    if not isinstance(text, str):
        return False
    found = _STAMP_TEXT.fullmatch(text)
    return found is not None and not found.group("zone")


def stamp_instant(text: str) -> Any:
    """The instant delta-rs reads a timestamp partition value as (a UTC datetime; without a zone: UTC), from the
    spellings ``_STAMP_TEXT`` takes with a zone it computes (UTC by name, an offset); None for any other text (a zone
    by region, a leap second, a year Python cannot hold, text delta-rs refuses). Digits past the microsecond are
    dropped, as both engines drop them."""
    import datetime as dt

    found = _STAMP_TEXT.fullmatch(text)
    if found is None or found.group("sign") == "-":
        return None
    zone = found.group("zone").strip()
    if not zone or zone.lower() in _UTC_NAMES:
        offset = dt.timedelta(0)
    else:
        spelled = _OFFSET.fullmatch(zone)
        if spelled is None:
            return None
        offset = dt.timedelta(hours=int(spelled.group("hours")), minutes=int(spelled.group("minutes")))
        offset = -offset if spelled.group("sign") == "-" else offset
    fraction = (found.group("fraction") or "")[:6].ljust(6, "0")
    try:
        return dt.datetime(int(found.group("year")), int(found.group("month")), int(found.group("day")),
                           int(found.group("hour") or 0), int(found.group("minute") or 0),
                           int(found.group("second") or 0), int(fraction),
                           tzinfo=dt.timezone(offset)).astimezone(dt.UTC)
    except (ValueError, OverflowError):
        return None
