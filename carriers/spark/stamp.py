"""Per-write ids ("stamps"): every write a hooked job makes carries one into its commit (docs/spark.md).

The listener sees a write only after it committed, and a table's log does not say which of several concurrent
commits came from which statement. So, before a write runs, the job's own call is wrapped and given a fresh id
that the engine writes into the commit — Delta ``commitInfo.userMetadata``, an Iceberg snapshot summary key —
and that the listener can read back; the worker then looks for the commit carrying exactly that id.

How the id travels, per entry point:

- ``DataFrameWriter.save`` / ``saveAsTable`` (existing table) and ``DataFrameWriterV2.append`` / ``overwrite`` /
  ``overwritePartitions``: write options (``userMetadata``, ``snapshot-property.recipe-attest.write-id``). They are
  per write, so writes from several threads of one job never see each other's id; the listener reads them back
  from the plan's write options. The writer's own options are restored afterwards.
- ``SparkSession.sql`` of a writing statement, ``insertInto`` and table-creating writes, where Delta ignores the
  writer option: session confs (``spark.databricks.delta.commitInfo.userMetadata``,
  ``spark.sql.iceberg.snapshot-property.recipe-attest.write-id``). Session confs are shared by every thread, so
  these run one at a time per session (a lock) inside a *window*: events that reach a hook while the window is
  open are held, and when the statement returns the one whose executed plan is the statement's own (JVM
  identity) gets the id. A SELECT never takes the lock.

A user's own ``userMetadata`` (option or conf) is never overwritten: such a Delta write stays unstamped and is
matched the old way (read version + operation), which is exact only without concurrent writers.
Nothing here imports pyspark at module level; ``patch()`` imports it when the first hook starts.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from carriers.spark.plan import opt, simple_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DELTA_STAMP_CONF",
    "DELTA_STAMP_OPTION",
    "ICEBERG_STAMP_CONF",
    "ICEBERG_STAMP_KEY",
    "ICEBERG_STAMP_OPTION",
    "STAMP_PREFIX",
    "Participant",
    "Window",
    "is_stamp",
    "new_stamp",
    "register",
    "stamp_in_options",
    "unregister",
    "wait_for_pending",
]

STAMP_PREFIX = "recipe-attest:write:"
DELTA_STAMP_OPTION = "userMetadata"
DELTA_STAMP_CONF = "spark.databricks.delta.commitInfo.userMetadata"
ICEBERG_STAMP_KEY = "recipe-attest.write-id"  # lower case: Iceberg lower-cases write option keys
ICEBERG_STAMP_OPTION = "snapshot-property." + ICEBERG_STAMP_KEY
ICEBERG_STAMP_CONF = "spark.sql.iceberg.snapshot-property." + ICEBERG_STAMP_KEY

# Parsed statement classes that write a table: only these take the session's stamp lock.
_SQL_WRITES = frozenset({"InsertIntoStatement", "MergeIntoTable", "UpdateTable", "DeleteFromTable",
                         "CreateTableAsSelect", "ReplaceTableAsSelect", "OverwriteByExpression", "AppendData",
                         "OverwritePartitionsDynamic", "TruncateTable"})
_CALL_WORD = re.compile(r"\bcall\b", re.IGNORECASE)  # cheap: only such a text's result plan is looked at
_SQL_WRAPPERS = {"UnresolvedWith": "child", "WithCTE": "plan"}  # WITH ... INSERT: the write sits below
_FORMATS = frozenset({"delta", "iceberg"})
_V1_METHODS = ("save", "saveAsTable", "insertInto")
_V2_METHODS = ("append", "overwrite", "overwritePartitions", "create", "replace", "createOrReplace")
_V2_CREATING = frozenset({"create", "replace", "createOrReplace"})


def new_stamp() -> str:
    return STAMP_PREFIX + uuid.uuid4().hex


def is_stamp(value: object) -> bool:
    return isinstance(value, str) and value.startswith(STAMP_PREFIX)


def stamp_in_options(options: Any, fmt: str) -> str | None:
    """The stamp among a plan's write options (a Scala Map) for a write of format ``fmt``; None when absent or
    when the user's own userMetadata is there."""
    if options is None:
        return None
    keys = (DELTA_STAMP_OPTION, DELTA_STAMP_OPTION.lower()) if fmt == "delta" else (ICEBERG_STAMP_OPTION,)
    for key in keys:
        try:
            value = opt(options.get(key))
        except Exception:
            return None
        if value is not None:
            return str(value) if is_stamp(str(value)) else None
    return None


@dataclass
class Window:
    """One conf-stamped call: its id, the formats whose commits carry it, and how its own event is recognised."""

    stamp: str
    formats: frozenset[str]
    by_identity: bool  # spark.sql: the statement's executed plan identifies its event; writers: every held event
    key: Callable[[], int | None] = field(default=lambda: None)


class Participant(Protocol):
    """What a hook offers the wrappers (carriers.spark.hook.Hook)."""

    serialize_writes: bool
    guard_timeout_s: float

    def watches(self, spark: SparkSession) -> bool: ...

    def is_worker(self) -> bool: ...

    def wait_before_statement(self) -> None: ...

    def wait_for_listener(self) -> None: ...

    def open_window(self, window: Window) -> None: ...

    def close_window(self, window: Window) -> None: ...

    def procedure_called(self, result: Any) -> None: ...

    def note_cache(self, stamp: str) -> None: ...

    def converted(self, spark: SparkSession, identifier: str) -> None: ...

    def protocol_changed(self, table: Any, call: str) -> None: ...


_HOOKS: list[Participant] = []
_STATE = threading.Lock()
_LOCKS: dict[int, threading.RLock] = {}
_LOCAL = threading.local()


def register(hook: Participant) -> None:
    """Start wrapping the job's write calls for ``hook`` (the first registration patches pyspark)."""
    with _STATE:
        _HOOKS.append(hook)
        _patch()


def unregister(hook: Participant) -> None:
    with _STATE:
        if hook in _HOOKS:
            _HOOKS.remove(hook)
        if not _HOOKS:
            _unpatch()


# ---- patching ----------------------------------------------------------------------------------------------------

# The targets are wrapped on the one patch layer shared with the read gate (carriers/spark/intercept.py), so
# neither removes the other's wrapper when it leaves.
_TARGETS = {("pyspark.sql.session", "SparkSession"): ("sql",),
            ("pyspark.sql.readwriter", "DataFrameWriter"): _V1_METHODS,
            ("pyspark.sql.readwriter", "DataFrameWriterV2"): _V2_METHODS}
_PATCH_NAME = "attest.write-stamp"
# Calls that drop Spark's cached data. The listener asks the cache manager which relations a write answered from
# cached rows (hook._mark_cached) on the asynchronous listener bus, after the job's thread has gone on: a cache
# dropped before it looked made a write of cached (older) rows look like a scan of the version its plan names.
_CACHE_TARGETS = {("pyspark.sql.dataframe", "DataFrame"): ("unpersist",),
                  ("pyspark.sql.classic.dataframe", "DataFrame"): ("unpersist",),
                  ("pyspark.sql.catalog", "Catalog"): ("uncacheTable", "clearCache", "refreshTable",
                                                       "refreshByPath", "dropTempView", "dropGlobalTempView"),
                  ("pyspark.sql.session", "SparkSession"): ("sql",)}
_CACHE_PATCH_NAME = "attest.cache-drop"
# SQL that drops cached data (UNCACHE TABLE, CLEAR CACHE, REFRESH [TABLE], DROP TABLE/VIEW): the word is enough.
_CACHE_WORDS = re.compile(r"\b(uncache|cache|refresh|drop)\b", re.IGNORECASE)


# delta-spark converts a Parquet folder on the JVM (``ConvertToDeltaCommand.run``) with no query Spark reports: the
# hook learns of a conversion only from the Python call (round 25: a required job converting that way passed).
_CONVERT_TARGETS = {("delta.tables", "DeltaTable"): ("convertToDelta",)}
_CONVERT_PATCH_NAME = "attest.delta-convert"
# delta-spark changes a table's protocol on the JVM with no query Spark reports either: a feature added or dropped (a
# drop purges deletion vectors and rewrites files first), the protocol upgraded. Each may change what readers read;
# the hook learns of it from the Python call and judges it as the ALTER TABLE it stands for (round 26:
# ``DeltaTable.dropFeatureSupport("deletionVectors")`` after the job's attested DELETE left the table
# ``reader_view_changed``, and a required job passed).
_PROTOCOL_TARGETS = {("delta.tables", "DeltaTable"): ("addFeatureSupport", "dropFeatureSupport",
                                                      "upgradeTableProtocol")}
_PROTOCOL_PATCH_NAME = "attest.delta-protocol"


def _patch() -> None:
    from carriers.spark import intercept

    if _PATCH_NAME not in intercept.registered():
        intercept.register(_PATCH_NAME, _TARGETS, around=_call)
    if _CACHE_PATCH_NAME not in intercept.registered():
        intercept.register(_CACHE_PATCH_NAME, _CACHE_TARGETS, _before_cache_drop)
    if _CONVERT_PATCH_NAME not in intercept.registered():
        intercept.register(_CONVERT_PATCH_NAME, _CONVERT_TARGETS, around=_convert)
    if _PROTOCOL_PATCH_NAME not in intercept.registered():
        intercept.register(_PROTOCOL_PATCH_NAME, _PROTOCOL_TARGETS, around=_protocol)


def _unpatch() -> None:
    from carriers.spark import intercept

    intercept.unregister(_PATCH_NAME)
    intercept.unregister(_CACHE_PATCH_NAME)
    intercept.unregister(_CONVERT_PATCH_NAME)
    intercept.unregister(_PROTOCOL_PATCH_NAME)


def _convert(method: str, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``DeltaTable.convertToDelta(spark, identifier, ...)`` (the class first): once it returned, each hook watching
    ``spark`` is told of the conversion (a skipped write, hook.converted)."""
    result = original(*args, **kwargs)
    spark = args[1] if len(args) > 1 else kwargs.get("sparkSession")
    identifier = args[2] if len(args) > 2 else kwargs.get("identifier")
    if spark is not None and isinstance(identifier, str):
        for hook in list(_HOOKS):
            with suppress(Exception):  # never fail the job's call over the hook
                if hook.watches(spark):
                    hook.converted(spark, identifier)
    return result


def _protocol(method: str, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``DeltaTable(...).addFeatureSupport / dropFeatureSupport / upgradeTableProtocol``: once it returned, each hook
    watching the table's session is told (hook.protocol_changed), as the listener tells it of an ALTER TABLE."""
    result = original(*args, **kwargs)
    table = args[0] if args else None
    spark = getattr(table, "_spark", None)
    if spark is not None:
        for hook in list(_HOOKS):
            with suppress(Exception):  # never fail the job's call over the hook
                if hook.watches(spark):
                    hook.protocol_changed(table, f"DeltaTable.{method}")
    return result


def _before_cache_drop(method: str, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Before the job drops cached data: every hook's listener has read the writes that ended before (bounded)."""
    if method.endswith(".sql"):
        query = args[0] if args else kwargs.get("sqlQuery")
        if isinstance(query, str) and not _CACHE_WORDS.search(query):
            return  # cheap: most statements drop no cache
    hooks = list(_HOOKS)
    if any(h.is_worker() for h in hooks):
        return  # a hook's own statement must not wait for its own listener
    for hook in hooks:
        hook.wait_for_listener()


def _note_cache(hooks: list[Participant], stamp: str) -> None:
    """Right before a stamped write runs, in the job's thread: each hook notes what Spark's cache holds, so that a
    cache dropped later from the JVM — which no wrapper sees — still leaves the listener a trace (hook.note_cache)."""
    for hook in hooks:
        with suppress(Exception):  # never fail the job's write over a note
            hook.note_cache(stamp)


def wait_for_pending() -> None:
    """Wait (bounded) for every hook's pending attestations — the read gate checks a table the job just wrote
    only once its attestation has landed. A hook's own worker never waits (it could wait for itself)."""
    hooks = list(_HOOKS)
    if any(h.is_worker() for h in hooks):
        return
    for hook in hooks:
        hook.wait_before_statement()


def _call(method: str, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    hooks = list(_HOOKS)
    if any(h.is_worker() for h in hooks) or getattr(_LOCAL, "busy", False):
        # A hook's own ALTER (waiting or stamping there could deadlock two hooks), or a call nested in one
        # already being stamped.
        return original(*args, **kwargs)
    for hook in hooks:
        if hook.serialize_writes:
            hook.wait_before_statement()  # the write guard (docs/spark.md)
    self = args[0] if args else None
    spark = self if method == "sql" else getattr(self, "_spark", None)
    watching = [h for h in hooks if spark is not None and h.watches(spark)]
    if not watching or spark is None:
        return original(*args, **kwargs)
    _LOCAL.busy = True
    try:
        if method == "sql":
            return _sql(watching, spark, original, args, kwargs)
        return _write(watching, spark, method, original, args, kwargs)
    finally:
        _LOCAL.busy = False


# ---- SQL statements ----------------------------------------------------------------------------------------------

def _sql(hooks: list[Participant], spark: SparkSession, original: Any, args: tuple[Any, ...],
         kwargs: dict[str, Any]) -> Any:
    query = args[1] if len(args) > 1 else kwargs.get("sqlQuery")
    if not _writes(spark, query):
        result = original(*args, **kwargs)
    else:
        box: list[Any] = []

        def run(stamp: str) -> Any:
            _note_cache(hooks, stamp)
            box.append(original(*args, **kwargs))
            return box[0]

        result = _in_window(hooks, spark, run, by_identity=True, key=lambda: _result_key(spark, box))
    if not isinstance(query, str) or _CALL_WORD.search(query):
        # A CALL (an Iceberg procedure) ran while ``spark.sql`` analysed it, and Spark reports it to no listener
        # unless its result is read (measured, Spark 4.1 / Iceberg 1.10): the hooks are told here. The events of
        # the writes the procedure made reach them first.
        _drain(spark, max(h.guard_timeout_s for h in hooks))
        for hook in hooks:
            hook.procedure_called(result)
    return result


def _writes(spark: SparkSession, query: object) -> bool:
    """Whether a SQL text writes a table (parsed, not run). Unparseable text (pyspark's ``{name}`` formatting,
    or an error the real call will report) counts as a write: stamping it only costs the lock."""
    if not isinstance(query, str):
        return True
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query)
        for _ in range(64):
            field_name = _SQL_WRAPPERS.get(simple_name(plan))
            if field_name is None:
                break
            plan = getattr(plan, field_name)()
        return simple_name(plan) in _SQL_WRITES
    except Exception:
        return True


def _result_key(spark: SparkSession, box: list[Any]) -> int | None:
    """JVM identity of the command a ``spark.sql`` call executed: the listener's ``qe.commandExecuted()``."""
    if not box:
        return None
    try:
        executed = box[0]._jdf.queryExecution().commandExecuted()
        if simple_name(executed) == "CommandResult":
            executed = executed.commandLogicalPlan()
        jvm = spark._jvm
        assert jvm is not None
        return int(jvm.java.lang.System.identityHashCode(executed))
    except Exception:
        return None


# ---- DataFrame writers -------------------------------------------------------------------------------------------

def _write(hooks: list[Participant], spark: SparkSession, method: str, original: Any, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> Any:
    writer = args[0]
    v2 = method in _V2_METHODS and hasattr(writer, "_jwriter")
    if not v2 and method == "save":
        fmt = kwargs.get("format") or (args[2] if len(args) > 2 else None) or _source(writer)
        if str(fmt).lower() not in _FORMATS:
            return original(*args, **kwargs)  # other sources: options they do not know could upset them (JDBC)

    def run(stamp: str) -> Any:
        _note_cache(hooks, stamp)
        with _StampOptions(spark, writer, v2, stamp):
            return original(*args, **kwargs)

    # Delta ignores the writer option when it creates a table and for insertInto: those need the session conf.
    creating = (v2 and method in _V2_CREATING) or (method == "saveAsTable" and not _exists(spark, args, kwargs))
    if creating or method == "insertInto":
        return _in_window(hooks, spark, run, by_identity=False)
    return run(new_stamp())


def _source(writer: Any) -> str:
    try:
        return str(writer._jwrite.source())
    except Exception:
        return ""


def _exists(spark: SparkSession, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    name = args[1] if len(args) > 1 else kwargs.get("name")
    try:
        return bool(spark._jsparkSession.catalog().tableExists(str(name)))
    except Exception:
        return False


class _StampOptions:
    """Adds the stamp to a writer's options for one call and removes exactly what it added afterwards."""

    def __init__(self, spark: SparkSession, writer: Any, v2: bool, stamp: str) -> None:
        self.spark, self.writer, self.v2, self.stamp = spark, writer, v2, stamp
        self.added: list[str] = []

    def __enter__(self) -> None:
        try:
            current = self._current()
            conf = _conf_get(self.spark, DELTA_STAMP_CONF)
            if DELTA_STAMP_OPTION.lower() not in current and (conf is None or is_stamp(conf)):
                self._set(DELTA_STAMP_OPTION)  # never over the user's own userMetadata (option or conf)
            if ICEBERG_STAMP_OPTION not in current:
                self._set(ICEBERG_STAMP_OPTION)
        except Exception:
            return  # an unstamped write is matched the old way; never fail the job's write over a stamp

    def __exit__(self, *exc: object) -> None:
        for key in self.added:
            try:
                if self.v2:
                    self._v2_options().remove(key)
                else:
                    jw = self.writer._jwrite
                    getattr(jw, "extraOptions_$eq")(jw.extraOptions().removed(key))  # Scala's setter name
            except Exception:
                continue

    def _set(self, key: str) -> None:
        if self.v2:
            self.writer._jwriter.option(key, self.stamp)
        else:
            self.writer._jwrite.option(key, self.stamp)
        self.added.append(key)

    def _current(self) -> set[str]:
        """The writer's option keys, lower-cased."""
        keys = self._v2_options().keySet() if self.v2 else self.writer._jwrite.extraOptions().keySet()
        it = keys.iterator()
        out: set[str] = set()
        while it.hasNext():
            out.add(str(it.next()).lower())
        return out

    def _v2_options(self) -> Any:
        # DataFrameWriterV2 keeps its options in a private field: read it to respect the user's own keys, and to
        # remove ours after the write (the writer object is the user's).
        field_ = self.writer._jwriter.getClass().getDeclaredField("options")
        field_.setAccessible(True)
        return field_.get(self.writer._jwriter)


# ---- the conf window ---------------------------------------------------------------------------------------------

def _session_lock(spark: SparkSession) -> threading.RLock:
    key = int(spark._jsparkSession.hashCode())
    with _STATE:
        return _LOCKS.setdefault(key, threading.RLock())


def _conf_get(spark: SparkSession, key: str) -> str | None:
    try:
        value = spark._jsparkSession.conf().getOption(key)
        got = opt(value)
        return None if got is None else str(got)
    except Exception:
        return None


def _conf_restore(spark: SparkSession, key: str, previous: str | None) -> None:
    conf = spark._jsparkSession.conf()
    if previous is None:
        conf.unset(key)
    else:
        conf.set(key, previous)


def _drain(spark: SparkSession, timeout_s: float) -> None:
    """Let the listener bus deliver what is already posted (bounded; a busy bus just means held events wait)."""
    try:
        spark._jsparkSession.sparkContext().listenerBus().waitUntilEmpty(int(timeout_s * 1000))
    except Exception:
        return


def _iceberg_commit_properties(spark: SparkSession, stamp: str) -> Callable[[], None]:
    """Also put the stamp in Iceberg's thread-local commit properties (``CommitMetadata``) for this thread's call.

    A DELETE that Iceberg runs as a metadata-only delete (whole files, ``SparkTable.deleteWhere``) commits outside
    Spark's write path: it reads neither the session conf nor write options, only these. The thread-local is
    private (its public setter, ``withCommitProperties``, takes a JVM callable), so it is set by reflection on the
    JVM thread py4j pins to this Python thread — the one that then runs the statement. Best effort: returns the
    restore action (a no-op when Iceberg is absent or the field is not there)."""
    try:
        jvm = spark._jvm
        assert jvm is not None
        cls = jvm.py4j.reflection.ReflectionUtil.classForName("org.apache.iceberg.spark.CommitMetadata")
        field_ = cls.getDeclaredField("COMMIT_PROPERTIES")
        field_.setAccessible(True)
        local = field_.get(None)
        previous = local.get()
        merged = jvm.java.util.HashMap(previous)
        merged.put(ICEBERG_STAMP_KEY, stamp)
        local.set(merged)
    except Exception:
        return lambda: None

    def restore() -> None:
        try:
            local.set(previous)
        except Exception:
            return

    return restore


def _in_window(hooks: list[Participant], spark: SparkSession, run: Callable[[str], Any], *, by_identity: bool,
               key: Callable[[], int | None] = lambda: None) -> Any:
    timeout = max(h.guard_timeout_s for h in hooks)
    with _session_lock(spark):
        _drain(spark, timeout)  # earlier writes' events reach the hooks before the window opens
        stamp = new_stamp()
        previous_delta = _conf_get(spark, DELTA_STAMP_CONF)
        previous_iceberg = _conf_get(spark, ICEBERG_STAMP_CONF)
        delta = previous_delta is None or is_stamp(previous_delta)  # never over the user's own userMetadata
        formats = {"iceberg"} | ({"delta"} if delta else set())
        window = Window(stamp=stamp, formats=frozenset(formats), by_identity=by_identity, key=key)
        conf = spark._jsparkSession.conf()
        if delta:
            conf.set(DELTA_STAMP_CONF, stamp)
        conf.set(ICEBERG_STAMP_CONF, stamp)
        restore_thread = _iceberg_commit_properties(spark, stamp)
        for hook in hooks:
            hook.open_window(window)
        try:
            return run(stamp)
        finally:
            try:
                if delta:
                    _conf_restore(spark, DELTA_STAMP_CONF, previous_delta)
                _conf_restore(spark, ICEBERG_STAMP_CONF, previous_iceberg)
                restore_thread()
            finally:
                _drain(spark, timeout)  # the statement's own event is now held by each hook
                for hook in hooks:
                    hook.close_window(window)
