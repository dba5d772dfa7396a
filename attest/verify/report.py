"""Verification as data: a report object that the CLI prints as a verdict line or as JSON."""

from __future__ import annotations

import shlex

from attest.errors import Code, Problem
from attest.fast.record import field, record
from attest.render.terminal import terminal_safe

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any, Literal

    Level = Literal["none", "schema", "files", "bytes"]
else:
    Level = str  # for modules importing the name for their annotations

LEVELS: tuple[Level, ...] = ("schema", "files", "bytes")

VERIFIED = "VERIFIED"
SCHEMA_ONLY = "VERIFIED (schema only — no byte-identity attested)"  # the reference verifier's line (docs/verify.md)
NOT_VERIFIED = "NOT VERIFIED"
UNATTESTED = "UNATTESTED"
# What a verdict says of the signature (docs/verify.md): a passing verdict always says one of these three.
UNSIGNED = "unsigned"
SIGNATURE_NOT_CHECKED = "signature not checked"
# What a table verdict says was checked, by the deepest level reached.
_TABLE_LEVEL = {
    "schema": "schema only — files and bytes not checked",
    "files": "files — live file set and sizes; bytes not re-hashed",
    "bytes": "bytes",
    "none": "nothing checked",
}
_STOPPED_AT = {
    "schema": "schema — files and bytes not checked",
    "files": "files — bytes not re-hashed",
    "none": "nothing checked",
}


def version_noun(table_format: str | None) -> str:
    """Iceberg tables have snapshots, Delta tables versions: the verdict uses the user's word."""
    return "snapshot" if table_format == "iceberg" else "version"


# The operation of the one "rewrite" a format gives when the history since the attested version was cut (Iceberg
# expiry, found through the retention tag: carriers/iceberg/rewrites.py whole_version): every attested data file
# removed, every current one added, so the whole version is judged by its rows (and the verdict says so).
EXPIRED_HISTORY = "expired history"


def carried_words(check: Any, table_format: str | None) -> str:
    """``compacted at version 6: 12 files → 1, same rows``: what the rewrites carried over by content did."""
    noun = version_noun(table_format)
    if len(check.rewrites) == 1 and check.rewrites[0].operation == EXPIRED_HISTORY:
        # Iceberg: the history since the attested snapshot expired, the whole version judged by its rows
        # (carriers/iceberg/rewrites.py whole_version).
        return (f"history since {noun} {check.rewrites[0].version} expired: {len(check.removed)} files → "
                f"{check.added}, same rows")
    versions = [r.version for r in check.rewrites]
    where = f"{noun} {versions[0]}" if len(versions) == 1 else f"{noun}s {', '.join(versions[:4])}" + (
        f" (+{len(versions) - 4} more)" if len(versions) > 4 else "")
    widened = getattr(check, "widened", ())
    if widened:
        return (f"compacted at {where}: {len(check.removed)} files → {check.added}, same rows read as the types "
                f"widened since the attestation ({', '.join(widened)})")
    return f"compacted at {where}: {len(check.removed)} files → {check.added}, same rows"


def version_option(table_format: str | None) -> str:
    return "--snapshot-id" if table_format == "iceberg" else "--version"


@record
class Report:
    """The outcome of one verification.

    ``level`` is the deepest level that was actually checked; ``passed`` is true only when every check at that
    level held. ``errors`` carry stable codes (docs/errors.md).
    """

    subject: str
    level: Level = "none"
    requested_level: Level | None = None
    errors: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    table_format: str | None = None
    version: str | None = None
    attested_version: str | None = None
    files_checked: int = 0
    bytes_checked: int = 0
    attested: bool = True
    origin: str | None = None  # "recipe-attest" | "legacy" | "foreign" (tables)
    producer: str | None = None
    binding_note: str = ""
    view_bound: bool | None = None
    view_unbound: list[str] = field(default_factory=list)  # parts of the reader view bound only by newer attestations
    signer: str | None = None  # key id of the trusted key whose signature verified (docs/signing.md)
    signature: dict[str, Any] | None = None  # the signature check's result as JSON, when one was asked for
    # Whether the attestation carries a signature: True (an envelope is there, checked or not), False (none: looked
    # for and absent), None (not looked for: a manifest read from stdin, a document a caller passed).
    signed: bool | None = None
    # Output hashes the manifest holds that no byte was checked against, and why ("" when all were, or none held).
    bytes_unchecked: str = ""
    # verify --level bytes: the attested data files whose stored types were not held to the record's rule, and why
    # (docs/verify.md, "Stored types"; "" when every one was). Said in the verdict and in JSON.
    stored_types_unchecked: str = ""
    # The content digest (docs/content-digest.md): whether the attestation binds one (None: not a table, or another
    # producer's), and the rewrites checked by content since the attested version (their facts as JSON).
    content_bound: bool | None = None
    content: dict[str, Any] | None = None
    content_check: Any = None  # attest.tables.ContentCheck when rewrites were carried over by content
    # The heads of the table's other branches, not checked (attest.tables.TableState.other_heads): said in a note,
    # in JSON (``other_branches``) and on the table's audit line.
    other_heads: list[tuple[str, str]] = field(default_factory=list)
    other_tags: list[tuple[str, str]] = field(default_factory=list)  # TableState.other_tags: JSON, an audit's lines
    branch: str | None = None  # the branch whose head ``version`` is (TableState.branch): named in the verdict
    tag: str | None = None  # the tag naming ``version`` when asked for by it (TableState.tag): likewise

    @property
    def passed(self) -> bool:
        return self.attested and not self.errors and self.level != "none"

    @property
    def unreadable(self) -> bool:
        """The table could not be read (``table_unreadable``, e.g. deletion vectors its engine cannot read), whether
        it holds an attestation or not: unreadable input, exit 2 like every other (docs/errors.md)."""
        return any(e.code == Code.TABLE_UNREADABLE for e in self.errors)

    @property
    def exit_code(self) -> int:
        if self.unreadable:
            return 2
        return 0 if self.passed else 1

    @property
    def outcome(self) -> str:
        """One word for tables of results (audit): VERIFIED, STALE, COMPACTED, UNATTESTED, NOT VERIFIED or ERROR (the
        table could not be read)."""
        if self.passed:
            return "VERIFIED"
        if self.unreadable:
            return "ERROR"
        if not self.attested:
            return "UNATTESTED"
        first = self.errors[0].code.value if self.errors else ""
        return {"stale": "STALE", "compacted": "COMPACTED"}.get(first, "NOT VERIFIED")

    def fail(self, code: Code, message: str, path: str = "") -> None:
        self.errors.append(Problem(code, message, path))

    def signature_words(self) -> str:
        """What was established about the signature: ``signed by <key id>``, ``unsigned`` or ``signature not
        checked`` (an envelope is there but no key or policy was given, or nobody looked)."""
        if self.signer is not None:
            return f"signed by {self.signer}"
        return UNSIGNED if self.signed is False else SIGNATURE_NOT_CHECKED

    def _ref_words(self) -> str:
        """`` branch 'b'`` / `` tag 'x'`` when the version checked was asked for by that ref's name ("" otherwise)."""
        if self.branch is not None:
            return f" branch {self.branch!r}"
        return "" if self.tag is None else f" tag {self.tag!r}"

    def verdict(self) -> str:
        """The single last line of human output: what passed, at which level, what was not checked, and the
        signature (a passing verdict never reads the same for an unsigned and a signed attestation)."""
        if not self.attested:
            where = f" at {version_noun(self.table_format)} {self.version}" if self.version is not None else ""
            return f"{UNATTESTED} — {self.subject}{self._ref_words()}{where} carries no attestation"
        if self.table_format is None:  # a standalone manifest
            if not self.passed:
                return NOT_VERIFIED
            if self.level == "bytes":
                what = "bytes"
            else:  # the reference's "no byte-identity attested" only when the manifest attests none
                what = "schema only — " + (self.bytes_unchecked or "no byte-identity attested")
            return f"{VERIFIED} ({what}, {self.signature_words()})"
        word = VERIFIED if self.passed else NOT_VERIFIED
        qualifier = _TABLE_LEVEL[self.level]
        asked = self.requested_level
        if not self.passed and asked in LEVELS and self.level in _STOPPED_AT and (
                self.level == "none" or LEVELS.index(asked) > LEVELS.index(self.level)):
            # A failure stops the checks: say how far they got, never "schema only" as if schema were asked.
            qualifier = f"{asked} asked, stopped at {_STOPPED_AT[self.level]}"
        if self.origin == "foreign":
            # Another producer's attestation: say whose, and how its version was bound.
            qualifier = f"schema only — written by {self.producer}" + (
                f", {self.binding_note}" if self.binding_note else "")
        if self.passed:
            qualifier += f", {self.signature_words()}"
            if self.content_check is not None:
                qualifier = f"content; {carried_words(self.content_check, self.table_format)}; {qualifier}"
        if self.origin == "foreign":
            pass  # its binding is said above; the reader view is never bound by another producer
        elif self.origin == "legacy" or self.view_bound is False:
            qualifier += "; reader view not bound (legacy attestation)"
        elif self.view_unbound:
            qualifier += f"; not bound: {', '.join(self.view_unbound)}"
        if self.stored_types_unchecked and self.level == "bytes":
            qualifier += f"; stored types not checked: {self.stored_types_unchecked}"
        noun = version_noun(self.table_format)
        tail = f"{self.table_format} table {self.subject}"
        tail += self._ref_words()
        if self.version is not None:  # none for a read of no one version (the Spark gate's folder and change reads)
            tail += f" {noun} {self.version}"
        if self.attested_version is not None:
            tail += f", attestation for {noun} {self.attested_version}"
        if not self.passed and self.errors:
            tail += f": {self.errors[0].code.value}"  # one spelling of a code everywhere
        return f"{word} ({qualifier}) — {tail}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "passed": self.passed,
            "verdict": self.verdict(),
            "level": self.level,
            "subject": self.subject,
            "attested": self.attested,
            "errors": [p.to_json() for p in self.errors],
            "notes": list(self.notes),
            "files_checked": self.files_checked,
            "bytes_checked": self.bytes_checked,
        }
        if self.requested_level is not None:
            out["requested_level"] = self.requested_level
        if self.signer is not None:
            out["signer"] = self.signer
        out["signed"] = self.signed
        if self.bytes_unchecked:
            out["bytes_unchecked"] = self.bytes_unchecked
        if self.signature is not None:
            out["signature"] = self.signature
        if self.table_format is not None:
            out["table_format"] = self.table_format
            out["version"] = self.version
            out["attested_version"] = self.attested_version
            if self.origin is not None:
                out["origin"] = self.origin
                out["producer"] = self.producer
            if self.view_bound is not None:
                out["reader_view_bound"] = self.view_bound
            if self.view_unbound:
                out["reader_view_unbound"] = list(self.view_unbound)
            if self.content_bound is not None:
                out["content_digest_bound"] = self.content_bound
            if self.content is not None:
                out["content"] = self.content
            if self.stored_types_unchecked:
                out["stored_types_unchecked"] = self.stored_types_unchecked
        if self.branch is not None:
            out["branch"] = self.branch
        if self.tag is not None:
            out["tag"] = self.tag
        if self.other_heads:
            out["other_branches"] = [{"branch": b, "snapshot": s} for b, s in self.other_heads]
        if self.other_tags:
            out["other_tags"] = [{"tag": t, "snapshot": s} for t, s in self.other_tags]
        return out

    def other_heads_note(self) -> str:
        """The note naming the branches not checked ("" when there are none)."""
        return other_heads_note(self.other_heads)

    def human(self) -> str:
        lines = [f"  {p.code.value}: {p.message}" + (f" [{p.path}]" if p.path else "") for p in self.errors]
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(self.verdict())
        return terminal_safe("\n".join(lines))  # names the table chose never act on a terminal

    def _repr_html_(self) -> str:
        """Rich notebook display (attest/render/html.py)."""
        from attest.render.html import report_html

        return report_html(self)


def _heads_shown(heads: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{b!r} (snapshot {s})" for b, s in heads[:5])
    return shown + (f" and {len(heads) - 5} more" if len(heads) > 5 else "")


def shell_option(flag: str, value: str) -> str:
    """``flag value`` as a shell passes it to an ``attest`` command: quoted, and joined by "=" when the value starts
    with "-" (a branch may be named ``--x`` or ``-1``; argparse would take it for an option and refuse the command)."""
    quoted = shlex.quote(value)
    return f"{flag}={quoted}" if value.startswith("-") else f"{flag} {quoted}"


def other_heads_note(heads: list[tuple[str, str]]) -> str:
    """The note of a report of main's head naming the table's other branches at other snapshots, not checked ("" when
    there are none)."""
    if not heads:
        return ""
    return (f"main's head was checked, not the {len(heads)} other branch(es) at other snapshots: {_heads_shown(heads)}"
            "; a reader of a branch reads its head — `attest verify <table> --branch <branch>` checks one")


def audited_heads_note(heads: list[tuple[str, str]]) -> str:
    """``other_heads_note``'s counterpart on an audit's line of main when each branch has a line of its own."""
    return (f"main's head was checked; the {len(heads)} other branch(es) at other snapshots, {_heads_shown(heads)}, "
            "are audited on lines of their own")
