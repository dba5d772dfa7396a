"""Names a table chose (log paths, folder names, sidecar fields) reach the command line's output: nothing in them may
act on the terminal reading it. A path holding ``\\r``, ``ESC[2K`` and ``ESC[8m`` returned the cursor, cleared the
line and made every later line invisible — the NOT VERIFIED verdict included — while it printed a fake VERIFIED."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attest.errors import AttestError
from tests.adversarial.conftest import write_commit

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "x\r\x1b[2K\x1b[8mVERIFIED (bytes) \u202e\x9b2J.parquet"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def acts_on_a_terminal(text: str) -> list[str]:
    return sorted({c for c in text if not (c.isprintable() or c == "\n")})


@pytest.mark.parametrize("as_json", [False, True])
def test_a_hostile_log_path_never_reaches_the_terminal_raw(delta: Path, as_json: bool) -> None:
    write_commit(delta, [{"add": {"path": HOSTILE, "partitionValues": {"p": "a"}, "size": 5, "modificationTime": 1,
                                  "dataChange": True}}])
    done = run("verify", str(delta), *(["--json"] if as_json else []))
    assert done.returncode == 1, done.stdout + done.stderr
    assert acts_on_a_terminal(done.stdout) == [] and acts_on_a_terminal(done.stderr) == [], done.stdout
    if as_json:  # the same value, escaped: a machine still reads the path the log holds
        doc = json.loads(done.stdout)
        assert any(HOSTILE in e["message"] or e["path"] == HOSTILE for e in doc["errors"]), doc
    else:
        assert "NOT VERIFIED" in done.stdout and "\ufffd" in done.stdout


def test_a_hostile_table_folder_name_never_reaches_the_terminal_raw(delta: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    evil = lake / "t\x1b[8m\r"
    delta.rename(evil)  # delta-rs refuses such a path: the commands say so, in text a terminal cannot act on
    for args in (("audit", str(lake)), ("audit", str(lake), "--json"), ("verify", str(evil)), ("show", str(evil)),
                 ("lineage", str(evil))):
        done = run(*args)
        assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, done.stdout + done.stderr
        assert acts_on_a_terminal(done.stdout) == [] and acts_on_a_terminal(done.stderr) == [], (args, done.stdout)


def test_reports_a_library_user_prints_are_terminal_safe_too() -> None:
    from attest.errors import Code, Problem
    from attest.verify.audit import AuditReport
    from attest.verify.report import Report

    report = Report(subject=f"lake/{HOSTILE}", level="none",
                    errors=[Problem(Code.FILE_MISSING, f"gone: {HOSTILE}", HOSTILE)], notes=[f"note {HOSTILE}"])
    assert acts_on_a_terminal(report.human()) == [] and "\ufffd" in report.human()
    audit = AuditReport()
    audit.add_exception(f"lake/{HOSTILE}", AttestError(f"cannot open {HOSTILE}"))
    audit.add_report(f"lake/{HOSTILE}", report)
    for text in (audit.human(), audit.table()):
        assert acts_on_a_terminal(text) == [] and "\ufffd" in text, text


def test_the_spark_layers_log_is_terminal_safe(caplog: pytest.LogCaptureFixture) -> None:
    from attest.render.terminal import terminal_safe_logger

    log = terminal_safe_logger("attest.spark")
    assert terminal_safe_logger("attest.spark") is log and len(log.filters) == 1  # once
    with caplog.at_level("WARNING", logger="attest.spark"):
        log.warning("attest.spark: skipping the write to %s", HOSTILE)
    assert acts_on_a_terminal(caplog.text) == [] and "skipping the write to x\ufffd" in caplog.text
