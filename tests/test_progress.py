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
from deltalake import write_deltalake

from attest.cli.output import Progress
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
