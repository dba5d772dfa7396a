"""Delta generated partition columns held to their rows.

Spark derives partition filters from a generated partition column's expression (delta-spark 4.4,
``GeneratedColumn.getOptimizablePartitionExpressions`` and optimizablePartitionExpressions.scala): ``WHERE ts = …``
on a table partitioned by ``d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))`` also prunes files by ``d``. delta-rs
does not. A file whose partition value is not its rows' expression is then returned by full reads and by delta-rs,
and pruned by Spark's filtered reads: its rows have no one reader view, so ``record`` refuses it
(``table_inconsistent``), as carriers/iceberg/content.py ``_check_transforms`` refuses an Iceberg transform tuple.

The analysed forms Spark optimises on (its ``match``, the top-level node of the analysed generation expression):
``CAST(ts|date AS DATE)``, ``YEAR(date|CAST(ts AS DATE))``, ``MONTH(CAST(ts AS DATE))``, ``DAYOFMONTH(CAST(ts AS
DATE))``, ``HOUR(ts)``, ``DATE_FORMAT(ts, 'yyyy-MM'|'yyyy-MM-dd'|'yyyy-MM-dd-HH')``, ``DATE_FORMAT(CAST(date AS
TIMESTAMP), 'yyyy-MM')``, ``SUBSTRING(string, pos, len)``, ``DATE_TRUNC(unit, ts|CAST(date AS TIMESTAMP))``,
``TRUNC(date|CAST(ts|string AS DATE), unit)`` and a bare column (identity, nested fields too). Spellings the
analyser turns into them (``to_date``, ``date(…)``, ``day``, ``substr``, ``left``, ``extract``, ``date_part``, ``::``)
are matched too or, where this module cannot evaluate them, refused (``UnsupportedTableError``): never passed
unchecked. An expression whose top-level node is none of these (``id % 10``, ``year(ts) * 100 + month(ts)``,
``concat(…)``) gives Spark no partition filter, so every reader gets the same rows whatever its partition value: no
check.

Time zones: the timestamp forms are evaluated in the Spark session's time zone, at write and at read alike. Measured
(delta-spark 4.4): a table written in an ``Asia/Tokyo`` session and read in a ``UTC`` one prunes its own honest rows
from ``WHERE ts = …`` (docs/delta.md). Spark itself gives such a table no one reader view, so the check holds every
timestamp form in UTC (attest's own Spark sessions run in UTC): a table written in a UTC session passes, one written
in another zone is refused, naming the zone dependence.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from typing import Any, NoReturn

from attest.errors import CarrierError, Code, UnsupportedTableError

# A source column reference: a name, or backquoted, or a dotted path of them.
_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)(?:\s*\.\s*(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*))*"
# Function names the analyser may turn into a form Spark optimises on (GeneratedColumn.scala's match).
_CONCERN = {"cast", "to_date", "date", "year", "month", "day", "dayofmonth", "hour", "date_format", "substring",
            "substr", "left", "date_trunc", "trunc", "extract", "date_part", "datepart"}
_DATE_FORMATS = {"yyyy-MM": "%Y-%m", "yyyy-MM-dd": "%Y-%m-%d", "yyyy-MM-dd-HH": "%Y-%m-%d-%H"}
# Spark's TruncTimestamp / TruncDate units (DateTimeUtils.parseTruncLevel) as pyarrow's floor_temporal units.
_TRUNC_UNITS = {"year": "year", "yyyy": "year", "yy": "year", "quarter": "quarter", "month": "month", "mm": "month",
                "mon": "month", "week": "week", "day": "day", "dd": "day", "hour": "hour", "minute": "minute",
                "second": "second", "millisecond": "millisecond", "microsecond": "microsecond"}
_DATE_TRUNC_UNITS = {"year", "quarter", "month", "week"}  # TRUNC(date, unit) takes these only


def _path(text: str) -> list[str]:
    parts = re.findall(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*)", text)
    return [(a.replace("``", "`") if a else b) for a, b in parts]


def _unwrap(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _scan(text: str) -> Iterator[tuple[str, int, bool]]:
    """Each character of ``text`` with the parenthesis depth after it and whether it is quoted (inside a quote, or the
    quote itself), then ``("", depth, open quote left)``: the one scanner ``_balanced`` and ``_call`` share."""
    depth, quote = 0, ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            yield ch, depth, True
        elif ch in "'`\"":
            quote = ch
            yield ch, depth, True
        else:
            depth += (ch == "(") - (ch == ")")
            yield ch, depth, False
    yield "", depth, bool(quote)


def _balanced(text: str) -> bool:
    *steps, (_end, depth, quote_open) = _scan(text)  # the last step: the depth and quote left at the end
    return depth == 0 and not quote_open and all(d >= 0 for _ch, d, _q in steps)


def _call(text: str) -> tuple[str, list[str]] | None:
    """``name(arg, …)`` covering all of ``text``: the lower-cased name and the top-level argument texts."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)", text, re.S)
    if not m or not _balanced(m.group(2)):
        return None
    args: list[str] = []
    cur = ""
    for ch, depth, quoted in _scan(m.group(2)):
        if ch == "," and depth == 0 and not quoted:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return m.group(1).lower(), args


def _column(text: str) -> list[str] | None:
    text = _unwrap(text)
    return _path(text) if re.fullmatch(_IDENT, text) else None


def _literal(text: str) -> str | None:
    m = re.fullmatch(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"", _unwrap(text))
    return None if m is None else (m.group(1) if m.group(1) is not None else m.group(2))


def _integer(text: str) -> int | None:
    m = re.fullmatch(r"[-+]?\d+", _unwrap(text))
    return int(m.group(0)) if m else None


def _cast(text: str) -> tuple[list[str], str] | None:
    """``CAST(col AS type)`` / ``col::type`` / ``to_date(col)`` / ``date(col)``: the column and the lower-cased type."""
    text = _unwrap(text)
    m = re.fullmatch(rf"(?i:cast)\s*\(\s*({_IDENT})\s+(?i:as)\s+([A-Za-z_]+)\s*\)", text)
    if m:
        return _path(m.group(1)), m.group(2).lower()
    m = re.fullmatch(rf"({_IDENT})\s*::\s*([A-Za-z_]+)", text)
    if m:
        return _path(m.group(1)), m.group(2).lower()
    call = _call(text)
    if call and call[0] in ("to_date", "date") and len(call[1]) == 1 and _column(call[1][0]):
        return _column(call[1][0]) or [], "date"
    return None


def parse(expression: str) -> tuple[str, list[str], Any] | None:
    """The form Spark optimises ``expression`` on, as (kind, source column path, parameter); None when it gives Spark
    no partition filter. UnsupportedTableError when Spark might optimise on it and this module cannot evaluate it."""
    text = _unwrap(expression)
    column = _column(text)
    if column is not None:
        return "identity", column, None
    cast = _cast(text)
    if cast is not None:
        # Spark's match takes only a cast to DATE at the top (a cast to another type gives it no filter).
        return ("date", cast[0], None) if cast[1] == "date" else None
    call = _call(text)
    if call is None:
        if "::" in text and not re.search(r"[-+*/%|&]", text.split("::")[0]):
            _unsupported(expression)
        return None  # an operator or CASE at the top: Spark matches only a top-level function, cast or column
    name, args = call
    if name not in _CONCERN:
        return None  # concat(…), coalesce(…), …: not a node Spark's match optimises on
    if name in ("year", "month", "day", "dayofmonth", "hour") and len(args) == 1:
        src = _column(args[0]) or ((_cast(args[0]) or ([], ""))[0] if (_cast(args[0]) or ([], ""))[1] == "date"
                                   else None)
        if src:
            return {"day": "dayofmonth"}.get(name, name), src, None
    if name == "date_format" and len(args) == 2 and _literal(args[1]) in _DATE_FORMATS:
        src = _column(args[0])
        if src:
            return "date_format", src, _DATE_FORMATS[str(_literal(args[1]))]
    if name in ("substring", "substr") and len(args) in (2, 3):
        src, pos = _column(args[0]), _integer(args[1])
        length = _integer(args[2]) if len(args) == 3 else 2**31 - 1
        if src and pos is not None and length is not None:
            return "substring", src, (pos, length)
    if name == "left" and len(args) == 2:
        src, length = _column(args[0]), _integer(args[1])
        if src and length is not None:
            return "substring", src, (1, length)
    if name == "date_trunc" and len(args) == 2:
        unit, src = (_literal(args[0]) or "").lower(), _column(args[1])
        if src and unit in _TRUNC_UNITS:
            return "date_trunc", src, _TRUNC_UNITS[unit]
    if name == "trunc" and len(args) == 2:
        unit = (_literal(args[1]) or "").lower()
        src = _column(args[0])
        cast = _cast(args[0])
        if cast is not None and cast[1] == "date":
            src = cast[0]
        if src and _TRUNC_UNITS.get(unit) in _DATE_TRUNC_UNITS:
            return "trunc", src, _TRUNC_UNITS[unit]
    _unsupported(expression)


def _unsupported(expression: str) -> NoReturn:
    raise UnsupportedTableError(
        f"a partition column is generated as {expression[:200]!r}, which Spark may derive partition filters from "
        "and attest cannot evaluate: its partition values cannot be held to the rows")


def _expected(kind: str, param: Any, column: Any) -> Any:
    """What Spark writes as the partition value of each row (in a UTC session): an Arrow array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("us", column.type.tz)).cast(pa.timestamp("us"))  # UTC wall time
    temporal = pa.types.is_timestamp(column.type) or pa.types.is_date(column.type)
    if kind == "identity":
        return column
    if kind in ("date", "year", "month", "dayofmonth", "trunc") and temporal:
        day = column.cast(pa.date32())
        if kind == "date":
            return day
        if kind == "trunc":
            return pc.floor_temporal(day, unit=param, week_starts_monday=True)
        return getattr(pc, {"dayofmonth": "day"}.get(kind, kind))(day)
    if kind == "hour" and pa.types.is_timestamp(column.type):
        return pc.hour(column)
    if kind == "date_format" and temporal:
        return pc.strftime(column if pa.types.is_timestamp(column.type) else column.cast(pa.timestamp("us")),
                           format=param)
    if kind == "date_trunc" and temporal:
        stamp = column if pa.types.is_timestamp(column.type) else column.cast(pa.timestamp("us"))
        return pc.floor_temporal(stamp, unit=param, week_starts_monday=True)
    if kind == "substring" and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        pos, length = param
        return pa.array([None if v is None else _substring(v, pos, length) for v in column.to_pylist()],
                        pa.string()) if pos < 0 else \
            pc.utf8_slice_codeunits(column, max(pos - 1, 0), min(max(pos - 1, 0) + max(length, 0), 2**31 - 1))
    raise ValueError(f"{kind} of a {column.type} column")


def _substring(value: str, pos: int, length: int) -> str:
    """Spark's ``UTF8String.substringSQL`` for a negative ``pos``."""
    start = len(value) + pos
    end = start + length
    return value[max(start, 0):max(end, 0)]


def _normal(value: Any) -> Any:
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def check_generated(path: str, generated: dict[str, tuple[str, list[str], Any]], values: dict[str, Any],
                    arrays: dict[str, Any], physical: dict[str, str], keep: list[bool] | None, *,
                    rewrite: bool) -> None:
    """Every row of the file at ``path`` (those ``keep`` keeps) maps to its partition value under each generated
    partition column's expression (``generated``: partition column -> ``parse``'s form); ``arrays``: its data
    columns as read, by physical name (``physical``: logical top-level name -> physical). Spark writes a null
    partition value for a null or empty expression (SPARK-24438), so that is what is expected of such rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from carriers.content_store import StatisticsMismatch

    for partition, (kind, source, param) in generated.items():
        top = physical.get(source[0], source[0])
        if top not in arrays:
            continue  # a column the file lacks: every reader reads nulls (checked below as such)
        column = arrays[top]
        try:  # a nested source (identity only, in Spark's match), by its logical names
            for name in source[1:]:
                column = pc.struct_field(column, name)
        except (KeyError, ValueError, pa.ArrowException) as exc:
            raise CarrierError(f"data file {path}: its partition value of {partition!r} cannot be held to its rows "
                               f"({exc})", code=Code.TABLE_INCONSISTENT, path=path) from exc
        if keep is not None:  # rows a deletion vector deletes reach no reader
            column = column.filter(pa.array(keep[:len(column)] + [True] * (len(column) - len(keep))))
        if len(column) == 0:
            continue
        if kind not in ("identity", "substring") and not (pa.types.is_timestamp(column.type)
                                                          or pa.types.is_date(column.type)):
            # A string source of a date form: Spark's match takes timestamps and dates only (TRUNC(CAST(string AS
            # DATE)) aside, refused here), so it derives no filter from it.
            if kind == "trunc":
                _unsupported(f"trunc of the string column {'.'.join(source)}")
            continue
        if (kind == "hour" and not pa.types.is_timestamp(column.type)) or (
                kind == "substring" and not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type))):
            continue  # HOUR of a date, SUBSTRING of a number: a cast sits under them, which Spark's match does not take
        try:
            got = _expected(kind, param, column)
        except (ValueError, pa.ArrowException) as exc:
            message = f"data file {path}: its partition value of {partition!r} cannot be held to its rows ({exc})"
            if rewrite:
                raise StatisticsMismatch(message) from exc
            raise CarrierError(message, code=Code.TABLE_INCONSISTENT, path=path) from exc
        mapped = {None if v == "" else _normal(v) for v in pc.unique(got).to_pylist()}
        value = _normal(values.get(partition))
        if mapped != {value}:
            found = sorted(map(str, mapped))[:3]
            message = (f"data file {path} has the partition value {value!r} for the generated column {partition!r} "
                       f"({kind} of {'.'.join(source)!r}, in UTC), its rows map to {found}: Spark prunes files by it "
                       f"(a filtered read skips rows a full read and delta-rs return)")
            if rewrite:
                raise StatisticsMismatch(message)
            raise CarrierError(message, code=Code.TABLE_INCONSISTENT, path=path)


def generated_partitions(fields: dict[str, dict[str, Any]], partition_columns: list[str]
                         ) -> dict[str, tuple[str, list[str], Any]]:
    """Each partition column whose ``delta.generationExpression`` Spark derives partition filters from, by name, as
    ``parse`` reads it (UnsupportedTableError from ``parse`` when it cannot be evaluated)."""
    out: dict[str, tuple[str, list[str], Any]] = {}
    for name in partition_columns:
        expression = ((fields.get(name) or {}).get("metadata") or {}).get("delta.generationExpression")
        if isinstance(expression, str):
            form = parse(expression)
            if form is not None:
                out[name] = form
    return out
