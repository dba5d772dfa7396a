"""ensure_jars without the network: a stand-in `mvn` (RECIPE_ATTEST_MVN) records calls and writes files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from carriers.spark.jars import JarFetchError, ensure_jars, expected_jar_names


def _fake_mvn(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-mvn"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


_WRITES_JARS = """
echo call >> "$CALLS"
for arg in "$@"; do case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac; done
for name in $JAR_NAMES; do : > "$out/$name"; done
"""


def test_pom_pins_one_spark_line() -> None:
    names = expected_jar_names()
    assert "delta-spark_4.1_2.13-4.4.0.jar" in names
    assert "iceberg-spark-runtime-4.1_2.13-1.12.0.jar" in names
    assert any(n.startswith("sqlite-jdbc-") for n in names)
    assert not any(n.startswith(("scala-library", "hadoop-", "jackson-databind", "parquet-")) for n in names)


def test_fetches_once_then_reuses_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    monkeypatch.setenv("RECIPE_ATTEST_MVN", str(_fake_mvn(tmp_path, _WRITES_JARS)))
    monkeypatch.setenv("CALLS", str(calls))
    monkeypatch.setenv("JAR_NAMES", " ".join(expected_jar_names()))
    cache = tmp_path / "cache"

    first = ensure_jars(cache)
    assert [p.name for p in first] == expected_jar_names()
    assert all(p.is_file() and p.parent == cache / "jars" for p in first)
    assert ensure_jars(cache) == first
    assert calls.read_text().count("call") == 1

    first[0].unlink()  # an incomplete cache is fetched again
    assert ensure_jars(cache) == first
    assert calls.read_text().count("call") == 2


def test_default_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECIPE_ATTEST_MVN", str(_fake_mvn(tmp_path, _WRITES_JARS)))
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("JAR_NAMES", " ".join(expected_jar_names()))
    monkeypatch.setenv("RECIPE_ATTEST_CACHE", str(tmp_path / "env-cache"))
    assert all(p.parent == (tmp_path / "env-cache" / "jars").resolve() for p in ensure_jars())


def test_failing_mvn_raises_with_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECIPE_ATTEST_MVN", str(_fake_mvn(tmp_path, "echo 'Could not resolve io.delta' >&2\nexit 1\n")))
    with pytest.raises(JarFetchError, match=r"(?s)exit code 1.*Could not resolve io\.delta"):
        ensure_jars(tmp_path / "cache")
    assert not (tmp_path / "cache" / "jars" / ".pom-sha256").exists()


def test_missing_mvn_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECIPE_ATTEST_MVN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn here
    with pytest.raises(JarFetchError, match="not on PATH"):
        ensure_jars(tmp_path / "cache")
    assert os.environ["PATH"] == str(tmp_path)


def test_importing_the_spark_carrier_does_not_import_pyspark() -> None:
    code = "import sys, carriers.spark.session, carriers.spark.jars; sys.exit('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
