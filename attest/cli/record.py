"""``attest record``: attest a table's latest data version."""

from __future__ import annotations

import argparse
import os

from attest.cli.output import EXIT_OK, Output
from attest.cli.shared import on_branch, open_ref, read_input, storage_options, table_ref
from attest.errors import AttestError, InvalidArgumentError, OpenLineageError
from attest.fast.record import field, many_records, record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.openlineage.emit import Emitted
    from attest.signing.keys import Signer
    from carriers.core import AttestedTable
    from carriers.refs import TableRef


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
    # Said once on stderr, and in --json: the dialect note, then the carrier's (WriteResult.warnings, "<code>: ...").
    warnings: list[str] = field(default_factory=list)
    # A carry-forward attestation (docs/content-digest.md): the sidecar BLAKE3 of the attestation it continues.
    continues: str | None = None
    content: str | None = None  # the rows the recorded content digest counts (None: none recorded)

    def to_json(self) -> dict[str, Any]:
        out = {"recorded": True, "table": self.ref, "location": self.location, "attested_version":
               self.attested_version, "sidecar": self.sidecar, "manifest": self.manifest, "replaced": self.replaced,
               "signer": self.signer, "envelope": self.envelope}
        if self.openlineage is not None:
            out["openlineage"] = self.openlineage.to_json()
        if self.warnings:
            out["warnings"] = self.warnings
        out["content_digest_rows"] = None if self.content is None else int(self.content)
        if self.continues is not None:
            out["continues"] = self.continues
        return out

    def human(self) -> str:
        line = (f"RECORDED — {self.ref} {self.noun} {self.attested_version}: {self.files} file(s) hashed"
                + (f", inputs {self.proof}" if self.proof else ", no inputs observed")
                + (f", signed by {self.signer}" if self.signer else ", unsigned"))
        if self.continues is not None:
            line += (f"; carried forward across rewrites that kept the same rows: it continues the attestation "
                     f"whose sidecar is {self.continues[:16]}… (its program, inputs and producer; the model and "
                     "program given were not used)")
        sent = [self.openlineage.line()] if self.openlineage is not None and self.openlineage.emitted else []
        return "\n".join([*(f"  replaces: {r}" for r in self.replaced), line, *sent])

    @property
    def stderr_text(self) -> str:
        failed = self.openlineage is not None and not self.openlineage.emitted
        lines = [self.json_stderr_text, *([self.openlineage.line()] if failed and self.openlineage is not None else [])]
        return "\n".join(line for line in lines if line)

    @property
    def json_stderr_text(self) -> str:
        """The warnings, said on stderr under --json too (a job's log shows them; its JSON reader gets ``warnings``).
        Each ("<code>: ...") is said as errors are ("attest: <code>: ..."), marked a warning, as audit's are."""
        return "\n".join(f"attest: warning: {w}" for w in self.warnings)




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
    """``attest record``: the whole command with the cycle collector paused (``many_records``). The listing is made
    paused (the carrier's ``_live``), and so was the rest after the hashing; between them, and in the manifest's
    ``to_dict`` below, the collections traversed every object of the listing the carrier still holds (~0.3–0.5 s of a
    record of 200,000 Iceberg files: docs/scale.md, "seventeenth pass, Iceberg record"). The command's objects are
    freed when it returns; only when cycles are reclaimed changes, never what is recorded (``ATTEST_FAST=0``: the
    collector is left alone)."""
    with many_records():
        return _record_command(args, out)


def _record_command(args: argparse.Namespace, out: Output) -> RecordResult:
    _text_arguments(args)
    program_hash = _program_hash(args)
    ref = table_ref(args)
    if ref.version is not None:
        raise InvalidArgumentError(f"record attests the table's latest data {ref.noun}; drop the @{ref.version}")
    ref = on_branch(ref, args.branch)
    from attest.openlineage.emit import switched_on

    emit = switched_on(bool(args.openlineage))
    inputs = []
    upstreams = []
    said: list[str] = []  # the inputs' warnings (input_weakened), said with the record's
    for item in args.input or []:
        upstream_ref = _input_ref(item)
        upstream = open_ref(args, upstream_ref)
        upstream.log_warnings = False  # said below, once
        upstreams.append(upstream)
        observed, warned = upstream.observe_warned(upstream_ref.version)
        inputs.append(observed)
        said.extend(warned)
    signer = _signer(args)  # before any hashing: an unreadable key is an input error (exit 2)
    carrier = open_ref(args, ref, detached=bool(args.detached))
    if getattr(args, "no_retain_tag", False):
        _without_retention(carrier)
    carrier.log_warnings = False  # its warnings are said below (stderr and --json), not logged a second time
    inputs.extend(_event_inputs(args, carrier))
    from attest.cli.program_hash import dialect_change

    warning = dialect_change(args, carrier, program_hash)
    with out.status(f"reading {ref}"):  # until the hashing's progress bar: the version's log read, its files listed
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
                        openlineage=emitted, warnings=[*([warning] if warning else []), *said, *result.warnings],
                        continues=result.continues,
                        content=result.content)


def _signer(args: argparse.Namespace) -> Signer | None:
    """The key ``--sign-key`` names, else ``$ATTEST_SIGNING_KEY``'s, else None. Never printed: only its key id."""
    from attest.signing.keys import SIGNING_KEY_ENV

    path = args.sign_key or os.environ.get(SIGNING_KEY_ENV)
    if not path:
        return None
    from attest.signing.keys import PemSigner

    return PemSigner.load(path)


def _without_retention(carrier: AttestedTable) -> None:
    """``--no-retain-tag``: the attestation commit sets no retention tag (docs/iceberg.md "Expiry and tags")."""
    from carriers.iceberg.carrier import IcebergCarrier

    if not isinstance(carrier, IcebergCarrier):
        raise InvalidArgumentError("--no-retain-tag applies to Iceberg tables (a Delta attestation needs no tag)")
    carrier.retain_tag = False




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
