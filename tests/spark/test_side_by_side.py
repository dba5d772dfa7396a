"""The side-by-side runner the multi-process Spark tests use (tests/spark/side_by_side.py): no process can block
on its own output, one failure stops the rest at once, and a hang ends with every process's stacks."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.spark.side_by_side import run_side_by_side

PY = sys.executable


def _job(body: str) -> list[str]:
    return [PY, "-c", "from tests.spark.side_by_side import enable_stack_dumps\nenable_stack_dumps()\n" + body]


def test_a_loud_process_never_blocks_on_its_output(tmp_path: Path) -> None:
    # 1 MiB of output: a pipe nobody reads holds 64 KiB.
    done = run_side_by_side({"loud": _job("import sys\nfor _ in range(1024): sys.stdout.write('x' * 1023 + '\\n')"),
                             "quiet": _job("pass")}, tmp_path, timeout_s=120)
    assert done["loud"].returncode == done["quiet"].returncode == 0
    assert len(done["loud"].output) == 1024 * 1024


def test_one_failure_stops_a_peer_waiting_for_it_with_both_outputs(tmp_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(AssertionError) as caught:
        run_side_by_side({"dies": _job("print('dying'); raise SystemExit(3)"),
                          "waits": _job("import time\nprint('waiting', flush=True)\ntime.sleep(600)")},
                         tmp_path, timeout_s=600)
    message = str(caught.value)
    assert time.monotonic() - start < 60
    assert message.startswith("dies failed")
    assert "--- dies (exit 3) ---" in message and "dying" in message
    assert "--- waits (exit stopped) ---" in message and "waiting" in message
    assert "Current thread" in message  # its stack, dumped before it was stopped


def test_a_hang_ends_at_the_time_limit_with_the_stacks(tmp_path: Path) -> None:
    with pytest.raises(AssertionError) as caught:
        run_side_by_side({"hangs": _job("import time\ndef stuck_here():\n    time.sleep(600)\nstuck_here()")},
                         tmp_path, timeout_s=3)
    message = str(caught.value)
    assert message.startswith("still running after 3 s")
    assert "stuck_here" in message
