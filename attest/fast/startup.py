"""The command line's fast path (attest/fast/__init__.py): the head start, read from the raw command line before
argparse is imported, and the quick exit after a read-only command. attest.cli calls both only with the switch on."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself is not imported at start-up (mypy reads the name as typing's)
if TYPE_CHECKING:
    import argparse

    from attest.verify.artifacts import EarlyHashes
    from carriers.delta.prefetch import DeltaPrefetch

__all__ = ["HeadStart", "end_now", "head_start", "read_only"]

# Commands that write nothing but their output (audit only without --to; --spark runs leave a JVM to stop).
READ_ONLY = frozenset({"digest", "schema", "verify", "show", "lineage", "audit"})


def read_only(args: argparse.Namespace) -> bool:
    """The parsed command writes nothing but its output: the process may end without the teardown (end_now)."""
    return args.command in READ_ONLY and getattr(args, "to", None) is None and not getattr(args, "spark", False)


def end_now(code: int) -> None:
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


class HeadStart:
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


def head_start(arguments: list[str], *, may_fork: bool = False) -> HeadStart | None:
    """``verify MANIFEST --artifacts-dir DIR`` (or a standalone carrier directory), or ``verify TABLE`` of a local
    Delta table: start resolving and hashing the files now, before argparse, the verifier, the schema, the report
    machinery and the table library are imported, so that most of start-up overlaps the hashing. It decides nothing
    (attest.verify.artifacts.EarlyHashes, carriers.delta.prefetch): the command parses the line for real and uses the
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
        from carriers.delta.prefetch import DeltaPrefetch

        prefetch = DeltaPrefetch.start(target, None if version is None else int(version), may_fork=may_fork)
        return None if prefetch is None else HeadStart(words, prefetch)
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
    return None if early is None else HeadStart(words, early)
