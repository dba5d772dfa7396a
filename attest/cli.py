"""The ``attest`` command line. Exit codes: 0 verified / done, 1 verification failed, 2 unreadable input or
bad arguments."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from attest import __version__
from attest.canonical import CanonicalizationError, digest
from attest.errors import ArgumentsError, AttestError, Code, ManifestMalformedError
from attest.model import MAX_DOCUMENT_BYTES, Manifest, load_json_document
from attest.schema import schema_text
from attest.verify.report import LEVELS, Report

if TYPE_CHECKING:
    from attest.signing.policy import TrustPolicy

EXIT_OK, EXIT_FAILED, EXIT_UNREADABLE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_UNREADABLE, f"attest: error: {message}\n")


class Progress:
    """Progress on stderr, only when it is a terminal (machines reading --json or logs get none)."""

    def __init__(self, label: str, stream: TextIO = sys.stderr) -> None:
        self.label = label
        self.stream = stream
        self.enabled = stream.isatty()
        self._last = 0.0

    def __call__(self, done: int, total: int, nbytes: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last < 0.1 and done != total):
            return
        self._last = now
        if done == total:
            self.stream.write("\r\x1b[K")  # finished: clear the line, the verdict follows
        else:
            self.stream.write(f"\r{self.label}: {done}/{total} files, {nbytes / 1e6:,.1f} MB\x1b[K")
        self.stream.flush()


def _read_input(name: str) -> bytes:
    """The bytes of a file or stdin, at most one byte more than any JSON document accepted (the parser then
    refuses it as too large, instead of this reading gigabytes)."""
    limit = MAX_DOCUMENT_BYTES + 1
    if name == "-":
        return sys.stdin.buffer.read(limit)
    try:
        with open(name, "rb") as handle:
            return handle.read(limit)
    except FileNotFoundError as exc:
        raise AttestError(f"{name}: no such manifest file (nor a Delta table: no _delta_log there)",
                          code=Code.MANIFEST_MISSING) from exc
    except IsADirectoryError as exc:
        raise AttestError(f"{name}: is a directory", code=Code.MANIFEST_MISSING) from exc
    except OSError as exc:
        raise AttestError(f"{name}: {exc.strerror}", code=Code.MANIFEST_MISSING) from exc


def _emit_error(err: AttestError, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"passed": False, "level": "none", "verdict": "UNREADABLE",
                          "errors": [err.problem().to_json()]}, ensure_ascii=False))
    else:
        print(f"attest: {err.code.value}: {err.message}", file=sys.stderr)
    return EXIT_UNREADABLE


def _print_report(report: Report, as_json: bool) -> int:
    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(report.human())
    return EXIT_OK if report.passed else EXIT_FAILED


# ---- digest / schema ------------------------------------------------------------------------------------
def cmd_digest(args: argparse.Namespace) -> int:
    document = load_json_document(_read_input(args.file))  # AttestError: coded, exit 2 (main)
    try:
        identity = digest(document)
    except CanonicalizationError as exc:  # not reachable for parsed text; kept so no document crashes digest
        raise ManifestMalformedError(str(exc)) from exc
    print(identity)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return EXIT_OK


# ---- verify ---------------------------------------------------------------------------------------------
def _is_table_ref(target: str) -> bool:
    if target == "-":
        return False
    if target.startswith("iceberg://"):
        return True
    if "://" in target and not target.startswith("file://"):
        return not target.endswith(".json")
    local = target[len("file://"):] if target.startswith("file://") else target
    base = local.rsplit("@", 1)[0] if "@" in local and local.rsplit("@", 1)[1].isdigit() else local
    return Path(base).is_dir() and (Path(base) / "_delta_log").is_dir()


def _verify_manifest(args: argparse.Namespace) -> int:
    target = args.target
    artifacts = Path(args.artifacts_dir) if args.artifacts_dir else None
    if target != "-" and Path(target).is_dir():
        # A standalone carrier directory: its manifest.json, and the directory itself as the artifacts dir.
        artifacts = artifacts or Path(target)
        target = str(Path(target) / "manifest.json")
    from attest.verify.manifest import verify_manifest_bytes

    try:
        if args.level == "bytes" and artifacts is None:
            # Checked before reading: asking for bytes with nothing to hash is a usage error, not a schema check.
            raise ArgumentsError("--level bytes needs the artifacts: give --artifacts-dir DIR (or verify a "
                                 "standalone carrier directory)", code=Code.ARTIFACTS_DIR_REQUIRED)
        policy = _trust_policy(args)  # before any hashing: a bad key or policy file is an input error (exit 2)
        data = _read_input(target)
        report = verify_manifest_bytes(data, subject=target, artifacts_dir=artifacts, level=args.level,
                                       progress=Progress("hashing artifacts"))
        _check_manifest_signature(args, target, data, policy, report)
    except AttestError as err:
        return _emit_error(err, args.json)
    return _print_report(report, args.json)


# ---- signatures (docs/signing.md) -----------------------------------------------------------------------
def _trust_policy(args: argparse.Namespace) -> TrustPolicy | None:
    """The TrustPolicy that --key or --policy names, or None; signing code is imported only when asked for."""
    if args.key is None and args.policy is None:
        return None
    from attest.signing.policy import TrustPolicy

    return TrustPolicy.from_public_key(args.key) if args.key is not None else TrustPolicy.load(args.policy)


def _check_manifest_signature(args: argparse.Namespace, target: str, data: bytes, policy: TrustPolicy | None,
                              report: Report) -> None:
    """Judge the manifest's envelope (``--envelope``, else ``<manifest>.dsse.json`` beside it) into ``report``."""
    from carriers.standalone import envelope_name

    where = args.envelope or (None if target == "-" else str(Path(target).with_name(envelope_name(Path(target).name))))
    if policy is None:
        if where is not None and Path(where).is_file():
            report.notes.append(f"a signed envelope is beside the manifest ({where}); its signature was not "
                                "checked: give --key or --policy")
        return
    from attest.signing.attestation import check_manifest_signature

    envelope = None
    if where is not None:
        try:
            envelope = Path(where).read_bytes()
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
    if result.passed:
        report.signer = result.signer
    else:
        report.fail(result.code or Code.SIGNATURE_INVALID, result.message, where or "")


def cmd_keygen(args: argparse.Namespace) -> int:
    from attest.signing.keys import PASSWORD_ENV, generate_keypair

    password = os.environ.get(PASSWORD_ENV) if args.encrypt else None
    if args.encrypt and not password:
        return _emit_error(AttestError(f"--encrypt takes the password from ${PASSWORD_ENV}, which is not set",
                                       code=Code.KEY_INVALID), args.json)
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
        return _emit_error(AttestError(f"{exc.filename}: cannot write the key ({exc.strerror})",
                                       code=Code.KEY_INVALID), args.json)
    except AttestError as err:
        return _emit_error(err, args.json)
    if args.json:
        print(json.dumps({"type": pair.type, "key_id": pair.key_id, "private_key": str(private),
                          "public_key": str(public), "encrypted": pair.encrypted}))
    else:
        print(f"KEYGEN — {pair.type} key pair: {private} (private, mode 0600"
              + (", encrypted" if pair.encrypted else "") + f"), {public}")
        print(f"key id: {pair.key_id}")
    return EXIT_OK


def _table_version(args: argparse.Namespace) -> tuple[str, str | None]:
    from carriers.refs import parse_ref

    ref = parse_ref(args.target)
    version = getattr(args, "version", None) or getattr(args, "snapshot_id", None)
    if version is not None and ref.version is not None and str(version) != ref.version:
        raise AttestError(f"version given twice ({ref.version} in the reference, {version} as an option)",
                          code=Code.VERSION_NOT_FOUND)
    base = str(ref) if ref.version is None else str(ref).rsplit("@", 1)[0]
    return base, (str(version) if version is not None else ref.version)


def _open(args: argparse.Namespace, ref: str) -> Any:
    from carriers.refs import open_table

    return open_table(ref, storage_options=_storage_options(args))


def _storage_options(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in getattr(args, "storage_option", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AttestError(f"--storage-option takes KEY=VALUE, got {item!r}", code=Code.MANIFEST_INVALID_FIELD)
        out[key] = value
    return out


def _verify_table(args: argparse.Namespace) -> int:
    from attest.verify.table import verify_table

    try:
        ref, version = _table_version(args)
        carrier = _open(args, ref)
        report = verify_table(carrier, version=version, level=args.level, progress=Progress("hashing table files"))
    except AttestError as err:
        return _emit_error(err, args.json)
    return _print_report(report, args.json)


def cmd_verify(args: argparse.Namespace) -> int:
    if _is_table_ref(args.target):
        if args.artifacts_dir:
            return _emit_error(AttestError("--artifacts-dir is for manifest files, not tables",
                                           code=Code.MANIFEST_INVALID_FIELD), args.json)
        if args.key or args.policy or args.envelope:
            # Refused rather than ignored: a signature check that silently did not happen would over-claim.
            return _emit_error(AttestError("--key, --policy and --envelope apply to manifest files; table "
                                           "signatures are not checked yet", code=Code.MANIFEST_INVALID_FIELD),
                               args.json)
        return _verify_table(args)
    if args.level not in (None, "bytes", "schema") or getattr(args, "version", None) \
            or getattr(args, "snapshot_id", None):
        return _emit_error(AttestError("--level files, --version and --snapshot-id apply to tables, not manifest "
                                       "files", code=Code.MANIFEST_INVALID_FIELD), args.json)
    return _verify_manifest(args)


# ---- show / record ------------------------------------------------------------------------------------
def cmd_show(args: argparse.Namespace) -> int:
    try:
        ref, version = _table_version(args)
        carrier = _open(args, ref)
        attestation = carrier.read(version)
    except AttestError as err:
        return _emit_error(err, False)
    if attestation is None:
        where = f" at {'snapshot' if ref.startswith('iceberg://') else 'version'} {version}" if version else ""
        print(f"UNATTESTED — {ref}{where} carries no attestation", file=sys.stderr)
        return EXIT_FAILED
    if args.inputs:
        inputs = [i.to_dict() for i in (attestation.inputs or ())]
        print(json.dumps(inputs, indent=2, ensure_ascii=False))
    else:
        document = attestation.document
        # Field order as in the spec when the document is valid; an invalid one is shown as read.
        with contextlib.suppress(AttestError):
            document = Manifest.from_dict(document).to_dict()
        print(json.dumps(document, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_lineage(args: argparse.Namespace) -> int:
    from carriers.lineage import walk

    try:
        ref, version = _table_version(args)
        root = walk(ref, version=version, depth=args.depth, level=args.level,
                    storage_options=_storage_options(args))
    except AttestError as err:
        return _emit_error(err, args.json)
    if args.json:
        print(json.dumps(root.to_json(), indent=2, ensure_ascii=False))
    else:
        print("\n".join(root.lines()))
    return EXIT_OK if root.error is None else EXIT_UNREADABLE


def cmd_audit(args: argparse.Namespace) -> int:
    from attest.verify.table import verify_table
    from carriers.discovery import expand

    try:
        refs = [ref for target in args.targets for ref in expand(target)]
    except AttestError as err:
        return _emit_error(err, args.json)
    if not refs:
        return _emit_error(AttestError("no table found under " + ", ".join(args.targets),
                                       code=Code.MANIFEST_MISSING), args.json)
    rows: list[dict[str, Any]] = []
    progress = Progress("auditing")
    for index, ref in enumerate(refs):
        try:
            report = verify_table(_open(args, ref), level=args.level)
            row = report.to_json()
            outcome = "VERIFIED" if report.passed else ("UNATTESTED" if not report.attested else "NOT VERIFIED")
        except AttestError as err:  # one unreadable table must not stop the audit of the others
            row = {"passed": False, "subject": ref, "verdict": f"UNREADABLE — {err.message}", "level": "none",
                   "errors": [err.problem().to_json()]}
            outcome = "UNREADABLE"
        row["outcome"] = outcome
        rows.append(row)
        if not args.json:
            reason = "" if row["passed"] or not row["errors"] else f" ({row['errors'][0]['code']})"
            print(f"{outcome:<13} {row.get('level', 'none'):<7} {ref}{reason}", flush=True)
        progress(index + 1, len(refs), 0)
    counts = {k: sum(1 for r in rows if r["outcome"] == k)
              for k in ("VERIFIED", "NOT VERIFIED", "UNATTESTED", "UNREADABLE")}
    if args.json:
        print(json.dumps({"passed": counts["VERIFIED"] == len(rows), "counts": counts, "tables": rows},
                         indent=2, ensure_ascii=False))
    else:
        print(f"{len(rows)} table(s): " + ", ".join(f"{n} {k.lower()}" for k, n in counts.items() if n))
    return EXIT_OK if counts["VERIFIED"] == len(rows) else EXIT_FAILED


def _program_hash(args: argparse.Namespace) -> str:
    from attest.identity.program import program_identity_json, program_identity_sql

    given = [x for x in (args.sql, args.sql_file, args.program_json, args.program_hash) if x is not None]
    if len(given) != 1:
        raise AttestError("give exactly one of --sql, --sql-file, --program-json, --program-hash",
                          code=Code.MANIFEST_MISSING_REQUIRED_FIELD)
    if args.sql is not None:
        return program_identity_sql(args.sql, args.dialect)
    if args.sql_file is not None:
        return program_identity_sql(_read_input(args.sql_file).decode("utf-8"), args.dialect)
    if args.program_json is not None:
        return program_identity_json(load_json_document(_read_input(args.program_json)))
    value = str(args.program_hash)
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise AttestError("--program-hash must be 64 lowercase hex characters", code=Code.MANIFEST_INVALID_FIELD)
    return value


def cmd_record(args: argparse.Namespace) -> int:
    from carriers.refs import parse_ref

    try:
        program_hash = _program_hash(args)
        ref, version = _table_version(args)
        if version is not None:
            raise AttestError("record attests the table's current version; drop the @version / --version",
                              code=Code.VERSION_NOT_FOUND)
        inputs = []
        for item in args.input or []:
            parsed = parse_ref(item)
            upstream = _open(args, str(parsed).rsplit("@", 1)[0] if parsed.version else str(parsed))
            inputs.append(upstream.observe(parsed.version))
        carrier = _open(args, ref)
        result = carrier.record(model=args.model, program_hash=program_hash, inputs=inputs, run_id=args.run_id,
                                dialect=args.dialect, progress=Progress("hashing table files"))
    except AttestError as err:
        return _emit_error(err, args.json)
    manifest = result.manifest
    if args.json:
        print(json.dumps({"location": result.location, "attested_version": result.attested_version,
                          "sidecar": result.sidecar,
                          "manifest": None if manifest is None else manifest.to_dict()}, indent=2,
                         ensure_ascii=False))
    else:
        files = len(manifest.output_hashes or ()) if manifest is not None else 0
        proof = manifest.inputs_proof_class if manifest is not None else None
        print(f"RECORDED — {ref} version {result.attested_version}: {files} file(s) hashed"
              + (f", inputs {proof}" if proof else ", no inputs observed"))
    return EXIT_OK


# ---- parser ---------------------------------------------------------------------------------------------
def _add_table_options(p: argparse.ArgumentParser, *, version: bool = True) -> None:
    if version:
        group = p.add_mutually_exclusive_group()
        group.add_argument("--version", dest="version", metavar="N", help="Delta table version (time travel)")
        group.add_argument("--snapshot-id", dest="snapshot_id", metavar="ID", help="Iceberg snapshot id")
    p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                   help="object-store option passed to the table library (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="attest", description="Attest Delta Lake and Apache Iceberg table versions as "
                     "rocky-manifest v0.1 documents, and verify them offline.")
    parser.add_argument("--version", action="version", version=f"attest (recipe-attest) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("digest", help="print the v1 identity (BLAKE3 of canonical JSON) of a JSON document",
                       description="Print the 64-hex v1 identity of the JSON document in FILE ('-' reads stdin).")
    p.add_argument("file", metavar="FILE.json")
    p.set_defaults(func=cmd_digest)

    p = sub.add_parser("schema", help="print the rocky-manifest v0.1 JSON Schema as published by the reference",
                       description="Print the rocky-manifest v0.1 JSON Schema (draft 2020-12) as published by the "
                       "reference implementation (Apache-2.0; attest/schema/NOTICE).")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser(
        "verify", help="verify a manifest file or a table version",
        description="Verify a manifest file ('-' reads stdin), a standalone carrier directory, or a table "
        "(a Delta path/URI or iceberg://<catalog>/<ns>.<table>). Exit 0 verified, 1 not verified (including "
        "unattested and stale), 2 unreadable input or bad arguments.")
    p.add_argument("target", metavar="MANIFEST.json|TABLE")
    p.add_argument("--artifacts-dir", metavar="DIR", help="directory holding the artifacts a manifest names")
    p.add_argument("--level", choices=LEVELS, default=None,
                   help="schema, files (tables: binding) or bytes; default bytes where output hashes and files "
                   "exist. Manifests: bytes needs --artifacts-dir")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    signing = p.add_mutually_exclusive_group()
    signing.add_argument("--key", metavar="PUB.pem", help="require a signature by this public key (docs/signing.md)")
    signing.add_argument("--policy", metavar="TRUST.toml", help="require a signature allowed by this trust policy")
    p.add_argument("--envelope", metavar="FILE", help="the signed envelope (default: <manifest>.dsse.json beside it)")
    _add_table_options(p)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("keygen", help="write a signing key pair (PEM) and print its key id",
                       description="Write PREFIX.key (private, PKCS#8, mode 0600) and PREFIX.pub (public) and print "
                       "the key id (SHA-256 of the public key's DER). Never overwrites. --encrypt encrypts the "
                       "private key with the password in $ATTEST_SIGNING_KEY_PASSWORD.")
    p.add_argument("--type", choices=("ed25519", "p256"), default="ed25519", help="key type (default ed25519)")
    p.add_argument("--out", required=True, metavar="PREFIX", help="write PREFIX.key and PREFIX.pub")
    p.add_argument("--encrypt", action="store_true", help="encrypt the private key ($ATTEST_SIGNING_KEY_PASSWORD)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_keygen)

    p = sub.add_parser("show", help="print the standalone manifest a table carries",
                       description="Print the reconstituted standalone manifest of a table version as JSON "
                       "(pipe it to 'attest verify -'), or with --inputs the observed input list.")
    p.add_argument("target", metavar="TABLE")
    p.add_argument("--inputs", action="store_true", help="print the observed inputs kept beside the attestation")
    _add_table_options(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("lineage", help="walk a table version's upstream inputs and check each one",
                       description="Print the lineage tree of a table version: each upstream version its "
                       "attestation observed, whether that version is attested and verifies, and how strongly "
                       "it was observed.")
    p.add_argument("target", metavar="TABLE")
    p.add_argument("--depth", type=int, default=8, help="how many levels upstream to walk (default 8)")
    p.add_argument("--level", choices=("schema", "files", "bytes"), default="files",
                   help="how deeply each node is verified (default files)")
    p.add_argument("--json", action="store_true", help="print the tree as JSON")
    _add_table_options(p)
    p.set_defaults(func=cmd_lineage)

    p = sub.add_parser("audit", help="verify many tables: everything under a folder or in a catalog",
                       description="Verify every table a target stands for: a folder (every Delta table below "
                       "it), iceberg://<catalog> (every table), iceberg://<catalog>/<namespace>, or single table "
                       "references. One line per table, a summary, exit 0 only when every table verified.")
    p.add_argument("targets", nargs="+", metavar="TARGET")
    p.add_argument("--level", choices=LEVELS, default=None,
                   help="schema, files or bytes (default: bytes where output hashes exist)")
    p.add_argument("--json", action="store_true", help="print one JSON object with every table's report")
    p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                   help="object-store option passed to the table library (repeatable)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("record", help="attest a table's current version",
                       description="Attest the current version of TABLE (written by any engine).")
    p.add_argument("target", metavar="TABLE")
    p.add_argument("--model", required=True, help="the model / target name (subject.model)")
    p.add_argument("--sql", help="the SQL text of the program")
    p.add_argument("--sql-file", metavar="F", help="a file holding the SQL text of the program")
    p.add_argument("--program-json", metavar="F", help="a producer's typed JSON program representation")
    p.add_argument("--program-hash", metavar="HEX", help="a program identity computed elsewhere")
    p.add_argument("--dialect", help="SQL dialect (sqlglot name, e.g. spark, duckdb, postgres)")
    p.add_argument("--input", action="append", metavar="REF",
                   help="an upstream table the run read: Delta path[@VERSION] or iceberg://...[@SNAPSHOT]")
    p.add_argument("--run-id", help="the producer's run identifier (subject.run_id)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_table_options(p, version=False)
    p.set_defaults(func=cmd_record)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except AttestError as err:
        return _emit_error(err, getattr(args, "json", False))
    except KeyboardInterrupt:
        print("attest: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # a library error we did not anticipate: one line, not a traceback
        if os.environ.get("ATTEST_DEBUG"):
            raise
        print(f"attest: error: {type(exc).__name__}: {exc} (set ATTEST_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_UNREADABLE


if __name__ == "__main__":
    sys.exit(main())
