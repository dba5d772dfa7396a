"""One server process on loopback: free ports, a data folder, a log file, readiness by probing, a clean stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

HOST = "127.0.0.1"
# Loopback only: no proxy may take the requests of the tests or of the CLIs they start.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it; the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def http_answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status: 403 is an answer)."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


class ServerError(RuntimeError):
    """A test server could not be started; the message carries the end of its log."""


# The watchdog beside each server: it blocks reading a pipe whose only writer is the test process, so the read ends
# (EOF) when that process ends however it ends (a signal, SIGKILL, a crash), and then it stops the server's whole
# process group: a killed test run leaves no server behind holding ports and temp folders.
_WATCHDOG = """
import os, signal, sys, time
# a pattern kill aimed at the test run (pkill -f <its folder>) names this interpreter too: only SIGKILL stops it
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
pgid, fd = int(sys.argv[1]), int(sys.argv[2])
while os.read(fd, 1):
    pass
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        break
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            sys.exit(0)
        time.sleep(0.1)
"""


class Server:
    """A child process with its own session (so the whole group stops together) and a log file, stopped by a
    watchdog if the test process dies without stopping it."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, *, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            self.proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         cwd=cwd, env={**os.environ, **(env or {})}, start_new_session=True)
        # The pipe is made after the server started, and os.pipe() is not inherited by exec'd children: only this
        # process holds the write end, only the watchdog the read end.
        read_end, self._alive = os.pipe()
        try:
            self.watchdog = subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(self.proc.pid), str(read_end)],
                                             pass_fds=(read_end,), stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True)
        finally:
            os.close(read_end)

    def wait_ready(self, ready: Callable[[], bool], timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
            if ready():
                return
            time.sleep(0.2)
        self.stop()
        raise ServerError(f"{self.name} did not become ready in {timeout:.0f}s: {self.tail()}")

    def tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        self._stop_watchdog()
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(15)

    def _stop_watchdog(self) -> None:
        # Killed first: once the server's group is gone its id may be reused, and the watchdog must not signal that.
        if self.watchdog.poll() is None:
            self.watchdog.kill()
            self.watchdog.wait(15)
        if self._alive >= 0:
            os.close(self._alive)
            self._alive = -1
