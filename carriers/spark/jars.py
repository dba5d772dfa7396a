"""Fetch the pinned Delta/Iceberg/sqlite-jdbc jars with Maven into a cache directory the project controls.

Spark's own Ivy resolver (``spark.jars.packages``) is not used: it needs network access at session start
and resolves every transitive dependency, most of which pyspark already ships. Instead the jars listed in
``carriers/spark/pom.xml`` are copied by ``mvn dependency:copy-dependencies`` into ``<cache>/jars`` with a
private local repository ``<cache>/m2``. The fetch runs once; later calls only check the files.

    python -m carriers.spark.jars            # fetch (if needed) and print the jar paths
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

__all__ = ["JarFetchError", "default_cache_dir", "ensure_jars", "expected_jar_names", "pom_text"]

_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_STAMP = ".pom-sha256"


class JarFetchError(RuntimeError):
    """Maven is missing, or it failed to fetch the jars (the message ends with the tail of its output)."""


def default_cache_dir() -> Path:
    """``$RECIPE_ATTEST_CACHE`` if set, else ``~/.cache/recipe-attest``."""
    env = os.environ.get("RECIPE_ATTEST_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "recipe-attest"


def pom_text() -> str:
    """The packaged pom.xml that pins the jars."""
    return resources.files("carriers.spark").joinpath("pom.xml").read_text(encoding="utf-8")


def expected_jar_names(pom: str | None = None) -> list[str]:
    """File names ``copy-dependencies`` produces for the pom's dependencies, in pom order."""
    root = ET.fromstring(pom if pom is not None else pom_text())
    props = {el.tag.split("}", 1)[1]: (el.text or "").strip() for el in root.findall("m:properties/*", _NS)}

    def expand(value: str) -> str:
        for key, val in props.items():
            value = value.replace("${" + key + "}", val)
        if "${" in value:
            raise ValueError(f"unresolved property in pom.xml: {value}")
        return value

    names = []
    for dep in root.findall("m:dependencies/m:dependency", _NS):
        artifact = expand(dep.findtext("m:artifactId", default="", namespaces=_NS).strip())
        version = expand(dep.findtext("m:version", default="", namespaces=_NS).strip())
        names.append(f"{artifact}-{version}.jar")
    return names


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _complete(jar_dir: Path, names: list[str], digest: str) -> bool:
    stamp = jar_dir / _STAMP
    return (
        stamp.is_file()
        and stamp.read_text(encoding="utf-8").strip() == digest
        and all((jar_dir / n).is_file() for n in names)
    )


def ensure_jars(cache_dir: Path | None = None, *, quiet: bool = True) -> list[Path]:
    """Return the jar paths for ``spark.jars``, fetching them with ``mvn`` first if they are not cached.

    Idempotent and cheap once the jars are there (a stamp file records the pom they came from; a changed
    pom triggers a fresh fetch). A lock file serialises concurrent fetches from several processes.
    Raises JarFetchError when ``mvn`` is not on PATH (or ``$RECIPE_ATTEST_MVN``) or the fetch fails.
    """
    cache = (cache_dir if cache_dir is not None else default_cache_dir()).expanduser().resolve()
    jar_dir = cache / "jars"
    pom = pom_text()
    digest = hashlib.sha256(pom.encode("utf-8")).hexdigest()
    names = expected_jar_names(pom)
    paths = [jar_dir / n for n in names]
    if _complete(jar_dir, names, digest):
        return paths

    with _locked(cache / "jars.lock"):
        if _complete(jar_dir, names, digest):  # another process fetched them while we waited
            return paths
        mvn = os.environ.get("RECIPE_ATTEST_MVN") or shutil.which("mvn")
        if not mvn:
            raise JarFetchError(
                "Maven ('mvn') is needed to fetch the Spark jars but is not on PATH "
                "(install it, e.g. `apt-get install maven`, or set RECIPE_ATTEST_MVN)"
            )
        if jar_dir.exists():  # stale or partial: start clean so no old version lingers on the classpath
            shutil.rmtree(jar_dir)
        jar_dir.mkdir(parents=True)
        pom_path = cache / "pom.xml"
        pom_path.write_text(pom, encoding="utf-8")
        cmd = [
            mvn,
            "-B",
            *(["-q"] if quiet else []),
            "-Dstyle.color=never",
            "-f",
            str(pom_path),
            f"-Dmaven.repo.local={cache / 'm2'}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={jar_dir}",
        ]
        try:
            proc = subprocess.run(
                cmd,
                cwd=cache,
                stdout=subprocess.PIPE if quiet else None,
                stderr=subprocess.STDOUT if quiet else None,
                text=True,
                check=False,
            )
        except OSError as exc:
            raise JarFetchError(f"could not run {mvn}: {exc}") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout or "").strip().splitlines()[-25:])
            raise JarFetchError(f"`{' '.join(cmd)}` failed with exit code {proc.returncode}\n{tail}".rstrip())
        missing = [n for n in names if not (jar_dir / n).is_file()]
        if missing:
            raise JarFetchError(f"mvn succeeded but these jars are missing from {jar_dir}: {missing}")
        (jar_dir / _STAMP).write_text(digest + "\n", encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m carriers.spark.jars",
        description="Fetch (if needed) the Delta/Iceberg jars for the local Spark stack and print their paths.",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: $RECIPE_ATTEST_CACHE or ~/.cache/recipe-attest"
    )
    parser.add_argument("--verbose", action="store_true", help="show Maven's output")
    parser.add_argument("--classpath", action="store_true", help="print one comma-separated line (for spark.jars)")
    args = parser.parse_args(argv)
    try:
        jars = ensure_jars(args.cache_dir, quiet=not args.verbose)
    except JarFetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(",".join(map(str, jars)) if args.classpath else "\n".join(map(str, jars)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
