"""``attest.spark`` re-exports ``carriers.spark`` (the same objects), lazily, and type-checks as the real thing."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]


def test_every_export_is_the_carriers_object() -> None:
    import importlib

    import attest.spark

    assert sorted(attest.spark.__all__) == sorted(attest.spark._EXPORTS)
    assert set(attest.spark._EXPORTS.values()) == {"carriers.spark.hook", "carriers.spark.session",
                                                   "carriers.spark.gate", "carriers.spark.distributed",
                                                   "carriers.spark.catalog_audit"}
    for name in attest.spark.__all__:
        module = importlib.import_module(attest.spark._EXPORTS[name])
        assert getattr(attest.spark, name) is getattr(module, name), name
        assert name in dir(attest.spark)
    params = inspect.signature(attest.spark.install).parameters
    assert params["serialize_writes"].default is True and params["guard_timeout_s"].default == 120.0
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        attest.spark.nope  # noqa: B018 - the attribute access is the test


def test_import_is_lazy() -> None:
    code = ("import sys, attest.spark as s; "
            "before = sorted(m for m in ('pyspark', 'py4j', 'deltalake', 'pyiceberg', 'carriers.spark.hook') "
            "if m in sys.modules); "
            "s.install, s.local_session, s.Hook; "
            "after = sorted(m for m in ('pyspark', 'py4j', 'deltalake', 'pyiceberg') if m in sys.modules); "
            "print(before, after, 'carriers.spark.hook' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "[]", "True"]


def test_mypy_sees_the_real_signatures(tmp_path: Path) -> None:
    from mypy import api

    ok = tmp_path / "ok.py"
    ok.write_text("from pyspark.sql import SparkSession\nimport attest.spark\n\n\n"
                  "def f(spark: SparkSession) -> attest.spark.Hook:\n"
                  "    return attest.spark.install(spark, 'required', serialize_writes=False, guard_timeout_s=5.0)\n")
    bad = tmp_path / "bad.py"
    bad.write_text(ok.read_text().replace("guard_timeout_s=5.0", "guard_timeout=5.0"))
    # The project cache (warm after `make typecheck`): checking pyspark from cold takes a minute.
    args = ["--strict", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    out, err, status = api.run([*args, str(ok)])
    assert status == 0, out + err
    out, _, status = api.run([*args, str(bad)])
    assert status == 1 and 'Unexpected keyword argument "guard_timeout"' in out, out


@pytest.mark.spark
def test_install_takes_the_documented_guard_options(spark: SparkSession) -> None:
    import attest.spark

    hook = attest.spark.install(spark, serialize_writes=False, guard_timeout_s=5.0)
    try:
        assert (hook.serialize_writes, hook.guard_timeout_s) == (False, 5.0)
    finally:
        hook.uninstall()
