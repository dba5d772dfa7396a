"""A lineage walk as a Mermaid flowchart (``attest lineage --format mermaid``): paste it into Markdown."""

from __future__ import annotations

from attest.lineage import LineageGraph
from attest.render.palette import colour
from attest.render.text import node_lines, printable

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.-/:@,=+")


def escape(text: str) -> str:
    """Every character outside a small safe set as a Mermaid entity code (``#34;``): a name can close no label,
    start no link and inject no HTML."""
    return "".join(c if c in _SAFE else f"#{ord(c)};" for c in printable(text))


def to_mermaid(graph: LineageGraph, *, caption: str | None = None) -> str:
    """The flowchart; ``caption``: a comment line after it (the command line gives the walk's summary)."""
    ids = {n.key: f"n{i}" for i, n in enumerate(graph.nodes)}
    out = ["flowchart LR"]
    for node in graph.nodes:
        label = "<br/>".join(escape(line) for line in node_lines(node))
        out.append(f'  {ids[node.key]}["{label}"]')
    for edge in graph.edges:
        arrow = "-->" if edge.observed_as == "strong" else "-.->"
        out.append(f'  {ids[edge.source]} {arrow}|"{escape(edge.label)}"| {ids[edge.target]}')
    for node in graph.nodes:
        c = colour(node.outcome)
        width = ",stroke-width:3px" if node.root else ""
        out.append(f"  style {ids[node.key]} fill:{c.fill},stroke:{c.stroke},color:{c.text}{width}")
    if caption:
        # A comment runs to the end of its line: no line break (nor a backtick that could end a Markdown fence).
        out.append("  %% " + "".join(c if c in _SAFE or c in "();…—" else f"#{ord(c)};" for c in printable(caption)))
    return "\n".join(out)
