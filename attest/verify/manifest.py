"""Offline verification of a standalone manifest: schema first, then bytes in an artifacts directory."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from attest._signature import options_of
from attest.errors import ArgumentsError, Code
from attest.hashing import hash_regular_file, hash_sized_files
from attest.model import load_json_document
from attest.schema import validate
from attest.verify.artifacts import EarlyHashes, Resolver, candidate_names
from attest.verify.report import Level, Report

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["candidate_names", "resolve_artifact", "verify_document", "verify_manifest_bytes"]


def resolve_artifact(root: Path, entry: dict[str, Any]) -> tuple[Path | None, str | None]:
    """(file, None) for the first candidate found inside ``root``; (None, reason) when one escapes it;
    (None, None) when none exists.

    Resolution is confined to the artifacts dir: a manifest is untrusted, and a symlink (the file, or a folder
    on its way) that resolves outside the directory is refused rather than followed.
    """
    found = Resolver(root).resolve(entry)
    if isinstance(found, str):
        return None, found
    return (None, None) if found is None else (Path(found[0]), None)


def verify_document(
    document: Any,
    *,
    subject: str,
    artifacts_dir: Path | None = None,
    level: Level | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    early: EarlyHashes | None = None,
) -> Report:
    """Verify an already-parsed manifest document.

    ``level`` None checks bytes when the schema passed, a directory was given and the manifest has
    output_hashes, else says "schema only"; ``"schema"`` never reads artifacts; ``"bytes"`` demands them: with
    no directory it raises ArgumentsError, and a manifest that attests no bytes fails (bytes_not_attested).
    """
    if level not in (None, "schema", "bytes"):
        raise ArgumentsError(f"--level {level} applies to tables, not manifest files", code=Code.MANIFEST_INVALID_FIELD)
    if level == "bytes" and artifacts_dir is None:
        raise ArgumentsError("--level bytes needs the artifacts: give --artifacts-dir DIR (or verify a standalone "
                             "carrier directory)", code=Code.ARTIFACTS_DIR_REQUIRED)
    report = Report(subject=subject, requested_level=level)
    for problem in validate(document):
        report.errors.append(problem)
    report.level = "schema"
    if report.errors:
        return report
    outputs = document.get("output_hashes")
    if level == "schema":
        if outputs:
            report.bytes_unchecked = f"{_hashes(len(outputs))} not checked: --level schema"
        return report
    if artifacts_dir is None:
        if outputs:
            report.bytes_unchecked = f"{_hashes(len(outputs))} not checked: no --artifacts-dir given"
            report.notes.append(report.bytes_unchecked)
        return report
    if not outputs:
        if level == "bytes":
            report.fail(Code.BYTES_NOT_ATTESTED, "--level bytes was asked, but the manifest attests no output bytes "
                        "(no output_hashes): nothing can be checked at that level", "$.output_hashes")
        else:
            report.notes.append("the manifest attests no output bytes (no output_hashes): schema only")
        return report
    root = Path(artifacts_dir)
    if not root.is_dir():  # the directory the user named: a wrong argument (exit 2), not a failed check (exit 1)
        what = "is not a directory" if root.exists() else "does not exist"
        raise ArgumentsError(f"--artifacts-dir {root} {what}: give the folder holding the manifest's artifacts",
                             code=Code.ARTIFACTS_DIR_MISSING)
    report.level = "bytes"
    # Resolve every entry first (confined, cheap), then hash all found files at once: side by side on every core.
    resolved = early.resolution(outputs, root) if early is not None else None
    if resolved is not None:
        sizes = {r[0]: r[1] for r in resolved if isinstance(r, tuple)}
        hashes, unreadable = _hash_found(sizes, progress, len(outputs), early)
        if _sizes_changed(sizes):
            # A file changed size since the head start resolved it: judge the bytes there now, resolved afresh.
            resolved = None
    if resolved is None:
        resolver = Resolver(root)
        resolved = [resolver.resolve(entry) for entry in outputs]
        sizes = {r[0]: r[1] for r in resolved if isinstance(r, tuple)}
        hashes, unreadable = _hash_found(sizes, progress, len(outputs), early)
    for index, (entry, found) in enumerate(zip(outputs, resolved, strict=True)):
        where = f"$.output_hashes[{index}]"
        label = entry.get("path") or entry["hash"]
        if isinstance(found, str):
            report.fail(Code.ARTIFACT_OUTSIDE_ROOT, found, where)
        elif found is None:
            tried = ", ".join(candidate_names(entry))
            report.fail(Code.ARTIFACT_MISSING, f"{label}: no such file under {root} (tried {tried})", where)
        elif found[0] in unreadable:
            report.fail(Code.ARTIFACT_UNREADABLE, f"{label}: {unreadable[found[0]]}", where)
        else:
            actual = hashes[found[0]]
            report.files_checked += 1
            report.bytes_checked += found[1]
            if actual != entry["hash"]:
                report.fail(Code.ARTIFACT_HASH_MISMATCH,
                            f"{label}: BLAKE3 is {actual}, manifest says {entry['hash']}", where)
    if progress is not None:  # done, also when some entries named no file (progress counted only found ones)
        progress(len(outputs), len(outputs), report.bytes_checked)
    return report


def _hashes(count: int) -> str:
    return f"{count} output hash" if count == 1 else f"{count} output hashes"


def _sizes_changed(sizes: dict[str, int]) -> bool:
    """Whether any of these files is gone or has another size now: one stat each, after the hashing (not beside it)."""
    for path, size in sizes.items():
        try:
            if os.stat(path).st_size != size:
                return True
        except OSError:
            return True
    return False


def _hash_found(sizes: dict[str, int], progress: Callable[[int, int, int], None] | None,
                total: int, early: EarlyHashes | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(hashes, {path: why unreadable}) of the resolved files; one unreadable file does not hide the others.
    ``early``: hashes started before the document was validated, used when they are of exactly these files."""
    report = None
    if progress is not None:
        def report(done: int, _found: int, nbytes: int) -> None:
            progress(done, total, nbytes)
    if early is not None:
        ready = early.take(sizes, report)
        if ready is not None:
            return ready, {}
    try:
        return hash_sized_files(sizes, progress=report), {}  # sizes from the resolver's stat: no second one
    except OSError:
        pass
    hashes: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    for path in sizes:
        try:
            hashes[path] = hash_regular_file(path)  # a FIFO swapped in since: an error, never a wait
        except OSError as exc:
            unreadable[path] = str(exc.strerror or exc)
    return hashes, unreadable


@options_of(verify_document)
def verify_manifest_bytes(data: bytes, **options: Any) -> Report:
    """Parse (raising ManifestMalformedError on bad, too deep or too large JSON) and verify: ``options`` are
    ``verify_document``'s (``subject``, ``artifacts_dir``, ``level``, ``progress``, ``early``)."""
    return verify_document(load_json_document(data), **options)
