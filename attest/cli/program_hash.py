"""The program a command is about: ``attest program-hash`` prints the identity ``attest record`` would record for the
same arguments (one function, :func:`program_identity`, computes it for both), and ``attest verify --program-file F``
/ ``--program-sql`` checks that a table was produced by that program (``program_mismatch``)."""

from __future__ import annotations

import argparse

from attest.errors import Code, InvalidArgumentError
from attest.fast.record import record
from attest.verify.program import dialect_giving

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.cli.output import Output
    from carriers.core import AttestedTable

__all__ = ["add_parser", "add_verify_options", "cmd_program_hash", "dialect_change", "expected_program",
           "program_identity"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("program-hash", help="print the program identity `attest record` records for a program",
                       description="Print the 64-hex program identity (program_hash) that `attest record` with the "
                       "same --sql / --sql-file / --program-json and --dialect records: SQL is parsed in the dialect, "
                       "so layout, comments and keyword case do not count (docs/identities.md).")
    p.add_argument("--sql", help="the SQL text of the program")
    p.add_argument("--sql-file", metavar="F", help="a file holding the SQL text ('-' reads stdin)")
    p.add_argument("--program-json", metavar="F", help="a producer's typed JSON program representation")
    p.add_argument("--dialect", help="SQL dialect (sqlglot name, e.g. spark, duckdb, postgres); part of the identity")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func="program_hash:cmd_program_hash", program_hash=None)


def add_verify_options(p: argparse.ArgumentParser) -> None:
    """``verify``'s options naming the program a table must have been produced by."""
    p.add_argument("--program-file", metavar="F", help="tables: fail (program_mismatch) unless the attestation's "
                   "program is the SQL in F (with --dialect, as recorded)")
    p.add_argument("--program-sql", metavar="SQL", help="tables: the same with the SQL text itself")
    p.add_argument("--dialect", help="with --program-file / --program-sql: the SQL dialect the record used")


def _sql_text(option: str, name: str) -> str:
    from attest.cli.shared import read_argument_file

    data = read_argument_file(option, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"{option} {name}: not UTF-8 text (byte {exc.start}): give the SQL as "
                                   "UTF-8") from None


def program_identity(args: argparse.Namespace) -> str:
    """The program identity of ``--sql`` / ``--sql-file`` / ``--program-json`` / ``--program-hash`` with ``--dialect``:
    what ``attest record`` records and ``attest program-hash`` prints."""
    from attest.identity.program import program_identity_json, program_identity_sql
    from attest.model import load_json_document

    given = [x for x in (args.sql, args.sql_file, args.program_json, args.program_hash) if x is not None]
    if len(given) != 1:
        options = "--sql, --sql-file, --program-json" + (", --program-hash" if args.func == "cmd_record" else "")
        raise InvalidArgumentError(f"give exactly one of {options}")
    if args.sql is not None:
        return program_identity_sql(args.sql, args.dialect)
    if args.sql_file is not None:
        args.sql_read = _sql_text("--sql-file", args.sql_file)  # read once: '-' is stdin (dialect_change reuses it)
        return program_identity_sql(args.sql_read, args.dialect)
    if args.program_json is not None:
        from attest.cli.shared import read_argument_file

        return program_identity_json(load_json_document(read_argument_file("--program-json", args.program_json)))
    value: str = str(args.program_hash)
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise InvalidArgumentError("--program-hash must be 64 lowercase hex characters")
    return value


@record
class ProgramHashResult:
    program_hash: str
    dialect: str | None
    kind: str
    exit_code: int = 0

    def to_json(self) -> Any:
        return {"program_hash": self.program_hash, "kind": self.kind, "dialect": self.dialect, "hash_scheme": "v1"}

    def human(self) -> str:
        return self.program_hash


def cmd_program_hash(args: argparse.Namespace, out: Output) -> ProgramHashResult:
    if args.dialect is not None and args.program_json is not None:
        raise InvalidArgumentError("--dialect applies to SQL (--sql, --sql-file); a JSON program has no dialect")
    identity = program_identity(args)
    return ProgramHashResult(identity, None if args.program_json else (args.dialect or "").lower() or None,
                             "json" if args.program_json else "sql")


def _expected_sql(args: argparse.Namespace) -> str | None:
    file, text = getattr(args, "program_file", None), getattr(args, "program_sql", None)
    if file is not None and text is not None:
        raise InvalidArgumentError("--program-file and --program-sql name two programs: give one")
    if file is None and text is None:
        if getattr(args, "dialect", None) is not None:
            raise InvalidArgumentError("--dialect applies with --program-file or --program-sql")
        return None
    return _sql_text("--program-file", file) if file is not None else str(text)


def expected_program(args: argparse.Namespace) -> tuple[str, str] | None:
    """The SQL and the identity ``verify --program-file`` / ``--program-sql`` expects, computed before any table is
    read (a program that does not parse is an argument error, exit 2)."""
    sql = _expected_sql(args)
    if sql is None:
        return None
    from attest.identity.program import program_identity_sql

    return sql, program_identity_sql(sql, args.dialect)


def dialect_change(args: argparse.Namespace, carrier: AttestedTable, program_hash: str) -> str | None:
    """When ``record`` is given SQL whose identity differs from the attestation in force only because the dialect
    changed (the same SQL in another sqlglot dialect gives the recorded identity): a warning saying so."""
    sql = args.sql if args.sql is not None else getattr(args, "sql_read", None)
    if sql is None:
        return None
    try:
        current = carrier.read(None)
    except Exception:  # nothing readable in force: record's own path reports what it finds
        return None
    recorded = None if current is None else current.document.get("program_hash")
    if not isinstance(recorded, str) or recorded == program_hash:
        return None
    other = dialect_giving(sql, recorded, args.dialect)
    if other is None:
        return None
    was = f"--dialect {other}" if other else "no --dialect (generic SQL)"
    now = f"--dialect {args.dialect}" if args.dialect else "no --dialect (generic SQL)"
    return (f"{Code.DIALECT_CHANGED.value}: the program identity changed only because the dialect did ({was} before, "
            f"{now} now): the same SQL now has another program_hash; record with the earlier dialect to keep it")
