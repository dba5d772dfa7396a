"""Peak memory of a step measured in a fresh process (tests/iceberg/test_kept_stream.py,
tests/objectstore/test_sidecar_stores.py): a script run with ``python -c``, given ``hwm``/``rss``/``reset``/``peak_of``
(the peak resident set from /proc, VmHWM reset before the step), its last line of output JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PROBE = r'''
def hwm():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM:"))

def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmRSS:"))

def reset():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # the peak (VmHWM) starts again from what is resident now

def peak_of(call):
    import gc
    gc.collect()
    reset()
    base = rss()
    out = call()
    return out, hwm() - base
'''


def run_probe(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` (after PROBE) in a fresh interpreter with ``args``: the JSON object its last line prints."""
    out = subprocess.run([sys.executable, "-c", PROBE + script, *args], capture_output=True, text=True, timeout=600,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
