"""ensure_jars without Maven and without the internet: a stand-in repository served on 127.0.0.1.

The repository serves made-up bytes for every pom artifact and the pins are those bytes' SHA-256, so the tests
exercise the real download, checksum, cache and lock code; the packaged pins are checked against the pom, and the
real Maven Central download is exercised by tests/test_bootstrap.py.
"""

from __future__ import annotations

import hashlib
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from carriers.spark import jars
from carriers.spark.jars import JarFetchError, artifacts, ensure_jars, expected_jar_names, pins


@dataclass
class Repo:
    """A Maven 2 layout over HTTP: path -> bytes, with a log of every GET."""

    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def repo(monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    state = Repo()
    for art in artifacts():
        state.files["/" + art.repo_path] = f"jar bytes of {art.file_name}".encode()
    pin_text = "".join(
        f"{hashlib.sha256(state.files['/' + a.repo_path]).hexdigest()}  {a.file_name}\n" for a in artifacts()
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            body = state.files.get(self.path)
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/maven2"
    state.files = {"/maven2" + k: v for k, v in state.files.items()}
    monkeypatch.setenv("RECIPE_ATTEST_MAVEN_REPO", state.url)
    monkeypatch.setattr(jars, "pins_text", lambda: pin_text)
    monkeypatch.setattr(jars.time, "sleep", lambda _s: None)  # no back-off waits in tests
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_pom_pins_one_spark_line() -> None:
    names = expected_jar_names()
    assert "delta-spark_4.1_2.13-4.4.0.jar" in names
    assert "iceberg-spark-runtime-4.1_2.13-1.12.0.jar" in names
    assert any(n.startswith("sqlite-jdbc-") for n in names)
    assert not any(n.startswith(("scala-library", "hadoop-client", "hadoop-common", "jackson-databind", "parquet-"))
                   for n in names)


def test_hadoop_aws_matches_the_hadoop_pyspark_ships() -> None:
    """S3A must be the Hadoop release pyspark's hadoop-client jars are (a mismatch fails at the first s3a:// use)."""
    pyspark = pytest.importorskip("pyspark", reason="needs the `spark` extra")
    shipped = sorted(p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert len(shipped) == 1
    version = shipped[0].removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert f"hadoop-aws-{version}.jar" in expected_jar_names()


def test_every_pom_jar_has_exactly_one_sha256_pin() -> None:
    pinned = pins()
    assert sorted(pinned) == sorted(expected_jar_names())
    assert all(len(d) == 64 and int(d, 16) >= 0 and d == d.lower() for d in pinned.values())
    assert artifacts()[0].repo_path == "io/delta/delta-spark_4.1_2.13/4.4.0/delta-spark_4.1_2.13-4.4.0.jar"


def test_fetches_once_then_reuses_the_cache(repo: Repo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = ensure_jars(cache)
    assert [p.name for p in first] == expected_jar_names()
    assert all(p.read_bytes() == repo.files[f"/maven2/{a.repo_path}"] for p, a in zip(first, artifacts(), strict=True))
    assert len(repo.requests) == len(first)

    assert ensure_jars(cache) == first
    assert len(repo.requests) == len(first)  # cached: no request at all

    first[0].unlink()  # an incomplete cache fetches what is missing, only that
    assert ensure_jars(cache) == first
    assert repo.requests[len(first):] == [f"/maven2/{artifacts()[0].repo_path}"]
    assert sorted(p.name for p in (cache / "jars").iterdir() if not p.name.startswith(".")) == sorted(
        expected_jar_names()
    )


def test_a_changed_pin_refetches_only_that_jar_and_drops_strays(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    paths = ensure_jars(cache)
    (cache / "jars" / "delta-spark_4.1_2.13-4.3.0.jar").write_bytes(b"an older pin")
    art = artifacts()[-1]
    repo.files[f"/maven2/{art.repo_path}"] = b"new bytes"
    pin_text = jars.pins_text().replace(
        hashlib.sha256(f"jar bytes of {art.file_name}".encode()).hexdigest(), hashlib.sha256(b"new bytes").hexdigest()
    )
    monkeypatch.setattr(jars, "pins_text", lambda: pin_text)
    before = len(repo.requests)

    assert ensure_jars(cache) == paths
    assert repo.requests[before:] == [f"/maven2/{art.repo_path}"]
    assert paths[-1].read_bytes() == b"new bytes"
    assert not (cache / "jars" / "delta-spark_4.1_2.13-4.3.0.jar").exists()


def test_bytes_that_do_not_match_the_pin_are_refused(repo: Repo, tmp_path: Path) -> None:
    art = artifacts()[2]
    repo.files[f"/maven2/{art.repo_path}"] = b"tampered"
    cache = tmp_path / "cache"
    with pytest.raises(JarFetchError, match=rf"{art.file_name} has SHA-256 {hashlib.sha256(b'tampered').hexdigest()}"):
        ensure_jars(cache)
    jar_dir = cache / "jars"
    assert not (jar_dir / art.file_name).exists()
    assert not list(jar_dir.glob(".*.part"))
    assert not list(jar_dir.glob(".pins-*"))  # no stamp: the next call tries again


def test_missing_artifact_is_one_clear_line(repo: Repo, tmp_path: Path) -> None:
    del repo.files[f"/maven2/{artifacts()[0].repo_path}"]
    with pytest.raises(JarFetchError, match=r"HTTP 404") as info:
        ensure_jars(tmp_path / "cache")
    assert "\n" not in str(info.value)
    assert len(repo.requests) == 1  # a 404 is not retried


def test_unreachable_repository_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECIPE_ATTEST_MAVEN_REPO", "http://127.0.0.1:9/maven2")  # discard port: refused
    monkeypatch.setattr(jars.time, "sleep", lambda _s: None)
    with pytest.raises(JarFetchError, match=r"could not download .*RECIPE_ATTEST_MAVEN_REPO"):
        ensure_jars(tmp_path / "cache")


def test_an_artifact_without_a_pin_is_refused_before_any_download(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jars, "pins_text", lambda: "")
    with pytest.raises(JarFetchError, match=r"no SHA-256 pin .*--update-pins"):
        ensure_jars(tmp_path / "cache")
    assert repo.requests == []


def test_default_cache_dir_follows_the_environment(repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECIPE_ATTEST_CACHE", str(tmp_path / "env-cache"))
    assert all(p.parent == (tmp_path / "env-cache" / "jars").resolve() for p in ensure_jars())


def test_cli_failure_is_one_line_on_stderr(tmp_path: Path) -> None:
    env = {"RECIPE_ATTEST_MAVEN_REPO": "http://127.0.0.1:9/maven2", "RECIPE_ATTEST_CACHE": str(tmp_path), "PATH": ""}
    proc = subprocess.run([sys.executable, "-m", "carriers.spark.jars"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: could not download ") and proc.stderr.count("\n") == 1


def test_importing_the_spark_carrier_does_not_import_pyspark() -> None:
    code = (
        "import sys, carriers.spark.session, carriers.spark.jars, carriers.spark.java, carriers.spark.stack; "
        "sys.exit('pyspark' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_update_pins_cross_checks_the_published_sha1(repo: Repo, tmp_path: Path) -> None:
    for path, body in list(repo.files.items()):
        repo.files[path + ".sha1"] = hashlib.sha1(body, usedforsecurity=False).hexdigest().encode()
    out = tmp_path / "jars.sha256"
    text = jars.update_pins(out)
    assert out.read_text() == text
    assert pins(text) == pins(jars.pins_text())  # the fixture's pins are the SHA-256 of the served bytes

    first = f"/maven2/{artifacts()[0].repo_path}"
    repo.files[first + ".sha1"] = b"0" * 40 + b"  " + first.encode()
    with pytest.raises(JarFetchError, match=r"SHA-1 [0-9a-f]{40} differs from the published 0{40}"):
        jars.update_pins(tmp_path / "again.sha256")
    assert not (tmp_path / "again.sha256").exists()


def test_a_download_is_announced_once_with_each_jar(
    repo: Repo, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The first session's download says what it fetches, from where, into where — once; a cached stack says nothing
    (issue 34.5: a silent first local_session looked hung)."""
    cache = tmp_path / "cache"
    ensure_jars(cache)
    err = capfd.readouterr().err
    names = expected_jar_names()
    assert err.count("recipe-attest: downloading") == 1
    assert f"downloading {len(names)} pinned Spark jar(s)" in err and str(cache.resolve() / "jars") in err
    assert all(f"  {n}: " in err for n in names) and err.count("checked") == len(names) + 1
    ensure_jars(cache)
    assert capfd.readouterr().err == ""
    ensure_jars(tmp_path / "quiet", quiet=True)
    assert capfd.readouterr().err == ""
