"""Verification of a table version against the attestation its carrier holds (engine-free).

At every level: the reconstituted manifest, the carrier's integrity (sidecar, manifest identity, table identity),
the table's own consistency, and the binding — the attested version is still what readers get (no data change, no
rewrite, the same reader view). Then ``files`` adds the live file set and sizes against the attested triples, and
(asked as the level) that each is in storage as a regular file of that size, found by a listing (no file opened),
and ``bytes`` re-hashes every live file.

With a trust policy (docs/signing.md) every level also checks the attestation's signature: the envelope the metadata
names must verify under a trusted key that may attest this table and model, over a Statement naming exactly this
table, the attested version, the manifest, and the sidecar and reader-view digests that were checked.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Sequence
from itertools import islice, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from attest import fast
from attest.canonical import digest_of_rows
from attest.errors import AttestError, Code, Problem
from attest.schema import validate, validate_outputs
from attest.tables import (
    Attestation,
    ContentCheck,
    DataFile,
    FileIdentity,
    Progress,
    TableState,
    attestation_document,
    attestation_identity,
)
from attest.verify.report import Level, Report, version_noun, version_option
from attest.view import LATER_KEYS, key_label, table_changed_by_rewrites

if TYPE_CHECKING:
    from attest.signing.policy import TrustPolicy

_PATH, _HASH = attrgetter("path"), attrgetter("hash")


class FileHasher(Protocol):
    """What the bytes level needs from a carrier: BLAKE3 of live files, keyed by path (unreadable: absent)."""

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        ...


def default_level(state: TableState) -> Level:
    """bytes when the attestation names file identities, else schema (a managed run attests no bytes)."""
    att = state.attestation
    if att is None or att.origin == "foreign":
        return "schema"
    pending = att.pending_outputs()
    outputs = pending[1] if pending is not None else att.document.get("output_hashes")
    return "bytes" if outputs or att.files else "schema"


def _attested_files(state: TableState, report: Report) -> dict[str, FileIdentity | dict[str, Any]] | None:
    att = state.attestation
    assert att is not None
    pending = att.pending_outputs()
    by_path: dict[str, FileIdentity | dict[str, Any]] = {}
    if att.files is not None and pending is not None:
        by_path = {f.path: f for f in att.files}
        # The manifest's list is to be made from these files (Attestation.outputs_of): compared as that list would be.
        if pending[1] and not _same_files(pending[1], att.files):
            report.fail(Code.CARRIER_TAMPERED,
                        "output_hashes in the table metadata disagree with the sidecar's file list")
        return by_path
    outputs = att.document.get("output_hashes") or []
    if att.files is not None:
        by_path = {f.path: f for f in att.files}
        # The manifest's list and the sidecar's triples must say the same thing, or one of them was edited.
        if outputs and not _same_pairs(outputs, att.files):
            report.fail(Code.CARRIER_TAMPERED,
                        "output_hashes in the table metadata disagree with the sidecar's file list")
        return by_path
    if not outputs:
        return None
    for index, o in enumerate(outputs):
        path = o.get("path")
        if not path:
            report.fail(Code.CARRIER_TAMPERED, "an output hash without a path cannot be bound to a table file",
                        f"$.output_hashes[{index}]")
            continue
        by_path[path] = o
    return by_path


def _same_pairs(outputs: list[Any], files: Sequence[FileIdentity]) -> bool:
    """``{(o.get("path"), o.get("hash")) for o in outputs} == {(f.path, f.hash) for f in files}``. The manifest's list
    is made from the sidecar's (sorted by path, as the sidecar lists them), so the two are first compared in order,
    column by column (C loops, no tuple per file: 200,000 files 0.035 s against 0.2 s): equal sequences are equal
    sets. Otherwise, or on an output that is not a dict, the sets are compared as before (and raise as before)."""
    if len(outputs) == len(files):
        try:
            if list(map(dict.get, outputs, repeat("path"))) == list(map(attrgetter("path"), files)) and \
                    list(map(dict.get, outputs, repeat("hash"))) == list(map(attrgetter("hash"), files)):
                return True
        except TypeError:
            pass
    return {(o.get("path"), o.get("hash")) for o in outputs} == {(f.path, f.hash) for f in files}


def _same_files(outputs: Sequence[FileIdentity], files: Sequence[FileIdentity]) -> bool:
    """``_same_pairs`` of the outputs made from ``outputs`` (``{"hash": f.hash, "path": f.path}`` each) and ``files``,
    without the dicts: in order first, then as sets."""
    if len(outputs) == len(files) and list(map(_PATH, outputs)) == list(map(_PATH, files)) and \
            list(map(_HASH, outputs)) == list(map(_HASH, files)):
        return True
    return {(o.path, o.hash) for o in outputs} == {(f.path, f.hash) for f in files}


def _manifest_problems(att: Attestation) -> list[Problem]:
    """``validate(att.document)``, told from the sidecar's files while the document's output list is not made."""
    pending = att.pending_outputs()
    if OUTPUTS_FROM_FILES and pending is not None:
        found = validate_outputs(pending[0], list(map(_HASH, pending[1])), list(map(_PATH, pending[1])))
        if found is not None:
            return found
    return validate(att.document)


def _manifest_identity(att: Attestation) -> str:
    """``attestation_identity(att.document)``, hashed from the sidecar's files while the document's output list is
    not made (in path order already: the list attestation_document would give)."""
    pending = att.pending_outputs()
    if OUTPUTS_FROM_FILES and pending is not None:
        paths = list(map(_PATH, pending[1]))
        if set(map(type, paths)) <= {str} and all(map(operator.lt, paths, islice(paths, 1, None))):
            found = digest_of_rows(pending[0], "output_hashes", ("hash", "path"),
                                   [list(map(_HASH, pending[1])), paths])
            if found is not None:
                return found
    return attestation_identity(att.document)


# Whether a verification judges the manifest's output_hashes from the sidecar's files they are made of, not made
# (Attestation.outputs_of); ATTEST_FAST=0 makes them (tests/test_outputs_of.py holds the two to each other).
OUTPUTS_FROM_FILES: bool = fast.ON


def _check_binding(state: TableState, report: Report) -> None:
    """Binding and staleness, at every level: the attested version must still be what readers get at
    ``state.version``: no data-changing or rewriting commit since, and the same reader view (schema as readers
    resolve it, partitioning, per-file partition values, deletion vectors, statistics, read-changing features)."""
    att = state.attestation
    assert att is not None
    noun, option = version_noun(state.table_format), version_option(state.table_format)
    if att.attested_version is None:
        return  # already a carrier problem (no binding)
    if state.changes == "data":
        report.fail(Code.STALE, f"data changed after the attested {noun} {att.attested_version}: "
                    f"{state.change_detail or 'later commits'}; verify {option} {att.attested_version} "
                    f"checks the attested {noun} itself")
        return
    if state.changes == "compaction":
        check = state.content_check
        if check is not None:
            report.content = check.to_json()
        if check is not None and check.passed and att.view is not None and state.view is not None:
            report.content_check = check
            report.view_bound = True
            current, unbound = state.view.bound_as(att.view)
            if unbound:
                report.view_unbound = [LATER_KEYS[k][0] for k in unbound]
            # The files' modification times are bound as one digest of all files (Spark's file_modification_time):
            # the rewritten files' are new by nature, so that digest is not compared here.
            # A key rewrites may narrow (the schemas read, attest/view.py NARROWED_BY_REWRITES) is not a change here,
            # nor the members of a key the delete files a rewrite spent took with them (DELETE_FILE_KEYS).
            changed = table_changed_by_rewrites(att.view.table, current.table, {"file_times", *check.view_keys})
            if changed:
                detail = "; ".join(f"{key_label(k)} changed" for k in changed)
                report.fail(Code.READER_VIEW_CHANGED, f"what readers get changed after the attested {noun} "
                            f"{att.attested_version} besides the rewrites: {detail}")
            return
        if not state.changes_complete:
            _check_cut_history(state, check, report)
            return
        if check is not None and check.code not in ("", Code.COMPACTED.value):
            report.fail(Code(check.code), f"files were rewritten without a declared data change after {noun} "
                        f"{att.attested_version} ({state.change_detail or 'compaction'}): {check.message}")
            return
        why = f": {check.message}" if check is not None and check.message else (
            "; this attestation binds no content digest, so the rewrite cannot be checked by content (re-attest: "
            "attest record)" if att.content is None and att.origin != "foreign" else "")
        report.fail(Code.COMPACTED, f"files were rewritten without a data change after {noun} "
                    f"{att.attested_version} ({state.change_detail or 'compaction'}); the attested file set "
                    f"is no longer live{why}")
        return
    if att.view is None or state.view is None:
        if att.origin != "foreign":
            report.notes.append("reader view not bound: this attestation predates reader-view binding (re-attest to "
                                "bind schema, partitioning and deletion vectors)")
        report.view_bound = False
        attested = {f.path for f in att.files} if att.files is not None else None
        if attested is not None and attested != {f.path for f in state.live_files}:
            report.fail(Code.STALE, f"the live files of {noun} {state.version} are not the attested ones "
                        f"({noun} {att.attested_version})")
        return
    report.view_bound = True
    current, unbound = state.view.bound_as(att.view)
    if unbound:
        report.view_unbound = [LATER_KEYS[k][0] for k in unbound]
        report.notes.append("not bound by this attestation, made before they were: " + ", ".join(
            f"{LATER_KEYS[k][0]} ({LATER_KEYS[k][1]})" for k in unbound) + " (re-attest to bind them)")
    if att.view.same_digest(current):
        return
    detail = "; ".join(att.view.differences(current))
    if not att.view.same_files(current) and not state.changes_complete:
        report.fail(Code.STALE, f"the live files of {noun} {state.version} are not the attested ones, and log cleanup "
                    f"removed the commits since {noun} {att.attested_version}: whether they changed data or only "
                    f"rewrote files (OPTIMIZE) cannot be told from the log: {detail}")
    elif not att.view.same_files(current):
        report.fail(Code.STALE, f"the live files of {noun} {state.version} are not the attested ones although no "
                    f"commit since {noun} {att.attested_version} says data changed: {detail}")
    else:
        report.fail(Code.READER_VIEW_CHANGED, f"what readers get changed after the attested {noun} "
                    f"{att.attested_version} without a data commit: {detail}; re-attest if the change is intended")


def _check_cut_history(state: TableState, check: ContentCheck | None, report: Report) -> None:
    """The verdict when the history since the attested version was cut (Iceberg: expiry, the attestation found
    through the retention tag, docs/iceberg.md "Expiry and tags") and the current rows did not match the attested
    ones whole (a passing check is VERIFIED by content before this). Nothing the verifier saw "rewrote files": what
    happened is that the commits since the attested version are gone and the rows differ (or cannot be matched), so
    whatever they did, a data change cannot be excluded: stale. A check that could not be made keeps its own code."""
    att = state.attestation
    assert att is not None
    noun, since = version_noun(state.table_format), att.attested_version
    cut = f"the history since {noun} {since} expired"
    if check is None or check.passed:  # a passing check without a reader view to bind is no verdict either
        why = ("this attestation binds no content digest, so they cannot be judged by content (re-attest: attest "
               "record)" if att.content is None and att.origin != "foreign" else "they cannot be judged by content")
        report.fail(Code.COMPACTED, f"{cut}, and the files of {noun} {state.version} are not the attested ones: {why}")
    elif check.code == Code.CONTENT_CHANGED.value:
        report.fail(Code.STALE, f"{cut}, and the current rows ({noun} {state.version}) differ from those attested at "
                    f"{noun} {since} ({check.message}): a data change cannot be excluded")
    elif check.code in ("", Code.COMPACTED.value):
        report.fail(Code.STALE, f"{cut}, and the current rows ({noun} {state.version}) cannot be matched with those "
                    f"attested at {noun} {since} ({check.message}): a data change cannot be excluded")
    else:
        report.fail(Code(check.code), f"{cut}, and the current rows ({noun} {state.version}) could not be judged "
                    f"against those attested at {noun} {since}: {check.message}")


def _check_signature(state: TableState, report: Report, policy: TrustPolicy | None,
                     now: dt.datetime | None) -> None:
    """The signature part of a verdict. Without a policy nothing is checked, and a signed attestation says so."""
    att = state.attestation
    assert att is not None
    report.signed = att.envelope_ref is not None
    if policy is None:
        if att.envelope_ref is not None:
            report.notes.append(f"this attestation carries a signature ({att.envelope_ref}) that was not checked: "
                                "give --key or --policy (docs/signing.md)")
        return
    from attest.signing.attestation import check_table_signature  # cryptography only when a policy is given

    envelope, problem = att.load_envelope()
    if problem is not None:
        # The metadata names an envelope that is gone or swapped: never "unsigned", whatever the policy requires.
        report.signature = {"passed": False, "code": problem.code.value, "message": problem.message,
                            "signer": None, "signed": True, "required": True, "verified_keys": []}
        report.errors.append(problem)
        return
    binding = {"sidecar_digest": att.sidecar_digest, "reader_view_digest": None if att.view is None else
               att.view.digest}
    version = att.attested_version if att.attested_version is not None else state.version
    # The policy is matched against the name the table was reached by and where it is stored too (issue 29.4).
    result = check_table_signature(envelope, policy, state.uri or state.table, version, None,
                                   attestation_document(att.document),
                                   binding, now=now, names=(state.table,), locations=state.locations,
                                   more_locations=state.more_locations)
    report.signature = result.to_json()
    report.signed = result.signed
    if result.passed:
        report.signer = result.signer
        if result.signer is None:
            report.notes.append(result.message)
    else:
        report.fail(result.code or Code.SIGNATURE_INVALID, result.message, att.envelope_ref or "")


def verify_state(
    state: TableState,
    carrier: FileHasher | None,
    *,
    level: Level | None = None,
    progress: Progress | None = None,
    policy: TrustPolicy | None = None,
    now: dt.datetime | None = None,
    hasher: FileHasher | None = None,
) -> Report:
    """Judge one table version. ``carrier`` is needed only for the bytes level (to hash live files; ``hasher``
    hashes them instead when given: Spark executors, the command line's head start). With ``policy`` the
    attestation's signature is judged too (``now``: the instant key validity windows are judged at, default the
    current time)."""
    report = Report(subject=state.table, table_format=state.table_format, version=state.version,
                    other_heads=list(state.other_heads), other_tags=list(state.other_tags),
                    branch=state.branch, tag=state.tag)
    report.notes.extend(state.notes)
    if report.other_heads:
        report.notes.append(report.other_heads_note())
    att = state.attestation
    want: Level = level or default_level(state)
    report.requested_level = want
    if att is None:
        report.attested = False
        report.requested_level = level
        report.fail(Code.UNATTESTED, f"no attestation covers {version_noun(state.table_format)} {state.version}")
        report.errors.extend(state.problems)
        return report
    report.attested_version = att.attested_version
    report.origin = att.origin
    report.producer = att.producer_label
    report.binding_note = att.binding_note
    if att.origin != "foreign":
        report.content_bound = att.content is not None
        continues = None if att.content is None else att.content.get("continues")
        if isinstance(continues, str):
            report.notes.append(f"a carry-forward attestation: it continues the attestation whose sidecar is "
                                f"{continues[:16]}… across rewrites that kept the same rows (its program, inputs and "
                                "producer)")
        if att.content is None:
            report.notes.append("no content digest is bound by this attestation (recorded before content digests): "
                                "a later compaction cannot be carried over by content; `attest record` adds one")
    # Schema: the reconstituted manifest, what the carrier found while reading it, and the table's own integrity.
    report.level = "schema"
    report.errors.extend(att.problems)
    report.errors.extend(state.problems)
    report.errors.extend(_manifest_problems(att))
    recorded = att.manifest_identity
    if recorded is not None and not report.errors and _manifest_identity(att) != recorded:
        report.fail(Code.CARRIER_TAMPERED, "the manifest read from the table metadata is not the one recorded in "
                    "its sidecar: a field was edited after the attestation was written")
    if not report.errors:
        _check_binding(state, report)
    _check_signature(state, report, policy, now)
    if report.errors or want == "schema":
        return report
    if att.origin == "foreign":
        report.fail(Code.LEVEL_NOT_ATTESTED, f"this attestation was written by {att.producer_label}, which records no "
                    f"file identities for the table: the {want} level cannot be checked (schema is the most it "
                    "supports)")
        return report
    report.level = "files"
    attested = _attested_files(state, report)
    if attested is None:
        report.fail(Code.FILE_UNATTESTED, "the attestation lists no output files, so it cannot be bound to the "
                    "table's files (schema level is the most it supports)")
        return report
    live = {f.path: f for f in state.live_files}
    sized = any(isinstance(e, FileIdentity) for e in attested.values())
    by_content: set[str] = set()
    carried = report.content_check
    if carried is not None:
        # Carried over rewrites by content: the files they removed are not expected (nor their deletion vectors:
        # an untouched file's vector is in its unchanged view entry), the files they added were read for their rows.
        by_content = set(carried.checked) & set(live)
        attested = {p: e for p, e in attested.items() if p not in carried.removed
                    and not (isinstance(e, FileIdentity) and e.kind != "data" and p not in live)}
        live = {p: f for p, f in live.items() if p not in by_content}
        report.notes.append(f"{len(by_content)} file(s) the rewrites added were checked by their rows (content "
                            "digest), not against attested bytes")
    common = _compare_files(state, report, attested, live)
    if not sized:
        report.notes.append("sizes not compared: this attestation carries no sidecar with file sizes")
    report.files_checked = len(live) + len(by_content)
    if report.errors:
        return report
    # The bytes level too (round 33): a file hashed whole that is not of the size the log states is not the file
    # readers read — they read it by the stated size, and may get other rows than the bytes hashed.
    _check_stored(state, report, carrier, list(map(live.__getitem__, common)))
    if want == "files":
        return report
    report.level = "bytes"
    source = carrier if hasher is None else hasher
    assert source is not None, "bytes level needs the carrier to read files"
    flagged = {e.path for e in report.errors}  # found by the look (missing, another size): not read again
    targets: list[DataFile] = [live[p] for p in common if p not in flagged] if flagged else \
        list(map(live.__getitem__, common))
    hashes = source.hash_files(targets, progress=progress)
    gone = [f.path for f in targets if hashes.get(f.path) is None]
    why = getattr(carrier, "removed_by_cleanup", None)  # what table maintenance the log records (Delta: VACUUM)
    cleanup = why(state.version, gone) if gone and callable(why) else None
    for f in targets:
        entry = attested[f.path]
        expected = entry.hash if isinstance(entry, FileIdentity) else entry["hash"]
        actual = hashes.get(f.path)
        if actual is None:
            report.fail(Code.FILE_MISSING, "listed in the table log but cannot be read from storage"
                        + (f" ({cleanup})" if cleanup else ""), f.path)
        elif actual != expected:
            report.fail(Code.ARTIFACT_HASH_MISMATCH, f"BLAKE3 is {actual}, attested {expected}", f.path)
        else:
            report.bytes_checked += f.size
    _check_stored_types(state, report, carrier, [f for f in targets if _matched(f, hashes, attested)])
    return report


def _matched(f: DataFile, hashes: dict[str, str], attested: dict[str, FileIdentity | dict[str, Any]]) -> bool:
    entry = attested[f.path]
    return hashes.get(f.path) == (entry.hash if isinstance(entry, FileIdentity) else entry["hash"])


def _check_stored_types(state: TableState, report: Report, carrier: FileHasher | None,
                        files: list[DataFile]) -> None:
    """The bytes level's look at the attested files' stored types (docs/verify.md, "Stored types"): the rule
    ``record`` holds each data file to — readers must read the values it stores, not others (an integer past its
    Parquet annotation's width, a column stored as a type the schema's converts with a loss, Delta dates Spark reads
    rebased from the legacy calendar) — held to the files whose bytes matched, so an attestation recorded before the
    rule (or by another producer) is not VERIFIED over such a file. Each file's footer is read, and the values of a
    column it flags. Files not judged (not Parquet, no carrier) are said in the verdict (``stored_types_unchecked``)."""
    look = getattr(carrier, "stored_type_problems", None)
    if not callable(look):
        report.stored_types_unchecked = "no carrier given"
        report.notes.append("stored types not checked (no carrier given): the files' bytes are the attested ones")
        return
    if not files:
        return
    try:
        found, unread = look(state.version, files)
    except AttestError as exc:
        report.fail(exc.code, f"the stored types of the attested files could not be checked: {exc.message}")
        return
    for path, reason in found:
        report.fail(Code.TABLE_INCONSISTENT, f"its readers read other values than it stores, so its attested bytes "
                    f"do not bind what they read: {reason}", path)
    if unread:
        report.stored_types_unchecked = f"{len(unread)} data file(s) not read as Parquet"
        report.notes.append(f"{len(unread)} data file(s) could not be read as Parquet (e.g. {unread[0]}): their "
                            "stored types were not checked")


def _compare_files(state: TableState, report: Report, attested: dict[str, FileIdentity | dict[str, Any]],
                   live: dict[str, DataFile]) -> list[str]:
    """The files level's comparison of the attested files with the live ones: each attested file not live, each live
    file not attested, each size the two record otherwise, reported in that order, path by path; returns the paths of
    both, sorted."""
    if live.keys() == attested.keys():  # the common case: no file gone or added, and the attested paths come sorted
        common = sorted(attested)  # (a sorted list sorts in one pass; a set's order would take a full sort)
    else:
        for path in sorted(set(attested) - set(live)):
            report.fail(Code.FILE_MISSING, f"attested file is not live in {version_noun(state.table_format)} "
                        f"{state.version}", path)
        for path in sorted(set(live) - set(attested)):
            report.fail(Code.FILE_UNATTESTED, "live file is not in the attestation (added outside it)", path)
        common = sorted(set(live) & set(attested))
    if SIZES_IN_BULK and _sizes_agree(common, attested, live):
        return common  # what the loop below finds: no size differs
    for path in common:
        entry = attested[path]
        if isinstance(entry, FileIdentity) and entry.size != live[path].size:
            report.fail(Code.SIZE_MISMATCH,
                        f"the log records {live[path].size} bytes, the attestation {entry.size}", path)
    return common


def _sizes_agree(common: list[str], attested: dict[str, FileIdentity | dict[str, Any]],
                 live: dict[str, DataFile]) -> bool:
    """True only when every attested entry of ``common`` is a FileIdentity whose ``int`` size is its live file's
    ``int`` size: then _compare_files reports no size. Passes in C rather than a Python step a file."""
    entries = list(map(attested.__getitem__, common))
    if set(map(type, entries)) != {FileIdentity}:
        return False
    ours, logged = list(map(_SIZE, entries)), list(map(_SIZE, map(live.__getitem__, common)))
    return not (set(map(type, ours)) | set(map(type, logged))) - {int} and ours == logged


# Whether the files level's look at storage and the sizes the files level compares are
# first compared a list at a time (_stored_as_logged, _sizes_agree); ATTEST_FAST=0
# looks at each (tests/test_verify_files_fast.py holds the two to each other).
SIZES_IN_BULK: bool = fast.ON
_SIZE = attrgetter("size")


def _check_stored(state: TableState, report: Report, carrier: FileHasher | None, files: list[DataFile]) -> None:
    """The files level's look at storage (docs/verify.md): each file is there as a regular file or object, with the
    size the log records (and the attestation, when it records one), found without opening any."""
    look = getattr(carrier, "stored_files", None)  # the carrier's storage (carriers/storage/listing.py)
    if not callable(look):
        report.notes.append("the files were not looked for in storage (no carrier given): the file set and sizes "
                            "are the log's")
        return
    stored: dict[str, int | str] = look(files)
    if SIZES_IN_BULK and _stored_as_logged(stored, files):
        return  # what the loops below find: every file there, a regular file of the logged size
    gone = [f.path for f in files if stored.get(f.path) == "missing"]
    why = getattr(carrier, "removed_by_cleanup", None)  # what table maintenance the log records (Delta: VACUUM)
    cleanup = why(state.version, gone) if gone and callable(why) else None
    for f in files:
        there = stored.get(f.path, "missing")
        if there == "missing":
            report.fail(Code.FILE_MISSING, "listed in the table log but not in storage"
                        + (f" ({cleanup})" if cleanup else ""), f.path)
        elif isinstance(there, str):
            report.fail(Code.FILE_MISSING, f"listed in the table log, but storage holds {there} there, not a "
                        "regular file", f.path)
        elif f.size >= 0 and there != f.size:  # the log's size is the attested one (compared above)
            report.fail(Code.SIZE_MISMATCH, f"storage holds {there} bytes, the log records {f.size}", f.path)


def _stored_as_logged(stored: dict[str, int | str], files: list[DataFile]) -> bool:
    """True only when storage holds at each file's path an ``int`` size equal to the file's logged ``int`` size:
    then _check_stored finds nothing missing, nothing else there and no size differing (anything else decides
    nothing: the loops run). Passes in C rather than a Python step a file."""
    there = list(map(stored.get, map(_PATH, files), repeat(MISSING_WORD)))
    sizes = list(map(_SIZE, files))
    return not (set(map(type, there)) | set(map(type, sizes))) - {int} and there == sizes


MISSING_WORD = "missing"  # what the storage look says of a file not there (carriers/storage/listing.py MISSING)


class _StatefulCarrier(FileHasher, Protocol):
    def state(self, version: str | int | None = None) -> TableState:
        ...


class VerifyOptions(TypedDict, total=False):
    """How ``verify_table`` judges the version: ``verify_state``'s keywords, passed on as they are."""

    level: Level | None
    progress: Progress | None
    policy: TrustPolicy | None
    now: dt.datetime | None
    hasher: FileHasher | None


def verify_table(carrier: _StatefulCarrier, *, version: str | int | None = None,
                 **options: Unpack[VerifyOptions]) -> Report:
    """Verify a table version through its carrier, as ``verify_state`` judges it (``policy``: judge its signature
    too, ``hasher``: hash its files instead of the carrier). A
    table given by path, URI or engine object is ``attest.verify(table)``'s (attest/api.py)."""
    if not callable(getattr(carrier, "state", None)):
        raise TypeError("verify_table takes a carrier (carriers.delta.DeltaCarrier(path), carriers.refs.open_table"
                        f"(ref)), not a {type(carrier).__name__}: for a path, URI, iceberg:// reference or engine "
                        "table use attest.verify(table)")
    return verify_state(carrier.state(version), carrier, **options)
