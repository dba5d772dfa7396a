"""Was a table produced by this program? ``program_mismatch`` when an attestation's ``program_hash`` is not the
identity of the SQL given (``attest verify --program-file`` / ``--program-sql``, ``attest.verify(..., program_sql=)``),
and which sqlglot dialect, if any, gives the SQL the recorded identity (a mismatch that is only the dialect's)."""

from __future__ import annotations

from attest.errors import Code

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.verify.report import Report

__all__ = ["check_program", "dialect_giving"]


def check_program(report: Report, expected: tuple[str, str] | None, state: Any, dialect: str | None) -> Report:
    """``program_mismatch`` on the report when the attestation of ``state`` names another program. Only an
    attestation that was read can match: an unattested or unreadable table keeps its own verdict."""
    attestation = getattr(state, "attestation", None)
    if expected is None or attestation is None or not report.attested:
        return report
    sql, identity = expected
    recorded = attestation.document.get("program_hash") if isinstance(attestation.document, dict) else None
    if recorded == identity:
        report.notes.append(f"program: the attestation's program_hash is this program's ({identity[:12]}…)")
        return report
    other = dialect_giving(sql, recorded, dialect)
    dialect = (dialect or "").lower() or "generic SQL"
    hint = ("the identity depends on --dialect: give the one the record used" if other is None else
            f"it is this SQL's identity in {other or 'generic SQL'}: the record used "
            + (f"--dialect {other}" if other else "no --dialect"))
    report.fail(Code.PROGRAM_MISMATCH, f"the attestation's program_hash {str(recorded)[:12]}… is not the identity of "
                f"the given program in {dialect} ({identity[:12]}…): the table was not produced by it ({hint})",
                "$.program_hash")
    return report


def dialect_giving(sql: str, recorded: Any, skip: str | None) -> str | None:
    """The sqlglot dialect ("" for generic SQL) in which ``sql`` has the identity ``recorded``, other than ``skip``;
    None when there is none."""
    if not isinstance(recorded, str):
        return None
    try:
        import sqlglot

        from attest.identity.program import program_identity_sql
    except ImportError:
        return None
    for other in ["", *sorted(d.value for d in sqlglot.Dialects if d.value)]:
        if other == (skip or "").lower():
            continue
        try:
            if program_identity_sql(sql, other or None) == recorded:
                return other
        except Exception:  # the SQL does not parse in that dialect
            continue
    return None
