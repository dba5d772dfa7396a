"""``attest audit`` over many tables: each table checked exactly as ``attest verify`` would, several at once, the rows
handed back in the order of the tables (the report is the serial one, line for line), and the kept audit (``--to``)
written in batches (docs/audit.md).

Tables are checked in threads: delta-rs releases the GIL while it reads a log. Worker processes (``spawn``: nothing
of the parent's Rust runtimes is forked) run pyiceberg's Python at once too, but each costs about 1.5 s of CPU to
start and its own engines' memory: measured on 2 cores (benchmarks/bench_audit_many.py, docs/audit.md) they never
beat threads on 500 Iceberg or 10,000 Delta tables, at 2-3x the memory, so they are used only when asked
(``ATTEST_AUDIT_POOL=processes``: many idle cores and a big catalog).
A worker rebuilds what the command was given — the trust policy, the storage options, the catalog overrides — from
the same arguments the parent parsed, and turns every failure of a table into that table's row; a worker process
that dies takes only the tables it held with it, each an ``ERROR`` row saying so, and the audit goes on in a fresh
pool.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attest.errors import AttestError, Code, Problem
from attest.verify.audit import AuditRow

if TYPE_CHECKING:
    import argparse
    from concurrent.futures import Executor, Future

    from attest.signing.policy import TrustPolicy
    from carriers.audit_table import AuditTable
    from carriers.refs import TableRef
    from carriers.spark.distributed import SessionOnDemand

Item = tuple[str, "TableRef", tuple[str, ...]]  # the name the audit prints, the table, how it was found
# The arguments a worker process rebuilds its context from (the parent parsed and checked them already).
_SETTINGS = ("level", "key", "policy", "storage_option", "catalog", "uri", "warehouse", "targets")


@dataclass
class Context:
    """What every table is checked with."""

    options: dict[str, str]
    level: Any
    policy: TrustPolicy | None
    spark: SessionOnDemand | None = None


def check(item: Item, ctx: Context) -> AuditRow:
    """One table's row: verified as ``attest verify`` would; every failure, even one not anticipated, is its row."""
    from attest.cli.shared import verify_with
    from carriers.refs import open_table

    name, ref, notes = item
    try:
        carrier = open_table(ref, storage_options=ctx.options)
        label = getattr(carrier, "static_note", None)  # an Iceberg folder: how it was read (iceberg/static.py)
        if isinstance(label, str):
            notes = (*notes, label)
        if ctx.spark is not None:  # a rewrite's added files are digested on the executors too
            from carriers.spark.distributed import executor_content

            executor_content(carrier, ctx.spark)
        state = carrier.state(ref.version)
        report = verify_with(carrier, ctx.spark, version=ref.version, level=ctx.level, policy=ctx.policy,
                             state=state)
        document = None if state.attestation is None else state.attestation.document
        return AuditRow.of_report(name, report, document, notes)
    except Exception as exc:  # one unreadable table must not stop the audit of the others
        return AuditRow.of_exception(name, coded(exc), notes)
    except BaseException as exc:
        # A Rust panic (pyo3's PanicException is a BaseException) on one table's files is that table's outcome: it
        # stopped the audit, every other table's line with it (--json printed one error and no table).
        from carriers.storage.errors import coded as storage_coded
        from carriers.storage.errors import is_panic

        if not is_panic(exc):
            raise
        return AuditRow.of_exception(name, storage_coded(exc, where=name), notes)


def branch_items(item: Item, row: AuditRow) -> list[Item]:
    """The branches other than main of the Iceberg table ``item`` whose line of main is ``row``, at other snapshots
    than main's (the report's ``other_branches``), each to be audited on a line of its own: the carrier opened on the
    branch checks its head as ``attest verify <table> --branch <branch>`` does. ``row``'s note naming them
    unchecked says they are audited. Then its tags at snapshots none of those heads is (``other_tags``), a line each,
    checked as ``--snapshot-id <id>`` checks the snapshot. None for a Delta table, a version asked for, or a line
    that is no report."""
    import shlex

    from attest.record import replace
    from attest.verify.report import audited_heads_note, other_heads_note, shell_option

    name, ref, notes = item
    if ref.format != "iceberg" or ref.branch is not None or ref.tag is not None or ref.version is not None:
        return []
    report = row.report or {}
    found, tagged = report.get("other_branches"), report.get("other_tags")
    heads = [(str(b.get("branch")), str(b.get("snapshot"))) for b in found if isinstance(b, dict)] \
        if isinstance(found, list) else []
    tags = [(str(t.get("tag")), str(t.get("snapshot"))) for t in tagged if isinstance(t, dict)] \
        if isinstance(tagged, list) else []
    if heads:
        said = other_heads_note(heads)
        row.notes = [audited_heads_note(heads) if note == said else note for note in row.notes]
    out: list[Item] = []
    for branch, snapshot in heads:
        on = replace(ref, branch=branch)
        out.append((str(on), on, (*notes, f"the head of branch {branch!r} of {name} (snapshot {snapshot}), which "
                                  f"readers of the branch read; `attest verify {shlex.quote(name)} "
                                  f"{shell_option('--branch', branch)}` checks it alone")))
    for tag, snapshot in tags:
        # Readers of ``t.tag_x`` and ``VERSION AS OF 'x'`` read the snapshot the tag names (round 31: a tag at rows no
        # attestation binds passed the audit, exit 0, tags being left out as time travel).
        on = replace(ref, tag=tag)
        out.append((str(on), on, (*notes, f"the snapshot tag {tag!r} of {name} names (snapshot {snapshot}), which "
                                  f"readers of the tag read; `attest verify {shlex.quote(name)} "
                                  f"{shell_option('--snapshot-id', snapshot)}` checks it alone")))
    return out


def version_like(ref: TableRef) -> tuple[str, ...]:
    """The note of a table whose name reads as a version of another (a folder, prefix or catalog table literally named
    ``orders@3``): its line prints exactly as version 3 of ``orders`` would, so it says which it is."""
    import re

    match = re.fullmatch(r"(.+)@([0-9]+)", ref.base) if ref.version is None else None
    if match is None:
        return ()
    return (f"a table literally named {match.group(0)}, not {ref.noun} {match.group(2)} of {match.group(1)}",)


def coded(exc: Exception) -> Exception:
    from carriers.storage.errors import coded as storage_coded

    return storage_coded(exc) if isinstance(exc, OSError) else exc


def jobs_for(args: argparse.Namespace) -> int:
    jobs = getattr(args, "jobs", None)
    if jobs is not None:
        return int(jobs)
    return max(1, min(os.cpu_count() or 1, 8))


def pool_kind(items: Sequence[Item], jobs: int, spark: object) -> str:
    """``serial``, ``threads`` or ``processes`` for these tables: threads (module docstring), unless
    ``ATTEST_AUDIT_POOL`` says otherwise (``processes`` for a machine with many idle cores and a big Iceberg
    catalog; benchmarks/bench_audit_many.py measures each)."""
    forced = os.environ.get("ATTEST_AUDIT_POOL", "")
    if jobs <= 1 or len(items) <= 1 or spark is not None:  # Spark: the executors hash, one table at a time
        return "serial"
    return forced if forced in ("serial", "threads", "processes") else "threads"


def audited(items: Sequence[Item], ctx: Context, args: argparse.Namespace, *, jobs: int,
            kind: str) -> Iterator[AuditRow]:
    """The row of every item, in the items' order, checked ``jobs`` at a time in ``kind`` (``pool_kind``)."""
    if kind == "serial":
        for item in items:
            yield check(item, ctx)
    elif kind == "threads":
        yield from _threads(items, ctx, jobs)
    else:
        yield from _processes(items, args, jobs)


def _threads(items: Sequence[Item], ctx: Context, jobs: int) -> Iterator[AuditRow]:
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(jobs, thread_name_prefix="attest-audit")
    window: deque[Future[AuditRow]] = deque()
    pending = iter(items)
    try:
        for item in pending:
            # In the command's context: ``--uri`` / ``--warehouse`` are a context variable (catalog_options), which a
            # pool's thread does not inherit — every table of a catalog of two or more was an ERROR line, "catalog
            # … is not configured", while the listing (in this thread) had read the catalog.
            window.append(pool.submit(contextvars.copy_context().run, check, item, ctx))
            if len(window) >= jobs * 4:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _processes(items: Sequence[Item], args: argparse.Namespace, jobs: int) -> Iterator[AuditRow]:
    """Chunks of tables to ``jobs`` worker processes, a bounded number in flight, rows back in order."""
    settings = {k: getattr(args, k, None) for k in _SETTINGS}
    size = max(1, min(16, len(items) // (jobs * 8)))
    chunks = [list(items[i:i + size]) for i in range(0, len(items), size)]
    pool = _process_pool(jobs, settings)
    window: deque[tuple[list[Item], Future[list[AuditRow]]]] = deque()
    try:
        next_chunk = 0
        while next_chunk < len(chunks) or window:
            while next_chunk < len(chunks) and len(window) < jobs * 3:
                chunk = chunks[next_chunk]
                window.append((chunk, pool.submit(_check_chunk, chunk)))
                next_chunk += 1
            chunk, future = window.popleft()
            try:
                rows = future.result()
            except Exception as exc:  # the worker died (a crash, memory): its tables are errors, the rest go on
                from concurrent.futures.process import BrokenProcessPool

                rows = [_lost(item, exc) for item in chunk]
                if isinstance(exc, BrokenProcessPool):
                    lost = [c for c, _ in window]
                    window.clear()
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = _process_pool(jobs, settings)
                    for again in lost:  # still to do, never started or cut short: done again in the fresh pool
                        window.append((again, pool.submit(_check_chunk, again)))
            yield from rows
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _lost(item: Item, exc: BaseException) -> AuditRow:
    name, _, notes = item
    return AuditRow.of_problem(name, Problem(Code.INTERNAL_ERROR, (
        f"the worker process auditing this table stopped ({type(exc).__name__}: {exc}); the table was not checked, "
        "audit it alone (attest verify) to see why")), notes)


def _process_pool(jobs: int, settings: dict[str, Any]) -> Executor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                               initargs=(settings,))


_WORKER: Context | None = None
_WORKER_SCOPE: Any = None  # the worker's ExitStack (_start_worker), never closed before the process ends


def _start_worker(settings: dict[str, Any]) -> None:
    """A worker's context, rebuilt from the command's own arguments; Ctrl-C is the parent's to handle."""
    import argparse
    import contextlib
    import signal

    from attest.cli.catalogs import scope
    from attest.cli.shared import storage_options, trust_policy

    global _WORKER, _WORKER_SCOPE
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    args = argparse.Namespace(**settings)
    from carriers.iceberg.catalogs import shared_catalogs

    # For the worker's whole life: --uri / --warehouse, one object per catalog. Held by the module: a stack left to
    # this frame was collected on return, closing its generators — the overrides reset, every table of a catalog
    # named by --uri was an ERROR line "catalog … is not configured" in worker processes.
    _WORKER_SCOPE = stack = contextlib.ExitStack()
    stack.enter_context(scope(args))
    stack.enter_context(shared_catalogs())
    _WORKER = Context(options=storage_options(args), level=args.level, policy=trust_policy(args))


def _check_chunk(chunk: list[Item]) -> list[AuditRow]:
    assert _WORKER is not None
    return [check(item, _WORKER) for item in chunk]


class Kept:
    """The kept audit (``--to``) written in batches: a commit every ``rows`` rows or ``seconds`` (whichever comes
    first), the run's last batch marked complete (carriers/audit_table.py); a run cut short keeps every batch
    written, and ``interrupted`` writes the rows already checked and says what was kept."""

    def __init__(self, sink: AuditTable, audit_id: str, *, rows: int, seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.audit_id = audit_id
        self.rows, self.seconds, self.clock = rows, seconds, clock
        self.pending: list[dict[str, str | None]] = []
        self.batches = 0
        self.written = 0
        self.versions: list[int] = []
        self._since = clock()

    def add(self, row: AuditRow) -> None:
        if self.pending and (len(self.pending) >= self.rows or self.clock() - self._since >= self.seconds):
            self._flush(complete=False)
        self.pending.append(row.record(self.audit_id))

    def finish(self) -> str:
        """The last batch, marked complete; where the rows went (``"<uri> version <N>"``)."""
        if self.pending:
            self._flush(complete=True)
        if not self.versions:
            return f"{self.sink.uri} (nothing to append)"
        more = f" ({len(self.versions)} commits from version {self.versions[0]})" if len(self.versions) > 1 else ""
        return f"{self.sink.uri} version {self.versions[-1]}{more}"

    def interrupted(self) -> str:
        """The rows checked before an interruption kept (not marked complete); what the kept audit holds."""
        try:
            if self.pending:
                self._flush(complete=False)
        except AttestError as exc:
            return self.said(f"; the last rows could not be written ({exc.message})")
        return self.said("")

    def said(self, extra: str) -> str:
        where = (f"{self.written} row(s) of this run kept in {self.sink.uri} (versions {self.versions[0]}-"
                 f"{self.versions[-1]})" if self.versions else f"nothing of this run kept in {self.sink.uri}")
        return (f"audit {self.audit_id} cut short: {where}{extra}; its commits never say "
                "attest.audit.complete=true (docs/audit.md)")

    def _flush(self, *, complete: bool) -> None:
        try:
            version = self.sink.append_rows(self.pending, audit_id=self.audit_id, batch=self.batches + 1,
                                            complete=complete)
        except AttestError as exc:
            raise AttestError(f"{exc.message}; {self.said('')}", path=exc.path, code=exc.code) from exc
        self.batches += 1
        self.written += len(self.pending)
        self.versions.append(version)
        self.pending = []
        self._since = self.clock()


def audit_progress(out: Any, *, forced: bool) -> Any:
    """The progress of an audit on stderr: a bar on a terminal (attest/cli/output.py); elsewhere nothing, or with
    ``--progress`` a plain line every few seconds (a log, a CI job)."""
    progress = out.progress("auditing", unit="tables")
    return progress if progress.enabled or not forced else LogProgress(out.stderr)


def walk_progress(out: Any, target: str, enabled: bool, *, every: float = 5.0) -> Any:
    """How the walk of one target goes, on stderr when progress is shown (a terminal, or ``--progress``): a line
    ``walking s3://b/lake/: 1200 folder(s) listed, 3 table(s) found`` every ``every`` seconds, the first after
    ``every`` seconds (a short walk says nothing). None when progress is not shown."""
    if not enabled:
        return None
    from attest.render.terminal import terminal_safe

    last = [time.monotonic()]

    def tell(listed: int, found: int) -> None:
        now = time.monotonic()
        if now - last[0] >= every:
            last[0] = now
            print(terminal_safe(f"walking {target}: {listed} folder(s) listed, {found} table(s) found"),
                  file=out.stderr, flush=True)

    return tell


class LogProgress:
    """``--progress`` on a stream that is not a terminal: ``auditing: 1200/10000 tables`` on a line of its own, at
    the start, every ``every`` seconds and at the end; nothing is rewritten in place."""

    enabled = True

    def __init__(self, stream: Any, *, every: float = 5.0, label: str = "auditing", unit: str = "tables") -> None:
        self.stream, self.every, self.label, self.unit = stream, every, label, unit
        self._last: float | None = None

    def __call__(self, done: int, total: int, nbytes: int) -> None:
        now = time.monotonic()
        if 0 < done < total and self._last is not None and now - self._last < self.every:
            return
        self._last = now
        print(f"{self.label}: {done}/{total} {self.unit}", file=self.stream, flush=True)

    def above(self, line: str, stream: Any) -> None:
        from attest.render.terminal import terminal_safe

        print(terminal_safe(line), file=stream, flush=True)

    def close(self) -> None:
        pass
