"""`--dist loadgroup` that works under pytest 9: each test marked ``xdist_group(name)`` runs on the worker that runs
the others of its group, one after the other; every other test file is a unit of its own, handed to whichever worker
is free (the biggest units first).

xdist (3.8) passes the group to its controller in the test's id (``item._nodeid += "@name"``), which pytest 9's
nodes no longer read (``Node.nodeid`` is ``str(item._id)``): every test ran wherever, the groups ignored. Here the
workers write each grouped test's id and group to a folder the controller made (``ATTEST_XDIST_GROUPS``, set before
the workers start, so they inherit it); the controller's scheduler reads them once every worker's collection is in.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

ENV = "ATTEST_XDIST_GROUPS"


def configure(config: pytest.Config) -> None:
    """On the controller of a `--dist loadgroup` run: the folder the workers write their groups to."""
    if hasattr(config, "workerinput") or config.getoption("dist", "no") != "loadgroup":
        return
    folder = tempfile.mkdtemp(prefix="attest-xdist-groups-")
    os.environ[ENV] = folder
    config.add_cleanup(lambda: _remove(Path(folder)))


def _remove(folder: Path) -> None:
    for f in folder.glob("*"):
        f.unlink(missing_ok=True)
    folder.rmdir()


def publish(items: list[pytest.Item]) -> None:
    """On a worker: the group of each grouped test, by its id (written whole, then renamed: never read half)."""
    folder, worker = os.environ.get(ENV), os.environ.get("PYTEST_XDIST_WORKER")
    if not folder or not worker or not items or not hasattr(items[0].config, "workerinput"):
        return  # not a worker (a plain pytest a test starts inherits a worker's environment)
    groups = {}
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    tmp = Path(folder) / f".{worker}.json"
    tmp.write_text(json.dumps(groups))
    tmp.replace(Path(folder) / f"{worker}.json")


def scheduler(config: pytest.Config, log: Any) -> Any:
    """The controller's scheduler of a `--dist loadgroup` run (None: xdist chooses as it would)."""
    folder = os.environ.get(ENV)
    if config.getoption("dist", "no") != "loadgroup" or not folder:
        return None
    written = Path(folder)
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first asked once every worker's collection is in, so each wrote its file
                found = sorted(written.glob("gw*.json"))
                self.groups = json.loads(found[0].read_text()) if found else {}
            group = self.groups.get(nodeid)
            return f"group:{group}" if group is not None else nodeid.split("::", 1)[0]

    return GroupScheduling(config, log)
