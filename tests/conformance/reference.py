"""The reference implementation of rocky-manifest v0.1, used as a third party would use it.

Reusable by every conformance test (standalone manifests here; Delta and Iceberg carriers elsewhere):

* ``rocky_verify(manifest_path, artifacts_dir=None) -> (exit_code, stdout)`` runs the reference verifier;
* ``rocky_canon(doc) -> hex`` (and ``rocky_canon_text``) runs the reference canonicaliser;
* ``naive_properties_reader(props) -> dict`` reads ``recipe_manifest.*`` properties the way the reference does;
* ``require()`` skips a test, saying why, when the reference is not built, and fails it instead when
  ``ATTEST_REQUIRE_REFERENCE=1`` (CI sets it: there, absence is a broken build, never a silent skip).

Where things are (CI's .ci/run builds the binaries and exports both variables):
``ATTEST_REFERENCE_DIR``: the reference source folder (``shared/reference/rocky-manifest-v0.1``), by default the
first such folder beside the repository or above it; ``ATTEST_REFERENCE_TARGET``: the cargo target dir holding
``release/rocky-verify`` and ``release/rocky-canon``, by default ``~/.cache/recipe-attest/rocky-target``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DIR_ENV = "ATTEST_REFERENCE_DIR"
TARGET_ENV = "ATTEST_REFERENCE_TARGET"
REQUIRE_ENV = "ATTEST_REQUIRE_REFERENCE"
RELATIVE_SOURCE = Path("shared/reference/rocky-manifest-v0.1")
DEFAULT_TARGET = Path.home() / ".cache" / "recipe-attest" / "rocky-target"
PREFIX = "recipe_manifest."
TIMEOUT = 120


def reference_dir() -> Path | None:
    """The reference source folder (schema, fixtures, Cargo workspace), or None when not found."""
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given) if Path(given, "Cargo.toml").is_file() else None
    for ancestor in REPO.parents:
        candidate = ancestor / RELATIVE_SOURCE
        if (candidate / "Cargo.toml").is_file():
            return candidate
    return None


def target_dir() -> Path:
    return Path(os.environ.get(TARGET_ENV) or DEFAULT_TARGET)


def binary(name: str) -> Path:
    return target_dir() / "release" / name


def missing_reason() -> str | None:
    """Why the reference cannot be run here, or None when it can."""
    source = reference_dir()
    if source is None:
        return (f"the reference source ({RELATIVE_SOURCE}) is not beside or above this clone; set {DIR_ENV} to "
                "its folder")
    absent = [name for name in ("rocky-verify", "rocky-canon") if not os.access(binary(name), os.X_OK)]
    if absent:
        return (f"{', '.join(absent)} not built in {target_dir()}: cargo build --release --locked --manifest-path "
                f"{source}/Cargo.toml --target-dir {target_dir()} (as .ci/run does)")
    return None


def require() -> None:
    """Skip the calling test, saying why, when the reference is absent; fail it when the run requires it."""
    reason = missing_reason()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the reference is unavailable: {reason}", pytrace=False)
    pytest.skip(f"reference implementation unavailable: {reason}")


def fixtures_dir() -> Path:
    """rocky-verify's own fixtures: valid/, tampered/ and artifacts/."""
    source = reference_dir()
    assert source is not None, missing_reason()
    return source / "rocky-verify" / "fixtures"


def published_schema_path() -> Path:
    source = reference_dir()
    assert source is not None, missing_reason()
    return source / "rocky-verify" / "spec" / "rocky-manifest-v0.1.schema.json"


def rocky_verify(manifest_path: str | os.PathLike[str], artifacts_dir: str | os.PathLike[str] | None = None,
                 *, json_output: bool = False) -> tuple[int, str]:
    """``rocky-verify verify MANIFEST [--artifacts-dir DIR] [--json]``: (exit code, stdout). Exit 0 verified,
    1 not verified, 2 unreadable (the message is then on stderr, appended to the returned text)."""
    args = [str(binary("rocky-verify")), "verify", str(manifest_path)]
    if artifacts_dir is not None:
        args += ["--artifacts-dir", str(artifacts_dir)]
    if json_output:
        args.append("--json")
    result = subprocess.run(args, capture_output=True, timeout=TIMEOUT, check=False)
    text = result.stdout.decode("utf-8", "replace")
    if result.returncode == 2:
        text += result.stderr.decode("utf-8", "replace")
    return result.returncode, text


def rocky_verify_schema() -> str:
    """What ``rocky-verify schema`` prints."""
    result = subprocess.run([str(binary("rocky-verify")), "schema"], capture_output=True, timeout=TIMEOUT,
                            check=True)
    return result.stdout.decode("utf-8")


def rocky_canon_text(text: bytes | str) -> tuple[int, bytes | None, str | None]:
    """``rocky-canon --canonical -`` on raw JSON text: (exit code, canonical bytes, identity), the last two None
    when the reference refuses the text (exit 2)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    result = subprocess.run([str(binary("rocky-canon")), "--canonical", "-"], input=data, capture_output=True,
                            timeout=TIMEOUT, check=False)
    if result.returncode != 0:
        return result.returncode, None, None
    # The canonical bytes hold no raw newline (JSON escapes it), so the identity is the last line.
    canonical, _, identity = result.stdout.rstrip(b"\n").rpartition(b"\n")
    return result.returncode, canonical, identity.decode("ascii")


def rocky_canon(doc: Any) -> str:
    """The reference identity of a JSON document. ``doc`` is JSON text (bytes/str) or a value, written by Python's
    json (floats by repr(), which the reference parser may read as a neighbouring f64)."""
    text = doc if isinstance(doc, (bytes, str)) else json.dumps(doc, ensure_ascii=False)
    code, _, identity = rocky_canon_text(text)
    if identity is None:
        raise ValueError(f"rocky-canon refused the document (exit {code})")
    return identity


def naive_properties_reader(props: Mapping[str, str]) -> dict[str, Any]:
    """A manifest from table properties, as the reference reads them (rocky-databricks'
    ``reconstitute_manifest``): keys starting ``recipe_manifest.``, in sorted order, prefix stripped, split on
    ``.``, nested as objects; every value a string. A later key that would descend into a string is dropped; a
    leaf replaces whatever was there."""
    root: dict[str, Any] = {}
    for key in sorted(props):  # a BTreeMap: byte order of UTF-8, which is code point order
        if not key.startswith(PREFIX):
            continue
        segments = key[len(PREFIX):].split(".")
        node = root
        for segment in segments[:-1]:
            child = node.setdefault(segment, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[segments[-1]] = str(props[key])
    return root
