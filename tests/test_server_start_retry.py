"""A test server whose port another process took between the pick and the bind is started again on new ports; any
other start failure is raised at once (tests/servers/fixtures.py ``_start``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import BIND_TRIES, _start
from tests.servers.process import ServerError

TAKEN = "SeaweedFS exited with 255: listen tcp 127.0.0.1:39953: bind: address already in use"


def _flaky(failures: list[str]) -> tuple[Any, list[Path]]:
    folders: list[Path] = []

    def start(workdir: Path) -> str:
        folders.append(workdir)
        if failures:
            raise ServerError(failures.pop(0))
        return "server"

    return start, folders


def test_a_port_taken_before_the_bind_is_picked_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    start, folders = _flaky([TAKEN] * (BIND_TRIES - 1))
    assert _start("seaweedfs", start, tmp_path_factory) == "server"
    assert len(folders) == BIND_TRIES and len(set(folders)) == BIND_TRIES  # each try in a folder of its own


def test_a_port_taken_every_time_fails(tmp_path_factory: pytest.TempPathFactory) -> None:
    start, folders = _flaky([TAKEN] * BIND_TRIES)
    with pytest.raises(ServerError, match="address already in use"):
        _start("seaweedfs", start, tmp_path_factory)
    assert len(folders) == BIND_TRIES


def test_any_other_failure_is_raised_at_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    start, folders = _flaky(["SeaweedFS did not become ready in 90s: ..."])
    with pytest.raises(ServerError, match="did not become ready"):
        _start("seaweedfs", start, tmp_path_factory)
    assert len(folders) == 1
