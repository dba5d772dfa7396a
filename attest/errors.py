"""The error taxonomy: one stable code per failure kind, one exception class per code family.

Codes are part of the public interface (``attest verify --json``); docs/errors.md lists them.
"""

from __future__ import annotations

from enum import StrEnum

from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any


class Code(StrEnum):
    """Every code, one spelling (tests/test_cli_contract.py::test_every_code_has_one_spelling_and_is_documented checks
    docs/errors.md against this list)."""

    # The document itself.
    MANIFEST_MISSING = "manifest_missing"
    MANIFEST_MALFORMED_JSON = "manifest_malformed_json"
    MANIFEST_UNSUPPORTED_VERSION = "manifest_unsupported_version"
    MANIFEST_UNSUPPORTED_HASH_SCHEME = "manifest_unsupported_hash_scheme"
    MANIFEST_MISSING_REQUIRED_FIELD = "manifest_missing_required_field"
    MANIFEST_INVALID_FIELD = "manifest_invalid_field"
    MANIFEST_UNKNOWN_FIELD = "manifest_unknown_field"
    INPUTS_PAIR_BROKEN = "inputs_pair_broken"
    # Bytes against the document.
    ARTIFACT_MISSING = "artifact_missing"
    ARTIFACT_HASH_MISMATCH = "artifact_hash_mismatch"
    ARTIFACT_OUTSIDE_ROOT = "artifact_outside_root"
    ARTIFACT_UNREADABLE = "artifact_unreadable"
    # A table against its attestation.
    UNATTESTED = "unattested"
    STALE = "stale"
    COMPACTED = "compacted"
    CONTENT_CHANGED = "content_changed"
    FILE_MISSING = "file_missing"
    FILE_UNATTESTED = "file_unattested"
    SIZE_MISMATCH = "size_mismatch"
    CARRIER_TAMPERED = "carrier_tampered"
    SIDECAR_MISSING = "sidecar_missing"
    SIDECAR_MISMATCH = "sidecar_mismatch"
    VERSION_NOT_FOUND = "version_not_found"
    TABLE_UNREADABLE = "table_unreadable"
    UNSUPPORTED_TABLE = "unsupported_table"
    TABLE_REFERENCE_INVALID = "table_reference_invalid"
    SNAPSHOT_EXPIRED = "snapshot_expired"
    # What readers get (issue 8): the binding covers the reader's view, not only file bytes.
    READER_VIEW_CHANGED = "reader_view_changed"
    TABLE_INCONSISTENT = "table_inconsistent"
    PATH_AMBIGUOUS = "path_ambiguous"
    FILE_OUTSIDE_TABLE = "file_outside_table"
    LEVEL_NOT_ATTESTED = "level_not_attested"
    COMMIT_CONFLICT = "commit_conflict"
    SUPERSEDED = "superseded"
    PROGRAM_MISMATCH = "program_mismatch"  # verify --program-file / --program-sql: another program produced it
    # Signed attestations and trust policies (issue 11, the engine-free signing core; docs/signing.md).
    SIGNATURE_MISSING = "signature_missing"
    SIGNATURE_INVALID = "signature_invalid"
    STATEMENT_MISMATCH = "statement_mismatch"
    SIGNER_NOT_ALLOWED = "signer_not_allowed"
    KEY_REVOKED = "key_revoked"
    KEY_EXPIRED = "key_expired"
    KEY_INVALID = "key_invalid"
    POLICY_INVALID = "policy_invalid"
    # The command line and the environment (issue 15): named for what happened.
    INVALID_ARGUMENT = "invalid_argument"
    TABLE_NOT_FOUND = "table_not_found"
    EXTRA_MISSING = "extra_missing"
    SPARK_UNAVAILABLE = "spark_unavailable"
    INTERNAL_ERROR = "internal_error"
    EVIDENCE_DROPPED = "evidence_dropped"
    NOT_FAST_FORWARD = "not_fast_forward"
    # Task A (reference interoperability, hostile JSON, honest standalone outcomes); one block for easy merges.
    MANIFEST_PRODUCED_AT_EMPTY = "manifest_produced_at_empty"
    ARTIFACTS_DIR_REQUIRED = "artifacts_dir_required"
    BYTES_NOT_ATTESTED = "bytes_not_attested"
    NOTHING_TO_CARRY = "nothing_to_carry"  # record(carry_only=True): no attestation to carry forward; nothing written
    # A signed carry-forward of an attestation whose own signature does not verify under the recorder's key.
    CARRY_FORWARD_UNVERIFIED = "carry_forward_unverified"
    ARTIFACTS_DIR_MISSING = "artifacts_dir_missing"  # --artifacts-dir names no directory: an argument, not a check
    # Task F (issue 14: OpenLineage, lineage pictures, a kept audit); one block for easy merges.
    OPENLINEAGE_EVENTS_INVALID = "openlineage_events_invalid"
    OPENLINEAGE_EMIT_FAILED = "openlineage_emit_failed"
    AUDIT_TABLE_REFUSED = "audit_table_refused"
    TABLE_NOT_AUDITED = "table_not_audited"
    # Object stores and catalogs (issue 13): an engine that cannot reach a table on a store.
    UNSUPPORTED_STORAGE = "unsupported_storage"
    # Errors that name the mistake (issue 30): a data file, table metadata or a folder of tables given as a manifest.
    NOT_A_MANIFEST = "not_a_manifest"
    # Issue 32.3: a second record of a snapshot whose detached (format-v3) attestation is written once.
    ALREADY_ATTESTED = "already_attested"
    # A warning, never a failure (WriteResult.warnings): an attestation written but not kept by the table metadata.
    NOT_KEPT = "not_kept"
    # A warning: an upstream input attested at that version, but its attestation does not hold: recorded heuristic.
    INPUT_WEAKENED = "input_weakened"
    # A warning: SQL recorded in another dialect than the attestation in force, its program_hash changed by that alone.
    DIALECT_CHANGED = "dialect_changed"
    # A lineage walk: the version opened at an input's recorded location is not the table / content the run read.
    LINEAGE_INPUT_MISMATCH = "lineage_input_mismatch"


@record(frozen=True)
class Problem:
    """One failure found by a check: a stable code, a human message, and where (JSON path or file)."""

    code: Code
    message: str
    path: str = ""

    def to_json(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message, "path": self.path}


class AttestError(Exception):
    """Base of every error this library raises on purpose."""

    code: Code = Code.MANIFEST_INVALID_FIELD

    def __init__(self, message: str, *, path: str = "", code: Code | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        if code is not None:
            self.code = code

    def problem(self) -> Problem:
        return Problem(self.code, self.message, self.path)


class ManifestMissingError(AttestError):
    code = Code.MANIFEST_MISSING


class ManifestMalformedError(AttestError):
    code = Code.MANIFEST_MALFORMED_JSON


class UnsupportedVersionError(AttestError):
    code = Code.MANIFEST_UNSUPPORTED_VERSION


class ManifestInvalidError(AttestError):
    """The document parsed as JSON but breaks the v0.1 rules; ``problems`` lists every violation."""

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first.message + more, path=first.path, code=first.code)
        self.problems = problems


class CarrierError(AttestError):
    """A carrier could not read or write its target (table missing, unsupported feature, I/O)."""

    code = Code.TABLE_UNREADABLE


class TableNotFoundError(CarrierError):
    code = Code.TABLE_NOT_FOUND


class UnsupportedTableError(CarrierError):
    """The table uses a feature this carrier cannot write to; the message says which, in one line."""

    code = Code.UNSUPPORTED_TABLE


class UnsupportedStorageError(CarrierError):
    """The engine that reads this table format cannot use the store the table is on; the message names both."""

    code = Code.UNSUPPORTED_STORAGE


class VersionNotFoundError(CarrierError):
    code = Code.VERSION_NOT_FOUND


class TableReferenceError(AttestError):
    """A table reference (path, URI, iceberg://...) could not be understood or its catalog is not configured."""

    code = Code.TABLE_REFERENCE_INVALID


class TableInconsistentError(CarrierError):
    """The table's metadata contradicts itself (a checkpoint and the log disagree, a path two engines resolve
    differently): no verdict about it would be safe."""

    code = Code.TABLE_INCONSISTENT


class CommitConflictError(CarrierError):
    """Our own metadata commit kept losing races with other writers (retried with backoff)."""

    code = Code.COMMIT_CONFLICT


class SupersededError(CarrierError):
    """The attestation was written but is not in force: another commit landed before it bound the version."""

    code = Code.SUPERSEDED


class InvalidArgumentError(AttestError):
    """The command's arguments cannot be right (a malformed version, an option that does not apply)."""

    code = Code.INVALID_ARGUMENT


class EvidenceDroppedError(CarrierError):
    """A re-attestation would replace recorded evidence (observed inputs) with less; pass replace=True / --replace."""

    code = Code.EVIDENCE_DROPPED


class PolicyError(AttestError):
    """policy="required" and an attestation failed."""


class ArgumentsError(AttestError):
    """The command's arguments ask for something it cannot do (e.g. ``--level bytes`` with no artifacts)."""

    code = Code.ARTIFACTS_DIR_REQUIRED


class VerificationRefusedError(AttestError):
    """An action that requires a verified table (a gated read, a publish) was refused because the table did not
    verify; ``code`` is the verification's first code, ``report`` the whole verdict."""

    code = Code.UNATTESTED

    def __init__(self, message: str, *, path: str = "", code: Code | None = None, report: Any = None) -> None:
        super().__init__(message, path=path, code=code)
        self.report = report


class NotFastForwardError(CarrierError):
    """A publish would not be a fast-forward: ``main`` moved since the branch forked from it."""

    code = Code.NOT_FAST_FORWARD


class OpenLineageError(AttestError):
    """OpenLineage events given as evidence cannot be read, or an event could not be emitted (docs/lineage.md)."""

    code = Code.OPENLINEAGE_EVENTS_INVALID


class AuditTableError(AttestError):
    """``attest audit --to`` names something the audit must not be appended to (docs/audit.md)."""

    code = Code.AUDIT_TABLE_REFUSED
