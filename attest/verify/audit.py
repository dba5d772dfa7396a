"""An audit as data: one row per table checked, every failure an outcome (never a stopped run), a count per category.

Categories, from best to worst: VERIFIED, STALE, COMPACTED, UNATTESTED, NOT VERIFIED (exit 1 when any), ERROR (the
table could not be read or checked; exit 2 when any).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attest.errors import AttestError, Code, Problem
from attest.verify.report import Report

CATEGORIES = ("VERIFIED", "STALE", "COMPACTED", "UNATTESTED", "NOT VERIFIED", "ERROR")


@dataclass
class AuditRow:
    table: str
    outcome: str
    level: str = "none"
    code: str | None = None
    verdict: str = ""
    report: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"table": self.table, "outcome": self.outcome, "level": self.level, "code": self.code,
                               "verdict": self.verdict}
        if self.report is not None:
            out["report"] = self.report
        return out


@dataclass
class AuditReport:
    rows: list[AuditRow] = field(default_factory=list)

    def add_report(self, table: str, report: Report) -> AuditRow:
        row = AuditRow(table=table, outcome=report.outcome, level=report.level,
                       code=report.errors[0].code.value if report.errors else None, verdict=report.verdict(),
                       report=report.to_json())
        self.rows.append(row)
        return row

    def add_error(self, table: str, problem: Problem) -> AuditRow:
        row = AuditRow(table=table, outcome="ERROR", code=problem.code.value, verdict=problem.message)
        self.rows.append(row)
        return row

    def add_exception(self, table: str, exc: BaseException) -> AuditRow:
        """Any exception is an outcome of this table, coded: the audit of the others goes on."""
        if isinstance(exc, AttestError):
            return self.add_error(table, exc.problem())
        return self.add_error(table, Problem(Code.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))

    @property
    def counts(self) -> dict[str, int]:
        return {c: sum(1 for r in self.rows if r.outcome == c) for c in CATEGORIES}

    @property
    def passed(self) -> bool:
        return bool(self.rows) and all(r.outcome == "VERIFIED" for r in self.rows)

    @property
    def exit_code(self) -> int:
        if any(r.outcome == "ERROR" for r in self.rows):
            return 2
        return 0 if self.passed else 1

    def to_json(self) -> dict[str, Any]:
        # "errors": the tables that could not be checked, in the shape every command uses for errors.
        errors = [{"code": r.code, "message": r.verdict, "path": r.table} for r in self.rows if r.outcome == "ERROR"]
        return {"passed": self.passed, "counts": self.counts, "errors": errors,
                "tables": [r.to_json() for r in self.rows]}

    @staticmethod
    def line(row: AuditRow) -> str:
        reason = f" ({row.code})" if row.code and row.outcome != "VERIFIED" else ""
        return f"{row.outcome:<13} {row.level:<7} {row.table}{reason}"

    def summary(self) -> str:
        return f"{len(self.rows)} table(s): " + ", ".join(f"{n} {c.lower()}" for c, n in self.counts.items())

    def human(self) -> str:
        return "\n".join([*(self.line(r) for r in self.rows), self.summary()])
