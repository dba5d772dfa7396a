"""What a picture writes about a table version: the same lines in DOT, Mermaid, SVG and HTML."""

from __future__ import annotations

from attest.lineage import GraphNode
from attest.render.terminal import terminal_safe

MAX_CHARS = 48  # a box line longer than this is shortened in the middle (the full text stays in the tooltip)


def shorten(text: str, limit: int = MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return f"{text[:keep]}…{text[-(limit - 1 - keep):]}"


def node_lines(node: GraphNode) -> list[str]:
    """Box lines: the table's short name, its version, its model (when attested), its outcome."""
    model = [shorten(f"model {node.model}")] if node.model else []
    return [shorten(node.short_name), shorten(node.version_label), *model, node.outcome]


def node_tooltip(node: GraphNode) -> str:
    parts = [f"{node.ref} @ {node.version}"]
    if node.verdict:
        parts.append(node.verdict)
    return "\n".join(parts)


def printable(text: str) -> str:
    """Control characters (from untrusted names) shown as U+FFFD: no format gives them a meaning."""
    return terminal_safe(text)
