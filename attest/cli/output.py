"""Rendering, apart from the commands (pattern: pyiceberg's ``cli/output.py``).

Commands build result objects — a verify ``Report``, a ``RecordResult``, an ``AuditReport``, a lineage tree — and
never print. A renderer prints them: ``TextOutput`` for people, ``JsonOutput`` for machines (one JSON object on every
path, errors and internal errors included). Exit codes: 0 verified / done, 1 not verified, 2 unreadable input, bad
arguments or an error.
"""

from __future__ import annotations

import json
import sys
import time

from attest.errors import AttestError, Code, Problem
from attest.redact import redact
from attest.render.terminal import json_terminal_safe, terminal_safe

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol, TextIO

    class Result(Protocol):
        """What a command returns: printable both ways, with its exit code."""

        @property
        def exit_code(self) -> int: ...

        def to_json(self) -> Any: ...

        def human(self) -> str: ...

EXIT_OK, EXIT_FAILED, EXIT_UNREADABLE = 0, 1, 2


class Output:
    """Prints results and errors; ``TextOutput`` or ``JsonOutput``."""

    def __init__(self, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self._status: Status | None = None

    def result(self, result: Result) -> int:
        raise NotImplementedError

    def error(self, err: AttestError) -> int:
        raise NotImplementedError

    def internal(self, exc: BaseException) -> int:
        """An exception we did not anticipate: one coded line (or object), never a traceback."""
        return self.error(AttestError(f"{type(exc).__name__}: {exc} (set ATTEST_DEBUG=1 for a traceback)",
                                      code=Code.INTERNAL_ERROR))

    def progress(self, label: str, *, unit: str = "files") -> Progress:
        return Progress(label, self.stderr, unit=unit, before=self._stop_status)

    def status(self, label: str) -> Status:
        """A ``Status`` of a step with no count on this output's stderr (the first progress drawn ends it)."""
        self._stop_status()
        self._status = Status(label, self.stderr)
        return self._status

    def _stop_status(self) -> None:
        status = self._status
        if status is not None:
            status.stop()
            self._status = None


class TextOutput(Output):
    def result(self, result: Result) -> int:
        chunks = getattr(result, "human_chunks", None)  # a long result (attest audit) printed a piece at a time
        if chunks is not None:
            for chunk in chunks():
                self.stdout.write(terminal_safe(redact(chunk)))
            self.stdout.flush()
            text = ""
        else:
            text = result.human()
        if text and getattr(result, "json_text", False):
            # A JSON document (show, schema): escaped as JSON escapes (the same value), never replaced — replacing
            # U+2028 in a model name by U+FFFD would print another document than the one the table holds.
            print(json_terminal_safe(_redact_json(text)), file=self.stdout, flush=True)
        elif text:  # credentials never printed (attest/redact.py), nothing a terminal would act on
            print(terminal_safe(redact(text)), file=self.stdout, flush=True)
        notice = getattr(result, "stderr_text", "")
        if notice:
            print(terminal_safe(redact(notice)), file=self.stderr)
        return result.exit_code

    def error(self, err: AttestError) -> int:
        print(terminal_safe(redact(f"attest: {err.code.value}: {err.message}")), file=self.stderr)
        return EXIT_UNREADABLE


class JsonOutput(Output):
    def result(self, result: Result) -> int:
        chunks = getattr(result, "json_chunks", None)  # the same text, never whole in memory (attest audit)
        if chunks is not None:
            for chunk in chunks():
                self.stdout.write(json_terminal_safe(_redact_json(chunk)))
            print(file=self.stdout, flush=True)
            return result.exit_code
        text = json.dumps(result.to_json(), ensure_ascii=False, indent=2)
        print(json_terminal_safe(_redact_json(text)), file=self.stdout, flush=True)
        notice = getattr(result, "json_stderr_text", "")  # what a result says on stderr under --json too (record)
        if notice:
            print(terminal_safe(redact(notice)), file=self.stderr)
        return result.exit_code

    def error(self, err: AttestError) -> int:
        text = json.dumps(error_object(err.problem()), ensure_ascii=False)
        print(json_terminal_safe(_redact_json(text)), file=self.stdout, flush=True)
        return EXIT_UNREADABLE


def _redact_json(text: str) -> str:
    """Masking inside JSON text keeps it JSON: a secret is masked as it appears in the text and as JSON escapes it."""
    from attest.redact import MASK, secrets

    for value in sorted(secrets(), key=len, reverse=True):
        for form in {value, json.dumps(value, ensure_ascii=False)[1:-1]}:
            text = text.replace(form, MASK)
    return text


def error_object(problem: Problem) -> dict[str, Any]:
    """The one JSON shape of an input error, an argument error or an internal error."""
    verdict = "ERROR" if problem.code == Code.INTERNAL_ERROR else "UNREADABLE"
    return {"passed": False, "level": "none", "verdict": verdict, "errors": [problem.to_json()]}


def output_for(as_json: bool) -> Output:
    return JsonOutput() if as_json else TextOutput()


# A step shows its Status only once it has run this long (seconds): a quick command prints nothing more.
STATUS_DELAY = 1.0
STATUS_EVERY = 1.0  # and is redrawn this often


class Status:
    """One line on stderr saying a long step with no count is under way (a Delta log of a million files read and
    cross-checked, an Iceberg table's manifests planned): ``label`` and the seconds elapsed, drawn only on a
    terminal, only after ``STATUS_DELAY`` seconds, rewritten each second from a thread, erased by ``stop()`` (leaving
    the ``with`` block, or the first progress bar drawn). The label is printed terminal-safe and redacted: it names
    the table, which is untrusted text."""

    def __init__(self, label: str, stream: TextIO = sys.stderr, *, delay: float | None = None,
                 every: float | None = None) -> None:
        self.label = terminal_safe(redact(label))
        self.stream = stream
        self.enabled = _is_terminal(stream)
        self.delay = STATUS_DELAY if delay is None else delay
        self.every = STATUS_EVERY if every is None else every
        self.shown = False
        self.detail = ""  # what the step is at (``Status.at``), shown after the seconds
        self._thread: Any = None
        self._done: Any = None

    def __enter__(self) -> Status:
        if self.enabled:
            import threading

            self._done = threading.Event()
            self._thread = threading.Thread(target=self._run, name="attest-status", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        start = time.monotonic()
        if self._done.wait(self.delay):
            return
        while True:
            detail = self.detail
            self.stream.write(f"\r{self.label}… {int(time.monotonic() - start)} s{detail and f' — {detail}'}\x1b[K")
            self.stream.flush()
            self.shown = True
            if self._done.wait(self.every):
                return

    def at(self, detail: str) -> None:
        """Say what the step is at now (a table version of a lineage walk): shown terminal-safe, redacted, cut to
        60 characters (one line), from the next redraw."""
        text = terminal_safe(redact(detail))
        self.detail = text if len(text) <= 60 else f"…{text[-59:]}"

    def stop(self) -> None:
        """End the line (idempotent): the thread is joined before the line is erased, so nothing is drawn after."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._done.set()
        thread.join()
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class Progress:
    """Progress of a long record / verify / audit on stderr, only when stderr is a terminal: a progress bar drawn
    with ``rich`` (the ``cli`` extra), or one plain line rewritten in place without it. Machines reading --json,
    pipes and logs get nothing. Called as ``progress(done, total, nbytes)`` (attest.tables.Progress); the bar goes
    away when ``done == total`` or on ``close()``, so the verdict prints on a clean line."""

    def __init__(self, label: str, stream: TextIO = sys.stderr, *, unit: str = "files",
                 before: Callable[[], None] | None = None) -> None:
        self.label = label
        self._before = before  # called once, before anything is drawn (ends the output's Status)
        self.stream = stream
        self.unit = unit
        self.enabled = _is_terminal(stream)
        self._last = 0.0
        self._bar: Any = None
        self._task: Any = None
        self._plain = False

    def __call__(self, done: int, total: int, nbytes: int) -> None:
        if not self.enabled:
            return
        if self._before is not None:
            before, self._before = self._before, None
            before()
        if done >= total:
            self.close()
            return
        if self._bar is None and not self._plain:
            self._start()
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total, nbytes=_size(nbytes) if nbytes else "")
            return
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        size = f", {_size(nbytes)}" if nbytes else ""
        self.stream.write(f"\r{self.label}: {done}/{total} {self.unit}{size}\x1b[K")
        self.stream.flush()

    def _start(self) -> None:
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar
        except ImportError:  # the verifier-only install: the plain line
            self._plain = True
            return
        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn(self.unit + " {task.fields[nbytes]}"), TimeElapsedColumn(), console=console,
                        transient=True, redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task(self.label, total=None, nbytes="")
        self._bar.start()

    def above(self, line: str, stream: TextIO) -> None:
        """Print ``line`` to ``stream`` without tearing the bar: above it when both go to the terminal."""
        line = terminal_safe(line)
        if self._bar is not None and _is_terminal(stream):
            self._bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            if self._plain and _is_terminal(stream):
                self.stream.write("\r\x1b[K")
            print(line, file=stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.enabled and self._plain:
            self.stream.write("\r\x1b[K")  # finished: clear the line, the verdict follows
            self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: no progress
        return False


def _size(nbytes: int) -> str:
    return f"{nbytes / 1e6:,.1f} MB"
