"""An audit as data: one row per table checked, every failure an outcome (never a stopped run), a count per category.

Categories, from best to worst: VERIFIED, STALE, COMPACTED, UNATTESTED, NOT VERIFIED (exit 1 when any), ERROR (the
table could not be read or checked; exit 2 when any). Every row that is not VERIFIED says its code and message, and a
row says how its table was found when that matters (through a link, nested in another table). Places the walk did not
enter are listed apart (``skipped``), each with its code and reason; one that hides a table a reader can reach is an
ERROR row instead.

Each row also says what the attestation claims (model, program and inputs hashes) and when it was checked, so an
audit can be kept as a table and queried later (``attest audit --to``, carriers/audit_table.py) or printed once as
JSON, CSV or an aligned table (``--format``).
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from attest.build import utc_now
from attest.errors import AttestError, Code, Problem
from attest.render.terminal import terminal_safe
from attest.verify.report import Report

CATEGORIES = ("VERIFIED", "STALE", "COMPACTED", "UNATTESTED", "NOT VERIFIED", "ERROR")
# The columns of a kept audit, in order (docs/audit.md): one row per table version checked.
COLUMNS = ("audit_id", "checked_at", "table", "table_format", "version", "outcome", "code", "level", "verdict",
           "attested_version", "model", "program_hash", "inputs_hash", "inputs_proof_class", "signer", "notes")
# A kept audit written before the notes column (2026-12-07) has these; the next append adds the column.
COLUMNS_BEFORE_NOTES = COLUMNS[:-1]
_HEX = frozenset("0123456789abcdef")
_TABLE_HEADER = ("OUTCOME", "VERSION", "LEVEL", "CODE", "TABLE")  # the aligned table (--format table)


def _hash(value: Any) -> str | None:
    """A claimed identity, kept only when it is one (64 lowercase hex): an edited manifest cannot put arbitrary text
    into the audit's hash columns."""
    return value if isinstance(value, str) and len(value) == 64 and set(value) <= _HEX else None


def _text(value: Any, limit: int = 512) -> str | None:
    return value[:limit] if isinstance(value, str) else None


@dataclass
class AuditRow:
    table: str
    outcome: str
    level: str = "none"
    code: str | None = None
    verdict: str = ""
    report: dict[str, Any] | None = None
    version: str | None = None
    table_format: str | None = None
    attested_version: str | None = None
    model: str | None = None
    program_hash: str | None = None
    inputs_hash: str | None = None
    inputs_proof_class: str | None = None
    signer: str | None = None
    checked_at: str = field(default_factory=utc_now)
    message: str = ""  # the first error's message (empty when verified)
    notes: list[str] = field(default_factory=list)  # how the table was found (a link, nested); the report has its own

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"table": self.table, "outcome": self.outcome, "level": self.level, "code": self.code,
                               "verdict": self.verdict, "version": self.version, "checked_at": self.checked_at,
                               "message": self.message, "notes": list(self.notes)}
        for key in ("table_format", "attested_version", "model", "program_hash", "inputs_hash",
                    "inputs_proof_class", "signer"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.report is not None:
            out["report"] = self.report
        return out

    @classmethod
    def of_report(cls, table: str, report: Report, document: Mapping[str, Any] | None = None,
                  notes: tuple[str, ...] | list[str] = ()) -> AuditRow:
        """The row of a verified (or not) table; ``document`` is the attestation's manifest, for what it claims."""
        doc = document if isinstance(document, Mapping) else {}
        subject = doc.get("subject") if isinstance(doc.get("subject"), Mapping) else {}
        assert isinstance(subject, Mapping)
        proof = doc.get("inputs_proof_class")
        return cls(table=table, outcome=report.outcome, level=report.level,
                   code=report.errors[0].code.value if report.errors else None, verdict=report.verdict(),
                   report=report.to_json(), version=report.version, table_format=report.table_format,
                   attested_version=report.attested_version, model=_text(subject.get("model")),
                   program_hash=_hash(doc.get("program_hash")), inputs_hash=_hash(doc.get("inputs_hash")),
                   inputs_proof_class=proof if proof in ("strong", "heuristic") else None,
                   signer=report.signer, message=report.errors[0].message if report.errors else "",
                   notes=[*notes, *filter(None, [report.other_heads_note()])])  # what the line's verdict is not of

    @classmethod
    def of_problem(cls, table: str, problem: Problem, notes: tuple[str, ...] | list[str] = ()) -> AuditRow:
        return cls(table=table, outcome="ERROR", code=problem.code.value, verdict=problem.message,
                   message=problem.message, notes=list(notes))

    @classmethod
    def of_exception(cls, table: str, exc: BaseException, notes: tuple[str, ...] | list[str] = ()) -> AuditRow:
        """Any exception is an outcome of its table, coded."""
        if isinstance(exc, AttestError):
            return cls.of_problem(table, exc.problem(), notes)
        return cls.of_problem(table, Problem(Code.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"), notes)

    def record(self, audit_id: str) -> dict[str, str | None]:
        """The row as kept (COLUMNS): strings or nulls, nothing nested."""
        # Notes one per line (a note is one line: attest.verify.audit._one_line), null when there are none.
        values = {**{c: getattr(self, c, None) for c in COLUMNS}, "audit_id": audit_id,
                  "notes": "\n".join(map(_one_line, self.notes)) or None}
        return {c: None if values[c] is None else _storable(str(values[c])) for c in COLUMNS}


@dataclass
class AuditReport:
    """The rows of an audit. Held in ``rows`` (the default, for notebooks and the library), or streamed: built by
    ``AuditReport.streaming()``, a row is counted and, when ``spool`` is asked, written to a temporary file — an audit
    of 10,000 tables holds its tallies, never 10,000 reports (``attest audit``)."""

    rows: list[AuditRow] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)  # places not walked that hide no reachable table
    audit_id: str = field(default_factory=lambda: str(uuid.uuid4()))  # groups the rows of one run when kept
    keep: bool = field(default=True, repr=False)  # False: rows are counted (and spooled) as they come, not held
    _tally: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0), repr=False)
    _errors: list[dict[str, Any]] = field(default_factory=list, repr=False)
    _spool: Any = field(default=None, repr=False)  # streamed: the rows as JSON lines, when they are printed after
    _widths: list[int] = field(default_factory=lambda: [len(h) for h in _TABLE_HEADER[:-1]], repr=False)
    # Streamed: (tables whose signature was judged under a policy, those of them the policy required it of).
    _judged: list[int] = field(default_factory=lambda: [0, 0], repr=False)
    # Streamed: the require_signed globs that covered a judged table (None once a judged table's coverage is unknown).
    _covered: set[str] | None = field(default_factory=set, repr=False)

    @classmethod
    def streaming(cls, *, spool: bool) -> AuditReport:
        """A report that does not hold its rows; ``spool``: kept on disk to be printed at the end (JSON, CSV, the
        aligned table), read back one at a time."""
        import tempfile

        # surrogatepass: a folder name that is not UTF-8 (a lone surrogate to Python) failed the spool's write, and
        # the --json / --format csv document of every table was replaced by one internal_error.
        return cls(keep=False, _spool=tempfile.TemporaryFile(
            "w+", encoding="utf-8", errors="surrogatepass") if spool else None)

    def add(self, row: AuditRow) -> AuditRow:
        if self.keep:
            self.rows.append(row)
            return row
        self._tally[row.outcome] = self._tally.get(row.outcome, 0) + 1
        judged = _signature_judged(row)
        if judged is not None:
            self._judged[0] += 1
            self._judged[1] += judged
            globs = _globs_covering(row)
            self._covered = None if globs is None or self._covered is None else self._covered | globs
        if row.outcome == "ERROR":
            self._errors.append(_error(row))
        if self._spool is not None:
            self._spool.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
            for i, cell in enumerate(_table_cells(row)[:-1]):
                self._widths[i] = max(self._widths[i], len(cell))
        return row

    def add_report(self, table: str, report: Report, document: Mapping[str, Any] | None = None,
                   notes: tuple[str, ...] | list[str] = ()) -> AuditRow:
        """A verified (or not) table; ``document`` is the attestation's manifest, for what it claims; ``notes``: how
        the table was found (discovery)."""
        return self.add(AuditRow.of_report(table, report, document, notes))

    def add_error(self, table: str, problem: Problem, notes: tuple[str, ...] | list[str] = ()) -> AuditRow:
        return self.add(AuditRow.of_problem(table, problem, notes))

    def add_exception(self, table: str, exc: BaseException, notes: tuple[str, ...] | list[str] = ()) -> AuditRow:
        """Any exception is an outcome of this table, coded: the audit of the others goes on."""
        return self.add(AuditRow.of_exception(table, exc, notes))

    def add_skipped(self, problem: Problem) -> Problem:
        """A place the walk did not enter that hides no table a reader reaches by a name under the audit: listed."""
        self.skipped.append(problem)
        return problem

    def each(self) -> Iterator[AuditRow]:
        """Every row in order: held, or read back from the spool one at a time."""
        if self.keep:
            yield from self.rows
        elif self._spool is not None:
            self._spool.flush()
            self._spool.seek(0)
            for line in self._spool:
                yield AuditRow(**json.loads(line))
            self._spool.seek(0, 2)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    @property
    def total(self) -> int:
        return len(self.rows) if self.keep else sum(self._tally.values())

    @property
    def counts(self) -> dict[str, int]:
        if not self.keep:
            return {c: self._tally.get(c, 0) for c in CATEGORIES}
        return {c: sum(1 for r in self.rows if r.outcome == c) for c in CATEGORIES}

    @property
    def signatures_required(self) -> tuple[int, int]:
        """(tables whose signature was judged under a trust policy, how many of them the policy required one of)."""
        if not self.keep:
            return self._judged[0], self._judged[1]
        judged = [j for j in map(_signature_judged, self.rows) if j is not None]
        return len(judged), sum(judged)

    @property
    def globs_covering(self) -> set[str] | None:
        """The trust policy's ``require_signed`` globs that covered a table whose signature was judged (None: some
        judged table's coverage is not known, an envelope that could not be read)."""
        if not self.keep:
            return None if self._covered is None else set(self._covered)
        out: set[str] = set()
        for row in self.rows:
            if _signature_judged(row) is not None:
                globs = _globs_covering(row)
                if globs is None:
                    return None
                out |= globs
        return out

    @property
    def passed(self) -> bool:
        if not self.keep:
            return self.total > 0 and self._tally.get("VERIFIED", 0) == self.total
        return bool(self.rows) and all(r.outcome == "VERIFIED" for r in self.rows)

    @property
    def exit_code(self) -> int:
        if (self.counts["ERROR"] if not self.keep else any(r.outcome == "ERROR" for r in self.rows)):
            return 2
        return 0 if self.passed else 1

    def _head(self) -> dict[str, Any]:
        # "errors": the tables that could not be checked, in the shape every command uses for errors.
        errors = [_error(r) for r in self.rows if r.outcome == "ERROR"] if self.keep else list(self._errors)
        return {"passed": self.passed, "counts": self.counts, "errors": errors, "audit_id": self.audit_id}

    def to_json(self) -> dict[str, Any]:
        return {**self._head(), "tables": [r.to_json() for r in self.each()],
                "skipped": [p.to_json() for p in self.skipped]}

    def json_chunks(self) -> Iterator[str]:
        """``json.dumps(self.to_json(), ensure_ascii=False, indent=2)`` piece by piece (one table at a time): the
        same text, never the whole of it in memory."""
        head = json.dumps(self._head(), ensure_ascii=False, indent=2)
        yield head[:-2] + ',\n  "tables": ['  # the object without its closing "\n}"
        first = True
        for row in self.each():
            text = json.dumps(row.to_json(), ensure_ascii=False, indent=2)
            yield ("\n" if first else ",\n") + "\n".join("    " + line for line in text.split("\n"))
            first = False
        skipped = json.dumps([p.to_json() for p in self.skipped], ensure_ascii=False, indent=2)
        yield ("]" if first else "\n  ]") + ',\n  "skipped": ' + skipped.replace("\n", "\n  ") + "\n}"

    def records(self) -> list[dict[str, str | None]]:
        return [r.record(self.audit_id) for r in self.each()]

    @staticmethod
    def line(row: AuditRow) -> str:
        """The row's line: outcome, level, table and, unless verified, its code and message; then its notes."""
        reason = ""
        if row.outcome != "VERIFIED":
            code = row.code or row.outcome.lower().replace(" ", "_")
            message = row.message or (row.verdict if row.outcome == "ERROR" else "")
            reason = f" ({code})" + (f": {_one_line(message)}" if message else "")
        notes = "".join(f"\n  note: {_one_line(n)}" for n in row.notes)
        return f"{row.outcome:<13} {row.level:<7} {_name(row.table)}{reason}{notes}"

    @staticmethod
    def skipped_line(problem: Problem) -> str:
        return (f"{'SKIPPED':<13} {'none':<7} {_name(problem.path)} ({problem.code.value}): "
                f"{_one_line(problem.message)}")

    def summary(self) -> str:
        text = f"{self.total} table(s): " + ", ".join(f"{n} {c.lower()}" for c, n in self.counts.items())
        return text + (f"; {len(self.skipped)} place(s) skipped (listed above)" if self.skipped else "")

    def human(self) -> str:
        return terminal_safe("\n".join([*(self.line(r) for r in self.each()),
                                         *(self.skipped_line(p) for p in self.skipped), self.summary()]))

    def csv(self) -> str:
        """RFC 4180 CSV with a header (COLUMNS); a cell a spreadsheet would run as a formula is prefixed with '."""
        return "".join(self.csv_chunks()).rstrip("\n")

    def csv_chunks(self) -> Iterator[str]:
        """The CSV a row at a time (each chunk ends with a line break)."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in self.each():
            record = row.record(self.audit_id)
            writer.writerow([_cell(record[c]) for c in COLUMNS])
            if buffer.tell() > 1 << 16:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    def table(self) -> str:
        """An aligned text table (outcome, version, level, code, table) and the summary."""
        return terminal_safe("\n".join(self.table_chunks()))

    def table_chunks(self) -> Iterator[str]:
        """The aligned table a line at a time (joined by line breaks), the summary last."""
        body: Iterable[tuple[str, ...]]
        if self.keep:
            body = [_table_cells(r) for r in self.rows]
            widths = [max(len(x[i]) for x in (_TABLE_HEADER, *body)) for i in range(len(_TABLE_HEADER) - 1)]
        else:
            body, widths = (_table_cells(r) for r in self.each()), self._widths
        for row in _chain(_TABLE_HEADER, body):
            yield "  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]])
        yield from (self.skipped_line(p) for p in self.skipped)
        yield self.summary()

    def _repr_html_(self) -> str:
        from attest.render.html import audit_html

        return audit_html(self)


def _table_cells(row: AuditRow) -> tuple[str, ...]:
    # The name as in text lines (_name): a folder named "x\nVERIFIED  1  bytes  -  y" forged a row of the aligned table.
    return (row.outcome, row.version or "-", row.level, row.code or "-", _name(row.table))


def _chain(first: tuple[str, ...], rest: Iterable[tuple[str, ...]]) -> Iterator[tuple[str, ...]]:
    yield first
    yield from rest


def _signature_judged(row: AuditRow) -> int | None:
    """1: the policy required this table's signature; 0: it did not; None: no signature was judged."""
    signature = (row.report or {}).get("signature")
    return int(bool(signature.get("required"))) if isinstance(signature, dict) else None


def _globs_covering(row: AuditRow) -> set[str] | None:
    """The ``require_signed`` globs that covered this judged table (None: not known)."""
    globs = ((row.report or {}).get("signature") or {}).get("required_by")
    return set(globs) if isinstance(globs, list) and all(isinstance(g, str) for g in globs) else None


def _error(row: AuditRow) -> dict[str, Any]:
    return {"code": row.code, "message": row.verdict, "path": row.table}


def _storable(text: str) -> str:
    """Text any UTF-8 store and file take: a folder name that is not UTF-8 (``bad\\xff``, read by Python as a lone
    surrogate) as ``\\udcff``, distinct per byte. Such a name failed the kept audit's commit and the CSV, the whole
    run an internal_error with no table's line."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _one_line(text: str) -> str:
    """Messages and notes on one line: a name holding a line break cannot start a forged line of its own."""
    return " ".join(text.split())


def _name(text: str) -> str:
    return text.replace("\n", "\ufffd")


def _cell(value: str | None) -> str:
    if value is None:
        return ""
    # OWASP CSV injection: a leading = + - @ (or tab / CR) makes spreadsheets evaluate the cell.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
