"""The command line's contract: one spelling per code, one JSON object on every path, arguments validated per
format, honest exit codes (issue 15's list and issue 9's CLI items)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import Code
from tests.conftest import cli_in_process, run_cli

ROOT = Path(__file__).resolve().parents[1]


cli = cli_in_process


def cli_json(*args: str) -> tuple[int, Any]:
    rc, out, _ = cli(*args, "--json")
    return rc, json.loads(out)


@pytest.fixture
def delta(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(path), pa.table({"x": [i]}), mode="append")
    assert cli("record", str(path), "--model", "m", "--sql", "SELECT 1")[0] == 0
    return path


# ---- codes ---------------------------------------------------------------------------------------------------------
def test_every_code_has_one_spelling_and_is_documented() -> None:
    values = [c.value for c in Code]
    assert len(values) == len(set(values))
    assert all(re.fullmatch(r"[a-z][a-z_]*", v) for v in values)
    listed = re.findall(r"^\| `([a-z_]+)`", (ROOT / "docs" / "errors.md").read_text(), re.M)
    assert sorted(listed) == sorted(values), "docs/errors.md must list every Code exactly once"


def test_the_verdict_spells_a_code_as_the_error_line_does(delta: Path) -> None:
    write_deltalake(str(delta), pa.table({"x": [9]}), mode="append")
    rc, out, _ = cli("verify", str(delta))
    assert rc == 1 and out.splitlines()[-1].endswith(": stale") and "  stale: " in out
    assert "STALE" not in out.splitlines()[-1].split("—")[-1]


# ---- one JSON object on every path ---------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("verify", "/nonexistent/t"), ("show", "/nonexistent/t"), ("lineage", "/nonexistent/t"),
    ("audit", "/nonexistent/t"), ("record", "/nonexistent/t", "--model", "m", "--sql", "SELECT 1"),
    ("digest", "/nonexistent.json"), ("verify", "x.json", "--level", "nonsense"), ("verify",),
])
def test_json_on_every_error_path(args: tuple[str, ...]) -> None:
    rc, doc = cli_json(*args)
    assert rc == 2 and isinstance(doc, dict) and doc["passed"] is False and doc["errors"][0]["code"], doc


def test_an_internal_error_is_one_coded_object(delta: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import attest.verify.table as table

    def boom(*a: Any, **k: Any) -> Any:
        raise ZeroDivisionError("unforeseen")

    monkeypatch.setattr(table, "verify_state", boom)  # the decision procedure every table verification calls
    rc, doc = cli_json("verify", str(delta))
    assert rc == 2 and doc["verdict"] == "ERROR" and doc["errors"][0]["code"] == "internal_error"
    assert "ZeroDivisionError" in doc["errors"][0]["message"]
    rc, _, err = cli("verify", str(delta))
    assert rc == 2 and err.startswith("attest: internal_error: ZeroDivisionError") and "Traceback" not in err


def test_unattested_json_names_no_requested_level(tmp_path: Path) -> None:
    write_deltalake(str(tmp_path / "bare"), pa.table({"x": [1]}))
    rc, doc = cli_json("verify", str(tmp_path / "bare"))
    assert rc == 1 and doc["attested"] is False and "requested_level" not in doc


# ---- versions, validated per format ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("extra", "fragment"), [(("--version", "abc"), "not a Delta version"),
                                                (("--version", "-1"), "not a Delta version"),
                                                (("--snapshot-id", "5"), "use --version")])
def test_delta_version_arguments(delta: Path, extra: tuple[str, ...], fragment: str) -> None:
    rc, doc = cli_json("verify", str(delta), *extra)
    assert rc == 2 and doc["errors"][0]["code"] == "invalid_argument" and fragment in doc["errors"][0]["message"]


def test_a_version_given_twice_must_agree(delta: Path) -> None:
    assert cli("verify", f"{delta}@2", "--version", "2")[0] == 0
    rc, doc = cli_json("verify", f"{delta}@2", "--version", "1")
    assert rc == 2 and doc["errors"][0]["code"] == "invalid_argument"


def test_a_missing_delta_table_is_table_not_found(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_delta_log").mkdir()
    rc, doc = cli_json("verify", str(tmp_path / "empty"))
    assert rc == 2 and doc["errors"][0]["code"] in ("table_not_found", "table_unreadable")


def test_storage_option_values_are_never_echoed(delta: Path) -> None:
    rc, doc = cli_json("verify", str(delta), "--storage-option", "AWS_SECRET_ACCESS_KEY_sup3rs3cret")
    assert rc == 2 and "sup3rs3cret" not in json.dumps(doc)


# ---- record ----------------------------------------------------------------------------------------------------------
def test_record_detached_writes_no_commit(tmp_path: Path) -> None:
    path = tmp_path / "d"
    write_deltalake(str(path), pa.table({"x": [1]}))
    log_before = sorted((path / "_delta_log").glob("*.json"))
    rc, doc = cli_json("record", str(path), "--model", "m", "--sql", "SELECT 1", "--detached")
    assert rc == 0 and doc["recorded"] is True and doc["attested_version"] == "0"
    assert sorted((path / "_delta_log").glob("*.json")) == log_before
    assert (path / "_recipe_attest" / "versions" / "0.json").is_file()
    assert cli("verify", str(path))[0] == 0


def test_reattesting_without_the_inputs_needs_replace(tmp_path: Path) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    write_deltalake(str(up), pa.table({"x": [1]}))
    write_deltalake(str(down), pa.table({"x": [1]}))
    assert cli("record", str(up), "--model", "up", "--sql", "SELECT 1")[0] == 0
    assert cli("record", str(down), "--model", "down", "--sql", "SELECT 1", "--input", str(up))[0] == 0
    rc, doc = cli_json("record", str(down), "--model", "down", "--sql", "SELECT 1")
    assert rc == 1 and doc["errors"][0]["code"] == "evidence_dropped", doc
    assert "delta:" in doc["errors"][0]["message"]
    rc, out, _ = cli("record", str(down), "--model", "down", "--sql", "SELECT 1", "--replace")
    assert rc == 0 and "replaces: the attestation of version 0" in out and out.splitlines()[-1].startswith(
        "RECORDED")


def test_record_of_a_superseded_version_exits_1(delta: Path) -> None:
    """Asked to attest an older data version in properties mode: it could never be in force."""
    from carriers.delta.carrier import DeltaCarrier

    write_deltalake(str(delta), pa.table({"x": [9]}), mode="append")
    from attest.errors import SupersededError

    with pytest.raises(SupersededError):
        DeltaCarrier(str(delta)).record(model="m", program_hash="a" * 64, version=2)


# ---- lineage ---------------------------------------------------------------------------------------------------------
def test_lineage_exits_1_when_an_upstream_node_fails(tmp_path: Path) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    write_deltalake(str(up), pa.table({"x": [1]}))
    write_deltalake(str(down), pa.table({"x": [1]}))
    assert cli("record", str(up), "--model", "up", "--sql", "SELECT 1")[0] == 0
    assert cli("record", str(down), "--model", "down", "--sql", "SELECT 1", "--input", str(up))[0] == 0
    assert cli("lineage", str(down))[0] == 0
    victim = next(up.glob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:-1] + b"\x00")
    rc, doc = cli_json("lineage", str(down), "--level", "bytes")
    assert rc == 1 and doc["passed"] is False and doc["inputs"][0]["passed"] is False


# ---- the installed command -------------------------------------------------------------------------------------------
def test_python_dash_m_and_argparse_errors_as_json() -> None:
    proc = run_cli("verify", "--level", "x", "m.json", "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["errors"][0]["code"] == "invalid_argument"


def test_delta_rs_log_lines_stay_off_the_terminal_unless_asked_for(tmp_path: Path) -> None:
    """Without credentials, the AWS SDK inside delta-rs warns (its credential chain asks the instance metadata service)
    through delta-rs's logger: a screen of WARN lines came before the coded error. The command line asks for errors
    only unless RUST_LOG is set (then everything shows, as here, which is also what makes this test able to fail)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in ("RUST_LOG", "ATTEST_DEBUG")}
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "absent")
    command = [sys.executable, "-m", "attest.cli", "verify", "s3://no-such-bucket/t", "--json"]
    asked = subprocess.run(command, env={**env, "RUST_LOG": "warn"}, capture_output=True, text=True, timeout=300)
    assert " WARN " in asked.stderr, asked.stderr
    quiet = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert quiet.stderr == "" and json.loads(quiet.stdout)["errors"][0]["code"] == "table_unreadable", quiet
