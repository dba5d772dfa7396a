"""The engine-free core: importing it loads no engine, and the verifier works with nothing but its three deps."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import blake3
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("pyspark", "py4j", "deltalake", "pyiceberg", "pyarrow", "sqlglot", "fsspec")
# Modules that read rows with pyarrow by design, imported only when used (tests/content/test_imports.py).
USES_PYARROW = {"attest.content.encoding"}


def test_importing_the_core_loads_no_engine() -> None:
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "attest").rglob("*.py") if p.name != "__main__.py")  # __main__ runs the command
    modules = [m for m in modules if m not in USES_PYARROW]
    code = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            f"print([m for m in {ENGINES!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_verifier_runs_with_only_blake3_and_jsonschema(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    payload = b"artifact"
    digest = blake3.blake3(payload).hexdigest()
    (tmp_path / f"{digest}.parquet").write_bytes(payload)
    valid_doc["output_hashes"] = [{"hash": digest}]
    (tmp_path / "m.json").write_text(json.dumps(valid_doc))
    # Every optional package is made unimportable: the verifier-only install must not need any of them.
    code = ("import sys\n"
            f"for m in {ENGINES!r}: sys.modules[m] = None\n"
            "from attest.cli import main\n"
            f"sys.exit(main(['verify', {str(tmp_path / 'm.json')!r}, '--artifacts-dir', {str(tmp_path)!r}]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1] == "VERIFIED (bytes, unsigned)"


@pytest.mark.parametrize(("ref", "extra"), [("iceberg://prod/sales.orders", "iceberg"), ("s3://bucket/t", "delta")])
def test_the_verifier_only_install_names_the_missing_extra(ref: str, extra: str) -> None:
    """A table reference on an install without the table libraries: one coded line saying what to install."""
    code = ("import sys\n"
            f"for m in {ENGINES!r}: sys.modules[m] = None\n"
            "from attest.cli import main\n"
            f"sys.exit(main(['verify', {ref!r}, '--json']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2, out.stdout + out.stderr
    error = json.loads(out.stdout)["errors"][0]
    assert error["code"] == "extra_missing" and f"recipe-attest[{extra}]" in error["message"]
    assert "Traceback" not in out.stderr


def test_core_dependencies_are_only_blake3_jsonschema_and_cryptography() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # cryptography: signed attestations are verified by the verifier-only install too (docs/signing.md).
    assert sorted(d.split(">")[0].split("=")[0] for d in project["dependencies"]) == [
        "blake3", "cryptography", "jsonschema"]
    assert {"delta", "iceberg", "spark", "all", "dev"} <= set(project["optional-dependencies"])
    assert project["scripts"]["attest"] == "attest.cli:run"
