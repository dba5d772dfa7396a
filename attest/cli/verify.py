"""``attest verify``: a table version, or a manifest file with its artifacts and its signed envelope."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from attest import fast
from attest.cli.output import Output
from attest.cli.shared import open_ref, read_bounded, read_input, spark_for, table_ref, trust_policy, verify_with
from attest.errors import ArgumentsError, AttestError, Code, InvalidArgumentError

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from attest.signing.policy import TrustPolicy
    from attest.verify.report import Report
    from attest.verify.table import FileHasher
    from carriers.storage.head_start import ObjectHeadStart


def cmd_verify(args: argparse.Namespace, out: Output) -> Report:
    from attest.cli.catalogs import catalog_for
    from carriers.refs import looks_like_table

    if looks_like_table(args.target) or catalog_for(args, args.target) is not None:  # --catalog: an identifier
        return _verify_table(args, out)
    if args.spark or args.master:
        raise InvalidArgumentError("--spark and --master apply to tables; a manifest's artifacts are hashed here")
    if args.level == "files":
        raise InvalidArgumentError("--level files applies to tables; a manifest is checked at schema or bytes level")
    if getattr(args, "version", None) or getattr(args, "snapshot_id", None) or getattr(args, "ref_branch", None):
        raise InvalidArgumentError("--version, --snapshot-id and --branch apply to tables, not manifest files")
    if getattr(args, "program_file", None) or getattr(args, "program_sql", None) or getattr(args, "dialect", None):
        raise InvalidArgumentError("--program-file, --program-sql and --dialect apply to tables (a manifest's "
                                   "program_hash is printed by `attest program-hash`)")
    return _verify_manifest(args, out)


def _verify_table(args: argparse.Namespace, out: Output) -> Report:
    if args.artifacts_dir:
        raise InvalidArgumentError("--artifacts-dir is for manifest files, not tables")
    if args.envelope:
        # Refused rather than ignored: a table's envelope is the one its metadata names, nothing else is checked.
        raise InvalidArgumentError("--envelope applies to manifest files; a table's envelope is the one its "
                                   "metadata names (recipe_attest.envelope.blake3)")
    policy = trust_policy(args)  # before any hashing: a bad key or policy file is an input error (exit 2)
    from attest.cli.program_hash import expected_program
    from attest.verify.program import check_program

    expected = expected_program(args)  # --program-file / --program-sql: a program that does not parse is exit 2
    ref = table_ref(args)
    with spark_for(args) as spark:
        carrier = open_ref(args, ref, allow_external=bool(getattr(args, "allow_external_files", False)))
        if spark is not None:  # a rewrite's added files are digested on the executors too (docs/distributed.md)
            from carriers.spark.distributed import executor_content

            executor_content(carrier, spark)
        prefetch = getattr(args, "early", None)
        hasher: FileHasher | None = None
        if prefetch is not None and spark is None:
            # Hashing started before this module was imported (attest.fast.startup.head_start): used only for
            # exactly the files the carrier lists itself.
            from carriers.delta.prefetch import DeltaPrefetch, PrefetchedHasher

            if isinstance(prefetch, DeltaPrefetch):
                hasher = PrefetchedHasher(prefetch, carrier.storage)
        head = _object_head_start(args, carrier) if hasher is None and spark is None else None
        try:
            if head is not None:
                hasher = head
            # A log of a million files: tens of seconds before any hashing (Spark draws its own stage progress).
            with out.status(f"reading {ref}") if spark is None else contextlib.nullcontext():
                state = None if expected is None else carrier.state(ref.version)
                report = verify_with(carrier, spark, version=ref.version, level=args.level,
                                     progress=out.progress("hashing table files"), policy=policy, state=state,
                                     hasher=hasher)
        finally:
            if head is not None:
                head.close()  # the verification may have ended before its bytes: nothing is left running
        report = check_program(report, expected, state, args.dialect)
    if ref.format == "iceberg" and ref.catalog is not None:
        # A view of the table's name in its catalog (Trino resolves views first) reads other rows under this name,
        # which no attestation binds: the verdict is for the name typed, as the audit's (it said VERIFIED).
        from carriers.discovery import views_named_as

        for twin in views_named_as(ref):
            report.fail(twin.code, twin.message, twin.path)
    return report


def _object_head_start(args: argparse.Namespace, carrier: object) -> ObjectHeadStart | None:
    """A head start on the objects of a Delta table on a store (carriers/storage/head_start.py): its objects are
    hashed as soon as delta-rs has listed them, while the log is replayed and cross-checked and the sidecar read; off
    with ``ATTEST_FAST=0`` (the ordinary order)."""
    if not fast.ON or args.level not in (None, "bytes"):
        return None
    # A carrier that offers its listing (DeltaCarrier.head_start, a class attribute): no carrier module imported for it.
    storage = getattr(carrier, "storage", None)
    if not hasattr(type(carrier), "head_start") or getattr(storage, "local_root", True) is not None:
        return None
    from carriers.storage.head_start import ObjectHeadStart

    head = ObjectHeadStart(storage)  # type: ignore[arg-type]  # a carrier's Storage, as the check above found
    carrier.head_start = head  # type: ignore[attr-defined]
    return head


def _manifest_path(target: str) -> str:
    """A manifest named by a ``file:`` URI is that local file; one on an object store is not read from there (it said
    "no such file" of a file that exists)."""
    from attest.locations import is_uri, scheme_of

    if target == "-" or not is_uri(target):
        return target
    scheme = scheme_of(target)
    if scheme == "file":
        from carriers.refs import local_path

        return str(local_path(target))
    raise InvalidArgumentError(f"{target}: a manifest is read from a local file or from stdin, not from {scheme}:// "
                               f"(copy it here, or pipe it: ... | attest verify -); a table on {scheme}:// is verified "
                               "by its folder URI, without a file name")


def _verify_manifest(args: argparse.Namespace, out: Output) -> Report:
    target = _manifest_path(args.target)
    artifacts = Path(args.artifacts_dir) if args.artifacts_dir else None
    directory = None
    if target != "-" and Path(target).is_dir():
        # A standalone carrier directory: its manifest.json, and the directory itself as the artifacts dir.
        directory = target
        from attest.cli.mistakes import refuse_directory

        refuse_directory(directory)  # no manifest.json: an Iceberg table folder, a folder of tables, an empty one
        artifacts = artifacts or Path(target)
        target = str(Path(target) / "manifest.json")
    if args.level == "bytes" and artifacts is None:
        # Checked before reading: asking for bytes with nothing to hash is a usage error, not a schema check.
        raise ArgumentsError("--level bytes needs the artifacts: give --artifacts-dir DIR (or verify a standalone "
                             "carrier directory)", code=Code.ARTIFACTS_DIR_REQUIRED)
    policy = trust_policy(args)  # before any hashing: a bad key or policy file is an input error (exit 2)
    data = read_input(target, regular_only=directory is not None)
    from attest.cli.mistakes import refuse_data_file

    refuse_data_file(target, data)  # a Parquet / Avro / ORC file: never JSON, so never a manifest
    from attest.verify.artifacts import EarlyHashes

    # Hashing started before the command was imported (attest.fast.startup.head_start), or (fast path on) starts now,
    # overlapping what is left of start-up; the verification below decides (and re-hashes any file it resolves
    # differently).
    early = getattr(args, "early", None)
    if not isinstance(early, EarlyHashes):
        early = None
    if early is None and args.level != "schema" and fast.ON:
        early = EarlyHashes.start(data, artifacts)
    from attest.verify.manifest import verify_manifest_bytes

    try:
        report = verify_manifest_bytes(data, subject=target, artifacts_dir=artifacts, level=args.level,
                                       progress=out.progress("hashing artifacts"), early=early)
    except AttestError:
        _name_the_document(target, data)  # a Delta log commit (not one JSON document): said so
        raise
    if not report.passed:
        _name_the_document(target, data)  # Iceberg table metadata, a one-line Delta commit: said so
    _check_manifest_signature(args, target, data, policy, report)
    if directory is not None:
        from carriers.standalone import directory_notes

        report.notes += directory_notes(directory, data)
    return report


def _name_the_document(target: str, data: bytes) -> None:
    """Raise ``not_a_manifest`` when a document that failed is table metadata or a log commit (only then parsed)."""
    from attest.cli.mistakes import not_a_manifest

    err = not_a_manifest(target, data)
    if err is not None:
        raise err



ENVELOPE_SUFFIX = ".dsse.json"


def _envelope_beside(target: str) -> str:
    """Where a manifest's signed envelope is by default: carriers.standalone.envelope_name's rule (a test holds the
    two together), without importing the standalone carrier and its table machinery on every manifest verify."""
    path = Path(target)
    return str(path.with_name(path.name + ENVELOPE_SUFFIX))


def _check_manifest_signature(args: argparse.Namespace, target: str, data: bytes, policy: TrustPolicy | None,
                              report: Report) -> None:
    """Judge the manifest's envelope (``--envelope``, else ``<manifest>.dsse.json`` beside it) into ``report``."""
    from attest.model import load_json_document

    where = args.envelope or (None if target == "-" else _envelope_beside(target))
    if policy is None:
        # signed: None when nothing could be looked for (stdin without --envelope): the verdict then says
        # "signature not checked", never "unsigned".
        report.signed = None if where is None else Path(where).is_file()
        if report.signed:
            report.notes.append(f"a signed envelope is beside the manifest ({where}); its signature was not "
                                "checked: give --key or --policy")
        return
    from attest.signing.attestation import check_manifest_signature

    envelope = None
    if where is not None:
        from attest.model import MAX_DOCUMENT_BYTES

        try:
            # Bounded; the default one beside the manifest must be a regular file (never a FIFO, never /dev/zero).
            envelope = read_bounded(where, MAX_DOCUMENT_BYTES + 1, regular_only=args.envelope is None)
        except FileNotFoundError:
            envelope = None
        except OSError as exc:
            raise AttestError(f"{where}: cannot read the envelope ({exc.strerror})", code=Code.SIGNATURE_INVALID) \
                from exc
    try:
        document = load_json_document(data)
    except AttestError:
        return  # the manifest does not parse: the report already says so, and nothing was signed
    if not isinstance(document, dict):
        return  # not a manifest object: the schema failure is already in the report
    result = check_manifest_signature(envelope, policy, document)
    report.signature = result.to_json()
    report.signed = result.signed
    if result.passed:
        report.signer = result.signer
    else:
        report.fail(result.code or Code.SIGNATURE_INVALID, result.message, where or "")
