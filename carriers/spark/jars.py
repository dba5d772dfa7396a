"""Fetch the pinned Delta/Iceberg/sqlite-jdbc jars from Maven Central into a cache the project controls — no Maven.

``carriers/spark/pom.xml`` pins the artifacts (group, artifact, version) and ``carriers/spark/jars.sha256`` pins
their bytes. Every dependency in the pom excludes all transitive ones (pyspark ships them), so the pom is a flat
list: each jar is downloaded over HTTPS from its repository path, its SHA-256 checked against the pin, and only
then moved into ``<cache>/jars``. The fetch runs once; later calls only check the files.

Spark's own Ivy resolver (``spark.jars.packages``) is not used: it needs the network at every cold session start
and resolves every transitive dependency, most of which pyspark already ships.

    python -m carriers.spark.jars                 # fetch (if needed) and print the jar paths
    python -m carriers.spark.jars --update-pins   # after a version bump: re-pin, cross-checked with the repository
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import hashlib
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from carriers.spark.errors import JarFetchError

__all__ = [
    "Artifact",
    "JarFetchError",
    "artifacts",
    "default_cache_dir",
    "ensure_jars",
    "expected_jar_names",
    "file_lock",
    "pins",
    "pom_text",
    "repository_url",
]

_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_STAMP = ".pins-sha256"
# Maven's own built-in address for Central; $RECIPE_ATTEST_MAVEN_REPO points elsewhere (a mirror, a proxy).
CENTRAL = "https://repo.maven.apache.org/maven2"
_ATTEMPTS = 3
_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Artifact:
    """One pinned jar: Maven coordinates, and where it lives in a Maven 2 repository layout."""

    group: str
    artifact: str
    version: str

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def repo_path(self) -> str:
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"


def default_cache_dir() -> Path:
    """``$RECIPE_ATTEST_CACHE`` if set, else ``~/.cache/recipe-attest``."""
    env = os.environ.get("RECIPE_ATTEST_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "recipe-attest"


def repository_url() -> str:
    """``$RECIPE_ATTEST_MAVEN_REPO`` if set, else Maven Central."""
    return (os.environ.get("RECIPE_ATTEST_MAVEN_REPO") or CENTRAL).rstrip("/")


def pom_text() -> str:
    """The packaged pom.xml that pins the jars' coordinates."""
    return resources.files("carriers.spark").joinpath("pom.xml").read_text(encoding="utf-8")


def pins_text() -> str:
    """The packaged jars.sha256 (``sha256sum`` format) that pins the jars' bytes."""
    return resources.files("carriers.spark").joinpath("jars.sha256").read_text(encoding="utf-8")


def pins(text: str | None = None) -> dict[str, str]:
    """File name -> lowercase SHA-256, from ``sha256sum``-style lines (``#`` comments allowed)."""
    found: dict[str, str] = {}
    for line in (text if text is not None else pins_text()).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        digest, _, name = line.strip().partition("  ")
        if len(digest) != 64 or not name:
            raise ValueError(f"bad line in jars.sha256: {line!r}")
        found[name.strip()] = digest.lower()
    return found


def artifacts(pom: str | None = None) -> list[Artifact]:
    """The pom's dependencies, in pom order, with ``${properties}`` expanded."""
    root = ET.fromstring(pom if pom is not None else pom_text())
    props = {el.tag.split("}", 1)[1]: (el.text or "").strip() for el in root.findall("m:properties/*", _NS)}

    def field(dep: ET.Element, name: str) -> str:
        value = dep.findtext(f"m:{name}", default="", namespaces=_NS).strip()
        for key, val in props.items():
            value = value.replace("${" + key + "}", val)
        if "${" in value or not value:
            raise ValueError(f"unresolved or empty <{name}> in pom.xml: {value!r}")
        return value

    return [
        Artifact(field(dep, "groupId"), field(dep, "artifactId"), field(dep, "version"))
        for dep in root.findall("m:dependencies/m:dependency", _NS)
    ]


def expected_jar_names(pom: str | None = None) -> list[str]:
    """File names of the pom's jars, in pom order (what ``mvn dependency:copy-dependencies`` would produce too)."""
    return [a.file_name for a in artifacts(pom)]


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on ``path`` (created if absent): one process at a time fills a cache entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _complete(jar_dir: Path, names: list[str], stamp: str) -> bool:
    marker = jar_dir / _STAMP
    return (
        marker.is_file()
        and marker.read_text(encoding="utf-8").strip() == stamp
        and all((jar_dir / n).is_file() for n in names)
    )


class _Announce:
    """What the first session of a machine downloads, said once on stderr (with progress on a terminal): the jars
    are large and a silent first ``local_session`` looked hung."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.live = not quiet and sys.stderr.isatty()

    def start(self, count: int, base: str, jar_dir: Path) -> None:
        if not self.quiet:
            print(f"recipe-attest: downloading {count} pinned Spark jar(s) from {base} into {jar_dir} — once: later "
                  "sessions reuse them (each checked against its SHA-256 pin)", file=sys.stderr, flush=True)

    def progress(self, name: str, done: int, total: int | None) -> None:
        if self.live:
            of = f" of {total / 1e6:.1f}" if total else ""
            print(f"\r  {name}: {done / 1e6:.1f}{of} MB", end="", file=sys.stderr, flush=True)

    def done(self, name: str, size: int) -> None:
        if self.live:
            print(f"\r  {name}: {size / 1e6:.1f} MB, checked", file=sys.stderr, flush=True)
        elif not self.quiet:
            print(f"  {name}: {size / 1e6:.1f} MB, checked", file=sys.stderr, flush=True)


def _download(url: str, dest: Path, progress: Callable[[int, int | None], None] | None = None) -> str:
    """Stream ``url`` into ``dest``, returning the SHA-256 of what arrived; retries transient failures. ``progress``
    is told the bytes so far and the total the server announced (None when it did not)."""
    last: Exception | None = None
    for attempt in range(_ATTEMPTS):
        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as resp, dest.open("wb") as out:
                length = resp.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                done = 0
                for block in iter(lambda: resp.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done, total)
            return digest.hexdigest()
        except urllib.error.HTTPError as exc:
            if exc.code < 500:  # 404 and friends will not fix themselves
                raise JarFetchError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
            last = exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            last = exc
        if attempt + 1 < _ATTEMPTS:
            time.sleep(1.0 + attempt)
    reason = getattr(last, "reason", last)
    raise JarFetchError(
        f"could not download {url} ({reason}); check the network or set RECIPE_ATTEST_MAVEN_REPO to a mirror"
    )


def ensure_jars(cache_dir: Path | None = None, *, quiet: bool = False) -> list[Path]:
    """Return the jar paths for ``spark.jars``, downloading any that are not cached and verified yet: announced once on
    stderr (what, from where, into where), with each jar's progress on a terminal; ``quiet`` says nothing.

    Idempotent and cheap once the jars are there (a stamp file records the pins they were checked against; a
    changed pom or pin file triggers a re-check, which keeps every cached jar whose SHA-256 still matches). Jars
    not in the pom are removed so no old version lingers on the classpath. A lock file serialises concurrent
    fetches from several processes. Raises JarFetchError on a network failure, a missing pin or a SHA-256
    mismatch (the bad download is deleted).
    """
    cache = (cache_dir if cache_dir is not None else default_cache_dir()).expanduser().resolve()
    jar_dir = cache / "jars"
    pom, pin_text = pom_text(), pins_text()
    wanted = artifacts(pom)
    names = [a.file_name for a in wanted]
    paths = [jar_dir / n for n in names]
    stamp = hashlib.sha256((pom + "\0" + pin_text).encode("utf-8")).hexdigest()
    if _complete(jar_dir, names, stamp):
        return paths

    pinned = pins(pin_text)
    unpinned = [n for n in names if n not in pinned]
    if unpinned:
        raise JarFetchError(
            f"no SHA-256 pin for {unpinned} in carriers/spark/jars.sha256: run "
            "`python -m carriers.spark.jars --update-pins` after changing pom.xml"
        )
    with file_lock(cache / "jars.lock"):
        if _complete(jar_dir, names, stamp):  # another process fetched them while we waited
            return paths
        jar_dir.mkdir(parents=True, exist_ok=True)
        (jar_dir / _STAMP).unlink(missing_ok=True)
        for stray in jar_dir.iterdir():  # an older pin's jars, or a download cut short; nothing else
            if stray.name.endswith((".jar", ".part")) and stray.name not in names and stray.is_file():
                stray.unlink()
        base = repository_url()
        todo = [(art, path) for art, path in zip(wanted, paths, strict=True)
                if not (path.is_file() and _sha256(path) == pinned[art.file_name])]
        announce = _Announce(quiet)
        if todo:
            announce.start(len(todo), base, jar_dir)
        for art, path in todo:
            url = f"{base}/{art.repo_path}"
            part = path.with_name(f".{path.name}.part")
            name = art.file_name
            try:
                got = _download(url, part, functools.partial(announce.progress, name))
                if got != pinned[art.file_name]:
                    raise JarFetchError(
                        f"{url} has SHA-256 {got}, pinned {pinned[art.file_name]}: refusing it "
                        "(a tampered mirror, or a pin to update with --update-pins)"
                    )
                os.replace(part, path)
                announce.done(name, path.stat().st_size)
            finally:
                part.unlink(missing_ok=True)
        (jar_dir / _STAMP).write_text(stamp + "\n", encoding="utf-8")
    return paths


def update_pins(pins_path: Path) -> str:
    """Download every pom artifact, cross-check it with the repository's own ``.sha1``, and write the pin file.

    Trust on first use, cross-checked: the bytes are pinned only when their SHA-1 matches the one the repository
    publishes next to them. Returns the new pin file's text.
    """
    base = repository_url()
    lines = [
        "# SHA-256 of every jar in pom.xml (sha256sum format), written by",
        "# `python -m carriers.spark.jars --update-pins`, each cross-checked against the .sha1 the repository",
        "# publishes. carriers/spark/jars.py refuses any other bytes.",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for art in artifacts():
            url = f"{base}/{art.repo_path}"
            dest = Path(tmp) / art.file_name
            sha256 = _download(url, dest)
            with urllib.request.urlopen(url + ".sha1", timeout=_TIMEOUT_S) as resp:
                published = resp.read().decode("ascii", "replace").split()[0].lower()
            actual = hashlib.sha1(dest.read_bytes(), usedforsecurity=False).hexdigest()
            if actual != published:
                raise JarFetchError(f"{url}: SHA-1 {actual} differs from the published {published}")
            lines.append(f"{sha256}  {art.file_name}")
    text = "\n".join(lines) + "\n"
    pins_path.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m carriers.spark.jars",
        description="Fetch (if needed) the Delta/Iceberg jars for the local Spark stack and print their paths.",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: $RECIPE_ATTEST_CACHE or ~/.cache/recipe-attest"
    )
    parser.add_argument("--verbose", action="store_true", help="name each download")
    parser.add_argument("--classpath", action="store_true", help="print one comma-separated line (for spark.jars)")
    parser.add_argument(
        "--update-pins", action="store_true", help="re-pin carriers/spark/jars.sha256 from the repository (maintainers)"
    )
    args = parser.parse_args(argv)
    try:
        if args.update_pins:
            print(update_pins(Path(__file__).with_name("jars.sha256")), end="")
            return 0
        jars = ensure_jars(args.cache_dir, quiet=not args.verbose)
    except (JarFetchError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(",".join(map(str, jars)) if args.classpath else "\n".join(map(str, jars)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
