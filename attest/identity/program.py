"""Program identity: BLAKE3 (v1) of the canonical typed form of the exact program.

Three front doors, one hash scheme (docs/identities.md has the documents field by field):
- a typed JSON representation from any producer, hashed as is;
- SQL text in a dialect, parsed so that layout, comments and keyword case do not count but logic does;
- a Python callable, from its syntax tree without docstrings, comments or formatting.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from attest.canonical import digest
from attest.errors import AttestError, Code


class ProgramError(AttestError):
    code = Code.MANIFEST_INVALID_FIELD


def program_identity_json(representation: Any) -> str:
    """A producer's own typed representation, hashed as is (v1 canonical JSON)."""
    return digest(representation)


def canonical_sql(sql: str, dialect: str | None = None) -> str:
    """Statements re-generated from sqlglot's tree: comments dropped, keywords upper case, identifiers and
    literals exactly as written."""
    try:
        import sqlglot  # optional extra [sql]: the verifier-only install does not need it
        from sqlglot.errors import ParseError
    except ImportError as exc:  # tests/test_cli_errors.py hides the module
        raise ProgramError("SQL program identity (--sql, --sql-file) needs sqlglot: pip install "
                           "'recipe-attest[sql]', or give --program-json / --program-hash",
                           code=Code.EXTRA_MISSING) from exc
    try:
        trees = sqlglot.parse(sql, read=dialect or None)
    except ParseError as exc:
        raise ProgramError(f"SQL does not parse as {dialect or 'generic SQL'}: {str(exc).splitlines()[0]}") from exc
    except ValueError as exc:  # unknown dialect name
        raise ProgramError(str(exc)) from exc
    statements = [t.sql(dialect=dialect or None, comments=False, pretty=False) for t in trees if t is not None]
    if not statements:
        raise ProgramError("SQL text holds no statement")
    return ";\n".join(statements)


def program_document_sql(sql: str, dialect: str | None = None) -> dict[str, Any]:
    return {"kind": "sql", "dialect": (dialect or "").lower(), "statements": canonical_sql(sql, dialect)}


def program_identity_sql(sql: str, dialect: str | None = None) -> str:
    return digest(program_document_sql(sql, dialect))


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                # A docstring is documentation, not logic; keep the body non-empty for a valid tree.
                node.body = body[1:] or [ast.Pass()]


def program_document_python(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as exc:
        raise ProgramError(f"no source for {func!r}: a program identity needs the callable's source") from exc
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError as exc:
        # Lambdas inside an expression yield a source fragment that does not parse alone.
        raise ProgramError(f"the source of {func!r} does not parse on its own (a lambda inside an expression?); "
                           "wrap the logic in a def") from exc
    _strip_docstrings(tree)
    top = tree.body[0] if tree.body else None
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # Decorators register a function and its name labels it; neither is what it computes.
        top.decorator_list = []
        top.name = "_"
    return {"kind": "python", "ast": ast.dump(tree, annotate_fields=True, include_attributes=False)}


def program_identity_python(func: Callable[..., Any]) -> str:
    return digest(program_document_python(func))
