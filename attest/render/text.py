"""What a picture writes about a table version: the same lines in DOT, Mermaid, SVG and HTML."""

from __future__ import annotations

from attest.lineage import PRE_ATTESTATION, GraphNode
from attest.render.terminal import terminal_safe

MAX_CHARS = 48  # a box line longer than this is shortened in the middle (the full text stays in the tooltip)


def shorten(text: str, limit: int = MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return f"{text[:keep]}…{text[-(limit - 1 - keep):]}"


def node_lines(node: GraphNode) -> list[str]:
    """Box lines: the table's short name, its version (a chain: its range), its model (when attested), whether it is
    the history before the table's attestations, its outcome. A cut marker: what was not walked."""
    if node.marker is not None:
        what, _, depth = node.marker.partition(" (")  # "… 2 input(s) not walked", "--depth 8)"
        return [shorten(what), *([f"({depth}"] if depth else []), node.outcome]
    model = [shorten(f"model {node.model}")] if node.model else []
    pre = [PRE_ATTESTATION] if node.pre_attestation else []
    return [shorten(node.short_name), shorten(node.version_label), *model, *pre, node.outcome]


def node_tooltip(node: GraphNode) -> str:
    if node.marker is not None:
        return f"{node.ref}: {node.marker}: the walk stopped here"
    where = f"{node.oldest_version}..{node.version}" if node.versions > 1 else f"{node.version}"
    parts = [f"{node.ref} @ {where}"]
    if node.versions > 1:
        parts.append(f"{node.versions} versions of this table, each checked")
    if node.pre_attestation:
        parts.append(f"{PRE_ATTESTATION}: the unattested version this table's attestations start from "
                     "(not a failure of the walk)")
    if node.verdict:
        parts.append(node.verdict)
    parts.extend(f for f in node.failing if not f.startswith(f"@{node.version}: "))
    return "\n".join(parts)


def printable(text: str) -> str:
    """Control characters (from untrusted names) shown as U+FFFD: no format gives them a meaning."""
    return terminal_safe(text)
