"""``attest audit``: every table under a path or in a catalog, one verdict row each (docs/audit.md)."""

from __future__ import annotations

import argparse

from attest.cli.output import Output
from attest.cli.shared import output_format, spark_for, storage_options, trust_policy, verify_with
from attest.errors import AttestError, Code
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.verify.audit import AuditReport
    from carriers.spark.distributed import SessionOnDemand


def cmd_audit(args: argparse.Namespace, out: Output) -> AuditResult:
    with spark_for(args) as spark:
        return _audit(args, out, spark)


def _audit(args: argparse.Namespace, out: Output, spark: SessionOnDemand | None) -> AuditResult:
    from attest.cli.catalogs import audit_targets
    from attest.verify.audit import AuditReport
    from carriers.discovery import discover
    from carriers.refs import open_table

    fmt = output_format(args)
    targets = audit_targets(args)  # --catalog: namespaces and identifiers of that catalog; none, the whole catalog
    policy = trust_policy(args)  # one policy for every table; a bad file is an input error before any table
    sink = None
    if args.to is not None:  # checked before any table is: a destination that cannot take the audit is exit 2
        from carriers.audit_table import AuditTable

        sink = AuditTable.open(args.to, storage_options=storage_options(args))
    audit = AuditReport()
    options = storage_options(args)
    stream = out.stdout if fmt == "text" else None
    progress = out.progress("auditing", unit="tables")

    def show(line: str) -> None:  # lines as they come: a long audit shows progress even when piped
        if stream is not None:
            progress.above(line, stream)

    refs: list[tuple[str, Any, tuple[str, ...]]] = []
    for target in targets:
        try:
            found = discover(target, options)
        except Exception as exc:  # a target that cannot be expanded is an outcome, the others go on
            show(audit.line(audit.add_exception(target, _coded(exc))))
            continue
        for skipped in found.skipped:  # every place not walked is said, with its reason
            if skipped.blocking:
                show(audit.line(audit.add_error(skipped.path, skipped.problem())))
            else:
                show(audit.skipped_line(audit.add_skipped(skipped.problem())))
        if not found.tables and not any(s.blocking for s in found.skipped):
            show(audit.line(audit.add_error(target, AttestError(f"no table found under {target}",
                                                                code=Code.TABLE_NOT_FOUND).problem())))
        refs.extend((str(f.ref), f.ref, f.notes) for f in found.tables if sink is None or not sink.is_table(f.ref))
    progress(0, len(refs), 0)  # the bar from the start: the first table may be the slow one
    for index, (name, ref, notes) in enumerate(refs):
        try:
            carrier = open_table(ref, storage_options=options)
            label = getattr(carrier, "static_note", None)  # an Iceberg folder: how it was read (iceberg_static.py)
            if isinstance(label, str):
                notes = (*notes, label)
            state = carrier.state(ref.version)
            report = verify_with(carrier, spark, version=ref.version, level=args.level, policy=policy, state=state)
            row = audit.add_report(name, report, None if state.attestation is None else state.attestation.document,
                                   notes)
        except Exception as exc:  # one unreadable table must not stop the audit of the others
            row = audit.add_exception(name, _coded(exc), notes)
        show(audit.line(row))
        progress(index + 1, len(refs), 0)
    progress.close()
    kept = None
    if sink is not None:
        kept = sink.append(audit)
    return AuditResult(audit, streamed=stream is not None, format=fmt, kept=kept)



def _coded(exc: Exception) -> Exception:
    from carriers.storage.errors import coded

    return coded(exc) if isinstance(exc, OSError) else exc


@record
class AuditResult:
    audit: AuditReport
    streamed: bool
    format: str = "text"
    kept: str | None = None  # where the rows were appended (--to), as "<path> version <N>"

    @property
    def exit_code(self) -> int:
        return self.audit.exit_code

    def to_json(self) -> Any:
        out = self.audit.to_json()
        if self.kept is not None:
            out["kept"] = self.kept
        return out

    def human(self) -> str:
        if self.format == "csv":
            return self.audit.csv()
        if self.format == "table":
            return self.audit.table()
        return self.audit.summary() if self.streamed else self.audit.human()

    @property
    def stderr_text(self) -> str:
        # CSV and tables stay clean for the next program; where the rows went is said on stderr.
        return "" if self.kept is None else f"audit appended to {self.kept}"
