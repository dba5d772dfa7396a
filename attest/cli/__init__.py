"""The ``attest`` command line (docs/cli.md). Exit codes: 0 verified / done, 1 not verified, 2 unreadable input, bad
arguments or an error. ``--json`` prints one JSON object on every path, errors included.

The parser (attest/cli/parser.py) reads the arguments once into a namespace; each command (``cmd_x`` in
attest/cli/<command>.py, the parser names it) returns a result object; renderers (attest/cli/output.py) print them.
The start-up fast path (a head start on a ``verify``'s hashing, the quick exit) is attest/fast/, switched off by
``ATTEST_FAST=0``; this module imports only ``os``, ``sys`` and that switch before it.
"""

from __future__ import annotations

import os
import sys

from attest import fast

TYPE_CHECKING = False  # typing itself is not imported at start-up (mypy reads the name as typing's)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from attest.cli.output import Output

__all__ = ["build_parser", "main", "run"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``attest`` parser (attest.cli.parser.build_parser)."""
    from attest.cli import parser

    return parser.build_parser(command)


def run() -> NoReturn:
    """The ``attest`` program (the console script and ``python -m attest.cli``): main(), then exit with its code
    (with the fast path on, a read-only command skips the interpreter's teardown: attest.fast.startup.end_now)."""
    if "RUST_LOG" not in os.environ and not os.environ.get("ATTEST_DEBUG"):
        # Read by delta-rs's logger when main imports it: its default printed the AWS SDK's warnings (a screen of
        # IMDS lines) before our coded error. Errors still print; RUST_LOG set, or ATTEST_DEBUG, shows everything.
        # Here, not in main(): the process's own setting, not one a caller of main() inherits.
        os.environ["RUST_LOG"] = "error"
    # Nothing has run in this process before: a head start may fork a child to hash in (carriers.delta.prefetch).
    code, args = _main(sys.argv[1:], fresh_process=True)
    if fast.ON:
        from attest.fast.startup import end_now, read_only

        if read_only(args):
            end_now(code)
    sys.exit(code)


def _command(name: str) -> Callable[[argparse.Namespace, Output], Any]:
    """A command by the name the parser gives, ``module:cmd_x``: ``cmd_x`` in attest/cli/<module>.py."""
    import importlib

    module, _, func = name.partition(":")
    return getattr(importlib.import_module(f"attest.cli.{module}"), func)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    return _main(list(sys.argv[1:] if argv is None else argv), fresh_process=False)[0]


def _main(arguments: list[str], *, fresh_process: bool) -> tuple[int, argparse.Namespace]:
    """The command's exit code, and the arguments as parsed."""
    head = None
    if fast.ON:  # hashing started from the raw line, before argparse is imported; used only if the parse agrees
        from attest.fast.startup import head_start

        head = head_start(arguments, may_fork=fresh_process)
    from attest.cli.parser import parse

    args = parse(arguments)
    args.early = head.agreeing(args) if head is not None else None
    return _run(args), args


def _run(args: argparse.Namespace) -> int:
    from attest.cli.output import EXIT_OK, output_for
    from attest.cli.shared import NOT_DONE
    from attest.errors import AttestError, Code

    out: Output = output_for(bool(getattr(args, "json", False)) or getattr(args, "format", None) == "json")
    func: Callable[[argparse.Namespace, Output], Any] = _command(args.func)
    try:
        from attest.cli.catalogs import scope

        with scope(args):  # --uri / --warehouse over the catalog's configuration, for the whole command
            return int(out.result(func(args, out)))
    except AttestError as err:
        if err.code == Code.TABLE_NOT_FOUND and isinstance(getattr(args, "target", None), str):
            from attest.cli.mistakes import table_hint

            hint = table_hint(args.target)  # a folder of tables, an Iceberg folder, a typo: said with the fix
            if hint and hint not in err.message:
                err = AttestError(err.message + hint, path=err.path, code=err.code)
        code = out.error(err)
        return 1 if err.code in NOT_DONE else code
    except KeyboardInterrupt:
        print("attest: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # a library error we did not anticipate: one coded line or object, not a traceback
        if os.environ.get("ATTEST_DEBUG"):
            raise
        if isinstance(exc, OSError):  # a store's failure (access denied, unreachable): coded like any other
            from carriers.storage.errors import coded

            return out.error(coded(exc))
        return out.internal(exc)
    except BaseException as exc:  # a Rust panic (pyo3's PanicException is a BaseException): coded too
        if type(exc).__name__ != "PanicException" or os.environ.get("ATTEST_DEBUG"):
            raise
        return out.internal(exc)
