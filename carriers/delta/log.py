"""Reading the Delta log beyond delta-rs's public API: commits, an independent replay, checkpoint cross-checks.

delta-rs is the engine: the Delta carrier takes a version's files, schema and statistics from its snapshot. This
module is the second opinion it is checked against, and what delta-rs does not expose:

- ``Commit``: one ``_delta_log/<version>.json`` summarised (operation, file actions, metadata) to classify what happened
  between an attested version and a later one. Commits are newline-delimited JSON: lines are split on ``\\n`` only, so
  any code point (U+2028, U+0085, ...) in any value round-trips;
- ``replay``: a version's live adds (raw path, size, partition values, deletion vector, stats), metadata and protocol
  from the newest complete checkpoint (classic, multi-part, v2 with sidecars) plus the JSON commits after it, read in
  bounded batches;
- ``checkpoint_problems``: where checkpoints and the log disagree (two checkpoints of one version that differ, a
  checkpoint that is not the replay of the log before it, a compacted log file that is not the reconciliation of its
  commits, in any action): engines choose between them differently, so a table whose metadata contradicts itself
  gets no verdict;
- deletion vectors: the protocol's z85 path encoding.
"""

from __future__ import annotations

import datetime
import json
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from attest import fast
from attest.errors import AttestError, Code, TableInconsistentError
from attest.fast import jsonscan
from carriers.core import canonical_relative
from carriers.delta.adds import Adds
from carriers.delta.lines import LOG_DIR as LOG_DIR  # the log's names are spelt once, where its lines are read
from carriers.delta.lines import commit_name as commit_name
from carriers.storage.base import Storage

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}
# Checkpoints as Spark and delta-rs name them: classic and multi-part ones are Parquet, only v2 (uuid-named) ones may be
# JSON. Neither engine takes '<v>.checkpoint.json' for a checkpoint (measured: Spark loaded from the commits and a
# compacted file before it), so the replay does not either (Spark's pattern for an unbackfilled commit matches it).
_CHECKPOINT = re.compile(
    r"^(?P<v>[0-9]{20})\.checkpoint(?:\.(?P<part>[0-9]{10})\.(?P<parts>[0-9]{10})\.parquet"
    r"|\.(?P<uuid>[0-9a-fA-F-]{36})\.(?:parquet|json)|\.parquet)$"
)
_COMPACTED = re.compile(r"^(?P<a>[0-9]{20})\.(?P<b>[0-9]{20})\.compacted\.json$")
_COMMIT = re.compile(r"[0-9]{20}\.json")
# What Spark takes for a commit, a checkpoint, a compacted file or an unbackfilled commit (its FileNames patterns, the
# compacted one with its unescaped dots; Java's \d is ASCII). A log file matching one of these and none of the patterns
# above is a version Spark reads while delta-rs and this replay skip it (measured: '2.json' after version 1).
_SPARK_LOG_NAME = re.compile(r"[0-9]+\.json"
                             r"|[0-9]+\.checkpoint(?:(?:\.[0-9]+\.[0-9]+)?\.parquet|\.[^.]+\.(?:json|parquet))"
                             r"|[0-9]+.[0-9]+.compacted.json|[0-9]+\.[^.]+\.json")
# Compacted log files no reader of the version takes are checked while their commits total at most this many (files
# engines read are always checked). The checkpoint cross-check has no such bound: it always runs when the log before
# the checkpoint is there, at the cost of an engine loading the version before it (see _cross_check).
CROSS_CHECK_LIMIT = 2000
_BATCH_ROWS = 8192


# ---- commits -----------------------------------------------------------------------------------------------------
def json_lines(data: bytes, where: str) -> Iterator[dict[str, Any]]:
    """The actions of newline-delimited JSON: split on ``\\n`` only (never on other Unicode line breaks), strictly: the
    whole file UTF-8, each line one JSON object naming no key twice (the lenient reading is carriers/delta/lines.py)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TableInconsistentError(f"{where} is not UTF-8: {exc.reason} at byte {exc.start}") from exc
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            action = jsonscan.loads_unique(line)
        except jsonscan.DuplicateKeyError as exc:
            raise TableInconsistentError(f"{where} line {number} names the key {exc.key!r} twice in one object: "
                                         "engines read different values out of it") from None
        except (ValueError, RecursionError) as exc:  # hostile depth is a malformed log, not a crash
            raise TableInconsistentError(f"{where} line {number} is not a JSON action: "
                                         f"{type(exc).__name__}") from None
        if not isinstance(action, dict):
            raise TableInconsistentError(f"{where} line {number} is not a JSON object")
        yield action


@dataclass(frozen=True)
class Commit:
    """One commit file, summarised."""

    version: int
    operation: str
    parameters: dict[str, Any]
    adds: tuple[dict[str, Any], ...]
    removes: tuple[dict[str, Any], ...]
    configuration: dict[str, str] | None  # the metaData action's full configuration, when the commit has one
    protocol: dict[str, Any] | None = None
    engine: str = ""
    metadata: dict[str, Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    # The change-data files (``cdc`` actions): what change-feed readers (Spark's readChangeFeed / table_changes,
    # delta-rs's load_cdf) read as this version's changes in place of its adds and removes.
    cdcs: tuple[dict[str, Any], ...] = ()

    @property
    def touches_files(self) -> bool:
        return bool(self.adds or self.removes or self.cdcs)

    @property
    def data_change(self) -> bool:
        # dataChange is required on add/remove; a missing flag is read as a data change (the safe side). A commit with
        # change-data files states changes to change-feed readers whatever its flags say (measured: Spark and delta-rs
        # read a cdc file's rows as inserted at a dataChange: false OPTIMIZE's version); writers add them to DML only.
        return bool(self.cdcs) or any(a.get("dataChange", True) is not False for a in (*self.adds, *self.removes))

    def label(self) -> str:
        mode = self.parameters.get("mode")
        op = self.operation or "commit"
        shown = f"{op} ({mode})" if isinstance(mode, str) else op
        feed = f" (with {len(self.cdcs)} change-data file(s) change-feed readers read)" if self.cdcs else ""
        return f"{shown} at version {self.version}{feed}"


def parse_commit(version: int, data: bytes) -> Commit:
    operation, params, engine = "", {}, ""
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    cdcs: list[dict[str, Any]] = []
    configuration: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None
    info: dict[str, Any] = {}
    for action in json_lines(data, commit_name(version)):
        if isinstance(action.get("add"), dict):
            adds.append(action["add"])
        elif isinstance(action.get("remove"), dict):
            removes.append(action["remove"])
        elif "cdc" in action:  # any value: a malformed one is a change-feed reader's failure, never "no change"
            cdcs.append(action["cdc"] if isinstance(action["cdc"], dict) else {})
        elif isinstance(action.get("metaData"), dict):
            metadata = action["metaData"]
            configuration = {str(k): str(v) for k, v in (metadata.get("configuration") or {}).items()}
        elif isinstance(action.get("protocol"), dict):
            protocol = action["protocol"]
        elif "commitInfo" in action:
            info = action["commitInfo"] if isinstance(action["commitInfo"], dict) else {}
            operation = str(info.get("operation") or "")
            raw = info.get("operationParameters") or {}
            params = raw if isinstance(raw, dict) else {}
            engine = str(info.get("engineInfo") or "")
    return Commit(version, operation, params, tuple(adds), tuple(removes), configuration, protocol, engine,
                  metadata, info, tuple(cdcs))


def read_commit(storage: Storage, version: int) -> Commit | None:
    """The commit at ``version``, or None when its JSON is gone (log cleanup after a checkpoint)."""
    data = storage.read(commit_name(version))
    return None if data is None else parse_commit(version, data)


# ---- deletion vectors --------------------------------------------------------------------------------------------
def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) as the Delta protocol uses it for deletion-vector UUIDs."""
    if len(text) % 5:
        raise ValueError(f"z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for ch in text[i:i + 5]:
            if ch not in _Z85_INDEX:
                raise ValueError(f"{ch!r} is not a z85 character")
            value = value * 85 + _Z85_INDEX[ch]
        if value > 0xFFFFFFFF:
            raise ValueError("z85 group out of range")
        out += value.to_bytes(4, "big")
    return bytes(out)


def z85_encode(data: bytes) -> str:
    if len(data) % 4:
        raise ValueError("z85 input length must be a multiple of 4")
    chars: list[str] = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i:i + 4], "big")
        group = []
        for _ in range(5):
            value, rem = divmod(value, 85)
            group.append(_Z85[rem])
        chars.extend(reversed(group))
    return "".join(chars)


def deletion_vector_path(descriptor: dict[str, Any]) -> str | None:
    """The file a deletion-vector descriptor points to: relative to the table root for storage type ``u``,
    the absolute path for ``p``, None for inline (``i``) vectors, which have no file."""
    kind = descriptor.get("storageType")
    value = str(descriptor.get("pathOrInlineDv") or "")
    if kind == "i":
        return None
    if kind == "p":
        return value
    if kind == "u":
        # The last 20 characters are the z85 UUID; anything before them is a random directory prefix.
        if len(value) < 20:
            raise ValueError(f"deletion vector id {value!r} is shorter than a z85 UUID")
        prefix, encoded = value[:-20], value[-20:]
        import uuid  # here: it imports platform (~2 ms), and only tables with deletion vectors need it

        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    raise ValueError(f"unknown deletion vector storage type {kind!r}")


# The magic number before a deletion vector's bitmap (stored or inline): RoaringBitmapArray's portable format.
_DV_MAGIC = 1681511377


def vector_least_greatest_row(data: bytes, at: int = 0) -> int | None:
    """A row index the greatest row a deletion vector's bitmap names is at least (within 65535 of it), read from its
    headers alone: ``data[at:]`` is the magic number and a 64-bit roaring bitmap in the portable format (bucket count,
    then each bucket's high 32 bits and a 32-bit roaring bitmap, read container after container as delta-rs reads
    them). None when it names no row or is not such a bitmap (its reader refuses it then)."""
    walked = vector_walk(data, at)
    return None if walked is None else walked[0]


def vector_walk(data: bytes, at: int = 0) -> tuple[int | None, int] | None:
    """``vector_least_greatest_row``'s bound (None: no row) and the offset where the bitmap ends, from its headers;
    None when ``data[at:]`` is not such a bitmap."""
    import struct

    try:
        if struct.unpack_from("<i", data, at)[0] != _DV_MAGIC:
            return None
        (buckets,) = struct.unpack_from("<Q", data, at + 4)
        at += 12
        best: int | None = None
        for _ in range(buckets):  # each bucket takes bytes: a count past the data ends in struct.error
            (high,) = struct.unpack_from("<I", data, at)
            (cookie,) = struct.unpack_from("<I", data, at + 4)
            at += 8
            if cookie & 0xFFFF == 12347:  # with run containers: their flags, offsets from 4 containers on
                n = (cookie >> 16) + 1
                runs, at = data[at:at + (n + 7) // 8], at + (n + 7) // 8
                offsets = n >= 4
            elif cookie == 12346:
                (n,) = struct.unpack_from("<I", data, at)
                runs, at, offsets = b"", at + 4, True
            else:
                return None
            keys = [struct.unpack_from("<HH", data, at + 4 * i) for i in range(n)]
            at += 4 * n * (2 if offsets else 1)
            for i, (key, less_one) in enumerate(keys):
                best = max(best or 0, (high << 32) | (key << 16))
                if runs and runs[i // 8] >> (i % 8) & 1:
                    (count,) = struct.unpack_from("<H", data, at)
                    at += 2 + 4 * count
                else:
                    at += 2 * (less_one + 1) if less_one < 4096 else 8192
            if at > len(data):
                return None
        return best, at
    except struct.error:
        return None


# ---- replay ------------------------------------------------------------------------------------------------------
def dv_unique_id(descriptor: Any) -> str | None:
    """The protocol's id of a deletion vector (storage type, path or inline bits, ``@offset`` when there is one); None
    for a file without one. A logical file is keyed by (path, this id)."""
    if not isinstance(descriptor, dict):
        return None
    offset = descriptor.get("offset")
    tail = "" if offset is None else f"@{offset}"
    return f"{descriptor.get('storageType')}{descriptor.get('pathOrInlineDv')}{tail}"


# ---- what one version may hold once ------------------------------------------------------------------------------
# PROTOCOL.md, "Action Reconciliation": a version's actions are applied in no guaranteed order, so a valid one holds
# one metaData and one protocol at most, one add and one remove per path, never an add and a remove of one logical
# file, one action per line. Anything else means what each engine's order makes of it (measured: Spark read the second
# metaData and the second add of one commit, delta-rs the first), so the version gets no verdict.
_SHOWN_PROBLEMS = 5
# The protocol's actions (PROTOCOL.md, "Actions"): a line holds one. Any other key of a line is an action or field no
# reader measured knows, and readers must ignore it (PROTOCOL.md: "readers should ignore unknown fields and actions";
# Spark's log-evolvability test table holds one beside add and commitInfo, and delta-rs 1.6 read it, measured: the same
# rows, and no name other than these — "Remove", "metadata", an add's "Path" — read as an action or a field). So only
# two of these on one line make it ambiguous.
ACTIONS = frozenset({"add", "remove", "metaData", "protocol", "commitInfo", "txn", "cdc", "domainMetadata",
                     "checkpointMetadata", "sidecar"})
# The fields of the actions that decide what is read. An unknown key is ignored, except one that differs from an action
# or one of these fields only in case ("Remove", "Path"): delta-rs matched a log line's names exactly (measured: it
# ignored them; in a Parquet checkpoint it refused a column beside its case twin), but a reader matching names without
# case (Spark's Parquet reader does, unless spark.sql.caseSensitive is set) would read another file, size or schema.
_FIELDS = {
    "add": frozenset({"path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags",
                      "deletionVector", "baseRowId", "defaultRowCommitVersion", "clusteringProvider"}),
    "remove": frozenset({"path", "deletionTimestamp", "dataChange", "extendedFileMetadata", "partitionValues", "size",
                         "stats", "tags", "deletionVector", "baseRowId", "defaultRowCommitVersion"}),
    "metaData": frozenset({"id", "name", "description", "format", "schemaString", "partitionColumns", "createdTime",
                           "configuration"}),
    "protocol": frozenset({"minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"}),
}
_FOLDED = {kind: {name.lower(): name for name in names} for kind, names in {"": ACTIONS, **_FIELDS}.items()}


class _Validity:
    """The actions of one commit (or one checkpoint: ``checkpoint=True``) checked against what a version may hold
    once; ``problems`` says what broke it (at most _SHOWN_PROBLEMS, then a count)."""

    def __init__(self, where: str, *, checkpoint: bool = False, parsed: dict[str, Any] | None = None,
                 deferred: list[str] | None = None) -> None:
        self.where = where
        self.checkpoint = checkpoint
        self.parsed = parsed  # statistics text -> its JSON value, kept for the carrier (LogState.parsed_stats)
        # Given, the adds' statistics texts are collected here instead of parsed one by one: checked in bulk later
        # (_BulkStatistics), and only where that cannot vouch for them judged one by one as before.
        self.deferred = deferred
        self.metadata = 0
        self.protocol = 0
        # Logical files, (path, deletion-vector id), added and removed; a commit may also add (and remove) a path once
        # whatever its vector (paths), a checkpoint holds a path once per vector (a path live with two is
        # LogState.twice, reported on its own).
        self.files: dict[str, set[tuple[str, str | None]]] = {"add": set(), "remove": set()}
        self.paths: dict[str, set[str]] = {"add": set(), "remove": set()}
        self.problems: list[str] = []
        self.hidden = 0

    def _problem(self, text: str) -> None:
        if len(self.problems) < _SHOWN_PROBLEMS:
            self.problems.append(f"{self.where}: {text}")
        else:
            self.hidden += 1

    def report(self) -> list[str]:
        return self.problems + ([f"{self.where}: {self.hidden} more such problems"] if self.hidden else [])

    def see(self, action: dict[str, Any]) -> None:
        if len(action) > 1:
            present = sorted(k for k, v in action.items() if v is not None and k in ACTIONS)
            if len(present) > 1:
                self._problem(f"one line holds {len(present)} actions ({', '.join(present[:4])}): engines apply one "
                              "of them or all of them")
        if not action.keys() <= ACTIONS:
            self._lookalikes("", action)
        for kind, body in action.items():
            if not isinstance(body, dict):
                continue
            if kind in _FIELDS and not body.keys() <= _FIELDS[kind]:
                self._lookalikes(kind, body)
            if kind == "add" or kind == "remove":
                self._file(kind, body)
            elif kind == "metaData":
                self.metadata += 1
                if self.metadata == 2:
                    self._problem("holds more than one metaData action: engines read either schema and properties")
                self._unique_json(body.get("schemaString"), "the schema")
            elif kind == "protocol":
                self.protocol += 1
                if self.protocol == 2:
                    self._problem("holds more than one protocol action: engines read either")

    def _lookalikes(self, kind: str, body: dict[str, Any]) -> None:
        """Unknown keys of a line (``kind`` "") or of an action's body are ignored (see ACTIONS), unless they spell a
        known name in another case."""
        known = _FIELDS.get(kind, ACTIONS)
        for key in body.keys() - known:
            name = _FOLDED[kind].get(str(key).lower())
            if name is not None:
                what = f"the {kind} field {name!r}" if kind else f"the action {name!r}"
                self._problem(f"{key!r} differs from {what} only in case: an engine that matches names without case "
                              "reads it as that")

    def _file(self, kind: str, body: dict[str, Any]) -> None:
        path = str(body.get("path"))
        dv = body.get("deletionVector")
        logical = (path, None if dv is None else dv_unique_id(dv))
        mine = self.files[kind]
        if logical in mine or (not self.checkpoint and path in self.paths[kind]):
            self._problem(f"{kind}s {path!r} twice: engines keep either {kind}")
        mine.add(logical)
        if not self.checkpoint:
            self.paths[kind].add(path)
        if logical in self.files["remove" if kind == "add" else "add"]:
            self._problem(f"adds and removes {path!r} with the same deletion vector: in one order the file is live, "
                          "in the other gone")
        if kind == "remove" and not self.checkpoint:  # a checkpoint's removes are tombstones: they remove nothing
            rel, reason = canonical_relative(path)
            if rel is None:
                # Measured: Spark removed x for a remove of './x' or 'd/../x' (Hadoop Path normalises it), delta-rs
                # matches paths as written and kept x live.
                self._problem(f"removes {path!r}, a path engines resolve differently ({reason}): the file it names "
                              "is gone for one and live for the other")
        if kind == "add":
            stats = body.get("stats")
            if self.deferred is not None:
                if isinstance(stats, str):
                    self.deferred.append(stats)
                return
            value = self._unique_json(stats, f"the statistics of {path!r}")
            if value is None and isinstance(stats, str):
                self._not_json(stats, f"the statistics of {path!r}")
            if self.parsed is not None and isinstance(value, dict):
                self.parsed[str(stats)] = value
            if self.checkpoint:
                self._parsed_agree(path, body)

    def _parsed_agree(self, path: str, add: dict[str, Any]) -> None:
        """A checkpoint may hold a file's statistics and partition values twice, as JSON text and typed
        (``stats_parsed``, ``partitionValues_parsed``); readers take either (measured: delta-rs the typed statistics,
        Spark the JSON: a forged JSON maximum made Spark skip the file in a filtered query while delta-rs, whose
        snapshot the reader view comes from, saw the true one). The two must say the same."""
        stats, parsed = add.get("stats"), add.get("stats_parsed")
        if "stats" in add and stats is None and holds_value(parsed):
            # A null JSON column beside typed statistics: Spark reads the JSON column (no statistics: no file skipped),
            # delta-rs the typed ones (measured, delta-spark 4.4 / delta-rs 1.6: forged typed bounds made delta-rs's
            # `v >= 1` return no row, Spark's every row). Only with no JSON column does Spark read the typed ones.
            self._problem(f"the statistics of {path!r} are null as JSON and given as typed values: Spark reads none, "
                          "delta-rs the typed ones, and they skip files by different statistics")
        if isinstance(stats, str) and isinstance(parsed, dict):
            try:
                text = json.loads(stats, parse_float=Decimal)
            except (ValueError, RecursionError):
                text = None
            if not isinstance(text, dict) or _differs(text, parsed):
                self._problem(f"the statistics of {path!r} as JSON and as typed values differ: engines skip files by "
                              "either")
        values, typed = add.get("partitionValues"), add.get("partitionValues_parsed")
        if isinstance(values, dict) and isinstance(typed, dict) and any(
                k in values and _partition_differs(values[k], v) for k, v in typed.items()):
            self._problem(f"the partition values of {path!r} as text and as typed values differ: engines read either")

    def _unique_json(self, text: Any, what: str) -> Any:
        """The JSON value of ``text`` when it is JSON naming no key twice (a problem when it does), else None."""
        if not isinstance(text, str):
            return None
        try:
            return jsonscan.loads_unique(text)
        except jsonscan.DuplicateKeyError as exc:
            self._problem(f"{what}: an object names the key {exc.key!r} twice; engines read different values")
        except (ValueError, RecursionError):
            pass  # malformed, not ambiguous (statistics: _not_json)
        return None

    def _not_json(self, text: str, what: str) -> None:
        """A file's statistics text that is not JSON is a problem. Engines read such text differently (measured,
        delta-rs 1.6 / delta-spark 4.4): delta-rs's reader takes leading zeros (``01``), a trailing decimal point
        (``1.``), extra or trailing commas and raw control characters in strings, the last of a key named twice, and
        skips files by what it reads; Spark reads the text up to the error (a ``numRecords`` of 5 before a ``02`` made
        its ``COUNT(*)`` 5 over 2 rows while delta-rs read the later ``numRecords`` 2) — and no check here can hold such
        text to the rows, nor find a key named twice in it. Text delta-rs refuses makes the table unreadable to it.
        Nested deeper than Python parses is bound as written instead (carriers/delta/spellings.py)."""
        try:
            json.loads(text)
        except ValueError as exc:
            self._problem(f"{what} are not JSON ({exc}): delta-rs reads such text leniently (leading zeros, trailing "
                          "commas, raw control characters) and Spark up to the error, so they skip files and count "
                          "rows by different statistics")
        except RecursionError:
            pass


def holds_value(typed: Any) -> bool:
    """Whether a typed value (a checkpoint's ``stats_parsed``) holds anything but nulls, through structs."""
    if isinstance(typed, dict):
        return any(holds_value(v) for v in typed.values())
    return typed is not None


def _differs(text: Any, typed: Any) -> bool:
    """Whether a JSON statistics value and its typed twin (a checkpoint's ``stats_parsed``) certainly differ: compared
    where the type says how (numbers, strings, booleans, decimals, dates, timestamps), recursively through structs;
    a leaf whose rendering is not certain is not compared."""
    if isinstance(typed, dict):
        if text is None:
            return any(v is not None for v in typed.values())
        if not isinstance(text, dict):
            return True
        return any(_differs(text.get(k), v) for k, v in typed.items())
    if typed is None or text is None:
        return (typed is None) != (text is None)
    if isinstance(typed, bool) or isinstance(text, bool):
        return typed is not text
    if isinstance(typed, float) and (typed != typed or not isinstance(text, int | Decimal)):
        return False  # NaN, or a JSON rendering of one (a string, a NaN token): not comparable here
    if isinstance(typed, int | float | Decimal):
        if not isinstance(text, int | Decimal):
            return True
        if isinstance(typed, float):
            # A float column's typed statistic is a 32-bit float: the JSON decimal rounded to it, not equal to it.
            return float(text) != typed and _float32(float(text)) != typed
        return Decimal(typed) != Decimal(text)
    if isinstance(typed, str):
        return bool(typed != text)
    if isinstance(typed, datetime.datetime) and isinstance(text, str):
        try:
            stamp = datetime.datetime.fromisoformat(text)
        except ValueError:
            return True
        # One rendering without a zone and one with: not comparable here.
        return (typed.tzinfo is None) == (stamp.tzinfo is None) and stamp != typed
    if isinstance(typed, datetime.date) and isinstance(text, str):
        return text != typed.isoformat()
    return False


def _float32(value: float) -> float:
    import struct

    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return value


def _partition_differs(text: Any, typed: Any) -> bool:
    """Whether a partition value (text, as the protocol serialises it) and its typed twin certainly differ."""
    if typed is None or text is None:
        return (typed is None) != (text is None)
    if isinstance(typed, bool):
        return bool(text != ("true" if typed else "false"))
    if isinstance(typed, Decimal):
        try:
            return Decimal(str(text)) != typed
        except InvalidOperation:
            return True
    if isinstance(typed, int | str) or (isinstance(typed, datetime.date) and not isinstance(typed, datetime.datetime)):
        return str(text) != (typed.isoformat() if isinstance(typed, datetime.date) else str(typed))
    return False


@dataclass
class LogState:
    """A version as the log says it is: live adds by raw path, metadata and protocol actions.

    Files are keyed as the protocol keys logical files, by (path, deletion-vector id): a remove takes away only the
    entry whose deletion vector it names, and an add under a path that is live with another deletion vector makes a
    second logical file of the same bytes, which every protocol reader reads again (``twice``); ``adds`` keeps the
    last one of each path."""

    version: int
    # A mapping as a dict of raw path -> add; a regular checkpoint's rows stay in its columns (carriers/delta/adds.py).
    adds: Adds = field(default_factory=Adds)
    metadata: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None
    checkpoint: int | None = None  # the checkpoint version the replay started from
    # Paths live as more than one logical file: path -> {deletion-vector id: add} of its entries other than ``adds``'.
    twice: dict[str, dict[str | None, dict[str, Any]]] = field(default_factory=dict)
    # What makes the commits and checkpoint read invalid versions (_Validity): engines read them differently.
    invalid: list[str] = field(default_factory=list)
    # Statistics text -> its JSON value, as the replay parsed it (the carrier reads them again: parsed once).
    parsed_stats: dict[str, Any] = field(default_factory=dict)

    def _remove(self, remove: dict[str, Any]) -> None:
        path, dv = str(remove.get("path")), dv_unique_id(remove.get("deletionVector"))
        others = self.twice.get(path, {})
        if dv in others:
            del others[dv]
        elif path in self.adds and dv_unique_id(self.adds[path].get("deletionVector")) == dv:
            if others:  # another logical file of the path stays live
                self.adds[path] = others.pop(next(iter(others)))
            else:
                del self.adds[path]
        if path in self.twice and not others:
            del self.twice[path]

    def _add(self, add: dict[str, Any]) -> None:
        path, dv = str(add.get("path")), dv_unique_id(add.get("deletionVector"))
        live = self.adds.get(path)
        if live is not None:
            old = dv_unique_id(live.get("deletionVector"))
            if old != dv:
                self.twice.setdefault(path, {})[old] = live
            self.twice.get(path, {}).pop(dv, None)  # the same logical file added again: this add replaces it
            if path in self.twice and not self.twice[path]:
                del self.twice[path]
        self.adds[path] = add

    def apply_commit(self, actions: Iterator[dict[str, Any]], where: str, *, check: bool = True,
                     bulk: _BulkStatistics | None = None, data: bytes = b"") -> None:
        """One commit's actions (``where``: its file, for problems). Removes go first: a commit may remove a path
        with one deletion vector and add it with another (a deletion-vector update), and the add is what is live
        afterwards; a commit that holds what a version may not (_Validity) is recorded in ``invalid`` (unless not
        ``check``: a replay only compared, whose problems nobody reads). With ``bulk`` (and the commit's ``data``),
        its adds' statistics are checked in bulk with other commits' (_BulkStatistics), and its problems recorded
        when that is done (``bulk.finish``)."""
        adds: list[dict[str, Any]] = []
        validity = _Validity(where, parsed=self.parsed_stats, deferred=None if bulk is None else [])
        for action in actions:
            if check:
                validity.see(action)
            if isinstance(action.get("add"), dict):
                adds.append(action["add"])
            elif isinstance(action.get("remove"), dict):
                self._remove(action["remove"])
            else:
                self.apply_other(action)
        for add in adds:
            self._add(add)
        if bulk is not None and check:
            bulk.pending(validity, data)
        else:
            self.invalid.extend(validity.report())

    def apply_checkpoint(self, action: dict[str, Any]) -> None:
        """One checkpoint action: its adds are the live files; its removes are tombstones of files already gone."""
        if isinstance(action.get("add"), dict):
            self._add(action["add"])
        elif not isinstance(action.get("remove"), dict):
            self.apply_other(action)

    def apply_other(self, action: dict[str, Any]) -> None:
        if isinstance(action.get("metaData"), dict):
            self.metadata = action["metaData"]
        elif isinstance(action.get("protocol"), dict):
            self.protocol = action["protocol"]

    def agrees(self, other: LogState) -> bool:
        """``agree(self.comparable(), other.comparable())``, field by field over aligned columns of both states'
        adds (carriers/delta/adds.py: no dict made of a checkpoint row): statistics texts are parsed only where they
        differ."""
        mine, theirs = self.comparable(files=False), other.comparable(files=False)
        if mine != theirs or len(self.adds) != len(other.adds):
            return False
        # Both states one part's columns listing the same paths in the same order (a checkpoint written from the log
        # before it lists them so): each side's rows are its part's rows in order, found without a look-up per path.
        aligned = self.adds.same_order_as(other.adds) if ARROW_AGREES else None
        if aligned is not None:
            x, y = aligned
        else:
            paths = list(self.adds)
            x, y = self.adds.locate(paths), other.adds.locate(paths)
            if not all(y.live):  # as many distinct paths on each side: the same paths when every one is live in both
                return False
        for key in ("size", "partitionValues", "deletionVector"):
            if not x.holds(key) and not y.holds(key):
                continue  # null (absent) in every add of both: equal
            differ = _arrow_differ(x, y, key, nulls_differ=True)
            if differ is not None:  # compared in Arrow: equal values, null where the other is null
                if differ:
                    return False
                continue
            a, b = x.values(key), y.values(key)
            if a == b:
                continue
            if key == "partitionValues":
                a, b = [v or {} for v in a], [v or {} for v in b]
            elif key == "deletionVector":
                a, b = [_dv_key(v) for v in a], [_dv_key(v) for v in b]
            if any(map(operator.ne, a, b)):
                return False
        for key in ("modificationTime", "baseRowId", "defaultRowCommitVersion", "stats"):
            if not x.holds(key) or not y.holds(key):
                continue  # compared where both carry it: one side carries it nowhere
            differ = _arrow_differ(x, y, key, nulls_differ=False)
            if differ is None:
                a, b = x.values(key), y.values(key)
                if a == b:
                    continue
            elif differ:  # the rows where both carry a value and the values differ, as Python values
                if key != "stats":
                    return False
                a, b = differ
            else:
                continue
            for u, v in zip(a, b, strict=True):
                if u is None or v is None or u == v:
                    continue
                if key != "stats":
                    return False
                u, v = _stats_key(u), _stats_key(v)
                if u is not None and v is not None and u != v:
                    return False
        return _typed_statistics_agree(x, y) and _typed_statistics_agree(y, x)

    def comparable(self, files: bool = True) -> dict[str, Any]:
        """What two replays of one version must agree on (what changes the rows readers get)."""
        # modificationTime and the row-tracking ids are in the reader view (Spark reads them from whichever
        # checkpoint or commit it replays): compared where both sides carry them, as statistics are.
        live = {p: {"size": a.get("size"), "partitionValues": a.get("partitionValues") or {},
                    "deletionVector": _dv_key(a.get("deletionVector")), "stats": _stats_key(a.get("stats")),
                    "modificationTime": a.get("modificationTime"), "baseRowId": a.get("baseRowId"),
                    "defaultRowCommitVersion": a.get("defaultRowCommitVersion")}
                for p, a in self.adds.items()} if files else {}
        meta = self.metadata or {}
        protocol = {k: v for k, v in (self.protocol or {}).items() if v is not None}
        twice = {p: sorted(map(str, others)) for p, others in sorted(self.twice.items())}
        return {"files": live, "twice": twice, "schemaString": meta.get("schemaString"),
                "partitionColumns": meta.get("partitionColumns") or [],
                "configuration": meta.get("configuration") or {}, "protocol": protocol}


def _typed_statistics_agree(x: Any, y: Any) -> bool:
    """Whether the statistics ``x`` (located adds) keeps typed only — ``stats_parsed`` without JSON text, as Spark
    writes a checkpoint with ``delta.checkpoint.writeStatsAsJson`` false — say what ``y``'s JSON statistics of the same
    files say. Both engines read such typed statistics (measured, delta-spark 4.4: Spark skipped the file and answered
    MIN / MAX by forged ones, as delta-rs did), so a checkpoint forging them is one forging JSON statistics: the
    comparison above, which compares JSON texts only, did not see it (VERIFIED before)."""
    if not x.holds("stats_parsed") or not y.holds("stats"):
        return True
    for typed, own, text in zip(x.values("stats_parsed"), x.values("stats"), y.values("stats"), strict=True):
        if not isinstance(typed, dict) or isinstance(own, str) or not isinstance(text, str):
            continue  # JSON beside the typed ones is compared above, and to its twin (_Validity._parsed_agree)
        try:
            doc = json.loads(text, parse_float=Decimal)
        except (ValueError, RecursionError):
            continue  # not JSON: the statistics of the other side are malformed, a problem of their own
        if not isinstance(doc, dict) or _differs(doc, typed):
            return False
    return True


# Whether ``LogState.agrees`` compares the fields both states hold as single Arrow columns in Arrow (``pc.equal``)
# rather than as Python lists; ATTEST_FAST=0 compares lists (tests/delta/test_delta_agrees_arrow.py holds the two to
# each other).
ARROW_AGREES: bool = fast.ON


def _arrow_differ(x: Any, y: Any, key: str, *, nulls_differ: bool) -> Any:
    """Where the two located adds' field ``key`` differ, compared in Arrow, when both are single Arrow columns of
    one integer or string type (``Located.arrow``); None when they are not (the caller compares Python lists).
    ``nulls_differ`` (``a == b`` over the lists: None equals only None): True when some row differs, else False.
    Otherwise (rows where either is null are equal): False when none differs, else the differing rows' values as two
    Python lists. Arrow's equality is Python's here: integers of one type compare by value, valid UTF-8 strings by
    their bytes as by their code points (a string column is validated first: one that is not valid UTF-8 is left to
    the lists, which fail on it as before)."""
    if not ARROW_AGREES:
        return None
    a, b = x.arrow(key), y.arrow(key)
    if a is None or b is None or a.type != b.type:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(a.type) or pa.types.is_large_string(a.type):
        try:
            a.validate(full=True)
            b.validate(full=True)
        except pa.ArrowInvalid:
            return None
    elif not pa.types.is_integer(a.type):
        return None
    if len(a) == 0:
        return False
    unequal = pc.fill_null(pc.not_equal(a, b), False)  # null where either is null
    if nulls_differ:
        one_null = pc.not_equal(pc.is_null(a), pc.is_null(b))
        return bool(pc.any(pc.or_(unequal, one_null)).as_py())
    if not pc.any(unequal).as_py():
        return False
    rows = pc.indices_nonzero(unequal)
    return a.take(rows).to_pylist(), b.take(rows).to_pylist()


def agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two ``comparable()`` states agree; statistics are compared where both sides carry them as JSON
    (a checkpoint may keep only ``stats_parsed``)."""
    if {k: v for k, v in a.items() if k != "files"} != {k: v for k, v in b.items() if k != "files"}:
        return False
    fa, fb = a["files"], b["files"]
    if set(fa) != set(fb):
        return False
    for path, x in fa.items():
        y = fb[path]
        if any(x[k] != y[k] for k in ("size", "partitionValues", "deletionVector")):
            return False
        if any(x[k] is not None and y[k] is not None and x[k] != y[k]
               for k in ("stats", "modificationTime", "baseRowId", "defaultRowCommitVersion")):
            return False
    return True


def _dv_key(dv: Any) -> Any:
    if not isinstance(dv, dict):
        return None
    return {k: dv.get(k) for k in ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality")}


def _stats_key(stats: Any) -> Any:
    # A checkpoint may carry stats as JSON text or not at all (stats_parsed only): compare parsed, skip absent.
    if not isinstance(stats, str):
        return None
    try:
        return json.loads(stats)
    except (ValueError, RecursionError):
        return stats


def log_versions(names: list[str]) -> list[int]:
    """The versions the log's file ``names`` hold a commit or a checkpoint of, as the protocol names them."""
    return [int(n[:20]) for n in names if _COMMIT.fullmatch(n) or _CHECKPOINT.match(n)]


def _checkpoints(names: list[str], version: int) -> dict[int, dict[str, list[str]]]:
    """Complete checkpoints at or below ``version`` among the log's file ``names``: {checkpoint version: {candidate tag:
    [file names]}}."""
    groups: dict[tuple[int, str], list[str]] = {}
    expected: dict[tuple[int, str], int] = {}
    for name in names:
        m = _CHECKPOINT.match(name)
        if not m or int(m.group("v")) > version:
            continue
        v = int(m.group("v"))
        # Classic, v2 (uuid-named) and multi-part checkpoints of one version are separate candidates.
        tag = f"parts:{m.group('parts')}" if m.group("parts") else (f"uuid:{m.group('uuid')}" if m.group("uuid")
                                                                      else "classic")
        groups.setdefault((v, tag), []).append(name)
        expected[(v, tag)] = int(m.group("parts")) if m.group("parts") else 1
    out: dict[int, dict[str, list[str]]] = {}
    for (v, tag), names in groups.items():
        if len(names) == expected[(v, tag)]:
            out.setdefault(v, {})[tag] = sorted(names)
    return out


def _parquet_actions(data: bytes) -> Iterator[dict[str, Any]]:
    """The actions of a Parquet checkpoint part, row by row; ``table_unreadable`` when its bytes are no Parquet pyarrow
    reads through (a struct child cut short, a page that does not decode: ArrowInvalid was an internal error, found
    fuzzing in round 32)."""
    import pyarrow as pa

    try:
        yield from _parquet_rows(data)
    except (pa.ArrowException, OSError, ValueError, IndexError, OverflowError) as exc:  # never our AttestError
        text = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise AttestError(f"a checkpoint part cannot be read as Parquet ({type(exc).__name__}: {text})",
                          code=Code.TABLE_UNREADABLE) from exc


def _parquet_rows(data: bytes) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(pa.BufferReader(data))
    names = set(pf.schema_arrow.names)
    folded = sorted(n for n in names if n not in ACTIONS and n.lower() in _FOLDED[""])
    if folded:  # nested fields are held to this by _Validity, as JSON lines are
        raise TableInconsistentError(f"a checkpoint column {folded[0]!r} differs from the action "
                                     f"{_FOLDED[''][folded[0].lower()]!r} only in case: a reader matching Parquet "
                                     "columns without case (Spark's, unless spark.sql.caseSensitive is set) reads it "
                                     "as that action")
    cols = [c for c in ("add", "remove", "metaData", "protocol", "sidecar") if c in names]
    if not cols:
        return
    for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=cols):
        types = {name: batch.schema.field(name).type for name in cols}
        for row in batch.to_pylist():
            # One action per row, as one per line: a row holding two is kept whole for _Validity to refuse.
            action = {col: _plain(value, types[col]) for col, value in row.items() if value is not None}
            if action:
                yield action


def _plain(value: Any, arrow_type: Any) -> Any:
    """A checkpoint value as the JSON log holds it: Parquet maps come back as [(key, value), ...] (an empty map as
    []), so the Arrow type decides what is a map."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_map(arrow_type):
        out = {str(k): _plain(v, arrow_type.item_type) for k, v in value}
        if len(out) != len(value):  # a Parquet map may repeat a key, as a JSON object may: readers keep either
            raise TableInconsistentError(f"a checkpoint map (partition values, properties) names a key twice: "
                                         f"{sorted(str(k) for k, _ in value)[:8]}")
        return out
    if pa.types.is_struct(arrow_type):
        return {f.name: _plain(value.get(f.name), f.type) for f in arrow_type}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return [_plain(v, arrow_type.value_type) for v in value]
    return value


def _checkpoint_state(storage: Storage, version: int, names: list[str], *, judged: bool = True) -> LogState:
    """The state checkpoint ``names`` holds: read in columns when it is regular (carriers/delta/checkpoint.py), else
    line by line here, where every problem is found and worded (not ``judged``: only its state is read for a
    comparison, its problems are not)."""
    from carriers.delta.checkpoint import columnar_state

    read: dict[str, bytes] = {}  # the parts' bytes read to count their rows: not read again in columns
    parts = _few_rows(storage, names, read)
    if parts is not None:  # the line reader's verdict, without importing pyarrow.compute and pyarrow.json
        return _line_checkpoint_state(storage, version, names, parts)
    state = columnar_state(storage, version, names, judged=judged, read=read)
    del read
    return _line_checkpoint_state(storage, version, names) if state is None else state


# A Parquet checkpoint of fewer rows than this is read by the line reader, not in columns: the same state and problems
# (the columns are only ever a faster way to the line reader's verdict), and importing pyarrow.compute and
# pyarrow.json costs a small table's verify more (~150-300 ms) than reading its few rows one by one.
LINE_ROWS_MAX = 4_096


def _few_rows(storage: Storage, names: list[str], read: dict[str, bytes] | None = None) -> dict[str, bytes] | None:
    """The bytes of checkpoint parts ``names`` when they are Parquet files of fewer than LINE_ROWS_MAX rows in all
    (read once: the line reader takes them), else None; the bytes of each part read on the way are put in ``read``
    (the columnar reader takes them)."""
    if not names or not all(n.endswith(".parquet") for n in names):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts: dict[str, bytes] = {}
    rows = 0
    for name in names:
        data = storage.read(f"{LOG_DIR}/{name}")
        if data is None:
            return None  # vanished: the reader that reads it again says so
        if read is not None:
            read[name] = data
        try:
            rows += pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
        except (pa.ArrowException, OSError, ValueError):
            return None  # not Parquet: worded as before
        if rows >= LINE_ROWS_MAX:
            return None
        parts[name] = data
    return parts


def _line_checkpoint_state(storage: Storage, version: int, names: list[str],
                           parts: dict[str, bytes] | None = None) -> LogState:
    """The state checkpoint ``names`` holds, read row by row with every action checked (``_Validity``); ``parts``:
    their bytes, already read."""
    state = LogState(version=version, checkpoint=version)
    validity = _Validity(f"checkpoint {names[0]}" + (f" (+{len(names) - 1} parts)" if len(names) > 1 else ""),
                         checkpoint=True, parsed=state.parsed_stats)
    sidecars = 0
    for name in names:
        data = parts[name] if parts is not None else storage.read(f"{LOG_DIR}/{name}")
        if data is None:
            raise TableInconsistentError(f"checkpoint {name} vanished while reading")
        actions = json_lines(data, name) if name.endswith(".json") else _parquet_actions(data)
        for action in actions:
            validity.see(action)
            sidecar = action.get("sidecar")
            if isinstance(sidecar, dict):
                sidecars += 1
                # v2 checkpoints keep their file actions in sidecar files under _delta_log/_sidecars/.
                rel = f"{LOG_DIR}/_sidecars/{_sidecar_name(sidecar.get('path'))}"
                inner = storage.read(rel)
                if inner is None:
                    raise TableInconsistentError(f"checkpoint sidecar {rel} is missing")
                # Engines find a sidecar's Parquet footer at the size the checkpoint records (delta-rs: another size
                # is "Corrupt footer"), this replay at the file's end: a file of another length could read as two.
                if sidecar.get("sizeInBytes") != len(inner) or isinstance(sidecar.get("sizeInBytes"), bool):
                    raise TableInconsistentError(
                        f"checkpoint sidecar {rel} holds {len(inner)} bytes, its checkpoint records "
                        f"{str(sidecar.get('sizeInBytes'))[:40]}: engines read its footer at the recorded size, so "
                        "readers may take other actions from it")
                for a in (_parquet_actions(inner) if rel.endswith(".parquet") else json_lines(inner, rel)):
                    validity.see(a)
                    state.apply_checkpoint(a)
            else:
                state.apply_checkpoint(action)
    state.invalid.extend(validity.report())
    if sidecars and not _enables_v2_checkpoints(state.protocol):
        state.invalid.append(f"checkpoint {names[0]} keeps file actions in sidecar files, and its protocol does not "
                             "enable v2 checkpoints (reader feature v2Checkpoint): engines read it differently "
                             "(delta-rs reads a single-file checkpoint's sidecars, Spark refuses the table)")
    return state


def _enables_v2_checkpoints(protocol: Any) -> bool:
    """Whether a protocol action enables sidecar files (PROTOCOL.md: only v2 checkpoints hold them, and only tables
    with the ``v2Checkpoint`` reader and writer feature have those)."""
    if not isinstance(protocol, dict):
        return False
    return all(isinstance(protocol.get(k), list) and "v2Checkpoint" in protocol[k]
               for k in ("readerFeatures", "writerFeatures"))


# A sidecar path engines resolve alike: a plain file name. The protocol's sidecar path is URI-encoded: delta-rs decodes
# it, Spark and this replay do not (measured: a sidecar named '%30...' was read by delta-rs from the file '0...', by
# Spark from '%30...'); other spellings (escapes, separators, a scheme, '..') are where readers part ways, and the
# writers measured (Spark, Delta Kernel) write bare names.
_SIDECAR_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def _sidecar_name(path: Any) -> str:
    """A checkpoint's sidecar ``path``, which must be a plain file name (_SIDECAR_NAME): any other spelling is read as
    one file here and as another by an engine, so the checkpoint gets no verdict."""
    if not isinstance(path, str) or not _SIDECAR_NAME.fullmatch(path):
        raise TableInconsistentError(f"checkpoint sidecar path {str(path)[:200]!r} is not a plain file name: delta-rs "
                                     "decodes it as a URI and Spark does not, so readers may take other files")
    return path


def _json_replay(storage: Storage, start: LogState | None, first: int, last: int, *,
                 check: bool = True) -> LogState | None:
    """``start`` (or an empty state) with the JSON commits first..last applied; None if one of them is gone. Without
    ``check`` the commits' validity is not judged (LogState.apply_commit)."""
    state = LogState(version=last) if start is None else LogState(
        version=last, adds=start.adds.copy(), metadata=start.metadata, protocol=start.protocol,
        checkpoint=start.checkpoint, twice={p: dict(ids) for p, ids in start.twice.items()},
        invalid=list(start.invalid), parsed_stats=start.parsed_stats)
    bulk = _BulkStatistics(state) if check else None
    # Regular commits read in columns (carriers/delta/commits.py) and not applied yet: while nothing but columns holds
    # the state's adds, their adds are appended to those columns, in order, before any commit read line by line.
    pending: list[tuple[str, bytes, tuple[dict[str, Any], list[str]]]] = []
    made: Any = None  # the columns _apply_regular made for this replay (extended in place, never copied again)
    small: list[tuple[str, bytes]] = []  # commits of fewer than COMMIT_ROWS_MIN lines, read together when regular
    lines = 0  # theirs

    def settle() -> None:
        """``small`` read in columns (then pending), else line by line after what is pending."""
        nonlocal made, lines
        if not small:
            return
        got = None
        if lines >= COMMIT_ROWS_MIN or pending or made is not None:  # enough lines, or columns read already
            from carriers.delta.commits import regular_adds_of

            got = regular_adds_of([data for _, data in small])
        if got is not None:
            pending.extend((where, data, adds) for (where, data), adds in zip(small, got, strict=True))
        else:
            made = _apply_regular(state, pending, check, bulk, made)
            for where, data in small:
                state.apply_commit(json_lines(data, where), where, check=check, bulk=bulk, data=data)
        small.clear()
        lines = 0

    for v in range(first, last + 1):
        where = commit_name(v)
        data = storage.read(where)
        if data is None:
            return None
        if COMMIT_COLUMNS and state.adds.on_columns() is not False:
            from carriers.delta.commits import looks_regular

            count = data.count(b"\n", 0, _ROWS_MIN_BYTES)
            if count < COMMIT_ROWS_MIN and looks_regular(data):
                small.append((where, data))
                lines += count
                if lines >= _SMALL_LINES:
                    settle()
                continue
            settle()
            if count >= COMMIT_ROWS_MIN and state.adds.on_columns() is not False:
                from carriers.delta.commits import regular_adds

                got = regular_adds(data)
                if got is not None:
                    pending.append((where, data, got))
                    continue
        settle()
        made = _apply_regular(state, pending, check, bulk, made)
        state.apply_commit(json_lines(data, where), where, check=check, bulk=bulk, data=data)
    settle()
    _apply_regular(state, pending, check, bulk, made)
    if bulk is not None:
        bulk.finish()
    return state


# Whether a replay reads regular JSON commits in columns (carriers/delta/commits.py); ATTEST_FAST=0 reads every one
# line by line (tests/delta/test_delta_commit_columns.py holds the two to each other).
COMMIT_COLUMNS: bool = fast.ON
# A commit of fewer lines than this is read with the commits after it (_SMALL_LINES): pyarrow's reading of one document
# costs more than a few lines; fewer in all are read line by line, and importing pyarrow.json (~100-200 ms) would cost
# more than such a small log (tests/test_cli_fast.py).
COMMIT_ROWS_MIN = 256
_ROWS_MIN_BYTES = 1 << 20  # the lines counted in a commit's first MiB only: enough to tell
# Smaller commits are read together, this many lines or more in one pyarrow reading (fewer at the end of the log, down
# to COMMIT_ROWS_MIN; fewer still are read line by line).
_SMALL_LINES = 4_096


def _apply_regular(state: LogState, pending: list[tuple[str, bytes, tuple[dict[str, Any], list[str]]]], check: bool,
                   bulk: _BulkStatistics | None, made: Any) -> Any:
    """The regular commits ``pending`` (each: its file, bytes and adds in columns) applied to ``state`` in order, and
    ``pending`` emptied. Their adds are appended to the state's columns; when a path is then held twice (a commit
    adding a live path again, or one path twice), they are applied line by line instead, which words any problem.
    Judged (``check``), each commit's statistics are checked in bulk as the line reader's are (_BulkStatistics): a
    regular commit holds nothing else _Validity finds (one action a line, known fields, distinct paths, no remove).
    Returns the columns it made (``made``: those it made before in this replay, extended in place when still the
    state's)."""
    if not pending:
        return made
    from carriers.delta.commits import columns_with

    base = state.adds.on_columns()
    columns = columns_with(None if base is False else base, [got for _, _, got in pending],
                           owned=base is not None and base is made)
    if columns is None:
        for where, data, _ in pending:
            state.apply_commit(json_lines(data, where), where, check=check, bulk=bulk, data=data)
    else:
        state.adds = Adds(columns)
        for where, data, (fields, _) in pending:
            if check and bulk is not None:  # a replay judging its commits always checks in bulk (_json_replay)
                stats = fields["stats"].to_pylist() if "stats" in fields else []
                bulk.pending(_Validity(where, parsed=state.parsed_stats, deferred=stats), data)
    pending.clear()
    return made if columns is None else columns


class _BulkStatistics:
    """The statistics of the adds of a run of JSON commits, checked in bulk: each must be JSON naming no key twice in
    any object (_Validity._unique_json, which reports a key named twice). Parsed one by one in Python, that was the
    largest part of replaying commits (issue 35.2); here pyarrow's JSON reader reads up to _STATS_BATCH texts at once
    as newline-delimited JSON, and it refuses an object naming a key twice — nested, in arrays, spelt with an escape,
    null or not (tests/delta/test_delta_json_bulk.py). A batch it reads whole, one row per text, holds no such key.
    Any batch it does not (a key named twice, a text that is not one JSON object on one line, statistics whose types
    differ between files, ...) sends its commits back to the line reader's judgement, exactly as before: their
    _Validity is made again, one action at a time, each statistics text parsed. The commits' problems are recorded
    in their order either way. Texts vouched for in bulk are not kept parsed (LogState.parsed_stats): the carrier
    parses the few it looks into (carriers/delta/spellings.py). Fewer than BULK_MIN texts are all judged one by one.
    """

    def __init__(self, state: LogState) -> None:
        self.state = state
        self.commits: list[tuple[_Validity, bytes]] = []

    def pending(self, validity: _Validity, data: bytes) -> None:
        self.commits.append((validity, data))

    def finish(self) -> None:
        texts: list[str] = []
        owners: list[int] = []  # the commit of each text
        for i, (validity, _) in enumerate(self.commits):
            assert validity.deferred is not None
            texts.extend(validity.deferred)
            owners.extend([i] * len(validity.deferred))
            validity.deferred = None
        redo: set[int] = set()
        if len(texts) < BULK_MIN:  # few: judged one by one, without importing pyarrow (costs more than they do)
            redo.update(owners)
        else:
            for start in range(0, len(texts), _STATS_BATCH):
                if not statistics_unique(texts[start:start + _STATS_BATCH]):
                    redo.update(owners[start:start + _STATS_BATCH])
        del texts, owners
        for i, (validity, data) in enumerate(self.commits):
            if i in redo:
                validity = _Validity(validity.where, parsed=self.state.parsed_stats)
                for action in json_lines(data, validity.where):
                    validity.see(action)
            self.state.invalid.extend(validity.report())
        self.commits = []


# Statistics texts read per pyarrow call: bounds the parsed batch's memory whatever the log's size.
_STATS_BATCH = 65_536
# Fewer statistics texts than this (the commits replayed as JSON hold) are judged one by one, as a batch the bulk
# reading refuses is: the same verdicts, without importing pyarrow and pyarrow.json (~100-200 ms) for a small log.
BULK_MIN = 4_096


def statistics_unique(texts: list[str]) -> bool:
    """Whether every one of ``texts`` is a JSON object in which no object names a key twice, as pyarrow's JSON reader
    finds reading them as one newline-delimited document (one row per text, or False: a line break in a text, a
    blank one, anything it cannot read). False says nothing: the texts are then judged one by one."""
    if not texts:
        return True
    if any(not t.strip() or "\n" in t or "\r" in t for t in texts):
        return False
    import io

    import pyarrow as pa
    import pyarrow.json as pj

    try:
        body = "\n".join(texts).encode("utf-8")
        table = pj.read_json(io.BytesIO(body), read_options=pj.ReadOptions(block_size=max(1 << 20, len(body) + 1)))
    except (pa.ArrowException, UnicodeEncodeError, ValueError):
        return False
    return bool(table.num_rows == len(texts))


def replay(storage: Storage, version: int) -> tuple[LogState, list[str]]:
    """The log's own state at ``version`` and the inconsistencies found reading it (see module docstring)."""
    names = storage.list_names(LOG_DIR)
    problems = _lookalikes(names)
    checkpoints = _checkpoints(names, version)
    start: LogState | None = None
    if checkpoints:
        cp = max(checkpoints)
        candidates = {tag: _checkpoint_state(storage, cp, names) for tag, names in checkpoints[cp].items()}
        first_tag = sorted(candidates)[0]
        for tag in sorted(candidates)[1:]:
            if not candidates[tag].agrees(candidates[first_tag]):
                problems.append(f"two checkpoints of version {cp} disagree ({first_tag} / {tag}); engines choose "
                                "between them differently")
        start = candidates[first_tag]
        for tag in sorted(candidates):
            # Spark refuses a v2 (uuid-named) checkpoint in a table without the feature (measured: "requirement
            # failed"), delta-rs reads it: engines read the version differently.
            if tag.startswith("uuid:") and not _enables_v2_checkpoints(candidates[tag].protocol):
                problems.append(f"checkpoint {checkpoints[cp][tag][0]} is a v2 checkpoint, and its protocol does not "
                                "enable v2 checkpoints (reader feature v2Checkpoint): delta-rs reads it, Spark refuses "
                                "the table")
        problem = _cross_check(storage, checkpoints, cp, start)
        if problem:
            problems.append(problem)
    first = 0 if start is None else cp + 1
    state = _json_replay(storage, start, first, version)
    if state is None:
        raise TableInconsistentError(f"the Delta log of version {version} cannot be replayed: a JSON commit after "
                                     f"checkpoint {None if start is None else cp} is missing",
                                     code=Code.VERSION_NOT_FOUND)
    if checkpoints:  # a checkpoint an engine may choose instead of the one replayed here
        problems.extend(p for tag in sorted(candidates) if tag != first_tag for p in candidates[tag].invalid)
    problems.extend(state.invalid)
    problems.extend(_compacted_problems(storage, names, version, None if start is None else cp))
    problems.extend(_hint_problems(storage, names))
    for path in sorted(state.twice)[:5]:
        problems.append(f"{path} is live as {len(state.twice[path]) + 1} logical files (other deletion vectors, no "
                        "remove naming them): protocol readers (Spark) read its rows once for each, minus that "
                        "entry's vector")
    return state, problems


def _cross_check(storage: Storage, checkpoints: dict[int, dict[str, list[str]]], cp: int,
                 state: LogState) -> str | None:
    """Whether checkpoint ``cp`` is the replay of the log before it (the previous checkpoint, or version 0, plus the
    JSON commits up to ``cp``), whenever those commits are still there, however many: what an engine reads to load
    the version before ``cp`` (both checkpoints are read in columns, the commits without judging them again). When the
    log before it was cleaned up, the checkpoint is all any engine has, and there is nothing to compare it with."""
    older = [v for v in checkpoints if v < cp]
    base_version = max(older) if older else None
    first = 0 if base_version is None else base_version + 1
    if storage.read(commit_name(cp)) is None:
        return None
    base = None
    if base_version is not None:
        tag = sorted(checkpoints[base_version])[0]
        base = _checkpoint_state(storage, base_version, checkpoints[base_version][tag], judged=False)
    expected = _json_replay(storage, base, first, cp, check=False)
    if expected is None:
        return None
    if not expected.agrees(state):
        return (f"checkpoint {cp} is not the replay of the commits before it: readers that use the checkpoint and "
                "readers that replay the log see different tables")
    return None


def _hint_problems(storage: Storage, names: list[str]) -> list[str]:
    """Where ``_delta_log/_last_checkpoint`` names other sidecar files for a v2 checkpoint than the checkpoint does.

    Spark (delta-spark 4.4) takes the sidecars of the checkpoint the hint names (``v2Checkpoint.sidecarFiles``) from the
    hint, without reading them out of the checkpoint (measured: a hint naming a planted sidecar that held one file
    fewer, its checksum dropped, had Spark read a row fewer), while delta-rs and this replay read the checkpoint's.
    Spark skips a hint whose checksum does not match, but anyone can write a matching one, so any disagreement gets no
    verdict. A hint that is not JSON, or names a checkpoint the log does not hold, is one no reader takes."""
    if "_last_checkpoint" not in names:
        return []
    data = storage.read(f"{LOG_DIR}/_last_checkpoint")
    try:
        hint = jsonscan.loads_unique((data or b"").decode("utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError, jsonscan.DuplicateKeyError):
        return []  # Spark reads no hint out of it and lists the log instead
    v2 = hint.get("v2Checkpoint") if isinstance(hint, dict) else None
    if not isinstance(v2, dict) or v2.get("sidecarFiles") is None:
        return []  # no sidecars in the hint: Spark reads them out of the checkpoint
    top = v2.get("path")
    if not isinstance(top, str) or top not in names or not _CHECKPOINT.match(top):
        return []  # Spark uses the hint's v2 part only for the checkpoint file it loads, by name
    said = v2["sidecarFiles"]
    data = storage.read(f"{LOG_DIR}/{top}")
    if data is None:
        return []
    try:
        actions = json_lines(data, top) if top.endswith(".json") else _parquet_actions(data)
        held = sorted((str(a["sidecar"].get("path")), a["sidecar"].get("sizeInBytes"))
                      for a in actions if isinstance(a.get("sidecar"), dict))
    except (TableInconsistentError, ValueError, OSError):
        return []  # an unreadable checkpoint: the replay that reads it says so
    hinted = sorted((str(f.get("path")), f.get("sizeInBytes")) for f in said if isinstance(f, dict)) \
        if isinstance(said, list) else None
    if hinted is None or len(hinted) != len(said) or hinted != held:
        return [f"_last_checkpoint names other sidecar files for checkpoint {top} than the checkpoint does: Spark "
                "reads the hint's, delta-rs the checkpoint's"]
    return []


def _lookalikes(names: list[str]) -> list[str]:
    """Log files Spark reads as versions that delta-rs and this replay do not (see _SPARK_LOG_NAME): whatever they
    hold, the two read different tables, so every version of such a log is inconsistent."""
    odd = sorted(n for n in names if not _COMMIT.fullmatch(n) and _SPARK_LOG_NAME.fullmatch(n)
                 and not _CHECKPOINT.match(n) and not _COMPACTED.match(n))
    return [f"log file {n} is named as Spark names a commit or checkpoint but not as the protocol does: Spark reads it "
            "as a version, delta-rs (as the protocol) does not" for n in odd[:5]]


def _compacted_problems(storage: Storage, names: list[str], version: int, cp: int | None) -> list[str]:
    """Compacted log files (``a.b.compacted.json``), which Spark reads instead of commits a..b (delta-rs does not):
    each one a reader of ``version`` may take must be the reconciliation of its commits, in every action it holds.

    Spark (delta-spark 4.4, ``deltaLog.minorCompaction.useForReads`` on by default) takes a compacted file in place of
    its commits when it starts after the checkpoint it loads from and ends at or before the version it loads (measured:
    one ending past the latest commit, or starting at or before the checkpoint, changed nothing it read). Those files
    are checked whatever their span, against commits the replay reads anyway, and are never skipped: ``[]`` means all
    of them hold what their commits hold. Files no such reader takes are checked too when their commits are still there
    and the work stays under CROSS_CHECK_LIMIT commits; a file naming a range it cannot be (``a > b``) is refused."""
    out: list[str] = []
    # The checkpoint Spark loads from may be older than the replay's: a multi-part one whose parts are not exactly
    # 1..n (a part 0, a part past n) is complete by the replay's count and not by Spark's (which counts the parts of
    # one size, then reads 1..n) or delta-rs's (1, 2, ... in turn). Compacted files after the oldest of these bases
    # are the ones some engine reads.
    base = min(-1 if cp is None else cp, _plain_checkpoint_base(names, version))
    spans: list[tuple[int, int, str]] = []
    for name in sorted(names):
        m = _COMPACTED.match(name)
        if m:
            spans.append((int(m.group("a")), int(m.group("b")), name))
    read_by_engines = [(a, b, n) for a, b, n in spans if base < a <= b <= version]
    others = [(a, b, n) for a, b, n in spans if (a, b, n) not in read_by_engines and min(a, b) <= version]
    budget = CROSS_CHECK_LIMIT
    # Files engines read: the sum of their spans is bounded by the commits after the checkpoint, unless they overlap
    # (only a forger writes overlapping ones); past twice those commits plus CROSS_CHECK_LIMIT the table is refused.
    mandatory_budget = 2 * (version - base) + CROSS_CHECK_LIMIT
    for a, b, name in read_by_engines:
        mandatory_budget -= b - a + 1
        if mandatory_budget < 0:
            out.append(f"compacted log file {name}: the compacted log files engines read at version {version} overlap "
                       f"past what is checked ({2 * (version - base) + CROSS_CHECK_LIMIT} commits): they cannot be "
                       "bound to their commits")
            break
        out.extend(_compacted_disagrees(storage, name, a, b, required=True))
    for a, b, name in others:
        if a > b:
            out.append(f"compacted log file {name} names the versions {a}..{b}, a range that ends before it starts")
            continue
        if b > version or b - a + 1 > budget:
            continue  # ends past the version (no reader of it takes the file), or past the bounded work
        budget -= b - a + 1
        out.extend(_compacted_disagrees(storage, name, a, b, required=False))
    return out


def _plain_checkpoint_base(names: list[str], version: int) -> int:
    """The newest checkpoint version at or below ``version`` that every engine takes for complete: a classic or v2
    one, or a multi-part one whose parts are exactly 1..n; -1 when there is none."""
    parts: dict[tuple[int, int], set[int]] = {}
    best = -1
    for name in names:
        m = _CHECKPOINT.match(name)
        if not m or int(m.group("v")) > version:
            continue
        if m.group("parts"):
            parts.setdefault((int(m.group("v")), int(m.group("parts"))), set()).add(int(m.group("part")))
        else:
            best = max(best, int(m.group("v")))
    for (v, n), numbers in parts.items():
        if numbers == set(range(1, n + 1)):
            best = max(best, v)
    return best


# Actions a compacted file may hold: what the protocol's action reconciliation of commits keeps.
_RECONCILED = frozenset({"add", "remove", "metaData", "protocol", "txn", "domainMetadata"})


def _compacted_disagrees(storage: Storage, name: str, a: int, b: int, *, required: bool) -> list[str]:
    """Where compacted log file ``name`` is not the reconciliation of commits a..b (PROTOCOL.md, "Action
    Reconciliation"): the last protocol and metaData, the last action on each logical file (an add whole but for
    ``dataChange``, a remove by the file it names), the last txn of each application and domainMetadata of each domain.
    Compared action for action, so the result holds whatever the state before ``a``: a remove of a file live before the
    range is a difference, as is any action no reconciliation holds (commitInfo, cdc, ...). A ``required`` file whose
    commits are gone cannot be bound (the replay of the version already failed then); any other is skipped."""
    where = f"compacted log file {name}"
    expected = _Reconciled()
    for v in range(a, b + 1):
        data = storage.read(commit_name(v))
        if data is None:
            return [f"{where}: commit {v} is missing, so what the file holds cannot be checked"] if required else []
        try:
            for action in json_lines(data, commit_name(v)):
                expected.see(action)
        except TableInconsistentError:
            return []  # a malformed commit: the replay of the version reports it when it reads it
    data = storage.read(f"{LOG_DIR}/{name}")
    if data is None:
        return [f"{where} vanished while reading"] if required else []
    actual = _Reconciled()
    validity = _Validity(f"{LOG_DIR}/{name}")
    out: list[str] = []
    try:
        for action in json_lines(data, name):
            validity.see(action)
            kinds = sorted(k for k, v in action.items() if v is not None and k not in _RECONCILED)
            if kinds or any(v is not None and not isinstance(v, dict) for v in action.values()):
                if len(out) < _SHOWN_PROBLEMS:  # a file of such lines is reported once per kind of line, not per line
                    text = (f"holds a {kinds[0]} action, which no reconciliation of commits holds: engines that read "
                            "the file may take it") if kinds else ("holds an action that is not an object: engines "
                                                                   "refuse the file or skip it")
                    if f"{where} {text}" not in out:
                        out.append(f"{where} {text}")
                continue
            actual.see(action)
    except TableInconsistentError as exc:
        return [f"{where}: {exc.message}"]
    out.extend(validity.report())
    differ = [what for what, x, y in expected.sections(actual) if x != y]
    if differ:
        out.append(f"{where} is not the reconciliation of commits {a}..{b}: its {', '.join(differ)} differ, and "
                   "Spark reads the file instead of those commits")
    return out[:_SHOWN_PROBLEMS + 1]


class _Reconciled:
    """The action reconciliation of a run of actions: the last of each kind and key, as the protocol keeps them."""

    def __init__(self) -> None:
        self.protocol: Any = None
        self.metadata: Any = None
        self.files: dict[tuple[str, str | None], Any] = {}
        self.txns: dict[str, Any] = {}
        self.domains: dict[str, Any] = {}

    def see(self, action: dict[str, Any]) -> None:
        for kind, body in action.items():
            if not isinstance(body, dict):
                continue
            if kind == "add":
                key = (str(body.get("path")), dv_unique_id(body.get("deletionVector")))
                self.files[key] = ("add", _plain_action(body, drop=("dataChange",)))
            elif kind == "remove":
                key = (str(body.get("path")), dv_unique_id(body.get("deletionVector")))
                self.files[key] = ("remove", None)
            elif kind == "metaData":
                self.metadata = _plain_action(body)
            elif kind == "protocol":
                self.protocol = _plain_action(body)
            elif kind == "txn":
                self.txns[str(body.get("appId"))] = _plain_action(body)
            elif kind == "domainMetadata":
                self.domains[str(body.get("domain"))] = _plain_action(body)

    def sections(self, other: _Reconciled) -> list[tuple[str, Any, Any]]:
        return [("protocol", self.protocol, other.protocol), ("metaData", self.metadata, other.metadata),
                ("file actions", self.files, other.files), ("txn actions", self.txns, other.txns),
                ("domainMetadata actions", self.domains, other.domains)]


def _plain_action(body: dict[str, Any], drop: tuple[str, ...] = ()) -> Any:
    """An action as compared: absent and null fields alike, JSON text fields (schema, statistics) by their value,
    feature lists as sets."""
    out: dict[str, Any] = {}
    for key, value in body.items():
        if value is None or key in drop:
            continue
        if key in ("schemaString", "stats", "configuration") and isinstance(value, str):
            try:
                value = ("json", jsonscan.loads_unique(value))
            except (ValueError, RecursionError, jsonscan.DuplicateKeyError):
                value = ("text", value)
        elif key in ("readerFeatures", "writerFeatures") and isinstance(value, list):
            value = sorted(map(str, value))
        out[key] = value
    return out
