"""Progress like the ecosystem's: a rich progress bar on a terminal for long record / verify / audit, nothing when
stderr is piped, a plain line when rich is not installed, and the verdict always on a clean line."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.cli.output import Progress, Status
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress("hashing table files", stream)
    for done in range(5):
        progress(done, 4, done * 1000)
    progress.close()
    assert stream.getvalue() == ""


def test_a_bar_on_a_terminal_cleared_when_done() -> None:
    stream = Terminal()
    progress = Progress("hashing table files", stream)
    progress(1, 4, 2_000_000)
    assert progress._bar is not None  # rich drew a bar
    progress(4, 4, 8_000_000)
    assert progress._bar is None  # finished: gone, the verdict prints on a clean line
    assert "hashing table files" in stream.getvalue()


def test_a_plain_line_without_rich() -> None:
    code = ("import sys, io\n"
            "sys.modules['rich'] = None\n"
            "from attest.cli.output import Progress\n"
            "class T(io.StringIO):\n"
            "    def isatty(self): return True\n"
            "s = T(); p = Progress('auditing', s, unit='tables'); p(1, 3, 0); p(3, 3, 0)\n"
            "print(repr(s.getvalue()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "auditing: 1/3 tables" in out and out.strip().endswith("\\x1b[K'")


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run attest with stderr on a pseudo-terminal (stdout piped): what a person at a terminal sees on stderr."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "attest.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=terminal, env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    rc = proc.wait()
    os.close(controller)
    return rc, out, seen.decode(errors="replace")


def test_verify_and_audit_show_progress_on_a_terminal_only(tmp_path: Path) -> None:
    table = tmp_path / "lake" / "t"
    # More files than the command line's head start takes (carriers.delta.prefetch.PREFETCH_MAX_FILES), so that the
    # hashing is still to do when the bar can be drawn.
    write_deltalake(str(table), pa.table({"p": list(range(80)), "x": list(range(80))}), partition_by=["p"])
    assert run_cli("record", str(table), "--model", "m", "--sql", "SELECT 1").returncode == 0
    rc, out, terminal = _on_a_terminal(["verify", str(table), "--level", "bytes"], tmp_path)
    assert rc == 0 and out.startswith("VERIFIED (bytes, unsigned)")
    assert "hashing table files" in terminal  # the bar, on stderr
    piped = run_cli("verify", str(table), "--level", "bytes")
    assert piped.returncode == 0 and piped.stderr == ""  # piped: nothing
    rc, out, terminal = _on_a_terminal(["audit", str(tmp_path / "lake")], tmp_path)
    assert rc == 0 and out.splitlines()[-1].startswith("1 table(s): 1 verified")
    assert "auditing" in terminal


# ---- Status: a step with no count (a long log read before any hashing) -------------------------------------------
def _drawn(stream: io.StringIO) -> None:
    """Wait (at most 5 s) until the status thread has drawn its line once."""
    deadline = time.monotonic() + 5
    while "\x1b[K" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_status_is_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with Status("reading t", stream, delay=0, every=0.01) as status:
        time.sleep(0.05)
    assert stream.getvalue() == "" and status._thread is None  # no thread started at all


def test_a_quick_step_shows_no_status() -> None:
    stream = Terminal()
    with Status("reading t", stream, delay=5):
        pass
    assert stream.getvalue() == ""


def test_a_status_counts_seconds_and_is_erased_when_the_step_ends() -> None:
    stream = Terminal()
    with Status("reading /lake/t", stream, delay=0, every=0.01):
        _drawn(stream)
    text = stream.getvalue()
    assert text.startswith("\rreading /lake/t… 0 s\x1b[K") and text.endswith("\r\x1b[K"), repr(text)
    time.sleep(0.05)
    assert stream.getvalue() == text  # nothing drawn after the step ended


def test_a_status_label_is_terminal_safe() -> None:
    stream = Terminal()
    with Status("reading /lake/\x1b]0;owned\x07t", stream, delay=0, every=0.01):
        _drawn(stream)
    assert "\x1b]" not in stream.getvalue() and "\x07" not in stream.getvalue(), repr(stream.getvalue())


def test_the_first_progress_drawn_ends_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.cli import output

    monkeypatch.setattr(output, "STATUS_DELAY", 0)
    stream = Terminal()
    out = output.TextOutput(stderr=stream)
    with out.status("reading t") as status:
        progress = out.progress("hashing table files")
        deadline = time.monotonic() + 5
        while not status.shown and time.monotonic() < deadline:
            time.sleep(0.01)
        progress(1, 4, 100)
        assert status._thread is None  # stopped before the bar was drawn: the two never write at once
        drawn = stream.getvalue()
        time.sleep(1.2)
        assert stream.getvalue().count("reading t") == drawn.count("reading t")
        progress(4, 4, 400)


def test_verify_says_it_is_reading_the_table_until_its_verdict(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.cli import main, output
    from carriers.delta.carrier import DeltaCarrier

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"x": [1, 2]}))
    assert run_cli("record", str(table), "--model", "m", "--sql", "SELECT 1").returncode == 0
    state = DeltaCarrier.state

    def slow_state(self: DeltaCarrier, version: str | int | None = None) -> object:
        time.sleep(0.3)  # a long log: the status is drawn before the state is read
        return state(self, version)

    monkeypatch.setattr(DeltaCarrier, "state", slow_state)
    monkeypatch.setattr(output, "STATUS_DELAY", 0)
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    assert main(["verify", str(table), "--level", "files"]) == 0
    text = stream.getvalue()
    assert f"\rreading {table}… 0 s\x1b[K" in text and text.endswith("\r\x1b[K"), repr(text)


def test_a_status_says_what_it_is_at() -> None:
    stream = Terminal()
    with Status("walking the lineage of t", stream, delay=0, every=0.01) as status:
        status.at("/lake/orders@\x1b[2J5" + "x" * 100)
        deadline = time.monotonic() + 5
        while "xxx" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    line = stream.getvalue().split("\r")[-2]
    assert line.startswith("walking the lineage of t… 0 s — …") and line.endswith("x\x1b[K"), repr(line)
    assert "\x1b[2J" not in stream.getvalue() and len(status.detail) == 60


def test_lineage_says_which_table_it_is_checking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.cli import main, output
    from carriers import lineage

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"x": [1, 2]}))
    assert run_cli("record", str(table), "--model", "m", "--sql", "SELECT 1").returncode == 0
    opened = lineage.open_table

    def slow_open(*args: object, **kwargs: object) -> object:
        time.sleep(0.3)  # a slow node: the status is redrawn, naming it, while it is opened
        return opened(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lineage, "open_table", slow_open)
    monkeypatch.setattr(output, "STATUS_DELAY", 0)
    monkeypatch.setattr(output, "STATUS_EVERY", 0.05)
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    assert main(["lineage", str(table)]) == 0
    text = stream.getvalue()
    node = table.as_uri()  # the root as the lineage names its nodes (an upstream: "<table>@<version>")
    assert f" s — {node if len(node) <= 60 else '…' + node[-59:]}\x1b[K" in text, repr(text)
    assert text.startswith(f"\rwalking the lineage of {table}… 0 s") and text.endswith("\r\x1b[K"), repr(text)
