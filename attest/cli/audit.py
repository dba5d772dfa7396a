"""``attest audit``: every table under a path or in a catalog, one verdict row each (docs/audit.md)."""

from __future__ import annotations

import argparse
import json

from attest.cli.output import Output
from attest.cli.shared import output_format, spark_for, storage_options, trust_policy
from attest.errors import AttestError, Code
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from attest.verify.audit import AuditReport
    from carriers.spark.distributed import SessionOnDemand


def cmd_audit(args: argparse.Namespace, out: Output) -> AuditResult:
    from carriers.iceberg.catalogs import shared_catalogs

    with spark_for(args) as spark, shared_catalogs():  # a catalog of 2,000 tables is opened once, not per table
        return _audit(args, out, spark)


def _audit(args: argparse.Namespace, out: Output, spark: SessionOnDemand | None) -> AuditResult:
    import dataclasses

    from attest.cli.audit_pool import (
        Context,
        Item,
        Kept,
        audit_progress,
        audited,
        branch_items,
        coded,
        jobs_for,
        pool_kind,
        version_like,
        walk_progress,
    )
    from attest.cli.catalogs import audit_targets
    from attest.errors import InvalidArgumentError, Problem
    from attest.redact import redact
    from attest.render.terminal import terminal_safe
    from attest.signing.policy import canonical_name
    from attest.verify.audit import AuditReport, AuditRow
    from carriers.audit_table import BATCH_ROWS, BATCH_SECONDS
    from carriers.discovery import Skipped, discover
    from carriers.refs import TableRef, is_local, table_key

    fmt = output_format(args)
    targets = audit_targets(args)  # --catalog: namespaces and identifiers of that catalog; none, the whole catalog
    policy = trust_policy(args)  # one policy for every table; a bad file is an input error before any table
    jobs = jobs_for(args)
    if jobs < 1:
        raise InvalidArgumentError(f"--jobs {jobs}: at least 1 (1 audits one table after another)")
    sink = None
    if args.to is not None:  # checked before any table is: a destination that cannot take the audit is exit 2
        from carriers.audit_table import AuditTable

        sink = AuditTable.open(args.to, storage_options=storage_options(args))
    # Rows are streamed, never all held: printed as they come (text) or spooled to disk for the end (json, csv,
    # table); an audit of 10,000 tables holds its counts.
    audit = AuditReport.streaming(spool=fmt != "text")
    options = storage_options(args)
    stream = out.stdout if fmt == "text" else None
    progress = audit_progress(out, forced=bool(getattr(args, "progress", False)))
    kept = None if sink is None else Kept(sink, audit.audit_id, rows=BATCH_ROWS, seconds=BATCH_SECONDS)

    def add(row: AuditRow) -> None:  # lines as they come: a long audit shows progress even when piped
        audit.add(row)
        if kept is not None:
            kept.add(row)
        if stream is not None:
            progress.above(audit.line(row), stream)

    refs: list[Item] = []
    # A table is its format, catalog, location and version (``table_key``: a local path as readers open it): its
    # printed name (str) is not one table — a prefix literally named ``orders@3`` prints as version 3 of ``orders``,
    # and one of the two went unchecked.
    queued: set[tuple[str, str | None, str, str | None]] = set()
    said: set[tuple[str, str]] = set()
    # Tables found and not audited (one in a hidden folder) that the trust policy requires a signature of: ERROR lines.
    # Listed only, the audit passed, exit 0, while an unsigned table the policy covers was never judged (round 18).
    held: list[Skipped] = []

    def required_by(skipped: Skipped) -> tuple[str, str] | None:
        if policy is None or skipped.blocking or not (skipped.table or skipped.holds or skipped.view):
            return None
        if sink is not None and sink.is_table(TableRef.discovered("delta", skipped.path)):
            return None  # the audit table this run appends to (--to), which it never audits
        if skipped.view:
            # A view a glob names (no wildcard): the policy requires that name to be a signed table. One a pattern
            # covers (``*``, ``--key``) is listed, saying so (below): the tables its SQL reads are judged as tables.
            return policy.naming(skipped.path)
        return policy.requiring(skipped.path) if skipped.table else policy.requiring_under(skipped.path)

    try:
        for target in targets:
            try:
                found = discover(target, options, walk_progress(out, target, progress.enabled))
            except Exception as exc:  # a target that cannot be expanded is an outcome, the others go on
                add(AuditRow.of_exception(target, coded(exc)))
                continue
            for skipped in found.skipped:  # every place not walked is said, with its reason
                if skipped.blocking:
                    # Overlapping targets (``iceberg://c/ns iceberg://c/ns.t``) find one view twin twice: one line.
                    if (skipped.path, skipped.message) not in said:
                        said.add((skipped.path, skipped.message))
                        add(AuditRow.of_problem(skipped.path, skipped.problem()))
                elif required_by(skipped) is not None:
                    held.append(skipped)  # decided once every target is walked: another may audit it by its name
                else:
                    if skipped.view and policy is not None and (hit := policy.requiring(skipped.path)) is not None:
                        skipped = dataclasses.replace(skipped, message=(
                            f"{skipped.message}; the trust policy's require_signed glob {hit[0]!r} covers the name "
                            f"{hit[1]!r}, and a view carries no signature: listed, not judged (a glob naming it "
                            "without a wildcard makes it an ERROR line)"))
                    problem = audit.add_skipped(skipped.problem())
                    if stream is not None:
                        progress.above(audit.skipped_line(problem), stream)
            if not found.tables and not any(s.blocking for s in found.skipped):
                add(AuditRow.of_problem(target, AttestError(f"no table found under {target}",
                                                            code=Code.TABLE_NOT_FOUND).problem()))
            for f in found.tables:
                # Overlapping targets (``/lake /lake/orders``) audit a table once: counts are of tables, not of lines.
                key = table_key(f.ref)  # (``/lake/orders`` and ``file:///lake/orders``: one table)
                if key in queued:
                    continue
                queued.add(key)
                if sink is not None and sink.is_table(f.ref):
                    # Said, never dropped in silence: the auditor sees which table was left out and why.
                    problem = audit.add_skipped(Problem(Code.TABLE_NOT_AUDITED, "the audit table this run appends to "
                                                        "(--to): not audited by the run writing it", str(f.ref)))
                    if stream is not None:
                        progress.above(audit.skipped_line(problem), stream)
                    continue
                refs.append((str(f.ref), f.ref, (*f.notes, *version_like(f.ref))))
        def place(location: str) -> str:
            # Where a reader opens the name: a local path with its '..' kept (canonical_name folds it lexically, and
            # ``/lake/link/../_staging/orders`` through a link is another folder than ``/lake/_staging/orders``: the
            # hidden table's ERROR line was dropped as "audited by its name" while no line had read it; round 20).
            return table_key(TableRef.discovered("delta", location))[2] if is_local(location) else \
                canonical_name(location)

        audited_names = {place(ref.location) for _, ref, _ in refs if ref.catalog is None}
        for skipped in held:
            if place(skipped.path) in audited_names:  # audited by its name (another target): no gap
                continue
            glob, spelling = required_by(skipped) or ("", "")
            if skipped.view:
                # No attestation binds a view, so no signature of it can be judged: never a pass (round 19).
                add(AuditRow.of_problem(skipped.path, Problem(Code.TABLE_NOT_AUDITED, (
                    f"{skipped.message}; the trust policy requires a signature of this name (require_signed glob "
                    f"{glob!r} names {spelling!r}) and a view carries none: a reader of the name gets rows no "
                    "attestation binds. Drop the view (a signed table of that name is what the policy names), or the "
                    "glob"), skipped.path)))
                continue
            what = "its signature" if skipped.table else "the signature of tables there"
            add(AuditRow.of_problem(skipped.path, Problem(Code.TABLE_NOT_AUDITED, (
                f"{skipped.message}; the trust policy requires {what} (require_signed glob {glob!r} covers "
                f"{spelling!r}) and the audit judged none: audit it by its name"), skipped.path)))
        progress(0, len(refs), 0)  # the bar from the start: the first table may be the slow one
        context = Context(options=options, level=args.level, policy=policy, spark=spark)
        rows = audited(refs, context, args, jobs=jobs, kind=pool_kind(refs, jobs, spark))
        branches: list[Item] = []  # an Iceberg table's branches other than main, each a line of its own (below)
        for index, row in enumerate(rows, 1):
            if not getattr(args, "no_branches", False):
                branches += branch_items(refs[index - 1], row)
            add(row)
            progress(index, len(refs), 0)
        # Readers of ``ns.t.branch_b`` read b's head: a branch at another snapshot than main's is a table state of its
        # own, audited after the tables (a line of main said "verified" while the branch readers read held rows no
        # attestation binds: round 29).
        printed = {name for name, _, _ in refs}
        # ``ns.t.branch_b`` is also how a table ``branch_b`` of namespace ``ns.t`` prints, and Spark reads that table
        # for the name when it exists (its catalog loads the whole identifier first): both lines are checked; the
        # branch's says whose rows the name gives Spark.
        branches = [(name, ref, (*notes, f"a table is named {name} too: Spark reads that table for this name, and the "
                                 f"{'branch' if ref.tag is None else 'tag'} as VERSION AS OF "
                                 f"'{ref.branch if ref.tag is None else ref.tag}'")) if name in printed
                    else (name, ref, notes) for name, ref, notes in branches]
        total = len(refs) + len(branches)
        rows = audited(branches, context, args, jobs=jobs, kind=pool_kind(branches, jobs, spark))
        for index, row in enumerate(rows, len(refs) + 1):
            add(row)
            progress(index, total, 0)
        if getattr(args, "spark_catalog", None):
            found_in_spark = spark_catalogs(args, policy)
            for row in found_in_spark.rows:
                add(row)
            for problem in found_in_spark.skipped:
                problem = audit.add_skipped(problem)
                if stream is not None:
                    progress.above(audit.skipped_line(problem), stream)
        progress.close()
        where = None if kept is None else kept.finish()
    except BaseException as exc:  # Ctrl-C, a batch that could not be written: what was kept is said
        progress.close()
        if kept is not None and not isinstance(exc, AttestError):
            print(terminal_safe(redact("attest: " + kept.interrupted())), file=out.stderr, flush=True)
        audit.close()
        raise
    return AuditResult(audit, streamed=stream is not None, format=fmt, kept=where,
                       require_signed=None if policy is None else policy.require_signed)


def spark_catalogs(args: argparse.Namespace, policy: Any) -> AuditReport:
    """``--spark-catalog``: every table and view the catalogs of a Spark session name (its configuration Spark's own
    files and ``--spark-conf``), each checked as the read gate checks a read of it (``attest.spark.audit``); '*' for
    every catalog the session is configured with. The session is stopped after."""
    import importlib.util

    try:
        if importlib.util.find_spec("pyspark") is None:  # the extra's presence (attest/ imports no engine)
            raise ImportError("pyspark")
        from carriers.spark.catalog_audit import audit
        from carriers.spark.session import catalog_session
    except ImportError as exc:
        raise AttestError("--spark-catalog needs the `spark` extra: pip install 'recipe-attest[spark]'",
                          code=Code.EXTRA_MISSING) from exc
    from attest.cli.shared import spark_master, spark_settings

    asked: list[str] = list(args.spark_catalog)
    catalogs = None if "*" in asked else list(dict.fromkeys(asked))
    spark = catalog_session(spark_settings(args), master=spark_master(args))
    try:
        return audit(spark, policy, level=args.level or "bytes", catalogs=catalogs)
    finally:
        spark.stop()


@record
class AuditResult:
    audit: AuditReport
    streamed: bool
    format: str = "text"
    kept: str | None = None  # where the rows were appended (--to), as "<path> version <N>"
    require_signed: tuple[str, ...] | None = None  # the trust policy's globs, when one was given

    @property
    def exit_code(self) -> int:
        return self.audit.exit_code

    @property
    def warnings(self) -> list[str]:
        """A policy whose ``require_signed`` globs covered none of the tables judged: most likely a glob that names
        the lake otherwise (``s3://`` for a local path, a typo) — every table then passed unsigned, as written."""
        judged, required = self.audit.signatures_required
        if not self.require_signed or judged == 0:
            return []
        if not required:
            return [f"the trust policy's require_signed ({', '.join(self.require_signed)}) covered none of the "
                    f"{judged} table(s) whose signature was judged: a signature was required of none of them "
                    "(docs/signing.md)"]
        # Some glob applied: one that covered nothing names a table not audited here, or spells a name otherwise (a
        # typo, a trailing '/', s3:// for a local copy) — whatever it was meant to cover passed without it.
        covered = self.audit.globs_covering
        idle = [] if covered is None else [g for g in self.require_signed if g not in covered]
        if not idle:
            return []
        return [f"the trust policy's require_signed glob(s) {', '.join(idle)} covered none of the {judged} table(s) "
                "whose signature was judged: a table they name is not among them (not audited, skipped, or named "
                "otherwise), so a signature was required of it nowhere (docs/signing.md)"]

    def to_json(self) -> Any:
        out = self.audit.to_json()
        if self.warnings:
            out["warnings"] = self.warnings
        if self.kept is not None:
            out["kept"] = self.kept
        return out

    def json_chunks(self) -> Iterator[str]:
        """``to_json`` as JSON text, a table at a time (attest/cli/output.py prints it so): the same text."""
        chunks = self.audit.json_chunks()
        tail = {k: v for k, v in (("warnings", self.warnings), ("kept", self.kept)) if v}
        if not tail:
            yield from chunks
            return
        last = ""
        for chunk in chunks:  # "warnings" and "kept" go last, as to_json puts them
            if last:
                yield last
            last = chunk
        extra = "".join(f",\n  {json.dumps(k)}: " + json.dumps(v, ensure_ascii=False, indent=2).replace("\n", "\n  ")
                        for k, v in tail.items())
        yield last[:-2] + extra + "\n}"

    def human(self) -> str:
        return "".join(self.human_chunks()).rstrip("\n")

    def human_chunks(self) -> Iterator[str]:
        """What ``human`` says, in pieces (each ends with a line break): the rows are read back one at a time."""
        if self.format == "csv":
            yield from self.audit.csv_chunks()
        elif self.format == "table":
            yield from (line + "\n" for line in self.audit.table_chunks())
        elif self.streamed:
            yield self.audit.summary() + "\n"
        else:
            yield self.audit.human() + "\n"

    @property
    def stderr_text(self) -> str:
        # CSV and tables stay clean for the next program; where the rows went is said on stderr.
        lines = [f"attest: warning: {w}" for w in self.warnings]
        if self.kept is not None:
            lines.append(f"audit appended to {self.kept}")
        return "\n".join(lines)
