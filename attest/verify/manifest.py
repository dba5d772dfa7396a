"""Offline verification of a standalone manifest: schema first, then bytes in an artifacts directory."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attest.errors import AttestError, Code
from attest.hashing import hash_file
from attest.model import load_json_document
from attest.schema import validate
from attest.verify.report import Report

_FORBIDDEN_NAMES = {"", ".", ".."}


def _candidate_names(entry: dict[str, Any]) -> list[str]:
    names: list[str] = []
    path = entry.get("path")
    if isinstance(path, str):
        # Only the last segment is used: the directory part of an untrusted path is never followed.
        names.append(path.replace("\\", "/").rsplit("/", 1)[-1])
    digest = entry["hash"]
    names += [digest, f"{digest}.parquet"]
    return names


def resolve_artifact(root: Path, entry: dict[str, Any]) -> tuple[Path | None, str | None]:
    """(file, None) for the first candidate found inside ``root``; (None, reason) when escaping or absent.

    Resolution is confined to the artifacts dir: a manifest is untrusted.
    """
    real_root = root.resolve()
    for name in _candidate_names(entry):
        if name in _FORBIDDEN_NAMES or "\x00" in name:
            return None, f"artifact name {name!r} would leave the artifacts directory"
        candidate = root / name
        if not os.path.lexists(candidate):
            continue
        real = candidate.resolve()
        # A symlink inside the directory may still point outside it.
        if real != real_root and real_root not in real.parents:
            return None, f"{name} resolves outside the artifacts directory (to {real})"
        if real.is_file():
            return real, None
    return None, None


def verify_document(
    document: Any,
    *,
    subject: str,
    artifacts_dir: Path | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> Report:
    """Verify an already-parsed manifest document. Bytes are checked only when the schema passed, a directory
    was given and the manifest has output_hashes."""
    report = Report(subject=subject)
    for problem in validate(document):
        report.errors.append(problem)
    report.level = "schema"
    if report.errors:
        return report
    outputs = document.get("output_hashes")
    if artifacts_dir is None:
        if outputs:
            report.notes.append(f"{len(outputs)} output hash(es) not checked: no --artifacts-dir given")
        return report
    if not outputs:
        report.notes.append("the manifest attests no output bytes (no output_hashes): schema only")
        return report
    root = Path(artifacts_dir)
    if not root.is_dir():
        raise AttestError(f"artifacts directory {root} does not exist or is not a directory",
                          code=Code.ARTIFACT_MISSING)
    report.level = "bytes"
    total = len(outputs)
    for index, entry in enumerate(outputs):
        where = f"$.output_hashes[{index}]"
        label = entry.get("path") or entry["hash"]
        found, reason = resolve_artifact(root, entry)
        if reason is not None:
            report.fail(Code.ARTIFACT_OUTSIDE_ROOT, reason, where)
        elif found is None:
            report.fail(Code.ARTIFACT_MISSING, f"{label}: no file named by its path, hash or hash.parquet in {root}",
                        where)
        else:
            try:
                actual = hash_file(found)
            except OSError as exc:
                report.fail(Code.ARTIFACT_UNREADABLE, f"{label}: {exc.strerror or exc}", where)
            else:
                report.files_checked += 1
                report.bytes_checked += found.stat().st_size
                if actual != entry["hash"]:
                    report.fail(Code.ARTIFACT_HASH_MISMATCH,
                                f"{label}: BLAKE3 is {actual}, manifest says {entry['hash']}", where)
        if progress is not None:
            progress(index + 1, total, report.bytes_checked)
    return report


def verify_manifest_bytes(
    data: bytes,
    *,
    subject: str,
    artifacts_dir: Path | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> Report:
    """Parse (raising ManifestMalformedError on bad JSON) and verify."""
    document = load_json_document(data)
    return verify_document(document, subject=subject, artifacts_dir=artifacts_dir, progress=progress)
