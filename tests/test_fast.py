"""The start-up fast path (attest/fast/) is one switch: ``ATTEST_FAST=0`` turns all of it off, and every verdict and
every output stays the same; only the imports and the time differ (benchmarks/bench_cli.py --fast-off measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import blake3
import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "a" * 64

# Run in a fresh interpreter: what the process imported, and what `attest verify` printed and exited with.
_PROBE = ("import sys\n"
          "before = set(sys.modules)\n"
          "sys.argv = ['attest', *sys.argv[1:]]\n"
          "from attest.cli import main\n"
          "code = main()\n"
          "print('IMPORTED', sorted(m for m in ('typing', 'dataclasses', 'inspect', 're', 'argparse')\n"
          "                         if m in sys.modules and m not in before))\n"
          "sys.exit(code)\n")


def _attest(*args: str, fast: bool) -> tuple[int, str, list[str]]:
    env = {**os.environ, "ATTEST_FAST": "1" if fast else "0"}
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    *lines, imported = out.stdout.rstrip("\n").splitlines()
    assert imported.startswith("IMPORTED "), out.stdout + out.stderr
    return out.returncode, "\n".join(lines), json.loads(imported.removeprefix("IMPORTED ").replace("'", '"'))


def _manifest(tmp_path: Path, valid_doc: dict[str, object], payload: bytes) -> Path:
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "a.bin").write_bytes(payload)
    valid_doc["output_hashes"] = [{"path": "a.bin", "hash": blake3.blake3(b"abc").hexdigest()}]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(valid_doc))
    return path


def _comparable(text: str) -> object:
    document = json.loads(text)
    document.pop("elapsed_seconds", None)  # a time, not a verdict
    return document


@pytest.mark.parametrize(("payload", "code"), [(b"abc", 0), (b"abd", 1)])
def test_a_manifest_verify_is_the_same_with_the_fast_path_off(tmp_path: Path, valid_doc: dict[str, object],
                                                               payload: bytes, code: int) -> None:
    m = _manifest(tmp_path, valid_doc, payload)
    line = ("verify", str(m), "--artifacts-dir", str(tmp_path / "art"), "--json")
    on_code, on_out, on_imported = _attest(*line, fast=True)
    off_code, off_out, off_imported = _attest(*line, fast=False)
    assert on_code == off_code == code
    assert _comparable(on_out) == _comparable(off_out)
    # The switch is the whole fast path: on, none of these is imported (tests/test_record.py holds the same); off,
    # the records are dataclasses.
    assert "dataclasses" not in on_imported and "typing" not in on_imported
    assert "dataclasses" in off_imported


def test_a_delta_table_verify_is_the_same_with_the_fast_path_off(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"p": [1, 2], "b": [b"x" * 2000, b"y" * 2000]}))
    attest_after_write(str(table), model="t", program_hash=PROGRAM)
    results = [_attest("verify", str(table), "--level", "bytes", "--json", fast=fast) for fast in (True, False)]
    assert results[0][0] == results[1][0] == 0
    assert _comparable(results[0][1]) == _comparable(results[1][1])
    (next(table.glob("*.parquet"))).write_bytes(b"tampered")  # same verdict both ways: refused
    results = [_attest("verify", str(table), "--level", "bytes", "--json", fast=fast) for fast in (True, False)]
    assert results[0][0] == results[1][0] == 1
    assert _comparable(results[0][1]) == _comparable(results[1][1])


def test_the_switch_off_keeps_the_scanners_rules_and_uses_dataclasses() -> None:
    code = ("import dataclasses, sys\n"
            "from attest import fast\n"
            "from attest.fast import jsonscan\n"
            "from attest.verify.report import Report\n"
            "from attest.fast.record import many_records\n"
            "import gc\n"
            "assert not fast.ON and dataclasses.is_dataclass(Report)\n"
            "assert jsonscan.loads(b'{\"a\": [1, 2.5]}') == {'a': [1, 2.5]}\n"
            "for bad in ('{\"a\": 1, \"a\": 2}', '[NaN]', '[1] x'):\n"
            "    try:\n"
            "        jsonscan.loads_unique(bad)\n"
            "    except ValueError:\n"
            "        continue\n"
            "    sys.exit('accepted ' + bad)\n"
            "with many_records():\n"
            "    assert gc.isenabled()\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "ATTEST_FAST": "0"},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stdout + out.stderr


def test_the_switch_off_starts_no_head_start(tmp_path: Path, valid_doc: dict[str, object]) -> None:
    m = _manifest(tmp_path, valid_doc, b"abc")
    code = ("import sys\n"
            "import attest.fast.startup as s\n"
            "started = []\n"
            "real = s.head_start\n"
            "s.head_start = lambda *a, **k: started.append(1) or real(*a, **k)\n"
            "from attest.cli import main\n"
            f"code = main(['verify', {str(m)!r}, '--artifacts-dir', {str(tmp_path / 'art')!r}])\n"
            "print(code, len(started))\n")
    for fast, expected in (("1", "0 1"), ("0", "0 0")):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "ATTEST_FAST": fast},
                             capture_output=True, text=True, timeout=600)
        assert out.stdout.splitlines() == ["VERIFIED (bytes, unsigned)", expected], out.stdout + out.stderr
