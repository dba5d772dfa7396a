"""The ``attest`` command line (docs/cli.md). Exit codes: 0 verified / done, 1 not verified, 2 unreadable input, bad
arguments or an error. ``--json`` prints one JSON object on every path, errors included.

The parser (attest/cli/parser.py) turns arguments into a namespace; each command (``cmd_x`` in attest/cli/<command>.py,
the parser names it) returns a result object; renderers (attest/cli/output.py) print them. This module imports only
``os`` and ``sys`` at first: a ``verify`` of a manifest starts hashing (attest.verify.artifacts) before the parser and the verifier are imported.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself is not imported at start-up (mypy reads the name as typing's)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from attest.cli.output import Output
    from attest.verify.artifacts import EarlyHashes
    from carriers.delta_prefetch import DeltaPrefetch

__all__ = ["build_parser", "main", "run"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``attest`` parser (attest.cli.parser.build_parser)."""
    from attest.cli import parser

    return parser.build_parser(command)


# True in the ``attest`` program (run): nothing has run in this process before main, so the head start may fork a
# child to hash in (carriers.delta_prefetch.ForkedDeltaPrefetch). Not when main is called from a caller's process.
_fresh_process = False

# Commands that write nothing but their output (audit only without --to; --spark runs leave a JVM to stop).
_READ_ONLY = frozenset({"digest", "schema", "verify", "show", "lineage", "audit"})


def run() -> NoReturn:
    """The ``attest`` program (the console script and ``python -m attest.cli``): main(), then exit with its code.

    A read-only command ends with ``os._exit`` once its output is flushed and the exit handlers have run: only the
    interpreter's teardown (freeing every module and object; 8-9 ms after a verify, measured) is skipped."""
    if "RUST_LOG" not in os.environ and not os.environ.get("ATTEST_DEBUG"):
        # Read by delta-rs's logger when main imports it: its default printed the AWS SDK's warnings (a screen of
        # IMDS lines) before our coded error. Errors still print; RUST_LOG set, or ATTEST_DEBUG, shows everything.
        # Here, not in main(): the process's own setting, not one a caller of main() inherits.
        os.environ["RUST_LOG"] = "error"
    global _fresh_process
    _fresh_process = True
    code = main()
    from attest.cli.parser import command_of  # imported by main already

    arguments = sys.argv[1:]
    if command_of(arguments) in _READ_ONLY and "--to" not in arguments and "--spark" not in arguments:
        _end_now(code)
    sys.exit(code)


def _end_now(code: int) -> None:
    """Run the exit handlers, flush, and end the process without the teardown; returns (and the caller exits the
    ordinary way) while a non-daemon thread runs or the output cannot be flushed."""
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe and the like: the ordinary exit reports nothing more either
        return
    os._exit(code)


class _HeadStart:
    """Work started from the raw command line, before the parser is imported; used only when the parse agrees."""

    def __init__(self, words: tuple[str | None, ...], work: EarlyHashes | DeltaPrefetch) -> None:
        self.words, self.work = words, work

    def agreeing(self, args: argparse.Namespace) -> EarlyHashes | DeltaPrefetch | None:
        parsed = (args.command, args.target, args.artifacts_dir, args.level, args.version)
        if parsed == self.words:
            return self.work
        self.work.cancel()
        return None


# `verify` options the head start reads past; any other option on the line and it starts nothing (never a guess).
_VALUE_OPTIONS = frozenset({"--artifacts-dir", "--level", "--key", "--policy", "--envelope", "--version"})
_FLAGS = frozenset({"--json"})


def _head_start(arguments: list[str]) -> _HeadStart | None:
    """``verify MANIFEST --artifacts-dir DIR`` (or a standalone carrier directory), or ``verify TABLE`` of a local
    Delta table: start resolving and hashing the files now, before argparse, the verifier, the schema, the report
    machinery and the table library are imported, so that most of start-up overlaps the hashing. It decides nothing
    (attest.verify.artifacts.EarlyHashes, carriers.delta_prefetch): the command parses the line for real and uses the
    hashes only when the parse names the same target, directory, level and version, and only for exactly the files
    it resolves itself."""
    if not arguments or arguments[0] != "verify":
        return None
    target: str | None = None
    values: dict[str, str] = {}
    rest = iter(arguments[1:])
    for word in rest:
        if word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
        elif word in _VALUE_OPTIONS:
            name, value = word, next(rest, "")
        elif word in _FLAGS:
            continue
        elif word.startswith("-") or target is not None:  # another option, '-' (stdin) or a second target
            return None
        else:
            target = word
            continue
        if name not in _VALUE_OPTIONS or not value:
            return None
        values[name] = value
    level, version, artifacts = values.get("--level"), values.get("--version"), values.get("--artifacts-dir")
    if target is None or level in ("schema", "files") or ":" in target:  # URIs and catalogs: left to the command
        return None
    words = ("verify", target, artifacts, level, version)
    if os.path.isdir(os.path.join(target, "_delta_log")):
        # ASCII digits only: '²'.isdigit() is true and int('²') raises (attest.numbers.is_digits, not imported yet).
        if artifacts is not None or (version is not None and not (version.isascii() and version.isdigit())):
            return None
        from carriers.delta_prefetch import DeltaPrefetch

        prefetch = DeltaPrefetch.start(target, None if version is None else int(version), may_fork=_fresh_process)
        return None if prefetch is None else _HeadStart(words, prefetch)
    if version is not None:
        return None
    manifest = target
    if os.path.isdir(target):  # a standalone carrier directory (an Iceberg table folder is left to the command)
        if os.path.isdir(os.path.join(target, "metadata")):
            return None
        manifest, artifacts = os.path.join(target, "manifest.json"), artifacts or target
    if artifacts is None:
        return None
    import stat

    from attest.verify.artifacts import EARLY_READ_MAX_BYTES, EarlyHashes

    try:
        if not stat.S_ISREG(os.stat(manifest).st_mode):  # a FIFO or a device: left to the command
            return None
        with open(manifest, "rb") as handle:
            data = handle.read(EARLY_READ_MAX_BYTES + 1)
    except OSError:  # not a readable file: the command says what it is, coded
        return None
    if len(data) > EARLY_READ_MAX_BYTES:
        return None
    early = EarlyHashes.start(data, artifacts)
    return None if early is None else _HeadStart(words, early)


def _command(name: str) -> Callable[[argparse.Namespace, Output], Any]:
    """A command by the name the parser gives, ``module:cmd_x``: ``cmd_x`` in attest/cli/<module>.py."""
    import importlib

    module, _, func = name.partition(":")
    return getattr(importlib.import_module(f"attest.cli.{module}"), func)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    head = _head_start(arguments)
    from attest.cli.parser import parse

    args = parse(arguments)
    args.early = head.agreeing(args) if head is not None else None
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
            from carriers.storage import coded

            return out.error(coded(exc))
        return out.internal(exc)
    except BaseException as exc:  # a Rust panic (pyo3's PanicException is a BaseException): coded too
        if type(exc).__name__ != "PanicException" or os.environ.get("ATTEST_DEBUG"):
            raise
        return out.internal(exc)
