"""A Spark standalone cluster on this machine, for tests and benchmarks: one master and N workers, each a separate
process started with ``spark-class`` from the installed pyspark (its own jars: nothing is downloaded).

    with StandaloneCluster(tmp, workers=2) as cluster:
        cluster.master_url            # spark://127.0.0.1:<port>
        cluster.executor_python       # a Python with recipe-attest's dependencies but not recipe-attest itself

Everything listens on 127.0.0.1 only. Each process runs in its own process group, with a working directory and
environment that do not contain the project (no PYTHONPATH; its own work and log directories under ``root``), so
executors import recipe-attest only from what the job ships (``carriers.spark.distributed.ship_code``). Leaving the
``with`` block (or ``stop()``) ends the process groups: the master, the workers and the executors and Python
workers they started. ``executor_python`` is a wrapper around this interpreter with ``-S`` (no ``.pth`` files, so no
editable install of the project) and this environment's site-packages on its ``PYTHONPATH``: blake3, pyarrow,
deltalake, pyiceberg, pyspark are importable there, ``attest`` and ``carriers`` are not.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["StandaloneCluster", "bare_python", "free_port", "group_alive"]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def group_alive(pgid: int) -> bool:
    """Whether any process of the process group is left."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def bare_python(folder: Path) -> Path:
    """An executable that runs this interpreter without site processing, this environment's site-packages on its
    path: the project's dependencies importable, the project itself (an editable install is a ``.pth`` hook) not."""
    paths = sysconfig.get_paths()
    site = os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]]))
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python-without-project"
    script.write_text("#!/bin/sh\n"
                      f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}"\n'
                      "export PYTHONPATH\n"
                      f'exec {sys.executable} -S "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _java_home() -> str:
    from carriers.spark.java import find_java, spark_java_home

    return str(spark_java_home(find_java()))


class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, under ``root``."""

    def __init__(self, root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g",
                 start_timeout: float = 180.0) -> None:
        self.root = root
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.port = free_port()
        self.webui_port = free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.executor_python = bare_python(root / "bin")

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    @property
    def webui(self) -> str:
        return f"http://{LOOPBACK}:{self.webui_port}"

    def process_env(self, name: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "SPARK_HOME")}
        env.update({
            "SPARK_HOME": str(_spark_home()),
            "JAVA_HOME": _java_home(),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOG_DIR": str(self.root / "logs"),
            "SPARK_WORKER_DIR": str(self.root / name / "work"),
            "SPARK_LOCAL_DIRS": str(self.root / name / "local"),
            "SPARK_NO_DAEMONIZE": "1",
        })
        return env

    def _start(self, name: str, *args: str) -> None:
        folder = self.root / name
        (folder / "work").mkdir(parents=True, exist_ok=True)
        (folder / "local").mkdir(parents=True, exist_ok=True)
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        log = (self.root / "logs" / f"{name}.log").open("ab")
        try:
            self.processes.append(subprocess.Popen(
                [str(_spark_home() / "bin" / "spark-class"), *args], cwd=folder, env=self.process_env(name),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        finally:
            log.close()

    def state(self) -> dict[str, Any]:
        """The master's JSON status page (``/json``): its workers, their state, cores and applications."""
        with urllib.request.urlopen(f"{self.webui}/json", timeout=10) as response:
            state: dict[str, Any] = json.loads(response.read())
            return state

    def alive_workers(self) -> int:
        try:
            workers = self.state().get("workers", [])
        except (OSError, ValueError):
            return 0
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def start(self) -> StandaloneCluster:
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port",
                    str(self.port), "--webui-port", str(self.webui_port))
        for i in range(self.workers):
            self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", LOOPBACK,
                        "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(self.cores),
                        "--memory", self.memory)
        deadline = time.monotonic() + self.start_timeout
        while self.alive_workers() < self.workers:
            dead = [p.args for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                why = f"{dead[0]!r} exited" if dead else f"{self.workers} worker(s) not registered in time"
                raise RuntimeError(f"the Spark standalone cluster did not start: {why}; see {self.root / 'logs'}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        """End every process group (master, workers, their executors and Python workers); SIGKILL after 20 s."""
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):  # what is left of the group (an executor ending) goes too
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        deadline = time.monotonic() + 20  # SIGKILLed members take a moment to be gone (reaped by init)
        while any(group_alive(p.pid) for p in self.processes) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def driver_env(self, project: Path | None = None) -> dict[str, str]:
        """The environment of a driver process for this cluster: the project on PYTHONPATH (the driver imports it;
        the executors get it from the job), the executors' Python without the project, Java as Spark needs it."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
        if project is not None:
            env["PYTHONPATH"] = str(project)
        env["PYSPARK_PYTHON"] = str(self.executor_python)
        env["JAVA_HOME"] = _java_home()
        env["SPARK_LOCAL_IP"] = LOOPBACK  # the driver listens on loopback too (spark.driver.host follows it)
        return env
