"""tests/xdist_groups.py: under `make test` (two xdist workers), the tests of one xdist group run on one worker.

xdist 3.8's own `--dist loadgroup` spread them over both under pytest 9 (measured: two shared Spark sessions side by
side); this runs a small suite as `make test` runs ours and reads which worker ran each test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest

@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    pass

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
'''

CONFTEST = f'''
import sys
sys.path.insert(0, {str(ROOT)!r})
import pytest
from tests import xdist_groups

def pytest_collection_modifyitems(config, items):
    xdist_groups.publish(items)

def pytest_configure(config):
    xdist_groups.configure(config)

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return xdist_groups.scheduler(config, log)
'''


def _workers(tmp_path: Path, *extra: str) -> dict[str, set[str]]:
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-n", "2", *extra,
                           "test_suite.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran: dict[str, set[str]] = {}
    for worker, name in re.findall(r"\[(gw\d+)\][^\n]*PASSED test_suite\.py::(test_\w+)\[", done.stdout):
        ran.setdefault(name, set()).add(worker)
    return ran


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="needs pytest-xdist (the `dev` extra)")
    ran = _workers(tmp_path, "--dist", "loadgroup")
    assert len(ran["test_grouped"]) == 1, ran
    assert ran["test_free"], ran


def test_the_groups_folder_is_removed(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="needs pytest-xdist (the `dev` extra)")
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob("attest-xdist-groups-*"))
    _workers(tmp_path, "--dist", "loadgroup")
    assert set(Path(tempfile.gettempdir()).glob("attest-xdist-groups-*")) - before == set()  # another run's may go
