"""A test server outlives no test run: when the process that started it dies without stopping it (a signal, SIGKILL),
its watchdog stops the server's whole process group (tests/servers/process.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# A stand-in server: it starts a child of its own (as some servers do) and both sleep; their ids go to a file.
_SERVER = """
import json, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1], "w") as out:
    json.dump([child.pid], out)
time.sleep(600)
"""

# The test process stand-in: starts the server through tests.servers.process, says the ids, then waits to be killed.
_STARTER = """
import json, sys, time
from pathlib import Path
from tests.servers.process import Server
work = Path(sys.argv[1])
server = Server("sleeper", [sys.executable, "-c", sys.argv[2], str(work / "child.json")], work / "sleeper.log")
server.wait_ready(lambda: (work / "child.json").exists() and (work / "child.json").stat().st_size > 0)
print(json.dumps({"server": server.proc.pid, "watchdog": server.watchdog.pid}), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for this purpose (its parent, gone, was the starter); /proc says which.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _gone(pids: list[int], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_a_killed_test_process_leaves_no_server(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    starter = subprocess.Popen([sys.executable, "-c", _STARTER, str(tmp_path), _SERVER], cwd=root,
                               env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    ids = json.loads(starter.stdout.readline())
    child = json.loads((tmp_path / "child.json").read_text())[0]
    pids = [ids["server"], child, ids["watchdog"]]
    assert all(_alive(p) for p in pids)
    os.kill(ids["watchdog"], signal.SIGTERM)  # as `pkill -f <the run's folder>` sends it: the watchdog stays
    time.sleep(0.5)
    assert _alive(ids["watchdog"])
    starter.send_signal(signal.SIGKILL)
    starter.wait(15)
    try:
        assert _gone(pids), f"left running: {[p for p in pids if _alive(p)]}"
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_stop_ends_the_server_and_its_watchdog(tmp_path: Path) -> None:
    from tests.servers.process import Server

    server = Server("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "s.log")
    assert _alive(server.proc.pid) and server.watchdog.poll() is None
    server.stop()
    assert server.proc.poll() is not None
    assert server.watchdog.poll() is not None
    server.stop()  # twice is harmless
