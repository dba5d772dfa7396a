"""Structured Streaming writes attested: every micro-batch commit into Delta / Iceberg (docs/streaming.md).

A streaming query's micro-batches never reach a ``QueryExecutionListener`` as writes (Delta's sink runs in a cloned
session, unnamed; Iceberg's reaches it as a ``collect``), so the hook also registers a ``StreamingQueryListener``:

- ``onQueryStarted``: the query's sink (Delta path / Iceberg table; other sinks are not tables) and its checkpoint;
- ``onQueryProgress`` (after each batch committed and Spark logged it): the batch id and each source's offset range;
  the worker then asks the format which commit carries the batch (Delta ``txn(appId=query id, version=batch id)``,
  Iceberg summary ``spark.sql.streaming.queryId`` / ``epochId``: carriers/delta/stream_commit.py,
  carriers/iceberg/stream_commit.py) and attests it **detached** (a pointer file per version, never a commit: a metadata
  commit would abort the stream's next Delta transaction, and an Iceberg follow-up snapshot can only attest the
  head, which the stream moves on);
- the first progress (or the end) of every run first *catches up*: the query's committed batches without an
  attestation (a driver killed after a commit, before its attestation) are attested, inputs read back from the
  checkpoint's offset log. Pointers are written once, never replaced, so a version is attested at most once;
  the catch-up makes it at least once.

``foreachBatch`` functions are wrapped: the writes they make (through the ordinary post-write hook) get the batch's
source range as inputs, and the Delta idempotent-write ``txn`` each write declared (its writer options, or the
session confs ``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` when it ran), by which a replayed write that
Delta skipped is matched to the commit the killed run made of it. Nothing here raises into the JVM; pyspark is
imported only when a hook starts.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attest.identity.inputs import ObservedInput
from attest.render.terminal import terminal_safe_logger
from carriers.spark.plan import (
    PYTHON_CODE,
    LeafInfo,
    carrier_uri,
    ident_parts,
    lenient_confs,
    opaque_code,
    opaque_inputs,
    opt,
    program_hash_from_json,
    python_functions,
    result_confs,
    seq,
    simple_name,
)

if TYPE_CHECKING:
    from carriers.base import WriteResult
    from carriers.spark.hook import Hook

__all__ = ["SinkInfo", "SourceRange", "StreamBatch", "StreamWatcher", "parse_txn", "read_through"]

log = terminal_safe_logger("attest.spark")

_QUERY_ID_PROPERTY = "sql.streaming.queryId"  # StreamExecution.QUERY_ID_KEY, a local property of the batch thread
_STREAM_LEAVES = frozenset({"StreamingExecutionRelation", "StreamingDataSourceV2ScanRelation",
                            "StreamingDataSourceV2Relation", "StreamingRelation", "StreamingRelationV2"})
_OBJECT_ID = re.compile(r"@[0-9a-f]{4,16}\b")
# Delta's idempotent-write session confs (DeltaSQLConf.DELTA_IDEMPOTENT_DML_TXN_APP_ID / _VERSION): a write without
# both writer options reads these instead (DeltaCommand.getTxnVersionAndAppId).
TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
# The calls a foreachBatch function writes through, wrapped to see the session confs while each one runs.
_WRITE_CALLS = {("pyspark.sql.session", "SparkSession"): ("sql",),
                ("pyspark.sql.readwriter", "DataFrameWriter"): ("save", "saveAsTable", "insertInto"),
                ("pyspark.sql.readwriter", "DataFrameWriterV2"): ("append", "overwrite", "overwritePartitions",
                                                                  "create", "replace", "createOrReplace")}


# ---- what a batch read and wrote -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """A streaming source of a query: what it reads (a Delta / Iceberg table, or something else)."""

    description: str  # Spark's toString of the source (object hashes dropped)
    kind: str = "other"  # "delta" | "iceberg" | "other"
    location: str | None = None
    name: str | None = None
    catalog: str | None = None
    identifier: tuple[str, ...] | None = None
    changes: bool = False  # a Delta source reading the change data feed: change-data files, no version's rows

    def leaf(self, expr_ids: tuple[int, ...] = ()) -> LeafInfo:
        """The source as a plan leaf: its program identity is its name, never its offsets."""
        if self.kind in ("delta", "iceberg"):
            return LeafInfo(self.kind, name=self.name, location=self.location, expr_ids=expr_ids)
        return LeafInfo("stream", name=self.description, expr_ids=expr_ids)


@dataclass(frozen=True)
class SourceRange:
    """One source's offsets for one micro-batch: the batch read (start, end]."""

    source: Source
    start: str | None
    end: str | None

    def offsets(self) -> str:
        return f"offsets {self.start or 'none'} -> {self.end or 'none'}"


@dataclass(frozen=True)
class SinkInfo:
    """The table a streaming query writes."""

    format: str  # "delta" | "iceberg"
    location: str | None
    table_name: str | None = None
    catalog: str | None = None
    identifier: tuple[str, ...] | None = None


@dataclass
class StreamBatch:
    """One unit of streaming work for the hook's worker: a batch committed (``batch``) or a catch-up (None)."""

    query: QueryState
    batch: int | None
    ranges: list[SourceRange] = field(default_factory=list)
    queued_at: float = 0.0
    below: int | None = None  # catch-up: only batches older than this one (its own job follows)

    @property
    def table_name(self) -> str | None:
        sink = self.query.sink
        return None if sink is None else (sink.table_name or sink.location)

    @property
    def location(self) -> str | None:
        return None if self.query.sink is None else self.query.sink.location

    command = "streaming batch"


@dataclass
class QueryState:
    """A streaming query as the hook knows it (one per query id; the run id changes on restart)."""

    query_id: str
    run_id: str
    name: str | None
    execution: Any  # the JVM StreamExecution
    sink: SinkInfo | None
    sources: list[Source]
    program_hash: str | None = None
    opaque: list[str] = field(default_factory=list)  # user code its plan runs but does not show (plan.OPAQUE_CODE)
    # Why its scans may have skipped files (``ignoreMissingFiles`` / ``ignoreCorruptFiles`` on its session): its
    # sources' ranges are then read heuristically (plan.lenient_confs).
    lenient: str | None = None
    caught_up: str | None = None  # the run id whose catch-up is queued
    missed: set[int] = field(default_factory=set)  # batches skipped on a full queue (the catch-up reaches them)


def read_through(source: Source, end: str | None) -> str | None:
    """The upstream version a batch read through, from the source's end offset: Delta's ``reservoirVersion``
    (the version before it when ``index`` is -1, i.e. that version not started yet), Iceberg's ``snapshot_id``.
    None when the offset does not say (nothing read yet, another offset format)."""
    if end is None:
        return None
    try:
        doc = json.loads(end)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if source.kind == "delta":
        version, index = doc.get("reservoirVersion"), doc.get("index")
        if type(version) is not int or type(index) is not int:
            return None
        if index == -1 and not doc.get("isStartingVersion"):
            version -= 1
        return str(version) if version >= 0 else None
    if source.kind == "iceberg":
        sid = doc.get("snapshot_id")
        return str(sid) if type(sid) is int else None
    return None


# ---- reading the JVM side ------------------------------------------------------------------------------------------

def _sink_info(sink: Any) -> SinkInfo | None:
    cls = simple_name(sink)
    if cls == "DeltaSink":
        name = None
        with suppress(Exception):  # toTable: the catalog entry of the table (Delta 3+)
            table = opt(sink.catalogTable())
            name = None if table is None else str(table.identifier().unquotedString())
        return SinkInfo("delta", str(sink.path().toString()), table_name=name)
    if cls == "SparkTable":  # Iceberg, through toTable / format("iceberg")
        name = str(sink.name())
        parts = name.split(".")
        return SinkInfo("iceberg", str(sink.table().location()), table_name=name, catalog=parts[0],
                        identifier=tuple(parts[1:]))
    return None  # foreachBatch (its writes are the hook's), console, memory, Kafka, files: no table commit


def _reads_change_feed(source: Any) -> bool:
    """Whether a DeltaSource reads the change data feed (``readChangeFeed``); options that cannot be read are taken
    as reading it (its batches are then recorded heuristic, never as a version's content)."""
    try:
        return bool(source.options().readChangeFeed())
    except Exception:
        return True


_RANGE_COMMITS_MAX = 1_000  # commits / snapshots looked at between a batch's offsets; more is recorded heuristic


def beyond_version(source: Source, start: str | None, end: str | None, version: str, history: Any) -> str | None:
    """Why a batch of ``source`` that read (``start``, ``end``] through ``version`` may have read rows that are not
    that version's, or None when every file it read is one of that version's. A stream reads the files its offsets
    cover, not a version: a Delta source the adds of each commit since its start (a compaction's or an overwrite's
    removed files are read before, or skipped with ``skipChangeCommits`` / ``ignoreChanges``), an Iceberg source the
    files of its oldest snapshot and what each later append added (a ``replace`` is skipped). Only when nothing in
    between removed a file are they all in ``version``, whose content the input then names (round 23: a compacted
    Iceberg table's forged original, and a Delta overwrite's removed rows, recorded as the current version's content,
    ``strong``). ``history``: Delta — ``commit(v)`` giving a commit's removes or None; Iceberg — ``snapshot(id)``
    giving ``(operation, parent id)`` or None."""
    def doc(offset: str | None) -> dict[str, Any] | None:
        try:
            parsed = json.loads(offset) if offset is not None else None
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None

    try:
        return _beyond(source, doc(start), doc(end), start, version, history)
    except Exception as exc:  # a history that cannot be read is not shown to hold no removal
        return f"the batch's range could not be looked at ({type(exc).__name__})"


def _beyond(source: Source, first: dict[str, Any] | None, last: dict[str, Any] | None, start: str | None,
            version: str, history: Any) -> str | None:
    if source.kind == "delta":
        if source.changes:
            return "a change data feed: change-data files and other versions' changes, not this version's rows"
        if first is None:
            if start is None and last is not None and last.get("isStartingVersion") is True:
                return None  # the first batch of a fresh stream: part of the starting version's own files
            return "the stream started at an earlier version: files later versions removed may have been read"
        since = first.get("reservoirVersion")
        if type(since) is not int or int(version) - since > _RANGE_COMMITS_MAX:
            return "the batch's range could not be looked at"
        for v in range(since + 1, int(version) + 1):
            removes = history(v)
            if removes is None or removes:
                return f"version {v} removed files the batch may have read (not this version's rows)"
        return None
    if source.kind == "iceberg":
        since = None if first is None else first.get("snapshot_id")
        if first is not None and type(since) is not int:
            return "the batch's range could not be looked at"
        at, seen = int(version), 0
        while at != since and seen < _RANGE_COMMITS_MAX:
            seen += 1
            found = history(at)
            if found is None:  # expired or never there: the start of what the table still holds
                return None if since is None and seen > 1 else "the batch's range could not be looked at"
            operation, parent = found
            if parent is None:
                return None if since is None else "the batch's start is not in this snapshot's history"
            if operation != "append":
                return (f"snapshot {at} is a {operation}, not an append: the stream may have read files it removed "
                        "(not this snapshot's rows)")
            at = parent
        return None if at == since else "the batch's range could not be looked at"
    return None


def _iceberg_step(table: Any, snapshot_id: int) -> tuple[str, int | None] | None:
    """A pyiceberg table's snapshot as (operation, parent id), None when the table does not hold it."""
    snap = table.metadata.snapshot_by_id(snapshot_id)
    if snap is None:
        return None
    operation = snap.summary.operation.value if snap.summary is not None else "unknown"
    return str(operation), snap.parent_snapshot_id


def _source_of(obj: Any, relation: Any = None) -> Source:
    description = _OBJECT_ID.sub("", str(obj.toString()))
    cls = simple_name(obj)
    if cls == "DeltaSource":
        with suppress(Exception):
            return Source(description, "delta", location=str(obj.deltaLog().dataPath().toString()),
                          changes=_reads_change_feed(obj))
    if relation is not None:
        with suppress(Exception):
            table = relation.table()
            if simple_name(table) == "SparkTable":
                catalog = opt(relation.catalog())
                ident = opt(relation.identifier())
                parts = None if ident is None else ident_parts(ident)
                cat = None if catalog is None else str(catalog.name())
                name = ".".join(p for p in (cat, *(parts or ())) if p) or str(table.name())
                return Source(f"iceberg:{name}", "iceberg", location=str(table.table().location()), name=name,
                              catalog=cat, identifier=parts)
    return Source(description)


def _stream_leaves(plan: Any) -> list[tuple[Any, Source, tuple[int, ...]]]:
    """The streaming leaves of a query's logical plan: (the source object, what it reads, output expression ids)."""
    out: list[tuple[Any, Source, tuple[int, ...]]] = []
    for leaf in seq(plan.collectLeaves()):
        cls = simple_name(leaf)
        try:
            ids = tuple(int(a.exprId().id()) for a in seq(leaf.output()))
        except Exception:
            ids = ()
        if cls == "StreamingExecutionRelation":
            src = leaf.source()
            out.append((src, _source_of(src), ids))
        elif cls == "StreamingDataSourceV2ScanRelation":
            stream = leaf.stream()
            out.append((stream, _source_of(stream, leaf.relation()), ids))
    return out


def _program_hash(plan: Any, leaves: list[tuple[Any, Source, tuple[int, ...]]], sink: SinkInfo,
                  checkpoint: str | None, confs: dict[str, str] | None = None) -> str:
    """The query's program identity: its logical plan, normalised as batch plans are (docs/spark.md), sources
    replaced by what they read, the query id, checkpoint and sink location out. Identical for every batch of a
    run and across restarts from the checkpoint."""
    text = str(plan.toJSON())
    doc = json.loads(text)
    for node in doc:
        if isinstance(node, dict):
            node.pop("queryId", None)  # run data: another checkpoint of the same program is the same program
    rels = [src.leaf(ids) for _, src, ids in leaves]
    scrub = [x for x in {checkpoint, *(s.location for _, s, _ in leaves)} if x]
    functions: list[str] = []
    if opaque_code(text) & PYTHON_CODE:  # the plan's Python functions: toJSON writes each as "func": null
        try:
            functions = python_functions(plan)
        except Exception:  # never the document of a plan without them: no program shares it
            functions = ["<unreadable python functions>"]
    return program_hash_from_json([("stream", json.dumps(doc), rels)], scrub=sorted(scrub, key=len, reverse=True),
                                  target=sink.location, functions=functions, confs=confs)


# ---- the watcher ---------------------------------------------------------------------------------------------------


def _session_key(qe: Any) -> int | None:
    """The JVM session (its hash code) that ran a query execution; None when it cannot be asked."""
    try:
        return int(qe.sparkSession().hashCode())
    except Exception:
        return None


class StreamWatcher:
    """The hook's streaming side: a StreamingQueryListener, the foreachBatch wrapper, and the worker's jobs."""

    def __init__(self, hook: Hook) -> None:
        self.hook = hook
        self.queries: dict[str, QueryState] = {}
        self._batches: dict[int, tuple[QueryState, int, list[SourceRange]]] = {}  # session key -> running batch
        self._txns: dict[int, tuple[str, int]] = {}  # session key -> the conf txn of the write call running in it
        self._lock = threading.Lock()
        self._listener: Any = None
        self._patch = f"attest.stream-batch.{id(self)}"

    # ---- lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        from pyspark.sql.streaming.listener import StreamingQueryListener

        watcher = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                watcher._guard(watcher.on_started, event)

            def onQueryProgress(self, event: Any) -> None:
                watcher._guard(watcher.on_progress, event)

            def onQueryIdle(self, event: Any) -> None:
                return None

            def onQueryTerminated(self, event: Any) -> None:
                watcher._guard(watcher.on_terminated, event)

        self._listener = _Listener()
        self.hook.spark.streams.addListener(self._listener)
        from carriers.spark import intercept

        intercept.register(self._patch, {("pyspark.sql.streaming.readwriter", "DataStreamWriter"): ("foreachBatch",)},
                           around=self._wrap_foreach_batch)
        intercept.register(f"{self._patch}.txn", _WRITE_CALLS, around=self._wrap_write_call)

    def stop(self) -> None:
        from carriers.spark import intercept

        intercept.unregister(self._patch)
        intercept.unregister(f"{self._patch}.txn")
        if self._listener is not None:
            with suppress(Exception):
                self.hook.spark.streams.removeListener(self._listener)
            self._listener = None

    def _guard(self, handler: Callable[[Any], None], event: Any) -> None:
        start = time.perf_counter()
        try:
            handler(event)
        except Exception as exc:  # never into the JVM
            self.hook._fail(f"reading a streaming query event failed: {exc!r}")
        finally:
            with self.hook._lock:
                self.hook.seconds += time.perf_counter() - start

    # ---- listener side ------------------------------------------------------------------------------------------
    def _state(self, query_id: str, run_id: str, name: str | None = None) -> QueryState | None:
        with self._lock:
            state = self.queries.get(query_id)
        if state is not None and state.run_id == run_id:
            return state
        jq = self.hook.spark._jsparkSession.streams().get(query_id)
        if jq is None:
            return state  # the query already ended: what the last run knew
        execution = jq.streamingQuery()
        sink = _sink_info(execution.sink())
        state = QueryState(query_id, run_id, name, execution, sink, [])
        with self._lock:
            self.queries[query_id] = state
        return state

    def on_started(self, event: Any) -> None:
        self._state(str(event.id), str(event.runId), event.name)

    def _prepare(self, state: QueryState) -> None:
        """Sources and program identity of a run: read once the logical plan exists (the first batch)."""
        if state.program_hash is not None or state.sink is None:
            return
        plan = state.execution.logicalPlan()
        found = _stream_leaves(plan)
        sources: list[Source] = []
        for obj in seq(state.execution.sources()):  # the offset log's order
            match = next((s for o, s, _ in found if o.equals(obj)), None)
            sources.append(match or _source_of(obj))
        state.sources = sources if sources else [s for _, s, _ in found]
        checkpoint = None
        with suppress(Exception):
            checkpoint = str(state.execution.resolvedCheckpointRoot())
        state.opaque = sorted(opaque_code(str(plan.toJSON())))
        confs = {"<unreadable>": "<unreadable confs>"}  # confs we cannot read: a document no readable run shares
        for session in ("sparkSessionForStream", "sparkSession"):  # the query's own clone: what its batches run with
            with suppress(Exception):
                jsession = getattr(state.execution, session)()
                confs = result_confs(jsession, self.hook.spark._jvm)
                state.lenient = lenient_confs(jsession)
                break
        state.program_hash = _program_hash(plan, found, state.sink, checkpoint, confs)

    def on_progress(self, event: Any) -> None:
        progress = event.progress
        state = self._state(str(progress.id), str(progress.runId), progress.name)
        if state is None or state.sink is None:
            return  # not a table sink (foreachBatch writes reach the post-write hook themselves)
        self._prepare(state)
        batch = int(progress.batchId)
        ranges = []
        for i, sp in enumerate(progress.sources):
            src = state.sources[i] if i < len(state.sources) else _source_of_description(sp.description)
            ranges.append(SourceRange(src, _offset(sp.startOffset), _offset(sp.endOffset)))
        if state.caught_up != state.run_id:
            state.caught_up = state.run_id
            self.hook._enqueue_any(StreamBatch(state, None, below=batch))
        if not self.hook._enqueue_any(StreamBatch(state, batch, ranges)):
            state.missed.add(batch)
            state.caught_up = None  # the next progress event queues a catch-up that reaches back to it

    def on_terminated(self, event: Any) -> None:
        with self._lock:
            state = self.queries.get(str(event.id))
        # Caught up or not: a batch whose commit landed as the query stopped may never have its progress reported
        # (Spark posts it after the commit log is written), and this run's catch-up was queued at its first batch.
        # Without a catch-up here such a batch stayed unattested and flush() passed under "required" (round 29).
        if state is None or state.sink is None:
            return
        with suppress(Exception):
            self._prepare(state)
        state.caught_up = state.run_id
        self.hook._enqueue_any(StreamBatch(state, None))

    # ---- foreachBatch ---------------------------------------------------------------------------------------------
    def _wrap_foreach_batch(self, method: str, original: Callable[..., Any], args: tuple[Any, ...],
                            kwargs: dict[str, Any]) -> Any:
        func = args[1] if len(args) > 1 else kwargs.get("func")
        if not callable(func):
            return original(*args, **kwargs)
        watcher = self

        def batch_function(df: Any, batch_id: int) -> Any:
            mark = watcher.hook.outcome_mark()
            key = watcher._enter_batch(df, int(batch_id))
            try:
                result = func(df, batch_id)
            finally:
                watcher._exit_batch(key)
            # Spark logs the batch as done (its commit log) when this returns, and never runs a logged batch again:
            # its writes are attested first, or (policy "required") the batch fails and its restart runs it again.
            watcher.hook.settle_batch(mark, int(batch_id))
            return result

        if len(args) > 1:
            return original(args[0], batch_function, *args[2:], **kwargs)
        return original(*args, **{**kwargs, "func": batch_function})

    def _enter_batch(self, df: Any, batch_id: int) -> int | None:
        try:
            jsession = df.sparkSession._jsparkSession
            query_id = str(jsession.sparkContext().getLocalProperty(_QUERY_ID_PROPERTY))
            jq = self.hook.spark._jsparkSession.streams().get(query_id)
            if jq is None:
                return None
            execution = jq.streamingQuery()
            state = self._state(query_id, str(execution.runId().toString()))
            if state is None:
                return None
            if not state.sources:
                found = _stream_leaves(execution.logicalPlan())
                state.sources = [next((s for o, s, _ in found if o.equals(obj)), None) or _source_of(obj)
                                 for obj in seq(execution.sources())]
            ranges = _ranges_from_log(execution, state.sources, batch_id)
            key = int(jsession.hashCode())
            with self._lock:
                self._batches[key] = (state, batch_id, ranges)
            return key
        except Exception as exc:
            self.hook._fail(f"reading the source range of a foreachBatch batch failed: {exc!r}")
            return None

    def _exit_batch(self, key: int | None) -> None:
        if key is None:
            return
        with suppress(Exception):  # the writes' events reach the hook before the batch's range is forgotten
            self.hook.spark._jsparkSession.sparkContext().listenerBus().waitUntilEmpty()
        with self._lock:
            self._batches.pop(key, None)

    def _wrap_write_call(self, method: str, original: Callable[..., Any], args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Any:
        """A write call inside a foreachBatch batch, its session declaring a Delta idempotent-write txn: the txn is
        kept for the call's own write event, which reaches the hook before the call's end is let through."""
        key, txn = None, None
        if self._batches:
            with suppress(Exception):  # a session we cannot read declares nothing the hook relies on
                key, txn = self._declared_txn(args[0])
        if key is None or txn is None:
            return original(*args, **kwargs)
        with self._lock:
            self._txns[key] = txn
        try:
            return original(*args, **kwargs)
        finally:
            with suppress(Exception):  # the write's event is handled (batch_txn) before the confs can change
                self.hook.spark._jsparkSession.sparkContext().listenerBus().waitUntilEmpty()
            with self._lock:
                self._txns.pop(key, None)

    def _declared_txn(self, obj: Any) -> tuple[int | None, tuple[str, int] | None]:
        """(the session key of a running foreachBatch batch, the txn its session confs declare) for a write call's
        object (a SparkSession or a writer)."""
        session = getattr(obj, "_spark", obj)
        key = int(session._jsparkSession.hashCode())
        with self._lock:
            if key not in self._batches:
                return None, None
        app_id, version = session.conf.get(TXN_APP_ID_CONF, None), session.conf.get(TXN_VERSION_CONF, None)
        return key, parse_txn(app_id, version)

    def batch_txn(self, qe: Any) -> tuple[str, int] | None:
        """The txn the session confs declared for the foreachBatch write call that ran ``qe`` (None: none)."""
        key = _session_key(qe) if self._txns else None
        if key is None:
            return None
        with self._lock:
            return self._txns.get(key)

    def in_batch(self, session_key: int) -> bool:
        """Whether a foreachBatch batch of a watched query is running in the session with this key (its clone)."""
        with self._lock:
            return session_key in self._batches

    def batch_of(self, qe: Any) -> list[SourceRange] | None:
        """The source range of the foreachBatch batch whose session ran ``qe`` (None: not inside one)."""
        key = _session_key(qe) if self._batches else None
        if key is None:
            return None
        with self._lock:
            found = self._batches.get(key)
        return None if found is None else found[2]

    # ---- worker side ----------------------------------------------------------------------------------------------
    def observe(self, ranges: list[SourceRange], lenient: str | None = None) -> list[ObservedInput]:
        """What a batch read, as inputs: a Delta / Iceberg source at the version its end offset reads through
        (strong when that version is attested), other sources by description and offset range (heuristic). The
        offset range is kept in ``watermark`` either way. ``lenient``: why the batch's scans may have skipped files
        — then no source is read by content."""
        out: list[ObservedInput] = []
        for r in ranges:
            src, version = r.source, read_through(r.source, r.end)
            # Skipped files: a subset of the range's rows, never the version's content.
            content_of = (lambda obs: None) if lenient is not None else (lambda obs: obs.content)
            mark = r.offsets() if lenient is None else f"{r.offsets()}; {lenient}"
            if version is not None and src.kind == "delta" and src.location:
                from carriers.delta.carrier import DeltaCarrier
                from carriers.delta.log import read_commit

                delta = DeltaCarrier(carrier_uri(src.location))
                obs = delta.observe(int(version))

                def removes(v: int, storage: Any = delta.storage) -> Any:
                    try:
                        commit = read_commit(storage, v)
                    except Exception:  # a commit that cannot be read: the range is not shown to hold no removal
                        return None
                    return None if commit is None else commit.removes

                why = beyond_version(src, r.start, r.end, version, removes)
                out.append(ObservedInput(table=obs.table, content=None if why else content_of(obs),
                                         version=obs.version, location=obs.location,
                                         watermark=mark if why is None else f"{mark}; {why}", name=src.name))
            elif version is not None and src.kind == "iceberg" and src.catalog and src.identifier:
                from carriers.iceberg.carrier import IcebergCarrier

                table = self.hook._iceberg_catalog(src.catalog).load_table(src.identifier)
                obs = IcebergCarrier(table, catalog_name=src.catalog).observe(int(version))
                why = beyond_version(src, r.start, r.end, version, lambda sid, t=table: _iceberg_step(t, sid))
                out.append(ObservedInput(table=obs.table, content=None if why else content_of(obs),
                                         snapshot_id=obs.snapshot_id, location=obs.location,
                                         watermark=mark if why is None else f"{mark}; {why}", name=src.name))
            else:
                out.append(ObservedInput(table=f"stream:{src.description}", watermark=r.offsets(),
                                         location=src.location, name=src.name))
        return out

    def attest(self, job: StreamBatch) -> list[WriteResult]:
        state = job.query
        sink = state.sink
        if sink is None:
            return []
        carrier = self._carrier(sink)
        if job.batch is None:
            return self._catch_up(carrier, job)
        version = self._committed(carrier, state.query_id, job.batch)
        if version is None:
            log.info("attest.spark: batch %d of streaming query %s committed nothing to %s", job.batch,
                     state.query_id, job.table_name)
            return []
        result = self._attest_version(carrier, state, version, job.ranges)
        return [] if result is None else [result]

    def _carrier(self, sink: SinkInfo) -> Any:
        if sink.format == "delta":
            from carriers.delta.carrier import DeltaCarrier

            assert sink.location is not None
            return DeltaCarrier(carrier_uri(sink.location), detached=True)
        from carriers.iceberg.carrier import IcebergCarrier

        assert sink.catalog is not None and sink.identifier is not None
        table = self.hook._iceberg_catalog(sink.catalog).load_table(sink.identifier)
        return IcebergCarrier(table, catalog_name=sink.catalog, detached=True)

    def _committed(self, carrier: Any, query_id: str, batch: int) -> str | None:
        what = carrier.reference
        if carrier.kind == "delta":
            from carriers.delta.stream_commit import commit_for_batch

            found = commit_for_batch(carrier.storage, query_id, batch, carrier.latest_version(), what=what)
        else:
            from carriers.iceberg.stream_commit import snapshot_for_batch

            carrier.refresh()
            found = snapshot_for_batch(carrier.table.metadata.snapshots, query_id, batch, what=what)
        return None if found is None else str(found)

    def _committed_batches(self, carrier: Any, query_id: str, missed: set[int]) -> list[tuple[int, str]]:
        """(batch, version) of every committed batch of the query without an attestation, oldest first. Delta:
        the log is walked back to the newest attested batch of the query (attestations are made in order)."""
        if carrier.kind == "delta":
            from carriers.delta.stream_commit import stream_commits

            floor = min(missed, default=None)
            missing = [(c.batch, str(c.version)) for c in stream_commits(
                carrier.storage, query_id, carrier.latest_version(),
                stop=lambda c: carrier._read_pointer(str(c.version)) is not None
                and (floor is None or c.batch <= floor))]
            return sorted((b, v) for b, v in missing if carrier._read_pointer(v) is None)
        from carriers.iceberg.stream_commit import stream_snapshots

        carrier.refresh()
        return [(s.batch, str(s.snapshot_id)) for s in stream_snapshots(carrier.table.metadata.snapshots, query_id)
                if carrier._read_pointer(str(s.snapshot_id)) is None]

    def _catch_up(self, carrier: Any, job: StreamBatch) -> list[WriteResult]:
        state = job.query
        out: list[WriteResult] = []
        for batch, version in self._committed_batches(carrier, state.query_id, set(state.missed)):
            if job.below is not None and batch >= job.below:
                continue
            try:
                ranges = _ranges_from_log(state.execution, state.sources, batch)
            except Exception as exc:  # the checkpoint's offset log is gone or unreadable: the commit still is
                log.warning("attest.spark: the offsets of batch %d of %s are not readable (%s); attested without "
                            "its inputs", batch, state.query_id, exc)
                ranges = []
            log.info("attest.spark: catching up batch %d (version %s) of streaming query %s", batch, version,
                     state.query_id)
            try:
                result = self._attest_version(carrier, state, version, ranges)
            except Exception as exc:  # one batch's failure never keeps the others from being attested
                self.hook._fail(f"attesting batch {batch} (version {version}) of {job.table_name} failed: {exc}")
                continue
            if result is not None:
                out.append(result)
        return out

    def _attest_version(self, carrier: Any, state: QueryState, version: str, ranges: list[SourceRange],
                        ) -> WriteResult | None:
        from attest.errors import CarrierError, Code

        sink = state.sink
        assert sink is not None
        key = (f"{sink.format}:{sink.location}", version, f"stream:{state.query_id}")
        with self.hook._lock:
            if key in self.hook._done:
                self.hook.already_attested += 1
                return None
            self.hook._done.add(key)
        if carrier._read_pointer(version) is not None:
            with self.hook._lock:
                self.hook.already_attested += 1
            log.debug("attest.spark: version %s of %s is attested already", version, sink.table_name or sink.location)
            return None
        label = _Labelled(sink.table_name, sink.location)
        hasher = self.hook._hasher(carrier, label)
        model = self.hook._model(label)
        try:
            result: WriteResult = carrier.record(
                model=model, program_hash=state.program_hash or "",
                inputs=self.observe(ranges, state.lenient) + opaque_inputs(state.opaque),
                run_id=self.hook.run_id, dialect="spark", engines=self.hook._engines, version=version,
                signer=self.hook.signer, hasher=hasher)
            return result
        except CarrierError as exc:
            if exc.code == Code.SIDECAR_MISMATCH and carrier._read_pointer(version) is not None:
                with self.hook._lock:  # another process attested it first: one attestation in force, theirs
                    self.hook.already_attested += 1
                return None
            raise


@dataclass(frozen=True)
class _Labelled:
    """What the hook's helpers read off an event (model naming, hashing route): the sink's name."""

    table_name: str | None
    location: str | None = None
    model: str | None = None


def parse_txn(app_id: Any, version: Any) -> tuple[str, int] | None:
    """A declared Delta idempotent-write txn (appId, version); None unless both are there and the version is a
    number (Delta refuses the write otherwise)."""
    if app_id is None or version is None or not str(app_id):
        return None
    try:
        return str(app_id), int(str(version))
    except ValueError:
        return None


def _offset(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return None if text in ("None", "null", "") else text


def _source_of_description(description: str) -> Source:
    return Source(_OBJECT_ID.sub("", description))


def _ranges_from_log(execution: Any, sources: list[Source], batch: int) -> list[SourceRange]:
    """The source ranges of ``batch`` from the checkpoint's offset log: (offsets of batch - 1, offsets of batch]."""
    log_ = execution.offsetLog()
    end = _offsets(opt(log_.get(batch)))
    start = _offsets(opt(log_.get(batch - 1))) if batch > 0 else []
    if end is None:
        raise ValueError(f"no offsets logged for batch {batch}")
    out: list[SourceRange] = []
    for i, src in enumerate(sources):
        out.append(SourceRange(src, start[i] if start and i < len(start) else None, end[i] if i < len(end) else None))
    return out


def _offsets(seq_: Any) -> list[str | None] | None:
    if seq_ is None:
        return None
    out: list[str | None] = []
    for o in seq(seq_.offsets()):
        value = opt(o)
        out.append(None if value is None else str(value.json()))
    return out
