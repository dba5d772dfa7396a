"""The commands: each parses its arguments into typed objects once, does its work, and returns a result object
(attest/cli/output.py prints it). Heavy libraries are imported inside the command that needs them."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from attest.cli.output import EXIT_FAILED, EXIT_OK, EXIT_UNREADABLE, Output
from attest.errors import ArgumentsError, AttestError, Code, InvalidArgumentError, OpenLineageError
from attest.record import field, record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/record.py; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from attest.lineage import LineageNode
    from attest.openlineage.emit import Emitted
    from attest.signing.keys import Signer
    from attest.signing.policy import TrustPolicy
    from attest.verify.audit import AuditReport
    from attest.verify.report import Report
    from carriers.core import AttestedTable
    from carriers.refs import TableRef
    from carriers.spark.distributed import SessionOnDemand


# ---- small results ---------------------------------------------------------------------------------------------
# Failures of a run that are verdicts about the table, not unreadable input: exit 1.
NOT_DONE = frozenset({Code.SUPERSEDED, Code.COMMIT_CONFLICT, Code.EVIDENCE_DROPPED, Code.NOT_FAST_FORWARD})


@record
class TextResult:
    """A result that is a text (digest, schema) with its JSON form. ``json_text``: the text is JSON itself (the
    schema), printed escaped like any JSON (attest/cli/output.py), never with characters replaced."""

    text: str
    document: Any
    exit_code: int = EXIT_OK
    json_text: bool = False

    def to_json(self) -> Any:
        return self.document

    def human(self) -> str:
        return self.text


@record
class ShowResult:
    """``attest show``: the standalone manifest (or the inputs) of a table version, JSON either way: printed as
    JSON prints it (escaped, never replaced: ``show | verify -`` checks the very document the table holds).
    ``wrapped``: the one object ``--json`` prints when the document is not one (``--inputs``: a list)."""

    ref: str
    document: Any
    attested: bool
    exit_code: int = EXIT_OK
    stderr_text: str = ""
    wrapped: Any = None

    @property
    def json_text(self) -> bool:
        return self.attested

    def to_json(self) -> Any:
        return self.document if self.wrapped is None else self.wrapped

    def human(self) -> str:
        return "" if not self.attested else json.dumps(self.document, indent=2, ensure_ascii=False)


@record
class RecordResult:
    ref: str
    noun: str
    attested_version: str | None
    files: int
    proof: str | None
    location: str
    sidecar: str | None
    manifest: dict[str, Any] | None
    replaced: list[str] = field(default_factory=list)
    signer: str | None = None  # the key id that signed (never the key)
    envelope: str | None = None
    openlineage: Emitted | None = None  # the OpenLineage event, when switched on
    exit_code: int = EXIT_OK
    warnings: list[str] = field(default_factory=list)  # said on stderr, and in --json

    def to_json(self) -> dict[str, Any]:
        out = {"recorded": True, "table": self.ref, "location": self.location, "attested_version":
               self.attested_version, "sidecar": self.sidecar, "manifest": self.manifest, "replaced": self.replaced,
               "signer": self.signer, "envelope": self.envelope}
        if self.openlineage is not None:
            out["openlineage"] = self.openlineage.to_json()
        if self.warnings:
            out["warnings"] = self.warnings
        return out

    def human(self) -> str:
        line = (f"RECORDED — {self.ref} {self.noun} {self.attested_version}: {self.files} file(s) hashed"
                + (f", inputs {self.proof}" if self.proof else ", no inputs observed")
                + (f", signed by {self.signer}" if self.signer else ", unsigned"))
        sent = [self.openlineage.line()] if self.openlineage is not None and self.openlineage.emitted else []
        return "\n".join([*(f"  replaces: {r}" for r in self.replaced), line, *sent])

    @property
    def stderr_text(self) -> str:
        failed = self.openlineage is not None and not self.openlineage.emitted
        lines = [*self.warnings, *([self.openlineage.line()] if failed and self.openlineage is not None else [])]
        return "\n".join(lines)


@record
class LineageResult:
    root: LineageNode
    format: str = "text"  # text | json | dot | mermaid | svg (json is printed by the JSON renderer)

    @property
    def exit_code(self) -> int:
        if self.root.error is not None:
            return EXIT_UNREADABLE
        return EXIT_FAILED if self.root.failed() else EXIT_OK

    def to_json(self) -> Any:
        tree = self.root.to_json()
        # "passed" is the whole walk's outcome (the exit code); the root's own verdict stays as "node_passed".
        facts = self.root.facts()
        out = {**tree, "passed": self.exit_code == EXIT_OK, "node_passed": tree.get("passed", False),
               "summary": facts.summary(self.root), "walk": facts.to_json()}
        if self.root.error is not None:  # the root could not be read: the same shape as any error
            out["errors"] = [{"code": self.root.error, "message": self.root.verdict, "path": self.root.ref}]
        return out

    def human(self) -> str:
        summary = self.root.summary()  # why the walk passed or failed: the last line, the caption of a picture
        if self.format == "dot":
            from attest.render.dot import to_dot

            return to_dot(self.root.graph(), caption=summary)
        if self.format == "mermaid":
            from attest.render.mermaid import to_mermaid

            return to_mermaid(self.root.graph(), caption=summary)
        if self.format == "svg":
            from attest.render.svg import to_svg

            return to_svg(self.root.graph(), caption=summary)
        return "\n".join([*self.root.lines(), summary])


# ---- shared argument handling ----------------------------------------------------------------------------------
def read_input(name: str, *, regular_only: bool = False) -> bytes:
    """The bytes of a file or stdin, at most one byte more than any JSON document accepted (the parser then refuses
    it as too large, instead of this reading gigabytes). ``regular_only``: a file the user did not name themselves (a
    carrier directory's manifest.json) must be a regular file — a FIFO there would block the command forever, a link
    to /dev/zero fill the limit — while a named one may be a pipe (``attest verify <(...)``)."""
    from attest.model import MAX_DOCUMENT_BYTES

    limit = MAX_DOCUMENT_BYTES + 1
    if name == "-":
        return sys.stdin.buffer.read(limit)
    try:
        return _read_bounded(name, limit, regular_only=regular_only)
    except FileNotFoundError as exc:
        from attest.cli.mistakes import missing_file

        raise missing_file(name) from exc
    except IsADirectoryError as exc:
        raise AttestError(f"{name}: is a directory", code=Code.MANIFEST_MISSING) from exc
    except OSError as exc:
        raise AttestError(f"{name}: {exc.strerror}", code=Code.MANIFEST_MISSING) from exc


def read_argument_file(option: str, name: str) -> bytes:
    """The bytes of the file an option names (``--sql-file``, ``--program-json``): its errors name that option, never
    a manifest (a missing ``--sql-file`` said "no such manifest file (nor a Delta table)")."""
    from attest.model import MAX_DOCUMENT_BYTES

    if name == "-":
        return sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
    try:
        return _read_bounded(name, MAX_DOCUMENT_BYTES + 1, regular_only=False)
    except OSError as exc:
        from attest.cli.mistakes import unreadable_argument_file

        raise unreadable_argument_file(option, name, exc) from exc


def _read_bounded(name: str, limit: int, *, regular_only: bool) -> bytes:
    """Up to ``limit`` bytes of ``name``; with ``regular_only``, only a regular file (attest.hashing.read_regular:
    opened without blocking, checked on the descriptor)."""
    if regular_only:
        from attest.hashing import read_regular

        return read_regular(name, limit)
    with open(name, "rb") as handle:
        return handle.read(limit)


def storage_options(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in getattr(args, "storage_option", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            # Never echo the value: storage options carry credentials.
            raise InvalidArgumentError(f"--storage-option takes KEY=VALUE; got one without '=' ({len(item)} "
                                       "characters, not shown)")
        out[key] = value
    from attest.redact import register_secrets
    from carriers.storage import option_secrets

    register_secrets(option_secrets(out))  # before anything can fail: no message may echo a credential
    return out


def table_ref(args: argparse.Namespace, text: str | None = None) -> TableRef:
    """The command's table, parsed once with its version options."""
    from attest.cli.catalogs import catalog_for
    from carriers.refs import parse_ref

    typed = text if text is not None else args.target
    return parse_ref(typed, version=getattr(args, "version", None), snapshot_id=getattr(args, "snapshot_id", None),
                     catalog=catalog_for(args, typed))


def open_ref(args: argparse.Namespace, ref: TableRef, *, detached: bool = False,
             allow_external: bool = False) -> AttestedTable:
    from carriers.refs import open_table

    return open_table(ref, storage_options=storage_options(args), detached=detached, allow_external=allow_external)


# ---- digest / schema -------------------------------------------------------------------------------------------
def cmd_digest(args: argparse.Namespace, out: Output) -> TextResult:
    from attest.canonical import digest
    from attest.model import load_json_document

    data = read_input(args.file)
    from attest.cli.mistakes import refuse_data_file

    refuse_data_file(args.file, data, expected="JSON document")
    identity = digest(load_json_document(data))
    return TextResult(identity, {"identity": identity, "hash_scheme": "v1"})


def cmd_schema(args: argparse.Namespace, out: Output) -> TextResult:
    from attest.schema import schema_text

    text = schema_text()
    return TextResult(text.rstrip("\n"), json.loads(text), json_text=True)


# ---- verify ----------------------------------------------------------------------------------------------------
# ---- --spark (docs/distributed.md) --------------------------------------------------------------------------------
@contextlib.contextmanager
def spark_for(args: argparse.Namespace) -> Iterator[SessionOnDemand | None]:
    """The command's Spark session when --spark was given (started only once bytes are to be hashed), else None."""
    if getattr(args, "master", None) and not getattr(args, "spark", False):
        raise InvalidArgumentError("--master applies only with --spark")
    if not getattr(args, "spark", False):
        yield None
        return
    master = getattr(args, "master", None)
    if master is not None and not (master == "yarn" or master.startswith(("local", "spark", "k8s"))):
        # Spark's own rule (SparkSubmit), checked before its JVM starts and exits with a Java stack trace.
        raise InvalidArgumentError(f"--master {master!r} is not a Spark master: yarn, local[N], spark://HOST:PORT or "
                                   "k8s://URL")
    try:
        import pyspark  # noqa: F401  (the extra's presence, checked before any table is read)

        from carriers.spark.distributed import SessionOnDemand
    except ImportError as exc:
        raise AttestError("--spark needs the `spark` extra: pip install 'recipe-attest[spark]'",
                          code=Code.EXTRA_MISSING) from exc
    session = SessionOnDemand(args.master)
    try:
        yield session
    finally:
        session.stop()


def verify_with(carrier: AttestedTable, spark: SessionOnDemand | None, *, version: str | None, level: Any,
                progress: Any = None, policy: TrustPolicy | None = None, state: Any = None) -> Report:
    """verify_state on ``state`` (default: the carrier's state of ``version``), with the bytes hashed on Spark
    executors when ``spark`` is given (the same decision)."""
    from attest.verify.table import verify_state

    if spark is None:
        note = None
    else:
        from carriers.spark.distributed import executor_note, use_executors

        hasher = use_executors(carrier, spark)
    report = verify_state(state if state is not None else carrier.state(version), carrier, level=level,
                          progress=progress, policy=policy)
    if spark is not None:
        note = executor_note(hasher)
    if note is not None:
        report.notes.append(note)
    return report


def cmd_verify(args: argparse.Namespace, out: Output) -> Report:
    from attest.cli.catalogs import catalog_for
    from carriers.refs import looks_like_table

    if looks_like_table(args.target) or catalog_for(args, args.target) is not None:  # --catalog: an identifier
        return _verify_table(args, out)
    if args.spark or args.master:
        raise InvalidArgumentError("--spark and --master apply to tables; a manifest's artifacts are hashed here")
    if args.level == "files":
        raise InvalidArgumentError("--level files applies to tables; a manifest is checked at schema or bytes level")
    if getattr(args, "version", None) or getattr(args, "snapshot_id", None):
        raise InvalidArgumentError("--version and --snapshot-id apply to tables, not manifest files")
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
    policy = _trust_policy(args)  # before any hashing: a bad key or policy file is an input error (exit 2)
    from attest.cli.program_hash import expected_program
    from attest.verify.program import check_program

    expected = expected_program(args)  # --program-file / --program-sql: a program that does not parse is exit 2
    ref = table_ref(args)
    with spark_for(args) as spark:
        carrier = open_ref(args, ref, allow_external=bool(getattr(args, "allow_external_files", False)))
        prefetch = getattr(args, "early", None)
        if prefetch is not None and spark is None:
            # Hashing started before this module was imported (attest.cli._head_start): used only for exactly the
            # files the carrier lists itself.
            from carriers.delta_prefetch import DeltaPrefetch, PrefetchedHasher

            if isinstance(prefetch, DeltaPrefetch):
                carrier.hasher = PrefetchedHasher(prefetch, carrier.storage)
        state = None if expected is None else carrier.state(ref.version)
        report = verify_with(carrier, spark, version=ref.version, level=args.level,
                             progress=out.progress("hashing table files"), policy=policy, state=state)
        return check_program(report, expected, state, args.dialect)


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
    policy = _trust_policy(args)  # before any hashing: a bad key or policy file is an input error (exit 2)
    data = read_input(target, regular_only=directory is not None)
    from attest.cli.mistakes import refuse_data_file

    refuse_data_file(target, data)  # a Parquet / Avro / ORC file: never JSON, so never a manifest
    from attest.verify.artifacts import EarlyHashes

    # Hashing started before the command was imported (attest.cli._head_start), or starts now, overlapping what is
    # left of start-up; the verification below decides (and re-hashes any file it resolves differently).
    early = getattr(args, "early", None)
    if not isinstance(early, EarlyHashes):
        early = None
    if early is None and args.level != "schema":
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


# ---- signatures (docs/signing.md) ------------------------------------------------------------------------------
def _trust_policy(args: argparse.Namespace) -> TrustPolicy | None:
    """The TrustPolicy that --key or --policy names, or None; signing code is imported only when asked for."""
    if getattr(args, "key", None) is None and getattr(args, "policy", None) is None:
        return None
    from attest.signing.policy import TrustPolicy

    return TrustPolicy.from_public_key(args.key) if args.key is not None else TrustPolicy.load(args.policy)


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
            envelope = _read_bounded(where, MAX_DOCUMENT_BYTES + 1, regular_only=args.envelope is None)
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


@record
class KeygenResult:
    type: str
    key_id: str
    private: str
    public: str
    encrypted: bool
    exit_code: int = EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "key_id": self.key_id, "private_key": self.private, "public_key": self.public,
                "encrypted": self.encrypted}

    def human(self) -> str:
        return (f"KEYGEN — {self.type} key pair: {self.private} (private, mode 0600"
                + (", encrypted" if self.encrypted else "") + f"), {self.public}\nkey id: {self.key_id}")


def cmd_keygen(args: argparse.Namespace, out: Output) -> KeygenResult:
    from attest.signing.keys import PASSWORD_ENV, generate_keypair

    password = os.environ.get(PASSWORD_ENV) if args.encrypt else None
    if args.encrypt and not password:
        raise AttestError(f"--encrypt takes the password from ${PASSWORD_ENV}, which is not set",
                          code=Code.KEY_INVALID)
    pair = generate_keypair("ecdsa-p256" if args.type == "p256" else "ed25519",
                            password=None if password is None else password.encode("utf-8"))
    private, public = Path(args.out + ".key"), Path(args.out + ".pub")
    try:
        for path in (private, public):
            if path.exists() or path.is_symlink():
                raise AttestError(f"{path} exists; keygen never overwrites a key", code=Code.KEY_INVALID)
        # Public first: a failure after it leaves no orphan private key. O_EXCL + mode 0600 at creation: the
        # private key is never readable by others, not even for a moment, and never replaces an existing file.
        for path, data, mode in ((public, pair.public_pem, 0o644), (private, pair.private_pem, 0o600)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
    except OSError as exc:
        raise AttestError(f"{exc.filename}: cannot write the key ({exc.strerror})", code=Code.KEY_INVALID) from exc
    return KeygenResult(pair.type, pair.key_id, str(private), str(public), pair.encrypted)


# ---- show / lineage / audit ------------------------------------------------------------------------------------
def cmd_show(args: argparse.Namespace, out: Output) -> ShowResult:
    from attest.model import Manifest

    ref = table_ref(args)
    attestation = open_ref(args, ref).read(ref.version)
    if attestation is None:
        where = f" at {ref.noun} {ref.version}" if ref.version else ""
        message = f"UNATTESTED — {ref.base}{where} carries no attestation"
        return ShowResult(str(ref), {"attested": False, "table": ref.base, "version": ref.version,
                                     "message": message}, attested=False, exit_code=EXIT_FAILED, stderr_text=message)
    if args.inputs:
        # Text: the list itself; --json: one object, as every --json prints (docs/cli.md).
        inputs = [i.to_dict() for i in (attestation.inputs or ())]
        return ShowResult(str(ref), inputs, attested=True, wrapped={
            "table": ref.base, "version": ref.version, "attested_version": attestation.attested_version,
            "inputs": inputs})
    document = attestation.document
    # Field order as in the spec when the document is valid; an invalid one is shown as read.
    with contextlib.suppress(AttestError):
        document = Manifest.from_dict(document).to_dict()
    return ShowResult(str(ref), document, attested=True)


def cmd_lineage(args: argparse.Namespace, out: Output) -> LineageResult:
    from carriers.lineage import walk

    if args.depth < 0:
        raise InvalidArgumentError(f"--depth must be 0 or more, got {args.depth}")
    policy = _trust_policy(args)
    ref = table_ref(args)
    fmt = _format(args)
    root = walk(ref, version=ref.version, depth=args.depth, level=args.level,
                storage_options=storage_options(args), policy=policy)
    return LineageResult(root, format=fmt)


def _format(args: argparse.Namespace) -> str:
    """The output format: ``--format``, with ``--json`` as ``--format json`` (both at once must agree)."""
    if args.json and args.format not in (None, "json"):
        raise InvalidArgumentError(f"--json and --format {args.format} ask for two formats: give one")
    return "json" if args.json else str(args.format or "text")


def cmd_audit(args: argparse.Namespace, out: Output) -> _AuditResult:
    with spark_for(args) as spark:
        return _audit(args, out, spark)


def _audit(args: argparse.Namespace, out: Output, spark: SessionOnDemand | None) -> _AuditResult:
    from attest.cli.catalogs import audit_targets
    from attest.verify.audit import AuditReport
    from carriers.discovery import discover
    from carriers.refs import open_table

    fmt = _format(args)
    targets = audit_targets(args)  # --catalog: namespaces and identifiers of that catalog; none, the whole catalog
    policy = _trust_policy(args)  # one policy for every table; a bad file is an input error before any table
    sink = None
    if args.to is not None:  # checked before any table is: a destination that cannot take the audit is exit 2
        from carriers.audit_table import AuditTable

        sink = AuditTable.open(args.to, storage_options=storage_options(args))
    audit = AuditReport()
    options = storage_options(args)
    stream = out.stdout if fmt == "text" else None
    progress = out.progress("auditing", unit="tables")

    def show(line: str) -> None:  # lines as they come: a long audit shows progress even when piped
        if stream is not None:
            progress.above(line, stream)

    refs: list[tuple[str, Any, tuple[str, ...]]] = []
    for target in targets:
        try:
            found = discover(target, options)
        except Exception as exc:  # a target that cannot be expanded is an outcome, the others go on
            show(audit.line(audit.add_exception(target, _coded(exc))))
            continue
        for skipped in found.skipped:  # every place not walked is said, with its reason
            if skipped.blocking:
                show(audit.line(audit.add_error(skipped.path, skipped.problem())))
            else:
                show(audit.skipped_line(audit.add_skipped(skipped.problem())))
        if not found.tables and not any(s.blocking for s in found.skipped):
            show(audit.line(audit.add_error(target, AttestError(f"no table found under {target}",
                                                                code=Code.TABLE_NOT_FOUND).problem())))
        refs.extend((str(f.ref), f.ref, f.notes) for f in found.tables if sink is None or not sink.is_table(f.ref))
    progress(0, len(refs), 0)  # the bar from the start: the first table may be the slow one
    for index, (name, ref, notes) in enumerate(refs):
        try:
            carrier = open_table(ref, storage_options=options)
            label = getattr(carrier, "static_note", None)  # an Iceberg folder: how it was read (iceberg_static.py)
            if isinstance(label, str):
                notes = (*notes, label)
            state = carrier.state(ref.version)
            report = verify_with(carrier, spark, version=ref.version, level=args.level, policy=policy, state=state)
            row = audit.add_report(name, report, None if state.attestation is None else state.attestation.document,
                                   notes)
        except Exception as exc:  # one unreadable table must not stop the audit of the others
            row = audit.add_exception(name, _coded(exc), notes)
        show(audit.line(row))
        progress(index + 1, len(refs), 0)
    progress.close()
    kept = None
    if sink is not None:
        kept = sink.append(audit)
    return _AuditResult(audit, streamed=stream is not None, format=fmt, kept=kept)


def _coded(exc: Exception) -> Exception:
    from carriers.storage import coded

    return coded(exc) if isinstance(exc, OSError) else exc


@record
class _AuditResult:
    audit: AuditReport
    streamed: bool
    format: str = "text"
    kept: str | None = None  # where the rows were appended (--to), as "<path> version <N>"

    @property
    def exit_code(self) -> int:
        return self.audit.exit_code

    def to_json(self) -> Any:
        out = self.audit.to_json()
        if self.kept is not None:
            out["kept"] = self.kept
        return out

    def human(self) -> str:
        if self.format == "csv":
            return self.audit.csv()
        if self.format == "table":
            return self.audit.table()
        return self.audit.summary() if self.streamed else self.audit.human()

    @property
    def stderr_text(self) -> str:
        # CSV and tables stay clean for the next program; where the rows went is said on stderr.
        return "" if self.kept is None else f"audit appended to {self.kept}"


# ---- record ----------------------------------------------------------------------------------------------------
def _program_hash(args: argparse.Namespace) -> str:
    from attest.cli.program_hash import program_identity  # the one computation, shared with `attest program-hash`

    return program_identity(args)


def _text_arguments(args: argparse.Namespace) -> None:
    """Words recorded into the manifest must be Unicode text: bytes that are not UTF-8 on the command line reach
    Python as lone surrogates, which no JSON document may hold (refused here as the argument they are, not as a
    malformed manifest)."""
    for option in ("model", "run_id", "sql", "dialect", "branch"):
        value = getattr(args, option, None)
        if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):
            raise InvalidArgumentError(f"--{option.replace('_', '-')} is not UTF-8 text (it holds bytes no Unicode "
                                       "character is made of): give it as UTF-8")


def cmd_record(args: argparse.Namespace, out: Output) -> RecordResult:
    _text_arguments(args)
    program_hash = _program_hash(args)
    ref = table_ref(args)
    if ref.version is not None:
        raise InvalidArgumentError(f"record attests the table's latest data {ref.noun}; drop the @{ref.version}")
    from attest.openlineage.emit import switched_on

    emit = switched_on(bool(args.openlineage))
    inputs = []
    upstreams = []
    for item in args.input or []:
        upstream_ref = _input_ref(item)
        upstream = open_ref(args, upstream_ref)
        upstreams.append(upstream)
        inputs.append(upstream.observe(upstream_ref.version))
    signer = _signer(args)  # before any hashing: an unreadable key is an input error (exit 2)
    carrier = open_ref(args, ref, detached=bool(args.detached))
    if args.branch is not None:
        carrier = _on_branch(carrier, args.branch)
    inputs.extend(_event_inputs(args, carrier))
    from attest.cli.program_hash import dialect_change

    warning = dialect_change(args, carrier, program_hash)
    result = carrier.record(model=args.model, program_hash=program_hash, inputs=inputs, run_id=args.run_id,
                            dialect=args.dialect, progress=out.progress("hashing table files"),
                            replace=bool(args.replace), signer=signer)
    manifest = result.manifest
    emitted = _emit(args, carrier, result, upstreams) if emit else None
    return RecordResult(ref=ref.base, noun=ref.noun, attested_version=result.attested_version,
                        files=len(manifest.output_hashes or ()) if manifest is not None else 0,
                        proof=None if manifest is None else manifest.inputs_proof_class, location=result.location,
                        sidecar=result.sidecar, manifest=None if manifest is None else manifest.to_dict(),
                        replaced=list(result.replaced), signer=result.signer, envelope=result.envelope,
                        openlineage=emitted, warnings=[warning] if warning else [])


def _signer(args: argparse.Namespace) -> Signer | None:
    """The key ``--sign-key`` names, else ``$ATTEST_SIGNING_KEY``'s, else None. Never printed: only its key id."""
    from attest.signing.keys import SIGNING_KEY_ENV

    path = args.sign_key or os.environ.get(SIGNING_KEY_ENV)
    if not path:
        return None
    from attest.signing.keys import PemSigner

    return PemSigner.load(path)


def _on_branch(carrier: AttestedTable, branch: str) -> AttestedTable:
    from carriers.iceberg import IcebergCarrier

    if not isinstance(carrier, IcebergCarrier):
        raise InvalidArgumentError("--branch applies to Iceberg tables (Delta has no branches)")
    return IcebergCarrier(carrier.table, catalog_name=carrier.catalog_name, detached=carrier.detached,
                          allow_external=carrier.allow_external, branch=branch)


# ---- publish (Iceberg write-audit-publish) ---------------------------------------------------------------------
@record
class PublishRefusedResult:
    """``attest publish`` refused because the branch head did not verify: the verdict, main untouched."""

    table: str
    branch: str
    message: str
    report: Report

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED

    def to_json(self) -> dict[str, Any]:
        return {"published": False, "passed": False, "table": self.table, "branch": self.branch,
                "verdict": f"NOT PUBLISHED — {self.message}", "errors": [p.to_json() for p in self.report.errors],
                "report": self.report.to_json()}

    def human(self) -> str:
        return f"{self.report.human()}\nNOT PUBLISHED — main of {self.table} was not moved"


def cmd_publish(args: argparse.Namespace, out: Output) -> Any:
    from attest.errors import VerificationRefusedError
    from carriers.publish import publish

    ref = table_ref(args)
    if ref.format != "iceberg" or ref.version is not None:
        raise InvalidArgumentError("publish takes an Iceberg table, iceberg://<catalog>/<namespace>.<table>, without "
                                   "a snapshot: the branch head is what is published")
    from carriers.iceberg import IcebergCarrier

    policy = _trust_policy(args)
    carrier = open_ref(args, ref)
    assert isinstance(carrier, IcebergCarrier)  # an iceberg:// reference opens an IcebergCarrier
    try:
        return publish(carrier, args.branch, policy=policy, level=args.level,
                       progress=out.progress("hashing table files"))
    except VerificationRefusedError as err:
        return PublishRefusedResult(ref.base, args.branch, err.message, err.report)


def _event_inputs(args: argparse.Namespace, carrier: AttestedTable) -> list[Any]:
    """Observed inputs from ``--openlineage-events`` files (carriers/openlineage.py resolves them)."""
    if not args.openlineage_events:
        return []
    from attest.model import MAX_DOCUMENT_BYTES
    from attest.openlineage.evidence import read_events
    from carriers.openlineage import observe_events

    datasets = []
    for name in args.openlineage_events:
        try:
            data = read_input(name)
        except AttestError as exc:
            raise OpenLineageError(f"{name}: cannot read the OpenLineage events ({exc.message})", path=name) from exc
        if len(data) > MAX_DOCUMENT_BYTES:  # read_input stops one byte past the limit: never parse a truncated file
            raise OpenLineageError(f"{name}: more than {MAX_DOCUMENT_BYTES:,} bytes of OpenLineage events", path=name)
        datasets.extend(read_events(data, name))
    return list(observe_events(datasets, target=carrier, storage_options=storage_options(args)))


def _emit(args: argparse.Namespace, carrier: AttestedTable, result: Any, upstreams: list[Any]) -> Emitted:
    """The attestation's OpenLineage RunEvent, read back from the table; a failure is reported, never raised."""
    from carriers.openlineage import emit_attestation, resolver, table_locations

    return emit_attestation(carrier, result, resolve=resolver(storage_options(args)),
                            input_locations=table_locations(upstreams), show_console=True)


def _input_ref(text: str) -> TableRef:
    from carriers.refs import parse_ref

    return parse_ref(text)
