"""Rich notebook display (``_repr_html_``): an attestation, a verify report, a lineage walk (its picture inline)
and an audit (a table with verdict colours). Inline styles only: a notebook's own CSS is neither needed nor
touched. Every value is escaped; nothing here runs script."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from attest.render.palette import colour
from attest.render.text import printable

if TYPE_CHECKING:
    from attest.lineage import LineageNode
    from attest.tables import Attestation
    from attest.verify.audit import AuditReport
    from attest.verify.report import Report

_BOX = "font-family:DejaVu Sans,Helvetica,Arial,sans-serif;font-size:13px;line-height:1.45"
_CELL = "padding:3px 10px;border-bottom:1px solid #e0e0e0;text-align:left;vertical-align:top"


def esc(value: Any) -> str:
    return escape(printable(str(value)), quote=True)


def badge(outcome: str, text: str | None = None) -> str:
    c = colour(outcome)
    return (f'<span style="background:{c.fill};color:{c.stroke};border:1px solid {c.stroke};border-radius:4px;'
            f'padding:1px 7px;font-weight:bold;white-space:nowrap">{esc(text or outcome)}</span>')


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], shade: Sequence[str] | None = None) -> str:
    head = "".join(f'<th style="{_CELL};background:#f5f5f5">{esc(h)}</th>' for h in header)
    body = []
    for i, row in enumerate(rows):
        bg = f"background:{colour(shade[i]).fill}" if shade is not None else ""
        body.append(f'<tr style="{bg}">' + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in row) + "</tr>")
    return f'<table style="border-collapse:collapse;margin:4px 0">{"<tr>" + head + "</tr>"}{"".join(body)}</table>'


def _code(value: Any) -> str:
    return f"<code>{esc(value)}</code>" if value not in (None, "") else "—"


def report_html(report: Report) -> str:
    """A verify report: the verdict as a coloured badge, then every error and note."""
    rows = [(esc(p.code.value), esc(p.message) + (f" <small>[{esc(p.path)}]</small>" if p.path else ""))
            for p in report.errors]
    parts = [f'<div style="{_BOX}" data-attest="report">',
             f"<div>{badge(report.outcome)} {esc(report.verdict())}</div>"]
    facts = [("level checked", esc(report.level)), ("files checked", esc(report.files_checked))]
    if report.signer:
        facts.append(("signed by", _code(report.signer)))
    parts.append(_table(("", ""), facts))
    if rows:
        parts.append(_table(("code", "problem"), rows))
    parts.extend(f"<div><i>note:</i> {esc(n)}</div>" for n in report.notes)
    parts.append("</div>")
    return "".join(parts)


def audit_html(audit: AuditReport) -> str:
    """An audit: one row per table, shaded by outcome, and the summary."""
    rows = [(badge(r.outcome), esc(r.table), esc(r.version or "—"), esc(r.level), esc(r.code or ""),
             esc(r.verdict)) for r in audit.rows]
    return (f'<div style="{_BOX}" data-attest="audit">'
            + _table(("outcome", "table", "version", "level", "code", "verdict"), rows,
                     shade=[r.outcome for r in audit.rows])
            + f"<div>{esc(audit.summary())}</div></div>")


def attestation_html(att: Attestation) -> str:
    """What an attestation says: subject, identities, the version it binds, its files and observed inputs."""
    doc = att.document if isinstance(att.document, dict) else {}
    subject = doc.get("subject") if isinstance(doc.get("subject"), dict) else {}
    assert isinstance(subject, dict)
    outcome = "NOT VERIFIED" if att.problems else "VERIFIED"
    state = "carrier problems: " + "; ".join(str(getattr(p, "message", p)) for p in att.problems) \
        if att.problems else "read back cleanly (verify it to check the table against it)"
    facts = [
        ("table", esc(att.location)), ("attested version", esc(att.attested_version)),
        ("model", esc(subject.get("model", "—"))), ("run", esc(subject.get("run_id", "—"))),
        ("produced at", esc(subject.get("produced_at", "—"))), ("program", _code(doc.get("program_hash"))),
        ("inputs", _code(doc.get("inputs_hash")) + (f" ({esc(doc['inputs_proof_class'])})"
                                                    if doc.get("inputs_proof_class") else "")),
        ("environment", _code(doc.get("env_hash"))), ("manifest identity", _code(att.manifest_identity)),
        ("files", esc(len(att.files)) if att.files is not None else "—"), ("origin", esc(att.origin)),
    ]
    parts = [f'<div style="{_BOX}" data-attest="attestation">',
             f"<div>{badge(outcome, 'ATTESTATION')} {esc(state)}</div>", _table(("", ""), facts)]
    if att.inputs:
        rows = [(esc(i.name or i.location or i.table), esc(i.version or i.snapshot_id or i.watermark or "—"),
                 badge("VERIFIED" if i.proof_class == "strong" else "UNATTESTED", i.proof_class))
                for i in att.inputs]
        parts.append(_table(("observed input", "version read", "proof"), rows))
    parts.append("</div>")
    return "".join(parts)


def write_result_html(location: str, version: str | None, sidecar: str | None, manifest: dict[str, Any] | None,
                      replaced: Sequence[str], warnings: Sequence[str] = ()) -> str:
    """What ``record()`` wrote (and its warnings: WriteResult.warnings)."""
    doc = manifest or {}
    subject = doc.get("subject") if isinstance(doc.get("subject"), dict) else {}
    assert isinstance(subject, dict)
    facts = [("table", esc(location)), ("attested version", esc(version)), ("sidecar", esc(sidecar or "—")),
             ("model", esc(subject.get("model", "—"))), ("program", _code(doc.get("program_hash"))),
             ("inputs", _code(doc.get("inputs_hash")) + (f" ({esc(doc['inputs_proof_class'])})"
                                                         if doc.get("inputs_proof_class") else "")),
             ("files", esc(len(doc.get("output_hashes") or ())))]
    facts.extend(("replaced", esc(r)) for r in replaced)
    facts.extend(("warning", esc(w)) for w in warnings)
    return (f'<div style="{_BOX}" data-attest="record"><div>{badge("VERIFIED", "RECORDED")}</div>'
            + _table(("", ""), facts) + "</div>")


def lineage_html(root: LineageNode) -> str:
    """A lineage walk: the whole walk's outcome, then the picture inline."""
    from attest.render.svg import to_svg

    whole = "NOT VERIFIED" if root.failed() else "VERIFIED"
    if root.error is not None:
        whole = "ERROR"
    text = "every node verified" if whole == "VERIFIED" else "the chain of evidence is not whole"
    summary = root.summary()
    return (f'<div style="{_BOX}" data-attest="lineage-walk"><div>{badge(whole)} {esc(root.ref)} @ '
            f"{esc(root.version_span)}: {esc(text)}</div><div data-summary=\"1\">{esc(summary)}</div>"
            f"{to_svg(root.graph(), caption=summary)}</div>")
